"""Every shared real model (PyTorch exports with ONNX Runtime reference outputs) runs through the
Toolkit on the FP32 path and matches the reference to 1e-4 (see conftest.rel_error), with and
without host fusion."""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import numpy as np
import pytest

import npuc
from conftest import rel_error, shared_models_dir

TOLERANCE = 1e-4

MODELS_DIR = shared_models_dir()
MODEL_PATHS = sorted(MODELS_DIR.glob("*.onnx")) if MODELS_DIR else []


def load_reference(model_path: Path) -> Tuple[List[np.ndarray], List[np.ndarray]]:
    ref = np.load(model_path.with_suffix(".ref.npz"))
    inputs = [ref[k] for k in ref.files if k.startswith("input:")]
    outputs = [ref[k] for k in ref.files if k.startswith("output:")]
    return inputs, outputs


@pytest.mark.skipif(not MODEL_PATHS, reason="shared models not found (set NPUC_SHARED_MODELS)")
@pytest.mark.parametrize("model_path", MODEL_PATHS, ids=lambda p: getattr(p, "stem", str(p)))
def test_toolkit_matches_onnxruntime(model_path: Path) -> None:
    inputs, expected = load_reference(model_path)
    with npuc.Toolkit() as tk:
        assert tk.load_onnx(model=str(model_path)) == 0
        outputs = tk.inference(inputs=inputs)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.shape == want.shape
        assert got.dtype == want.dtype
        assert rel_error(got, want) <= TOLERANCE


@pytest.mark.skipif(not MODEL_PATHS, reason="shared models not found (set NPUC_SHARED_MODELS)")
@pytest.mark.parametrize("model_path", MODEL_PATHS, ids=lambda p: getattr(p, "stem", str(p)))
def test_host_fusion_does_not_change_results(model_path: Path) -> None:
    inputs, _ = load_reference(model_path)
    model = npuc.Model.load(str(model_path))
    fused = npuc.Runtime(model).run(inputs)
    plain = npuc.Runtime(model, host_fusion=False).run(inputs)
    for a, b in zip(fused, plain):
        assert rel_error(a, b.astype(np.float64)) <= 1e-5


@pytest.mark.skipif(not MODEL_PATHS, reason="shared models not found (set NPUC_SHARED_MODELS)")
def test_model_info_is_consistent() -> None:
    model = npuc.Model.load(str(MODEL_PATHS[0]))
    assert model.num_nodes == sum(model.op_histogram.values())
    assert model.params > 0
    assert model.inputs and model.outputs
