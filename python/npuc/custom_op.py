"""User-defined operators: RKNN-Toolkit2's ``reg_custom_op``.

A model may contain an op npuc does not know (a ``cstSigmoid`` a user put in place of ``Sigmoid``,
an op of the user's own ONNX domain). The user describes it with an object of RKNN's shape::

    class cstSigmoid:
        op_type = "cstSigmoid"
        def shape_infer(self, node, in_shapes, in_dtypes):
            return in_shapes.copy(), in_dtypes.copy()
        def compute(self, node, inputs):
            return [1.0 / (1.0 + np.exp(-inputs[0]))]

and registers it before loading the model (``Toolkit.reg_custom_op``). ``node`` is the op's
``onnx.NodeProto`` (name, inputs, outputs, attributes: read one with :func:`get_node_attr`),
``in_shapes`` lists of ints, ``in_dtypes`` numpy dtypes; ``compute`` gets numpy arrays and returns
one per output.

npuc runs such an op on the CPU, in float (an INT8 model dequantizes its inputs and quantizes its
outputs, as for any op without an int8 kernel), never folds it, and keeps it in the blob by name:
loading that blob needs the same registration. The adapter below checks what the user's code
returns and names the op and node when it is wrong, so a mistake there is not a crash deep in the
runtime.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from npuc.errors import ConfigError, NpucError

__all__ = ["get_node_attr", "CustomOpAdapter", "CustomOpError", "custom_op_set"]


class CustomOpError(NpucError):
    """A registered custom op's ``shape_infer`` or ``compute`` returned something npuc cannot use."""


def get_node_attr(node: Any, name: str) -> Any:
    """The value of attribute ``name`` of ``node`` (an ``onnx.NodeProto``), as RKNN's
    ``rknn.api.custom_op.get_node_attr``; None when the node has no such attribute."""
    from onnx import helper

    for attr in node.attribute:
        if attr.name == name:
            return helper.get_attribute_value(attr)
    return None


def _node_proto(info: Dict[str, Any]) -> Any:
    """The ``onnx.NodeProto`` a user's callback sees, from the node description the core passes."""
    from onnx import helper, numpy_helper

    attrs = {k: (numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v)
             for k, v in info["attributes"].items()}
    return helper.make_node(info["op_type"], info["inputs"], info["outputs"], name=info["name"],
                            domain=info["domain"] or None, **attrs)


def _dtype_name(value: Any, where: str) -> str:
    try:
        return np.dtype(value).name
    except TypeError as e:
        raise CustomOpError(f"{where}: {value!r} is not a dtype") from e


class CustomOpAdapter:
    """Wraps one user object for the core (``npuc._npuc.CustomOpSet``): converts the node and the
    tensors both ways and checks counts, shapes and dtypes of what comes back."""

    def __init__(self, op: Any) -> None:
        self.op = op
        self.op_type = check_custom_op(op)

    def infer(self, info: Dict[str, Any], shapes: List[List[int]], dtypes: List[Optional[str]],
              num_outputs: int) -> Tuple[List[List[int]], List[str]]:
        where = f"custom op {self.op_type}, node '{info['name']}': shape_infer"
        in_dtypes = [np.dtype(d) if d else None for d in dtypes]
        result = self.op.shape_infer(_node_proto(info), [list(s) for s in shapes], in_dtypes)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise CustomOpError(f"{where} must return (output_shapes, output_dtypes), got {type(result).__name__}")
        out_shapes, out_dtypes = (list(r) for r in result)
        if len(out_shapes) != num_outputs or len(out_dtypes) != num_outputs:
            raise CustomOpError(f"{where} returned {len(out_shapes)} shape(s) and {len(out_dtypes)} dtype(s) "
                                f"for a node with {num_outputs} output(s)")
        shapes_out = []
        for i, s in enumerate(out_shapes):
            try:
                dims = [int(d) for d in s]
            except (TypeError, ValueError) as e:
                raise CustomOpError(f"{where}: output {i} shape {s!r} is not a list of ints") from e
            if any(d < 0 for d in dims):
                raise CustomOpError(f"{where}: output {i} shape {dims} has a negative dim")
            shapes_out.append(dims)
        return shapes_out, [_dtype_name(d, f"{where}: output {i}") for i, d in enumerate(out_dtypes)]

    def compute(self, info: Dict[str, Any], inputs: List[Optional[np.ndarray]], out_shapes: List[List[int]],
                out_dtypes: List[str]) -> List[np.ndarray]:
        where = f"custom op {self.op_type}, node '{info['name']}': compute"
        result = self.op.compute(_node_proto(info), inputs)
        if isinstance(result, np.ndarray):
            result = [result]
        if not isinstance(result, (tuple, list)) or len(result) != len(out_shapes):
            got = len(result) if isinstance(result, (tuple, list)) else type(result).__name__
            raise CustomOpError(f"{where} must return a list of {len(out_shapes)} array(s), got {got}")
        outputs = []
        for i, (r, shape, dtype) in enumerate(zip(result, out_shapes, out_dtypes)):
            a = np.asarray(r)
            if list(a.shape) != list(shape):
                raise CustomOpError(f"{where}: output {i} has shape {list(a.shape)}, but shape_infer gave {list(shape)}")
            if a.dtype != np.dtype(dtype):
                # float64 for float32 is numpy's habit (a Python float in the formula): narrowed.
                # Another kind (bool or int for float) is a mistake, not a rounding.
                if a.dtype.kind != np.dtype(dtype).kind:
                    raise CustomOpError(f"{where}: output {i} is {a.dtype}, but shape_infer gave {dtype}")
                a = a.astype(dtype)
            outputs.append(np.ascontiguousarray(a))
        return outputs


def check_custom_op(op: Any) -> str:
    """The op type of a user's custom-op object; ConfigError naming what it lacks."""
    op_type = getattr(op, "op_type", None)
    if not isinstance(op_type, str) or not op_type:
        raise ConfigError(f"reg_custom_op: {type(op).__name__} needs an 'op_type' string attribute")
    for method in ("shape_infer", "compute"):
        if not callable(getattr(op, method, None)):
            raise ConfigError(f"reg_custom_op: {type(op).__name__} ({op_type}) needs a '{method}' method")
    return op_type


def custom_op_set(ops: Sequence[Any]) -> Any:
    """The core's ``CustomOpSet`` for these user objects (None for none). ConfigError for a name
    npuc already defines or a duplicate."""
    if not ops:
        return None
    from npuc._npuc import CustomOpSet

    return CustomOpSet([(a.op_type, a) for a in (CustomOpAdapter(op) for op in ops)])
