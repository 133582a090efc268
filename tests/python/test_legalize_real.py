"""legalize_conv_stride on a real export: tiny_vit's patch embedding (Conv 8x8, stride 8) is beyond
RK3588's NPU strides (1-7). Toolkit.build for rk3588 turns it into SpaceToDepth + a Conv 4x4/4, so
the whole model runs on the NPU (before: one CPU node and one hand-over), and the INT8 build's
outputs are bit-identical to the build without the pass (same quantized weights, the SpaceToDepth
keeps its input's scale, and int32 sums do not depend on their order). The blob round trip keeps it."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import List, Tuple

import numpy as np
import pytest

import npuc
from conftest import shared_models_dir


@pytest.fixture(scope="module")
def tiny_vit() -> Tuple[Path, np.ndarray, np.ndarray]:
    folder = shared_models_dir()
    if folder is None:
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    ref = np.load(folder / "tiny_vit.ref.npz")
    return folder / "tiny_vit.onnx", ref["input:input"], ref["output:output"]


def _build(model: Path, x: np.ndarray, disabled: List[str], quantize: bool) -> npuc.Toolkit:
    tk = npuc.Toolkit()
    with contextlib.redirect_stdout(io.StringIO()):
        tk.config(target_platform="rk3588", disable_passes=disabled)
        tk.load_onnx(model=str(model))
        tk.build(do_quantization=quantize, dataset=[x] if quantize else None)
    return tk


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a.ravel(), b.ravel()) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_patch_embedding_moves_to_the_npu_and_int8_is_bit_identical(tiny_vit, tmp_path: Path) -> None:
    model, x, want = tiny_vit
    before = _build(model, x, ["legalize_conv_stride"], quantize=True)
    after = _build(model, x, [], quantize=True)
    assert [n for n in before.partition_report["cpu_nodes"]], "the patch Conv starts on the CPU"
    assert "stride" in before.partition_report["text"]
    assert after.partition_report["cpu_nodes"] == []
    assert after.partition_report["handovers"] == 0
    assert after.partition_report["npu_mac_share"] == 1.0
    assert dict(after.optimization_report["fired"]).get("legalize_conv_stride") == 1
    y_before, y_after = before.inference(inputs=[x])[0], after.inference(inputs=[x])[0]
    np.testing.assert_array_equal(y_after, y_before)
    assert _cosine(y_after, want) > 0.999

    blob = tmp_path / "tiny_vit.npub"
    after.export_blob(str(blob))
    loaded = npuc.Toolkit()
    with contextlib.redirect_stdout(io.StringIO()):
        loaded.load_blob(str(blob))
    np.testing.assert_array_equal(loaded.inference(inputs=[x])[0], y_after)
    rows = loaded.eval_perf(is_print=False).rows
    assert {r["Target"] for r in rows} == {"NPU"}
    for tk in (before, after, loaded):
        tk.release()


def test_float_build_matches_onnx_runtime_reference(tiny_vit) -> None:
    model, x, want = tiny_vit
    tk = _build(model, x, [], quantize=False)
    assert tk.partition_report["cpu_nodes"] == []
    assert _cosine(tk.inference(inputs=[x])[0], want) > 0.9999  # the FP16 build
    tk.release()
