"""Every shared real model (PyTorch exports with ONNX Runtime reference outputs) runs through the
Toolkit on the FP32 path and matches the reference to 1e-4 (see conftest.rel_error), with and
without host fusion and channels-last regions."""

from __future__ import annotations

import re

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
    # Host fusion folds affine maps into conv weights and recognizes spelled-out activations, as
    # ONNX Runtime's optimizer does: the float arithmetic is reassociated, so the bound is the one
    # against ONNX Runtime (ppocrv4_det's trained 320-node graph moves by 4e-5; the others < 5e-6).
    inputs, _ = load_reference(model_path)
    model = npuc.Model.load(str(model_path))
    fused = npuc.Runtime(model).run(inputs)
    plain = npuc.Runtime(model, host_fusion=False).run(inputs)
    for a, b in zip(fused, plain):
        assert rel_error(a, b.astype(np.float64)) <= TOLERANCE


@pytest.mark.skipif(not MODEL_PATHS, reason="shared models not found (set NPUC_SHARED_MODELS)")
@pytest.mark.parametrize("model_path", MODEL_PATHS, ids=lambda p: getattr(p, "stem", str(p)))
def test_channels_last_regions_match_nchw_and_profile_covers_every_node(model_path: Path) -> None:
    inputs, expected = load_reference(model_path)
    model = npuc.Model.load(str(model_path))
    regions = npuc.Runtime(model)
    nchw = npuc.Runtime(model, channels_last=False)
    got = regions.run(inputs)
    for a, b, want in zip(got, nchw.run(inputs), expected):
        assert rel_error(a, b.astype(np.float64)) <= TOLERANCE
        assert rel_error(a, want) <= TOLERANCE
    rows = regions.profile(inputs, runs=1)
    assert [op for _, op, _ in rows] == _compiled_ops(regions)
    assert all(ms >= 0.0 for _, _, ms in rows) and sum(ms for _, _, ms in rows) > 0.0


def _compiled_ops(runtime: npuc.Runtime) -> List[str]:
    """Op types of the compiled graph's nodes in order, read from its dump ("y: T = domain.Op(...)")."""
    return [re.search(r" = ([\w.]+)\(", line).group(1).split(".")[-1]
            for line in runtime.dump().splitlines() if re.search(r" = [\w.]+\(", line)]


@pytest.mark.skipif(not MODEL_PATHS, reason="shared models not found (set NPUC_SHARED_MODELS)")
def test_model_info_is_consistent() -> None:
    model = npuc.Model.load(str(MODEL_PATHS[0]))
    assert model.num_nodes == sum(model.op_histogram.values())
    assert model.params > 0
    assert model.inputs and model.outputs
