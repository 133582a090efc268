"""Toolkit.eval_memory: the numbers add up, the blob carries the memory plan (MPLN), and a loaded
blob reports exactly what the in-memory build did; shared models stay within 1.05x of the bound."""

from __future__ import annotations

from pathlib import Path
from typing import List

import numpy as np
import pytest

import npuc
from conftest import shared_models_dir

from npuc.memory import blob_memory_report


def _samples(shape: List[int], count: int = 2) -> List[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def _build(model: Path, quantize: bool, soc: str = "rk3588") -> npuc.Toolkit:
    tk = npuc.Toolkit()
    tk.config(target_platform=soc)
    tk.load_onnx(model=str(model))
    shape = list(tk.model.inputs[0]["shape"])
    tk.build(do_quantization=quantize, dataset=_samples(shape) if quantize else None)
    return tk


def _check_adds_up(report: dict) -> None:
    assert report["total_bytes"] == (
        report["weight_bytes"] + report["arena_bytes"] + report["io_bytes"] + report["other_bytes"]
    )
    assert report["other_bytes"] == (
        report["blob_bytes"] - report["blob_weight_section_bytes"] - report["blob_packed_weight_section_bytes"]
    )
    assert report["weight_bytes"] == sum(w["bytes"] for w in report["weights"])
    arena = [t for t in report["tensors"] if t["home"] == "arena"]
    io = [t for t in report["tensors"] if t["home"] != "arena"]
    assert report["io_bytes"] == sum(t["bytes"] for t in io)
    assert report["arena_bytes"] == max((t["offset"] + t["bytes"] for t in arena), default=0)
    assert report["lower_bound_bytes"] <= report["arena_bytes"]
    for t in report["tensors"]:
        assert t["offset"] % report["alignment"] == 0 and t["bytes"] % report["alignment"] == 0


@pytest.mark.parametrize("quantize", [True, False])
def test_build_and_load_blob_report_the_same(conv_relu_path: Path, tmp_path: Path, quantize: bool) -> None:
    tk = _build(conv_relu_path, quantize)
    built = tk.eval_memory(is_print=False)
    _check_adds_up(built)
    assert built["plan_from_blob"] is False
    assert built["mode"] == ("int8" if quantize else "fp16")
    assert "Total Weight Memory" in str(built) and "Total Memory" in str(built)
    blob = tmp_path / "m.npub"
    tk.export_blob(str(blob))

    tk2 = npuc.Toolkit()
    tk2.load_blob(str(blob))
    assert "MPLN" in tk2.blob_meta["extra_sections"]
    loaded = tk2.eval_memory(is_print=False)
    assert loaded["plan_from_blob"] is True
    assert loaded.summary() == dict(built.summary(), plan_from_blob=True)
    assert loaded["tensors"] == built["tensors"]


def test_sizes_follow_the_dtype_and_the_alignment_table(conv_relu_path: Path) -> None:
    int8 = _build(conv_relu_path, True).eval_memory(is_print=False)
    fp16 = _build(conv_relu_path, False).eval_memory(is_print=False)
    # conv_relu (Conv 3->4, 3x3, then Relu) fuses into one task: no internal tensor is left.
    assert int8["arena_bytes"] == fp16["arena_bytes"] == 0
    # rk3588 int8: weights [4,3,3,3] padded to conv_out 32 x conv_in 32, int32 bias padded to 32.
    assert int8["weight_bytes"] == 32 * 32 * 9 + 32 * 4
    # rk3588 fp16: conv_out 16 x conv_in 32, 2 bytes; fp16 bias 16 x 2 = 32 -> one 64-byte block.
    assert fp16["weight_bytes"] == 16 * 32 * 9 * 2 + 64
    # I/O: 3 and 4 channels padded to 16 (int8, 1 byte) or 8 (fp16, 2 bytes), 8x8 pixels.
    assert int8["io_bytes"] == 2 * 16 * 64
    assert fp16["io_bytes"] == 2 * 8 * 64 * 2


def test_eval_memory_needs_a_build(conv_relu_path: Path) -> None:
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588")
    tk.load_onnx(model=str(conv_relu_path))
    with pytest.raises(npuc.NpucError):
        tk.eval_memory(is_print=False)


SHARED = ["mobilenet_v2", "shufflenet_v2_x0_5", "tiny_vit", "glu_net", "yolo_focus", "conv_transpose_clip"]


@pytest.mark.parametrize("name", SHARED)
def test_shared_model_plans_are_near_the_bound(name: str, tmp_path: Path) -> None:
    models = shared_models_dir()
    if models is None:
        pytest.skip("shared models not found")
    tk = _build(models / f"{name}.onnx", quantize=True)
    blob = tmp_path / f"{name}.npub"
    tk.export_blob(str(blob))
    report = blob_memory_report(blob)
    _check_adds_up(report)
    assert report["arena_ratio"] <= 1.05, report["text"]
    # The stored plan is the plan a fresh planning of the loaded graph gives.
    fresh = blob_memory_report(blob, use_stored_plan=False)
    assert fresh["tensors"] == report["tensors"]
