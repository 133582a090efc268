"""Hybrid quantization: build(auto_hybrid=True) moves exactly the layer that quantizes badly to
FP16 and improves the output; the two-step flow's cfg round-trips an edit; a wrong cfg is a
ConfigError naming the key; weight outliers are printed by build()."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Tuple

import numpy as np
import pytest
import yaml

from outlier_model import BAD_LAYER, samples, save_outlier_chain, write_dataset

import npuc
from npuc.errors import ConfigError
from npuc.quantize import cosine_similarity


def _toolkit(model: Path, **config: Any) -> npuc.Toolkit:
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588", **config)
    tk.load_onnx(model=str(model))
    return tk


def _output_cosine(tk: npuc.Toolkit, fp32_tk: npuc.Toolkit, count: int = 3) -> float:
    xs = samples(count, seed=11)
    return min(cosine_similarity(fp32_tk.inference([x])[0], tk.inference([x])[0]) for x in xs)


@pytest.fixture
def chain(tmp_path: Path) -> Tuple[Path, Path]:
    return save_outlier_chain(tmp_path), write_dataset(tmp_path, 8)


def test_auto_hybrid_moves_exactly_the_bad_layer(chain: Tuple[Path, Path], capsys: Any) -> None:
    model, dataset = chain
    fp32 = _toolkit(model)
    plain = _toolkit(model, quantized_method="layer")
    plain.build(dataset=str(dataset))
    assert set(plain._simulator().node_precisions.values()) == {"int8"}

    tk = _toolkit(model, quantized_method="layer")
    assert tk.build(dataset=str(dataset), auto_hybrid=True) == 0
    precisions = tk._simulator().node_precisions
    assert [n for n, p in precisions.items() if p == "fp16"] == [BAD_LAYER]
    report = tk.auto_hybrid_report
    assert [c.node for c in report.chosen] == [BAD_LAYER]
    assert report.chosen[0].single_cosine < 0.98 and "single cosine" in report.chosen[0].reason
    assert report.output_cosine_after > report.output_cosine_before
    printed = capsys.readouterr().out
    assert "auto hybrid" in printed and BAD_LAYER in printed

    before, after = _output_cosine(plain, fp32), _output_cosine(tk, fp32)
    assert before < 0.9, "per-tensor weights with the outlier ruin the output"
    assert after > 0.99 and after > before


def test_auto_hybrid_keeps_a_good_model_int8(chain: Tuple[Path, Path]) -> None:
    model, dataset = chain
    tk = _toolkit(model, quantized_method="channel")  # per-channel scales absorb the outlier
    tk.build(dataset=str(dataset), auto_hybrid=True)
    assert tk.auto_hybrid_report.chosen == []
    assert set(tk._simulator().node_precisions.values()) == {"int8"}


def test_auto_hybrid_threshold_is_read_from_config(chain: Tuple[Path, Path]) -> None:
    model, dataset = chain
    # A threshold no int8 layer reaches moves every layer (they are all int8 convs).
    tk = _toolkit(model, quantized_method="channel", auto_hybrid_cos_thresh=1.0)
    tk.build(dataset=str(dataset), auto_hybrid=True)
    assert tk.auto_hybrid_report.cos_thresh == 1.0
    assert set(tk._simulator().node_precisions.values()) == {"fp16"}


def test_build_prints_weight_outliers(chain: Tuple[Path, Path], capsys: Any) -> None:
    model, dataset = chain
    tk = _toolkit(model, quantized_method="layer")
    tk.build(dataset=str(dataset))
    out = capsys.readouterr().out
    assert "weight outliers: 1 weight tensor(s)" in out
    assert "w2" in out and "mmse" in out and "hybrid" in out


def test_build_prints_no_outlier_table_without_outliers(tmp_path: Path, capsys: Any) -> None:
    from conftest import conv_relu_model
    import onnx

    path = tmp_path / "conv_relu.onnx"
    onnx.save(conv_relu_model(), str(path))
    tk = _toolkit(path)
    tk.build(dataset=[s for s in samples(4)])
    assert "weight outliers" not in capsys.readouterr().out


# ---------------------------------------------------------------------- two-step flow


def _step1(tmp_path: Path, chain: Tuple[Path, Path], **kwargs: Any) -> Dict[str, Path]:
    model, dataset = chain
    tk = _toolkit(model, quantized_method="layer")
    prefix = tmp_path / "out" / "chain"
    assert tk.hybrid_quantization_step1(dataset=str(dataset), output_prefix=prefix, **kwargs) == 0
    return {"model": Path(f"{prefix}.model"), "data": Path(f"{prefix}.data"),
            "cfg": Path(f"{prefix}.quantization.cfg")}


def _step2(model: Path, files: Dict[str, Path]) -> npuc.Toolkit:
    tk = _toolkit(model, quantized_method="layer")
    assert tk.hybrid_quantization_step2(str(files["model"]), str(files["data"]), str(files["cfg"])) == 0
    return tk


def test_step1_writes_the_three_files(tmp_path: Path, chain: Tuple[Path, Path]) -> None:
    files = _step1(tmp_path, chain)
    assert all(p.is_file() for p in files.values())
    cfg = yaml.safe_load(files["cfg"].read_text())
    assert cfg["custom_quantize_layers"] == {}
    params = cfg["quantize_parameters"]
    assert {"x", "y"} <= set(params)
    assert params["x"]["dtype"] == "int8" and params["x"]["min"][0] < 0 < params["x"]["max"][0]
    assert "# layers:" in files["cfg"].read_text() and BAD_LAYER in files["cfg"].read_text()


def test_step2_without_edits_equals_a_plain_build(tmp_path: Path, chain: Tuple[Path, Path]) -> None:
    files = _step1(tmp_path, chain)
    tk = _step2(chain[0], files)
    plain = _toolkit(chain[0], quantized_method="layer")
    plain.build(dataset=str(chain[1]))
    x = samples(1, seed=9)[0]
    np.testing.assert_array_equal(tk.inference([x])[0], plain.inference([x])[0])


def test_edited_cfg_puts_the_layer_in_fp16(tmp_path: Path, chain: Tuple[Path, Path]) -> None:
    files = _step1(tmp_path, chain)
    text = files["cfg"].read_text().replace("custom_quantize_layers: {}", f"custom_quantize_layers:\n  {BAD_LAYER}: float16")
    files["cfg"].write_text(text)
    tk = _step2(chain[0], files)
    precisions = tk._simulator().node_precisions
    assert precisions[BAD_LAYER] == "fp16"
    assert [n for n, p in precisions.items() if p == "fp16"] == [BAD_LAYER]
    fp32 = _toolkit(chain[0])
    assert _output_cosine(tk, fp32) > 0.99
    out = tmp_path / "hybrid.npub"
    assert tk.export_blob(str(out)) == 0 and out.stat().st_size > 0


def test_step1_proposal_fills_the_bad_layer(tmp_path: Path, chain: Tuple[Path, Path]) -> None:
    files = _step1(tmp_path, chain, proposal=True, proposal_dataset_size=2)
    cfg = yaml.safe_load(files["cfg"].read_text())
    assert cfg["custom_quantize_layers"] == {BAD_LAYER: "float16"}
    assert _step2(chain[0], files)._simulator().node_precisions[BAD_LAYER] == "fp16"


def test_edited_range_changes_the_quantization(tmp_path: Path, chain: Tuple[Path, Path]) -> None:
    files = _step1(tmp_path, chain)
    cfg = yaml.safe_load(files["cfg"].read_text())
    cfg["quantize_parameters"]["x"]["min"] = [-8.0]
    cfg["quantize_parameters"]["x"]["max"] = [8.0]
    files["cfg"].write_text(yaml.safe_dump(cfg))
    scale, _ = _step2(chain[0], files)._simulator().activation_params["x"]
    assert scale == pytest.approx(16.0 / 255.0, rel=1e-3)


@pytest.mark.parametrize(
    "edit, key",
    [
        (lambda c: c["custom_quantize_layers"].update(no_such_layer="float16"), "custom_quantize_layers.no_such_layer"),
        (lambda c: c["custom_quantize_layers"].update({BAD_LAYER: "int4"}), f"custom_quantize_layers.{BAD_LAYER}"),
        (lambda c: c.update(custom_layers={}), "custom_layers"),
        (lambda c: c["quantize_parameters"].update(nope={"min": [0], "max": [1]}), "quantize_parameters.nope"),
        (lambda c: c["quantize_parameters"]["x"].update(min=[5.0], max=[1.0]), "quantize_parameters.x"),
        (lambda c: c["quantize_parameters"]["x"].update(min="low"), "quantize_parameters.x.min"),
        (lambda c: c["quantize_parameters"]["x"].update(bits=8), "quantize_parameters.x.bits"),
    ],
)
def test_bad_cfg_is_a_config_error_naming_the_key(tmp_path: Path, chain: Tuple[Path, Path], edit: Any, key: str) -> None:
    files = _step1(tmp_path, chain)
    cfg = yaml.safe_load(files["cfg"].read_text())
    edit(cfg)
    files["cfg"].write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        _step2(chain[0], files)


def test_cfg_that_is_not_yaml_mapping_is_a_config_error(tmp_path: Path, chain: Tuple[Path, Path]) -> None:
    files = _step1(tmp_path, chain)
    files["cfg"].write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="custom_quantize_layers"):
        _step2(chain[0], files)
    files["cfg"].write_text("custom_quantize_layers: [unclosed\n")
    with pytest.raises(ConfigError, match="YAML"):
        _step2(chain[0], files)


def test_step2_missing_files_are_named(tmp_path: Path, chain: Tuple[Path, Path]) -> None:
    files = _step1(tmp_path, chain)
    files["data"].unlink()
    with pytest.raises(ConfigError, match="data_input"):
        _step2(chain[0], files)
