"""The lowered program in .npub blobs (cpp/lower, issue #6): every shared model, built for a SoC and
quantized, exports TASK/PIPE/CPUO/NWGT sections that load_blob decodes and verifies against the
graph; the loaded blob runs bit-identically to the in-memory build; the bytes are deterministic."""

from __future__ import annotations

from pathlib import Path
from typing import List

import numpy as np
import pytest

import npuc
from npuc import _npuc
from conftest import shared_models_dir

MODELS_DIR = shared_models_dir()
MODEL_PATHS = sorted(MODELS_DIR.glob("*.onnx")) if MODELS_DIR else []
PROGRAM_SECTIONS = {"TASK", "PIPE", "CPUO", "NWGT"}


def reference_inputs(model_path: Path) -> List[np.ndarray]:
    """The fixed input stored next to the shared model."""
    ref = np.load(model_path.with_suffix(".ref.npz"))
    return [ref[k] for k in ref.files if k.startswith("input:")]


def build_and_export(model_path: Path, blob: Path, quantize: bool, soc: str = "rk3588") -> List[np.ndarray]:
    """Builds the model (INT8 from two calibration samples, or FP16), exports it, returns the
    in-memory build's outputs on the reference input."""
    inputs = reference_inputs(model_path)
    samples = [inputs, [0.5 * x for x in inputs]]
    with npuc.Toolkit() as tk:
        tk.config(target_platform=soc)
        tk.load_onnx(model=str(model_path))
        tk.build(do_quantization=quantize, dataset=samples if quantize else None)
        outputs = tk.inference(inputs=inputs)
        assert tk.export_blob(blob) == 0
    return outputs


@pytest.mark.skipif(not MODEL_PATHS, reason="shared models not found (set NPUC_SHARED_MODELS)")
@pytest.mark.parametrize("model_path", MODEL_PATHS, ids=lambda p: getattr(p, "stem", str(p)))
def test_quantized_blob_carries_a_verified_program_and_runs_bit_exact(model_path: Path, tmp_path: Path) -> None:
    blob = tmp_path / "m.npub"
    expected = build_and_export(model_path, blob, quantize=True)
    model, meta = _npuc.load_blob(str(blob))
    assert PROGRAM_SECTIONS <= set(meta["extra_sections"])
    program = meta["program"]
    assert program is not None
    assert program["npu_tasks"] >= 1
    # Every node is in exactly one NPU or CPU task (verified on load); fused groups make fewer tasks.
    assert program["npu_tasks"] + program["cpu_ops"] <= model.num_nodes
    assert 1 <= program["pipelines"] <= program["npu_tasks"]
    assert program["reuse_rate"] == pytest.approx(1 - program["pipelines"] / program["npu_tasks"])
    # At least the graph input going in and the graph output coming back are converted.
    assert program["converts"] >= 2
    assert program["packed_weight_bytes"] > 0
    with npuc.Toolkit() as tk:
        assert tk.load_blob(blob) == 0
        assert tk.blob_meta["program"] == program
        assert tk.init_runtime() == 0
        got = tk.inference(inputs=reference_inputs(model_path))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


@pytest.mark.skipif(not MODEL_PATHS, reason="shared models not found (set NPUC_SHARED_MODELS)")
def test_program_bytes_are_deterministic(tmp_path: Path) -> None:
    model_path = next(p for p in MODEL_PATHS if p.stem == "mobilenet_v2") if any(
        p.stem == "mobilenet_v2" for p in MODEL_PATHS) else MODEL_PATHS[0]
    a, b = tmp_path / "a.npub", tmp_path / "b.npub"
    build_and_export(model_path, a, quantize=True)
    build_and_export(model_path, b, quantize=True)
    assert a.read_bytes() == b.read_bytes()
    c, d = tmp_path / "c.npub", tmp_path / "d.npub"
    build_and_export(model_path, c, quantize=False)
    build_and_export(model_path, d, quantize=False)
    assert c.read_bytes() == d.read_bytes()
    _, meta = _npuc.load_blob(str(c))
    assert meta["program"]["packed_weight_bytes"] > 0  # FP16 weights packed too


def test_float_blob_without_target_options_still_lowers(conv_relu_path: Path, tmp_path: Path) -> None:
    model = npuc.Model.load(str(conv_relu_path))
    blob = tmp_path / "m.npub"
    options = _npuc.CompileOptions()
    options.quantized = False
    options.op_target = {"relu": "cpu"}
    _npuc.compile_model(model, "rk3566", options).write(str(blob))
    _, meta = _npuc.load_blob(str(blob))
    assert meta["program"]["cpu_ops"] == 1
    # conv on the NPU, relu on the CPU: x in, conv out to the host (the relu's output is the graph's).
    assert meta["program"]["converts"] == 2
    assert meta["program"]["npu_tasks"] == 1
