"""Toolkit.config: every key's wrong values fail at config() with the valid choices; good ones pass."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

import npuc
from npuc.quantize import ALGORITHMS, DTYPES, METHODS
from npuc.toolkit import CONFIG_KEYS, TARGET_PLATFORMS

GOOD_VALUES = {
    "quantized_dtype": "w8a8",
    "quantized_algorithm": "kl_divergence",
    "quantized_method": "layer",
    "target_platform": "RK3566",
    "optimization_level": 0,
    "custom_string": "camera-v2",
    "op_target": {"conv": "cpu", "Relu": "NPU"},
    "hybrid_layers": ["conv"],
    "auto_hybrid_cos_thresh": 0.98,
    "auto_hybrid_euc_thresh": 0.5,
    "single_core_mode": True,
    "quant_img_RGB2BGR": True,
    "float_dtype": "float16",
    "compress_weight": False,
    "mean_values": [[0, 0, 0]],
    "std_values": [[255, 255, 255]],
}

# (key, bad value, text the message must hold: the key and, where finite, every valid choice)
BAD_VALUES = [
    ("quantized_dtype", "w8a4", list(DTYPES)),
    ("quantized_dtype", 8, ["quantized_dtype"]),
    ("quantized_algorithm", "minmax", list(ALGORITHMS)),
    ("quantized_method", "tensor", list(METHODS)),
    ("target_platform", "rk9999", list(TARGET_PLATFORMS)),
    ("target_platform", 3588, ["3588"]),
    ("optimization_level", 4, ["0", "1", "2", "3"]),
    ("optimization_level", "3", ["optimization_level"]),
    ("optimization_level", True, ["optimization_level"]),
    ("custom_string", 12, ["custom_string", "string"]),
    ("op_target", ["conv"], ["op_target", "dict"]),
    ("op_target", {"conv": "gpu"}, ["gpu", "cpu", "npu"]),
    ("hybrid_layers", "conv", ["hybrid_layers", "list"]),
    ("hybrid_layers", ["conv", 3], ["hybrid_layers"]),
    ("auto_hybrid_cos_thresh", 1.5, ["auto_hybrid_cos_thresh", "0 to 1"]),
    ("auto_hybrid_cos_thresh", "high", ["auto_hybrid_cos_thresh"]),
    ("auto_hybrid_euc_thresh", -1, ["non-negative"]),
    ("single_core_mode", "yes", ["single_core_mode", "True or False"]),
    ("quant_img_RGB2BGR", 1, ["quant_img_RGB2BGR", "True or False"]),
    ("float_dtype", "bfloat16", ["float16"]),
    ("compress_weight", "true", ["compress_weight"]),
    ("disable_passes", ["no_such_pass"], ["no_such_pass", *npuc.pass_names()]),
    ("mean_values", [["a", "b"]], ["mean_values"]),
    ("std_values", [[1, 0, 1]], ["std_values"]),
]


def test_good_values_are_stored() -> None:
    tk = npuc.Toolkit()
    assert tk.config(**GOOD_VALUES) == 0
    stored = tk.get_config()
    assert stored["target_platform"] == "rk3566"
    for key, value in GOOD_VALUES.items():
        if key != "target_platform":
            assert stored[key] == value, key


@pytest.mark.parametrize("key, value, needles", BAD_VALUES, ids=[f"{k}={v!r}" for k, v, _ in BAD_VALUES])
def test_bad_value_is_refused_with_the_valid_ones(key: str, value: Any, needles: list) -> None:
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588", quantized_method="channel")
    with pytest.raises(npuc.ConfigError) as info:
        tk.config(**{key: value})
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))
    # A refused config() leaves the earlier settings untouched.
    assert tk.get_config()["target_platform"] == "rk3588"
    assert tk.get_config()["quantized_method"] == "channel"


def test_none_means_default_for_every_key() -> None:
    keys = [k for k in CONFIG_KEYS if k not in ("target_platform", "mean_values", "std_values")]
    assert npuc.Toolkit().config(**{k: None for k in keys}) == 0


@pytest.mark.parametrize("typo, meant", [("mean_value", "mean_values"), ("quantize_algorithm", "quantized_algorithm")])
def test_unknown_keys_list_every_valid_key(typo: str, meant: str) -> None:
    with pytest.raises(npuc.ConfigError) as info:
        npuc.Toolkit().config(**{typo: 1})
    message = str(info.value)
    assert typo in message and meant in message
    assert all(key in message for key in CONFIG_KEYS)


def test_custom_string_travels_in_the_blob(conv_relu_path: Path, tmp_path: Path) -> None:
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588", custom_string="camera-v2")
        tk.load_onnx(model=str(conv_relu_path))
        tk.build(do_quantization=False)
        tk.export_blob(str(tmp_path / "m.npub"))
    _, meta = npuc._npuc.load_blob(str(tmp_path / "m.npub"))
    assert meta["options"]["custom_string"] == "'camera-v2'"


PUBLIC_METHODS = [
    name
    for name, member in inspect.getmembers(npuc.Toolkit)
    if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))
]


@pytest.mark.parametrize("name", PUBLIC_METHODS)
def test_public_methods_have_docstrings_and_type_hints(name: str) -> None:
    member = getattr(npuc.Toolkit, name)
    function = member.fget if isinstance(member, property) else member
    doc = inspect.getdoc(function) or ""
    assert len(doc) > 20, f"Toolkit.{name} has no real docstring"
    signature = inspect.signature(function)
    assert signature.return_annotation is not inspect.Signature.empty, f"Toolkit.{name} has no return type"
    for param in list(signature.parameters.values())[1:]:
        if param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            assert param.annotation is not inspect.Parameter.empty, f"Toolkit.{name}({param.name}) has no type"


def test_help_on_build_is_enough_to_use_it() -> None:
    doc = inspect.getdoc(npuc.Toolkit.build) or ""
    for word in ("do_quantization", "dataset", "verify", "Returns", "Raises"):
        assert word in doc


def test_aliases_and_user_profiles_are_valid_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert npuc.Toolkit().config(target_platform="RK3588S") == 0
    # A profile added through NPUC_SOC_DIR is read once per process: check it in a fresh one.
    from test_cli import npuc_cli

    profile = (Path(__file__).resolve().parents[2] / "opset" / "soc" / "rk3566.yaml").read_text()
    lines = [("name: rk3566x" if line.startswith("name:") else "aliases: []" if line.startswith("aliases:") else line)
             for line in profile.splitlines()]
    (tmp_path / "rk3566x.yaml").write_text("\n".join(lines) + "\n")
    onnx_path = tmp_path / "m.onnx"
    import onnx
    from conftest import conv_relu_model

    onnx.save(conv_relu_model(), str(onnx_path))
    monkeypatch.setenv("NPUC_SOC_DIR", str(tmp_path))
    r = npuc_cli("convert", str(onnx_path), "-t", "rk3566x", "-o", str(tmp_path / "m.npub"))
    assert r.returncode == 0, r.stderr
    assert "FPS on rk3566x" in r.stdout


def test_a_quantized_dtype_the_soc_lacks_names_the_socs_that_have_it() -> None:
    """Which SoC builds which quantized_dtype is profile data (opset/soc/*.yaml quantized_dtypes)."""
    from npuc._npuc import require_quantized_dtype, soc_profile

    assert soc_profile("rk3576")["quantized_dtypes"] == ["w8a8", "w4a16"]
    assert soc_profile("rv1103")["quantized_dtypes"] == ["w8a8", "w16a16i", "w16a16i_dfp"]
    require_quantized_dtype("rk3562", "w8a16")
    require_quantized_dtype("rk3588", "asymmetric_quantized-8")  # RKNN's spelling of w8a8
    with pytest.raises(npuc.ConfigError, match=r"w4a16 is not available on rk3588 \(available on: rk3576\)"):
        require_quantized_dtype("rk3588", "w4a16")
    with pytest.raises(npuc.ConfigError, match="quantized_dtype 'w3a3' is unknown"):
        require_quantized_dtype("rk3588", "w3a3")
