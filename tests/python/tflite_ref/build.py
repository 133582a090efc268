"""Writing models from scratch or from another: :class:`GraphBuilder` (single-op models for the
frontend tests), :func:`with_outputs` (intermediate tensors made graph outputs, since Arm NN returns
graph outputs only) and :func:`write_small_float_model` (a small CNN for fast INT8 tests).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional, Sequence

import numpy as np

from .flatbuf import read_model, write_model
from .rewrite import _add_tensor, _opcode_index
from .schema import FLOAT32, INT32, OPS, TENSOR_TYPES, UNIONS, Table

class GraphBuilder:
    """A one-subgraph TFLite model as the dicts :func:`write_model` takes."""

    def __init__(self, description: str = "npuc tflite_reference") -> None:
        self.model: Table = {"version": 3, "operator_codes": [], "description": description.encode(),
                             "buffers": [{}], "subgraphs": [{"tensors": [], "operators": [], "name": b"main"}]}
        self.sg: Table = self.model["subgraphs"][0]

    def tensor(self, name: str, shape: Sequence[int], ttype: int = FLOAT32, data: Optional[np.ndarray] = None,
               quant: Optional[Table] = None) -> int:
        raw = None if data is None else np.ascontiguousarray(data, TENSOR_TYPES[ttype]).tobytes()
        return _add_tensor(self.model, self.sg, name, shape, ttype, raw, quant)

    def op(self, code: str, inputs: Sequence[int], outputs: Sequence[int], options: Optional[str] = None,
           **fields: Any) -> None:
        op: Table = {"opcode_index": _opcode_index(self.model, OPS[code]),
                     "inputs": np.asarray(inputs, "<i4"), "outputs": np.asarray(outputs, "<i4")}
        if options is not None:
            op["builtin_options_type"] = UNIONS["BuiltinOptions"].index(options)
            op["builtin_options"] = dict(fields)
        self.sg["operators"].append(op)

    def custom_op(self, custom_code: str, inputs: Sequence[int], outputs: Sequence[int], options: bytes) -> None:
        codes = self.model["operator_codes"]
        code = {"deprecated_builtin_code": OPS["CUSTOM"], "custom_code": custom_code.encode(),
                "builtin_code": OPS["CUSTOM"]}
        if code not in codes:
            codes.append(code)
        self.sg["operators"].append({"opcode_index": codes.index(code), "inputs": np.asarray(inputs, "<i4"),
                                     "outputs": np.asarray(outputs, "<i4"), "custom_options": bytes(options)})

    def finish(self, inputs: Sequence[int], outputs: Sequence[int]) -> Table:
        self.sg["inputs"] = np.asarray(inputs, "<i4")
        self.sg["outputs"] = np.asarray(outputs, "<i4")
        return self.model


def with_outputs(src: "str | Path", dst: "str | Path", names: Sequence[str]) -> None:
    """Copy of `src` whose graph outputs are its own outputs plus the tensors `names` (e.g. the
    logits before a final LOGISTIC, or every activation for calibration): Arm NN returns only graph
    outputs."""
    m = read_model(src)
    sg = m["subgraphs"][0]
    index = {t["name"].decode(): i for i, t in enumerate(sg["tensors"])}
    unknown = [n for n in names if n not in index]
    if unknown:
        raise KeyError(f"{src}: no tensors named {unknown}")
    outs = [int(i) for i in sg["outputs"]]
    sg["outputs"] = np.asarray(outs + [index[n] for n in names if index[n] not in outs], "<i4")
    write_model(m, dst)


def write_small_float_model(path: "str | Path", seed: int = 0) -> Dict[str, Any]:
    """A small float32 TFLite CNN with deterministic He-scaled random weights, for INT8 tests that
    must be fast (quantizing hand_landmark_lite takes ~15 s of Arm NN CpuRef time):
    input [1,32,32,3] -> CONV 3x3/2 (8, RELU6) -> DEPTHWISE 3x3 (RELU) -> CONV 1x1 (8) -> ADD
    (residual) -> MAX_POOL 2x2 -> CONV 3x3 (16, RELU) -> MEAN over H,W -> RESHAPE -> FULLY_CONNECTED
    (10) = output "logits" [1,10]. Returns the input/output names and shapes."""
    rng = np.random.default_rng(seed)

    def he(shape: Sequence[int], fan_in: int) -> np.ndarray:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def bias(n: int) -> np.ndarray:
        return (rng.standard_normal(n) * 0.1).astype(np.float32)

    g = GraphBuilder("npuc tflite_reference small CNN")
    x = g.tensor("input", [1, 32, 32, 3])
    c1 = g.tensor("conv1", [1, 16, 16, 8])
    g.op("CONV_2D", [x, g.tensor("conv1/w", [8, 3, 3, 3], data=he([8, 3, 3, 3], 27)),
                     g.tensor("conv1/b", [8], data=bias(8))], [c1], "Conv2DOptions",
         padding=0, stride_w=2, stride_h=2, fused_activation_function=3)
    d1 = g.tensor("dw1", [1, 16, 16, 8])
    g.op("DEPTHWISE_CONV_2D", [c1, g.tensor("dw1/w", [1, 3, 3, 8], data=he([1, 3, 3, 8], 9)),
                               g.tensor("dw1/b", [8], data=bias(8))], [d1], "DepthwiseConv2DOptions",
         padding=0, stride_w=1, stride_h=1, depth_multiplier=1, fused_activation_function=1)
    p1 = g.tensor("pw1", [1, 16, 16, 8])
    g.op("CONV_2D", [d1, g.tensor("pw1/w", [8, 1, 1, 8], data=he([8, 1, 1, 8], 8)),
                     g.tensor("pw1/b", [8], data=bias(8))], [p1], "Conv2DOptions",
         padding=1, stride_w=1, stride_h=1)
    a1 = g.tensor("add1", [1, 16, 16, 8])
    g.op("ADD", [p1, c1], [a1], "AddOptions")
    m1 = g.tensor("pool1", [1, 8, 8, 8])
    g.op("MAX_POOL_2D", [a1], [m1], "Pool2DOptions", padding=1, stride_w=2, stride_h=2,
         filter_width=2, filter_height=2)
    c2 = g.tensor("conv2", [1, 8, 8, 16])
    g.op("CONV_2D", [m1, g.tensor("conv2/w", [16, 3, 3, 8], data=he([16, 3, 3, 8], 72)),
                     g.tensor("conv2/b", [16], data=bias(16))], [c2], "Conv2DOptions",
         padding=0, stride_w=1, stride_h=1, fused_activation_function=1)
    gm = g.tensor("mean", [1, 1, 1, 16])
    g.op("MEAN", [c2, g.tensor("mean/axis", [2], INT32, np.array([1, 2]))], [gm], "ReducerOptions", keep_dims=True)
    r = g.tensor("flat", [1, 16])
    g.op("RESHAPE", [gm, g.tensor("flat/shape", [2], INT32, np.array([1, 16]))], [r], "ReshapeOptions",
         new_shape=np.array([1, 16], "<i4"))
    y = g.tensor("logits", [1, 10])
    g.op("FULLY_CONNECTED", [r, g.tensor("fc/w", [10, 16], data=he([10, 16], 16)),
                             g.tensor("fc/b", [10], data=bias(10))], [y], "FullyConnectedOptions")
    write_model(g.finish([x], [y]), path)
    return {"inputs": [("input", [1, 32, 32, 3])], "outputs": [("logits", [1, 10])]}
