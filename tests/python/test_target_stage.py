"""The target stage of Toolkit.build (config(target_platform)): rewrites that keep ops on the NPU.

legalize_conv_stride on a real export: tiny_vit's patch embedding (Conv 8x8, stride 8) is beyond
RK3588's NPU strides (1-7). Toolkit.build for rk3588 turns it into SpaceToDepth + a Conv 4x4/4, so
the whole model runs on the NPU (before: one CPU node and one hand-over), and, quantized from the
same activation ranges, its INT8 outputs are bit-identical to the model without the pass (same
quantized weights, the SpaceToDepth keeps its input's scale, and int32 sums do not depend on their
order). Two separate INT8 builds are not: each calibrates its own FP32 graph, and the two conv forms
sum in different orders, so 38 of the 46 activation ranges they share differ in the last bits
(measured), which can move an output by one quantization step. The blob round trip keeps it.

reduce_transpose_rank on the attention block of issue #24, written with onnx.helper: the rank-5
head split of a [1, 40, 360] tensor into q/k/v of 8 heads of 15 runs with no CPU op."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import List, Tuple

import numpy as np
import pytest

import onnx
from onnx import TensorProto, helper, numpy_helper

import npuc
from conftest import shared_models_dir
from npuc._npuc import quantize_from_ranges
from npuc.quantize import calibrate


@pytest.fixture(scope="module")
def tiny_vit() -> Tuple[Path, np.ndarray, np.ndarray]:
    folder = shared_models_dir()
    if folder is None:
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    ref = np.load(folder / "tiny_vit.ref.npz")
    return folder / "tiny_vit.onnx", ref["input:input"], ref["output:output"]


def _build(model: Path, x: np.ndarray, disabled: List[str], quantize: bool, soc: str = "rk3588") -> npuc.Toolkit:
    tk = npuc.Toolkit()
    with contextlib.redirect_stdout(io.StringIO()):
        tk.config(target_platform=soc, disable_passes=disabled)
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
    assert _cosine(y_after, want) > 0.999
    step = float(np.ptp(y_before)) / 255  # one step of the output's asymmetric int8 scale
    assert np.abs(y_after - y_before).max() <= step * 1.01, "separate calibrations: at most one step apart"

    # With the same ranges (those of the model without the pass) the two are bit-identical.
    plain, legal = _build(model, x, ["legalize_conv_stride"], False), _build(model, x, [], False)
    ranges = calibrate(plain._model, [x])[0].ranges()
    legal_ranges = calibrate(legal._model, [x])[0].ranges()
    # The rewrite renames the conv output; SpaceToDepth moves the input's values, so its range.
    renamed = {"/patch/Conv/Conv_out0": ranges["/patch/Conv_output_0"],
               "/patch/Conv/SpaceToDepth_out0": ranges["input"]}
    assert set(legal_ranges) == (set(ranges) - {"/patch/Conv_output_0"}) | set(renamed)
    y_plain = quantize_from_ranges(plain._model, ranges).run([x])[0]
    y_legal = quantize_from_ranges(legal._model, {**ranges, **renamed}).run([x])[0]
    np.testing.assert_array_equal(y_legal, y_plain)

    blob = tmp_path / "tiny_vit.npub"
    after.export_blob(str(blob))
    loaded = npuc.Toolkit()
    with contextlib.redirect_stdout(io.StringIO()):
        loaded.load_blob(str(blob))
    np.testing.assert_array_equal(loaded.inference(inputs=[x])[0], y_after)
    rows = loaded.eval_perf(is_print=False).rows
    assert {r["Target"] for r in rows} == {"NPU"}
    for tk in (before, after, loaded, plain, legal):
        tk.release()


def test_float_build_matches_onnx_runtime_reference(tiny_vit) -> None:
    model, x, want = tiny_vit
    tk = _build(model, x, [], quantize=False)
    assert tk.partition_report["cpu_nodes"] == []
    assert _cosine(tk.inference(inputs=[x])[0], want) > 0.9999  # the FP16 build
    tk.release()


def _attention_block() -> onnx.ModelProto:
    """x[1, 40, 360] -> q, k, v of 8 heads of 15 (rank-5 Reshape + Transpose (2, 0, 3, 1, 4), as
    PyTorch's MultiheadAttention export writes it) -> softmax(q k^T / sqrt(15)) v -> [1, 40, 120]."""
    def i64(name: str, values: List[int]) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(values, np.int64), name)

    inits = [i64("split_shape", [1, 40, 3, 8, 15]), i64("merged_shape", [1, 40, 120]),
             numpy_helper.from_array(np.array(1 / np.sqrt(15), np.float32), "scale")]
    inits += [numpy_helper.from_array(np.array(i, np.int64), f"i{i}") for i in range(3)]
    nodes = [helper.make_node("Reshape", ["x", "split_shape"], ["split"], name="split"),
             helper.make_node("Transpose", ["split"], ["heads"], name="qkv_transpose", perm=[2, 0, 3, 1, 4])]
    nodes += [helper.make_node("Gather", ["heads", f"i{i}"], [n], name=f"take_{n}", axis=0)
              for i, n in enumerate("qkv")]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], name="k_transpose", perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["qk"], name="scores"),
              helper.make_node("Mul", ["qk", "scale"], ["scaled"], name="scale_scores"),
              helper.make_node("Softmax", ["scaled"], ["attn"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["attn", "v"], ["ctx"], name="context"),
              helper.make_node("Transpose", ["ctx"], ["merged"], name="merge_heads", perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["merged", "merged_shape"], ["y"], name="merge")]
    graph = helper.make_graph(nodes, "attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 40, 360])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 40, 120])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_attention_head_split_runs_with_no_cpu_op(tmp_path: Path) -> None:
    path = tmp_path / "attention.onnx"
    onnx.save(_attention_block(), str(path))
    x = np.random.default_rng(0).standard_normal((1, 40, 360)).astype(np.float32)
    want = npuc.Runtime(npuc.Model.load(str(path))).run([x])[0]
    before = _build(path, x, ["reduce_transpose_rank"], quantize=False)
    assert any("rank 5" in line for line in before.partition_report["text"].splitlines())
    assert before.partition_report["handovers"] >= 1
    for quantize in (False, True):
        after = _build(path, x, [], quantize=quantize)
        assert after.partition_report["cpu_nodes"] == [], after.partition_report["text"]
        assert after.partition_report["handovers"] == 0
        assert _cosine(after.inference(inputs=[x])[0], want) > (0.99 if quantize else 0.9999)
        after.release()
    before.release()
