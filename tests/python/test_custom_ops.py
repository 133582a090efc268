"""User-defined ops (Toolkit.reg_custom_op, RKNN's custom operators; npuc.custom_op).

The real-weight case: ppocrv4_det's final Sigmoid (the DB probability map) renamed to a user op,
built in INT8 on the calibration pages, agrees with the same model built with the standard Sigmoid
and with FP32; its blob needs the registration to load, and then runs bit for bit as built. The
small cases pin the contract: what the user's code gets, what it must return, how a mistake is
reported, and that Python ops run from several threads at once (the GIL is taken per call).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, List

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import shared_models_dir

import npuc
import npuc.rknn
from npuc.custom_op import get_node_attr
from npuc.quantize import cosine_similarity

DET_MEAN, DET_STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]


class CstSigmoid:
    op_type = "cstSigmoid"

    def __init__(self) -> None:
        self.calls = 0

    def shape_infer(self, node: Any, in_shapes: List[List[int]], in_dtypes: List[Any]) -> Any:
        return in_shapes.copy(), in_dtypes.copy()

    def compute(self, node: Any, inputs: List[np.ndarray]) -> List[np.ndarray]:
        self.calls += 1
        with np.errstate(over="ignore"):  # exp(-x) of a large negative x is inf: the sigmoid is 0
            return [1.0 / (1.0 + np.exp(-inputs[0]))]


class CstScaleShift:
    """Two outputs and attributes of three kinds, read through get_node_attr."""

    op_type = "cstScaleShift"

    def __init__(self, result: Any = None) -> None:
        self.result = result  # overrides what compute returns (to test the checks)
        self.seen: List[Any] = []

    def shape_infer(self, node: Any, in_shapes: List[List[int]], in_dtypes: List[Any]) -> Any:
        return [in_shapes[0], in_shapes[0]], [in_dtypes[0], np.float32]

    def compute(self, node: Any, inputs: List[np.ndarray]) -> Any:
        self.seen.append((node.name, node.domain, get_node_attr(node, "scale"), get_node_attr(node, "shift"),
                          get_node_attr(node, "mode"), get_node_attr(node, "absent")))
        if self.result is not None:
            return self.result(inputs)
        x = inputs[0] * get_node_attr(node, "scale")
        return [x + get_node_attr(node, "shift")[0], -x]


def _scale_shift_model(path: Path) -> Path:
    node = helper.make_node("cstScaleShift", ["x"], ["y", "z"], name="ss", domain="my.ops", scale=2.0,
                            shift=[1.0, 2.0], mode=b"fast")
    relu = helper.make_node("Relu", ["z"], ["r"])
    graph = helper.make_graph([node, relu], "ss", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("r", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("my.ops", 1)])
    onnx.save(model, str(path))
    return path


def test_the_users_code_gets_the_onnx_node_and_its_outputs_are_checked(tmp_path: Path) -> None:
    op = CstScaleShift()
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4) - 12
    with npuc.Toolkit() as tk:
        tk.reg_custom_op(op)
        tk.load_onnx(str(_scale_shift_model(tmp_path / "ss.onnx")))
        y, r = tk.inference(inputs=[x], data_format="nchw")
    np.testing.assert_array_equal(y, x * 2 + 1)
    np.testing.assert_array_equal(r, np.maximum(-2 * x, 0))
    assert op.seen[0] == ("ss", "my.ops", 2.0, [1.0, 2.0], b"fast", None)


@pytest.mark.parametrize("result, words", [
    (lambda ins: [ins[0]], "must return a list of 2 array(s), got 1"),
    (lambda ins: [ins[0], ins[0][..., :2]], "output 1 has shape [1, 2, 3, 2], but shape_infer gave [1, 2, 3, 4]"),
    (lambda ins: [ins[0], (ins[0] > 0)], "output 1 is bool, but shape_infer gave float32"),
    (lambda ins: [ins[0], 1 // 0], "ZeroDivisionError"),
])
def test_a_wrong_result_or_an_exception_names_the_op_and_node(tmp_path: Path, result: Any, words: str) -> None:
    with npuc.Toolkit() as tk:
        tk.reg_custom_op(CstScaleShift(result))
        tk.load_onnx(str(_scale_shift_model(tmp_path / "ss.onnx")))
        with pytest.raises(npuc.NpucError) as err:
            tk.inference(inputs=[np.zeros((1, 2, 3, 4), np.float32)], data_format="nchw")
    assert "custom op cstScaleShift" in str(err.value) and words in str(err.value), str(err.value)
    assert "ss" in str(err.value)


def test_registration_is_checked_and_an_unregistered_op_is_named(tmp_path: Path) -> None:
    model = _scale_shift_model(tmp_path / "ss.onnx")
    with npuc.Toolkit() as tk:
        with pytest.raises(npuc.UnsupportedOpError, match="my.ops.cstScaleShift.*reg_custom_op"):
            tk.load_onnx(str(model))

        class Sigmoid(CstSigmoid):
            op_type = "Sigmoid"

        with pytest.raises(npuc.ConfigError, match="'Sigmoid' has the name of an op npuc already runs"):
            tk.reg_custom_op(Sigmoid())

        class NoCompute:
            op_type = "cstX"

            def shape_infer(self, node: Any, s: Any, d: Any) -> Any:
                return s, d

        with pytest.raises(npuc.ConfigError, match="needs a 'compute' method"):
            tk.reg_custom_op(NoCompute())
    rknn = npuc.rknn.RKNN()
    assert rknn.reg_custom_op(object()) == -1 and "op_type" in str(rknn.last_error)


def test_python_ops_run_from_several_threads_at_once(tmp_path: Path) -> None:
    """The FP32 runtime releases the GIL while it runs; each custom-op call takes it back."""
    op = CstScaleShift()
    model = npuc.Model.load(str(_scale_shift_model(tmp_path / "ss.onnx")),
                            custom_ops=npuc.custom_op.custom_op_set([op]))
    runtime = npuc.Runtime(model)
    xs = [np.full((1, 2, 3, 4), i, np.float32) for i in range(16)]
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda x: runtime.run([x]), xs))
    for x, (y, r) in zip(xs, outs):
        np.testing.assert_array_equal(y, x * 2 + 1)
    assert len(op.seen) == 16


def _det(tmp_path: Path, custom: bool) -> Path:
    folder = shared_models_dir()
    if folder is None or not (folder / "ppocrv4_det.onnx").is_file():
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    model = onnx.load(str(folder / "ppocrv4_det.onnx"))
    if custom:
        renamed = [n for n in model.graph.node if n.op_type == "Sigmoid"]
        assert len(renamed) == 1  # the DB head's probability map
        renamed[0].op_type = "cstSigmoid"
    path = tmp_path / ("det_custom.onnx" if custom else "det.onnx")
    onnx.save(model, str(path))
    return path


def test_ppocrv4_det_with_its_sigmoid_as_a_user_op_builds_in_int8_and_its_blob_needs_the_op(tmp_path: Path) -> None:
    folder = shared_models_dir()
    custom_model, plain_model = _det(tmp_path, True), _det(tmp_path, False)
    pages = sorted((folder / "ocr_det_calib").glob("*.png"))[:2]
    dataset = tmp_path / "dataset.txt"
    dataset.write_text("".join(f"{p}\n" for p in pages))
    ref = np.load(folder / "ppocrv4_det.ref.npz")
    x = next(ref[k] for k in ref.files if k.startswith("input:"))
    raw = x.transpose(0, 2, 3, 1) * np.array(DET_STD, np.float32) + np.array(DET_MEAN, np.float32)

    outs = {}
    op = CstSigmoid()
    for name, path in (("custom", custom_model), ("plain", plain_model)):
        with npuc.Toolkit() as tk:
            tk.config(target_platform="rk3588", mean_values=[DET_MEAN], std_values=[DET_STD])
            if name == "custom":
                tk.reg_custom_op(op)
            tk.load_onnx(str(path))
            tk.build(do_quantization=True, dataset=str(dataset))
            outs[name] = tk.inference(inputs=[raw], data_format="nhwc")[0]
            if name == "custom":
                cpu_nodes = tk.partition_report["cpu_nodes"]
                tk.export_blob(tmp_path / "det_custom.npub")
    fp32 = ref[next(k for k in ref.files if k.startswith("output:"))]
    assert op.calls >= 3  # calibration samples and the inference all ran the user's code
    cst = [n for n in cpu_nodes if n["op_type"] == "cstSigmoid"]
    assert len(cst) == 1 and "reg_custom_op" in cst[0]["detail"] and not cst[0]["cpu_runtime_lacks"]
    c_custom, c_plain = cosine_similarity(outs["custom"], fp32), cosine_similarity(outs["plain"], fp32)
    print(f"INT8 cosine to FP32: user cstSigmoid (CPU) {c_custom:.5f}, standard Sigmoid (NPU) {c_plain:.5f}")
    assert c_custom >= 0.9 and abs(c_custom - c_plain) < 0.01
    assert cosine_similarity(outs["custom"], outs["plain"]) >= 0.99

    with npuc.Toolkit() as fresh:
        with pytest.raises(npuc.UnsupportedOpError, match="cstSigmoid.*reg_custom_op"):
            fresh.load_blob(tmp_path / "det_custom.npub")
    with npuc.Toolkit() as fresh:
        fresh.reg_custom_op(CstSigmoid())
        fresh.load_blob(tmp_path / "det_custom.npub")
        loaded = fresh.inference(inputs=[raw], data_format="nhwc")[0]
        with pytest.raises(npuc.NotSupportedError, match="custom op.*cstSigmoid"):
            fresh.codegen(tmp_path / "cg")
    assert np.array_equal(loaded, outs["custom"])
    assert not (tmp_path / "cg").exists()
