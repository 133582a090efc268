"""Hostile YAML configs and huge values give short, fast errors (#15 defect 2).

A 9-level "billion laughs" config for ``npuc convert -i`` took 48 s and 7.9 GB and ended in a
MemoryError traceback after 2.1 GB of stderr. Both YAML readers (``npuc convert -i`` and
``hybrid_quantization_step2``'s cfg) now go through npuc.yaml_config.load_yaml_config, which
bounds the file size, the nesting depth and the node count with aliases expanded; and every
user value quoted in a message goes through npuc.messages.shown (80 characters at most)."""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path

import numpy as np
import pytest

import npuc
from npuc import yaml_config
from npuc.messages import MAX_SHOWN_CHARS, shown
from npuc.toolkit import CONFIG_KEYS
from test_cli import npuc_cli

#: The longest message a huge value may produce (the message text plus one capped quotation).
SHORT = 300


def _laughs(levels: int = 9) -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    lines.append(f"models: [{{name: m, model_file_path: m.onnx, configs: {{mean_values: *l{levels - 1}}}}}]")
    return "\n".join(lines) + "\n"


def test_laughs_config_is_refused_fast_by_convert(tmp_path: Path) -> None:
    cfg = tmp_path / "laughs.yml"
    cfg.write_text(_laughs())
    start = time.perf_counter()
    r = npuc_cli("convert", "-i", str(cfg), "-t", "rk3588", "-o", str(tmp_path / "out"))
    assert r.returncode == 1, r.stderr[:2000]
    assert len(r.stderr) < SHORT + len(str(cfg)) and r.stderr.count("\n") == 1, r.stderr[:2000]
    assert f"{cfg}: refused: the YAML expands to more than {yaml_config.MAX_YAML_NODES} nodes through its aliases" \
        in r.stderr
    assert time.perf_counter() - start < 20  # a fresh interpreter importing npuc; the check itself is below


def test_laughs_check_itself_takes_well_under_a_second(tmp_path: Path) -> None:
    cfg = tmp_path / "laughs.yml"
    cfg.write_text(_laughs())
    start = time.perf_counter()
    with pytest.raises(npuc.ConfigError, match="nodes through its aliases"):
        yaml_config.load_yaml_config(cfg)
    assert time.perf_counter() - start < 0.5


def test_a_config_just_under_the_bound_loads(tmp_path: Path) -> None:
    cfg = tmp_path / "ok.yml"
    cfg.write_text(_laughs(5))  # 9**5 = 59049 expanded scalars
    assert len(yaml_config.load_yaml_config(cfg)["l4"]) == 9


@pytest.mark.parametrize(
    "text, message",
    [
        ("a: &a [*a]\n", "recursive alias"),
        ("[" * 5000 + "]" * 5000 + "\n", f"nests more than {yaml_config.MAX_YAML_DEPTH} levels deep"),
        ("a: " + "{b: " * 100 + "1" + "}" * 100 + "\n", f"nests more than {yaml_config.MAX_YAML_DEPTH} levels deep"),
        ("a: !!python/object/apply:os.system ['true']\n", "not valid YAML"),
        ("a: [1, 2\n", "not valid YAML"),
    ],
    ids=["recursive", "deep-flow", "deep-map", "python-tag", "syntax"],
)
def test_hostile_shapes_are_config_errors(tmp_path: Path, text: str, message: str) -> None:
    cfg = tmp_path / "bad.yml"
    cfg.write_text(text)
    with pytest.raises(npuc.ConfigError) as info:
        yaml_config.load_yaml_config(cfg)
    assert message in str(info.value) and str(cfg) in str(info.value)
    assert len(str(info.value)) < SHORT + len(str(cfg))


def test_oversized_file_is_refused_before_reading(tmp_path: Path) -> None:
    cfg = tmp_path / "big.yml"
    with open(cfg, "wb") as f:
        f.truncate(yaml_config.MAX_YAML_BYTES + 1)
    with pytest.raises(npuc.ConfigError, match=r"is larger than the 16 MiB a YAML config may have"):
        yaml_config.load_yaml_config(cfg)


def test_invalid_utf8_is_a_config_error(tmp_path: Path) -> None:
    cfg = tmp_path / "latin1.yml"
    cfg.write_bytes(b"models: \xff\xfe\n")
    with pytest.raises(npuc.ConfigError, match="not valid YAML"):
        yaml_config.load_yaml_config(cfg)


@pytest.fixture(scope="module")
def step1_files(tmp_path_factory: pytest.TempPathFactory):
    import onnx
    from conftest import conv_relu_model

    folder = tmp_path_factory.mktemp("hybrid")
    onnx.save(conv_relu_model(), str(folder / "m.onnx"))
    rng = np.random.default_rng(0)
    with npuc.Toolkit() as tk, contextlib.redirect_stdout(io.StringIO()):
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(folder / "m.onnx"))
        tk.hybrid_quantization_step1(dataset=[rng.standard_normal((1, 3, 8, 8)).astype(np.float32)],
                                     output_prefix=str(folder / "m"))
    return folder


def test_hybrid_step2_uses_the_same_guard(step1_files: Path) -> None:
    cfg = step1_files / "laughs.cfg"
    cfg.write_text(_laughs().replace("models:", "custom_quantize_layers:"))
    start = time.perf_counter()
    with npuc.Toolkit() as tk, pytest.raises(npuc.ConfigError) as info:
        tk.config(target_platform="rk3588")
        tk.hybrid_quantization_step2(str(step1_files / "m.model"), str(step1_files / "m.data"), str(cfg))
    assert time.perf_counter() - start < 2
    assert "nodes through its aliases" in str(info.value) and len(str(info.value)) < SHORT + len(str(cfg))


def test_hybrid_step2_caps_a_huge_layer_name(step1_files: Path) -> None:
    import yaml

    cfg = step1_files / "huge.cfg"
    cfg.write_text(yaml.safe_dump({"custom_quantize_layers": {"n" * 100_000: "int4"}}))
    with npuc.Toolkit() as tk, pytest.raises(npuc.ConfigError) as info:
        tk.hybrid_quantization_step2(str(step1_files / "m.model"), str(step1_files / "m.data"), str(cfg))
    assert "(100000 chars)" in str(info.value) and len(str(info.value)) < SHORT + len(str(cfg))


HUGE = "x" * 100_000


BASE = {"name": "m", "model_file_path": "m.onnx"}


@pytest.mark.parametrize(
    "entry",
    [
        dict(BASE, **{HUGE: 1}),  # unknown key
        dict(BASE, platform=HUGE),
        dict(BASE, configs={"quantized_algorithm": HUGE}),
        dict(BASE, configs={"mean_values": [HUGE]}),
        dict(BASE, configs={"target_platform": "rk3588", HUGE: 1}),
        dict(BASE, subgraphs={"inputs": HUGE}),
        dict(BASE, name=[HUGE]),
    ],
    ids=["key", "platform", "algorithm", "mean", "config-key", "inputs", "name"],
)
def test_a_100k_char_value_gives_a_short_message(tmp_path: Path, entry) -> None:
    import yaml

    from npuc.cli_common import ConfigFileError
    from npuc.cli_compile import _jobs_from_yaml

    cfg = tmp_path / "c.yml"
    cfg.write_text(yaml.safe_dump({"models": [entry]}))
    with pytest.raises(ConfigFileError) as info:
        _jobs_from_yaml(str(cfg), "rk3588", str(tmp_path))
    budget = SHORT + len(str(cfg)) + len(", ".join(CONFIG_KEYS))  # an unknown key's message lists the valid ones
    assert len(str(info.value)) < budget, str(info.value)[:1000]
    assert "... (100000 chars)" in str(info.value) or "..." in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"target_platform": HUGE},
        {"quantized_algorithm": HUGE},
        {"quantized_method": HUGE},
        {"custom_string": list(range(100_000))},
        {HUGE: 1},
        {"op_target": {HUGE: "gpu"}},
        {"disable_passes": [HUGE]},
        {"mean_values": [[HUGE]]},
    ],
    ids=["target", "algorithm", "method", "custom_string", "key", "op_target", "passes", "mean"],
)
def test_toolkit_config_messages_are_short(kwargs) -> None:
    with pytest.raises(npuc.ConfigError) as info:
        npuc.Toolkit().config(**kwargs)
    assert len(str(info.value)) < SHORT + 1000, str(info.value)[:1000]  # +1000: the lists of valid keys/passes
    assert len(str(info.value)) < len(HUGE) // 10


def test_shown_caps_any_value() -> None:
    assert shown("a" * 100_000).endswith("... (100000 chars)")
    assert len(shown("a" * 100_000)) < MAX_SHOWN_CHARS + 30
    assert len(shown(list(range(10**6)))) <= MAX_SHOWN_CHARS + 30
    assert len(shown(10**5000)) <= MAX_SHOWN_CHARS + 30  # beyond int's str() limit
    nested: list = []
    for _ in range(10_000):
        nested = [nested]
    assert len(shown(nested)) <= MAX_SHOWN_CHARS + 30
    assert shown(123) == "123" and shown("rk3588") == "'rk3588'"


def test_node_count_without_aliases_is_bounded_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yaml_config, "MAX_YAML_NODES", 100)
    cfg = tmp_path / "long.yml"
    cfg.write_text("".join(f"- {i}\n" for i in range(200)))
    with pytest.raises(npuc.ConfigError, match="the YAML holds more than 100 nodes"):
        yaml_config.load_yaml_config(cfg)
