"""Models for config(dynamic_input) (tests/python/test_dynamic_input.py, bench/dynamic_input.py):
a shared model with its H and W made dynamic again, and a small CRNN-style text recognizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

import numpy as np


def free_hw(src: Path, dst: Path) -> Path:
    """`src` with its inputs' H and W dynamic (the exporter's form before the copy fixed them)."""
    import onnx

    model = onnx.load(str(src))
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        for k, name in ((2, "h"), (3, "w")):
            dims[k].ClearField("dim_value")
            dims[k].dim_param = name
    del model.graph.value_info[:]
    for value in model.graph.output:
        for d in value.type.tensor_type.shape.dim[2:]:
            d.ClearField("dim_value")
            d.dim_param = "?"
    onnx.save(model, str(dst))
    return dst


def crnn_model(path: Path) -> Path:
    """A small CRNN-style recognizer: conv stack over a 48-high text line, C*H folded into the
    feature axis by a width-agnostic Reshape, then a per-time-step classifier (MatMul + Add)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)

    def const(name: str, shape: List[int], scale: float) -> Any:
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [const("w1", [8, 3, 3, 3], 0.3), const("b1", [8], 0.1), const("w2", [16, 8, 3, 3], 0.15),
             const("b2", [16], 0.1), const("w3", [16, 16, 3, 3], 0.1), const("b3", [16], 0.1),
             const("fc", [16 * 6, 37], 0.1), const("fcb", [37], 0.1),
             numpy_helper.from_array(np.array([0, 16 * 6, -1], np.int64), "seq_shape")]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1], strides=[2, 1]),
        helper.make_node("Relu", ["c3"], ["r3"]),  # [1, 16, 6, W/4]
        helper.make_node("Reshape", ["r3", "seq_shape"], ["seq"]),  # [1, 96, W/4]
        helper.make_node("Transpose", ["seq"], ["steps"], perm=[0, 2, 1]),  # [1, W/4, 96]
        helper.make_node("MatMul", ["steps", "fc"], ["logits0"]),
        helper.make_node("Add", ["logits0", "fcb"], ["logits"]),  # [1, W/4, 37]
    ]
    graph = helper.make_graph(nodes, "crnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 48, "w"])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path
