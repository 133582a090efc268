"""The detection ops of issue #22 on a real-shaped model and against ONNX Runtime.

The model is a small two-stage detector head built with onnx.helper: a conv feature map
1x64x32x32, box deltas and class scores from 1x1 convs, boxes decoded from anchors (1024 boxes,
3 classes), NonMaxSuppression on them (its selection a graph output: a *bounded* output, see
docs/ops_detect.md), and RoiAlign of 6 ROIs (a graph input) on the feature map followed by a
conv + FC head.

Measured (seed 0, ORT 1.30 node): FP32 selection identical to ORT (the same rows, in the same
order); decoded boxes max abs error 7.6e-6 (|x| <= 36), RoiAlign features 4.9e-6 (|x| <= 3.9),
head logits 1.2e-6: we assert 1e-4 abs + 1e-4 rel. INT8 on rk3588 (4 calibration samples):
cosine vs FP32 boxes 0.99999, RoiAlign features 0.9995, logits 0.998: we assert 0.99, the
floor the repo's other INT8 CNN tests use for a few-conv model. The INT8 selection is NOT
asserted equal: the class scores leave an int8 Sigmoid in steps of 1/256, so scores tie and
near-threshold boxes cross over; the test prints how many FP32 rows INT8 keeps.

Skipped (with the reason) only when node or onnxruntime-node is absent.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import List

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import ort_outputs as _run_ort

import npuc
from npuc.quantize import quantize

ATOL = 1e-4
RTOL = 1e-4
MIN_INT8_COSINE = 0.99
H = W = 32
C = 64
K = 3
ROIS = np.array(
    [[2, 3, 12, 14], [0, 0, 31, 31], [10.5, 4.2, 20.7, 30], [5, 5, 6, 6], [20, 20, 31.5, 31.5], [1, 17, 9, 29]],
    np.float32,
)


def _detector_head(seed: int = 0) -> onnx.ModelProto:
    r = np.random.default_rng(seed)
    inits = []

    def const(name: str, arr) -> None:
        inits.append(numpy_helper.from_array(np.asarray(arr), name))

    const("w0", (r.standard_normal((C, 3, 3, 3)) * 0.3).astype(np.float32))
    const("b0", (r.standard_normal(C) * 0.1).astype(np.float32))
    const("wb", (r.standard_normal((4, C, 1, 1)) * 0.05).astype(np.float32))
    const("bb", np.zeros(4, np.float32))
    const("wc", (r.standard_normal((K, C, 1, 1)) * 0.15).astype(np.float32))
    const("bc", np.array([-1.0, -1.5, -2.0], np.float32))
    ys, xs = np.meshgrid(np.arange(H, dtype=np.float32) + 0.5, np.arange(W, dtype=np.float32) + 0.5, indexing="ij")
    const("anchor_c", np.stack([ys.ravel(), xs.ravel()], 1)[None].astype(np.float32))  # [1,HW,2] (cy, cx)
    const("anchor_s", np.full((1, H * W, 2), 3.0, np.float32))
    const("shape_box", np.array([1, 4, H * W], np.int64))
    const("shape_cls", np.array([1, K, H * W], np.int64))
    const("split2", np.array([2, 2], np.int64))
    const("half", np.array(0.5, np.float32))
    const("max_out", np.array([20], np.int64))
    const("iou", np.array([0.4], np.float32))
    const("score", np.array([0.5], np.float32))
    const("bidx", np.zeros(len(ROIS), np.int64))
    const("w1", (r.standard_normal((32, C, 3, 3)) * 0.05).astype(np.float32))
    const("b1", np.zeros(32, np.float32))
    const("wf", (r.standard_normal((10, 32 * 7 * 7)) * 0.02).astype(np.float32))
    const("bf", np.zeros(10, np.float32))
    n = helper.make_node
    nodes = [
        n("Conv", ["image", "w0", "b0"], ["f0"], pads=[1, 1, 1, 1]),
        n("Relu", ["f0"], ["feat"]),
        n("Conv", ["feat", "wb", "bb"], ["delta4"]),
        n("Reshape", ["delta4", "shape_box"], ["delta3"]),
        n("Transpose", ["delta3"], ["delta"], perm=[0, 2, 1]),  # [1,HW,4]: dy, dx, dh, dw
        n("Split", ["delta", "split2"], ["dyx", "dhw"], axis=2),
        n("Mul", ["dyx", "anchor_s"], ["off"]),
        n("Add", ["anchor_c", "off"], ["ctr"]),
        n("Exp", ["dhw"], ["ehw"]),
        n("Mul", ["ehw", "anchor_s"], ["size"]),
        n("Mul", ["size", "half"], ["hsize"]),
        n("Sub", ["ctr", "hsize"], ["p1"]),
        n("Add", ["ctr", "hsize"], ["p2"]),
        n("Concat", ["p1", "p2"], ["boxes"], axis=2),  # [1,HW,4]: y1, x1, y2, x2
        n("Conv", ["feat", "wc", "bc"], ["logit4"]),
        n("Reshape", ["logit4", "shape_cls"], ["logit"]),
        n("Sigmoid", ["logit"], ["scores"]),
        n("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score"], ["selected"]),
        n("RoiAlign", ["feat", "rois", "bidx"], ["pooled"], output_height=7, output_width=7, sampling_ratio=2),
        n("Conv", ["pooled", "w1", "b1"], ["h1"], pads=[1, 1, 1, 1]),
        n("Relu", ["h1"], ["h2"]),
        n("Flatten", ["h2"], ["h3"]),
        n("Gemm", ["h3", "wf", "bf"], ["cls"], transB=1),
    ]
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "two_stage_head",
        [helper.make_tensor_value_info("image", f32, [1, 3, H, W]), helper.make_tensor_value_info("rois", f32, [len(ROIS), 4])],
        [
            helper.make_tensor_value_info("selected", TensorProto.INT64, ["num_selected", 3]),
            helper.make_tensor_value_info("boxes", f32, [1, H * W, 4]),
            helper.make_tensor_value_info("pooled", f32, [len(ROIS), C, 7, 7]),
            helper.make_tensor_value_info("cls", f32, [len(ROIS), 10]),
        ],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    onnx.checker.check_model(model)
    return model


def _image(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 3, H, W)).astype(np.float32)


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def head_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("detect") / "head.onnx"
    onnx.save(_detector_head(), path)
    return path


def _fp32(path: Path, feeds: List[np.ndarray]) -> List[np.ndarray]:
    with npuc.Toolkit() as tk, contextlib.redirect_stdout(io.StringIO()):
        tk.load_onnx(model=str(path))
        return tk.inference(feeds)


def test_detector_head_fp32_matches_onnxruntime(head_path: Path) -> None:
    img = _image(1)
    ort = _run_ort(head_path, {"image": img, "rois": ROIS})
    got = _fp32(head_path, [img, ROIS])
    bound = 1 * K * 20
    print(f"\nNMS: {len(got[0])} rows selected (bound {bound}); ORT {len(ort[0])}")
    assert got[0].dtype == np.int64 and got[0].shape[1] == 3
    assert 0 < len(got[0]) < bound, "the test must exercise the trimming of a bounded output"
    np.testing.assert_array_equal(got[0], ort[0])
    for name, g, o in zip(("boxes", "pooled", "cls"), got[1:], ort[1:]):
        err = np.abs(g - o)
        print(f"{name}: max abs {err.max():.3g}, max rel {(err / np.maximum(np.abs(o), 1e-6)).max():.3g} (|x| <= {np.abs(o).max():.3g})")
        np.testing.assert_allclose(g, o, rtol=RTOL, atol=ATOL)


def test_detector_head_int8_rk3588(head_path: Path, tmp_path: Path) -> None:
    img = _image(1)
    fp32 = _fp32(head_path, [img, ROIS])
    dataset = [[_image(10 + i), ROIS] for i in range(4)]
    with npuc.Toolkit() as tk, contextlib.redirect_stdout(io.StringIO()) as log:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(head_path))
        assert tk.build(do_quantization=True, dataset=dataset) == 0
        q = tk.inference([img, ROIS])
        rows = tk.eval_perf(is_print=False).rows
        tk.export_blob(tmp_path / "head.npub")
    with npuc.Toolkit() as rt, contextlib.redirect_stdout(io.StringIO()):
        rt.load_blob(tmp_path / "head.npub")
        from_blob = rt.inference([img, ROIS])
    for a, b in zip(q, from_blob):  # the program runtime trims the bounded output the same way
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    fp32_rows = {tuple(r) for r in fp32[0].tolist()}
    q_rows = {tuple(int(v) for v in r) for r in q[0].tolist()}
    print(f"\nINT8 NMS selection unchanged: {fp32_rows == q_rows and len(q[0]) == len(fp32[0])} "
          f"({len(fp32_rows & q_rows)} of {len(fp32_rows)} FP32 rows kept, {len(q_rows)} INT8 rows)")
    assert q[0].shape[1] == 3 and len(q[0]) <= K * 20
    for name, f, g in zip(("boxes", "pooled", "cls"), fp32[1:], q[1:]):
        cos = _cosine(f, g)
        print(f"INT8 cosine {name}: {cos:.5f}")
        assert cos >= MIN_INT8_COSINE, f"{name}: {cos}"
    partition = [line for line in log.getvalue().splitlines() if line.startswith("Partition for")]
    print(partition[0] if partition else "no partition line")
    targets = {r["FullName"]: (r["Target"], r["Time(us)"]) for r in rows}
    npu = sum(1 for t, _ in targets.values() if t == "NPU")
    cpu = [(name, us) for name, (t, us) in targets.items() if t == "CPU"]
    print(f"eval_perf rk3588: {npu} NPU rows, CPU rows {cpu}")
    assert {name for name, _ in cpu} == {"NonMaxSuppression_0", "RoiAlign_0"}
    assert all(us > 0 for _, us in cpu)


def test_simulator_reference_and_fast_paths_agree_bitwise(head_path: Path) -> None:
    model = npuc.Model.from_bytes(head_path.read_bytes())
    samples = [[_image(10 + i), ROIS] for i in range(3)]
    fast = quantize(model, samples)
    ref = quantize(model, samples, reference=True)
    for a, b in zip(fast.run([_image(1), ROIS]), ref.run([_image(1), ROIS])):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


def _single_op_model(node: onnx.NodeProto, inputs, outputs, inits=()) -> bytes:
    graph = helper.make_graph([node], "op", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]).SerializeToString()


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_matches_onnxruntime(mode: str, padding: str, align: int, tmp_path: Path) -> None:
    r = np.random.default_rng(3)
    x = r.standard_normal((2, 3, 5, 7)).astype(np.float32)
    grid = r.uniform(-1.6, 1.6, (2, 4, 6, 2)).astype(np.float32)  # also outside [-1, 1]
    f32 = TensorProto.FLOAT
    data = _single_op_model(
        helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding, align_corners=align),
        [helper.make_tensor_value_info("x", f32, x.shape), helper.make_tensor_value_info("g", f32, grid.shape)],
        [helper.make_tensor_value_info("y", f32, [2, 3, 4, 6])],
    )
    (tmp_path / "m.onnx").write_bytes(data)
    want = _run_ort(tmp_path / "m.onnx", {"x": x, "g": grid})[0]
    got = npuc.Runtime(npuc.Model.from_bytes(data)).run([x, grid])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("sampling", [0, 3])
def test_roi_align_matches_onnxruntime(mode: str, ctm: str, sampling: int, tmp_path: Path) -> None:
    r = np.random.default_rng(4)
    x = r.standard_normal((2, 4, 9, 11)).astype(np.float32)
    rois = np.array([[0, 0, 8, 6], [1.5, 2.2, 10.9, 8.7], [-2, -1, 3, 4], [4, 4, 4.5, 4.2], [0, 0, 40, 40]], np.float32)
    bidx = np.array([0, 1, 1, 0, 1], np.int64)
    f32 = TensorProto.FLOAT
    data = _single_op_model(
        helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"], mode=mode, coordinate_transformation_mode=ctm,
                         sampling_ratio=sampling, output_height=3, output_width=4, spatial_scale=0.8),
        [helper.make_tensor_value_info("x", f32, x.shape), helper.make_tensor_value_info("rois", f32, rois.shape),
         helper.make_tensor_value_info("b", TensorProto.INT64, bidx.shape)],
        [helper.make_tensor_value_info("y", f32, [5, 4, 3, 4])],
    )
    (tmp_path / "m.onnx").write_bytes(data)
    want = _run_ort(tmp_path / "m.onnx", {"x": x, "rois": rois, "b": bidx})[0]
    got = npuc.Runtime(npuc.Model.from_bytes(data)).run([x, rois, bidx])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_roi_align_opset10_means_output_half_pixel(tmp_path: Path) -> None:
    r = np.random.default_rng(6)
    x = r.standard_normal((1, 2, 6, 6)).astype(np.float32)
    rois = np.array([[0.3, 0.2, 4.1, 3.7], [1, 1, 1.5, 1.2]], np.float32)
    bidx = np.zeros(2, np.int64)
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"], output_height=2, output_width=3)],
        "roi10",
        [helper.make_tensor_value_info("x", f32, x.shape), helper.make_tensor_value_info("rois", f32, rois.shape),
         helper.make_tensor_value_info("b", TensorProto.INT64, bidx.shape)],
        [helper.make_tensor_value_info("y", f32, [2, 2, 2, 3])],
    )
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)]).SerializeToString()
    (tmp_path / "m.onnx").write_bytes(data)
    want = _run_ort(tmp_path / "m.onnx", {"x": x, "rois": rois, "b": bidx})[0]
    got = npuc.Runtime(npuc.Model.from_bytes(data)).run([x, rois, bidx])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_nonzero_on_computed_data_is_trimmed(tmp_path: Path) -> None:
    x = np.random.default_rng(5).standard_normal((3, 4, 5)).astype(np.float32)
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["idx"])],
        "nz",
        [helper.make_tensor_value_info("x", f32, x.shape)],
        [helper.make_tensor_value_info("idx", TensorProto.INT64, [3, "n"])],
    )
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]).SerializeToString()
    (tmp_path / "m.onnx").write_bytes(data)
    want = _run_ort(tmp_path / "m.onnx", {"x": x})[0]
    rt = npuc.Runtime(npuc.Model.from_bytes(data))
    assert rt.outputs[0]["shape"] == (3, 60)  # the bound: numel columns
    got = rt.run([x])[0]
    np.testing.assert_array_equal(got, want)


def test_compress_with_constant_condition_runs_on_computed_input() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    cond = numpy_helper.from_array(np.array([True, False, True]), "c")
    f32 = TensorProto.FLOAT
    data = _single_op_model(
        helper.make_node("Compress", ["x", "c"], ["y"], axis=1),
        [helper.make_tensor_value_info("x", f32, x.shape)],
        [helper.make_tensor_value_info("y", f32, None)],
        [cond],
    )
    got = npuc.Runtime(npuc.Model.from_bytes(data)).run([x])[0]
    np.testing.assert_array_equal(got, np.compress([True, False, True], x, axis=1))


def test_bounded_output_read_by_a_node_is_refused() -> None:
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            helper.make_node("NonMaxSuppression", ["boxes", "scores", "m"], ["sel"]),
            helper.make_node("Cast", ["sel"], ["self"], to=TensorProto.FLOAT),
        ],
        "nms_consumer",
        [helper.make_tensor_value_info("boxes", f32, [1, 8, 4]), helper.make_tensor_value_info("scores", f32, [1, 2, 8])],
        [helper.make_tensor_value_info("self", f32, None)],
        [numpy_helper.from_array(np.array([3], np.int64), "m")],
    )
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]).SerializeToString()
    with pytest.raises(npuc.UnsupportedOpError, match=r"NonMaxSuppression.*data-dependent size.*Cast"):
        npuc.Runtime(npuc.Model.from_bytes(data))
    with pytest.raises(npuc.UnsupportedOpError, match=r"NonMaxSuppression.*data-dependent size.*Cast"):
        npuc._npuc.fp16_model(npuc.Model.from_bytes(data))  # the simulator refuses it too
