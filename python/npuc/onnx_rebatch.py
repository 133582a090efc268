"""An ONNX model exported at batch 1, made to run at batch N with its items kept apart.

Exporters often freeze a Reshape's target shape at the export batch (``[1, 2, 24, 28, 28]`` in a
ShuffleNet channel shuffle, ``[64, 4, 16]`` for sequence-first attention heads). Loaded at batch
N such a Reshape either fails shape inference or, with a ``-1`` in its target, silently mixes
batch items (``[1, -1]`` flattens all N images into one row). This module rewrites each constant
Reshape target so that the batch axis of its input lands on the output axis whose leading
elements match: with the input's batch on axis ``a`` (``S1[a] * N`` at batch N), the output axis
``b`` with ``prod(O1[:b]) == prod(S1[:a])`` takes ``O1[b] * N``. Items are contiguous blocks
inside each of those ``prod(S1[:a])`` outer rows both before and after, so no item's elements
move into another's.
"""

from __future__ import annotations

from math import prod
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

from npuc.errors import ShapeError

Shape = List[int]


def _static_shapes(model: onnx.ModelProto) -> Dict[str, Shape]:
    """Every value's inferred shape, where all its dims are known numbers."""
    inferred = shape_inference.infer_shapes(model)
    shapes: Dict[str, Shape] = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
        if all(d > 0 for d in dims) or dims == []:
            shapes[vi.name] = dims
    return shapes


def _constants(model: onnx.ModelProto) -> Dict[str, np.ndarray]:
    """Initializers and Constant-node outputs (a Reshape target is either)."""
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            consts[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return consts


def _with_inputs(model: onnx.ModelProto, sizes: Dict[str, Shape]) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.value_info[:]  # re-inferred from the new input shapes
    for vi in out.graph.output:
        vi.type.tensor_type.ClearField("shape")
    for vi in out.graph.input:
        if vi.name in sizes:
            dims = vi.type.tensor_type.shape.dim
            del dims[:]
            for d in sizes[vi.name]:
                dims.add().dim_value = int(d)
    return out


def _batch_axis(s1: Shape, sn: Shape, batch: int) -> Optional[int]:
    """The one axis where the batch-N shape is N times the batch-1 one, None when equal."""
    if s1 == sn:
        return None
    diff = [i for i, (x, y) in enumerate(zip(s1, sn)) if x != y]
    if len(s1) != len(sn) or len(diff) != 1 or sn[diff[0]] != s1[diff[0]] * batch:
        return -1
    return diff[0]


def _batched_target(s1: Shape, a: int, o1: Shape, batch: int) -> Optional[Shape]:
    outer = prod(s1[:a])
    for b in range(len(o1)):
        if prod(o1[:b]) == outer:
            return o1[:b] + [o1[b] * batch] + o1[b + 1:]
        if prod(o1[:b]) > outer:
            break
    return None


def rebatch(model: onnx.ModelProto, sizes: Sequence[Shape], names: Sequence[str], batch: int) -> onnx.ModelProto:
    """``model`` with inputs at ``sizes`` (dim 0 = ``batch``) and every constant Reshape target
    frozen at batch 1 re-made for ``batch``. Raises ShapeError naming a Reshape whose target
    cannot keep items apart (the batch boundary falls inside an output dim)."""
    graph_inputs = [i.name for i in model.graph.input
                    if i.name not in {t.name for t in model.graph.initializer}]
    names = list(names) or graph_inputs[: len(sizes)]
    at_n = {n: list(s) for n, s in zip(names, sizes)}
    at_1 = {n: [1] + list(s[1:]) for n, s in zip(names, sizes)}
    one = _static_shapes(_with_inputs(model, at_1))
    work = _with_inputs(model, at_n)
    consts = _constants(work)
    done: set = set()
    while True:
        shapes = _static_shapes(work)
        fixed = False
        for k, node in enumerate(work.graph.node):
            if node.op_type != "Reshape" or k in done or len(node.input) < 2 or node.input[1] not in consts:
                continue
            x, out = node.input[0], node.output[0]
            if x not in one or out not in one or x not in shapes:
                continue
            a = _batch_axis(one[x], shapes[x], batch)
            if a is None:
                continue
            want = _batched_target(one[x], a, one[out], batch) if a >= 0 else None
            if want is None:
                raise ShapeError(f"Reshape '{node.name}' takes {one[x]} to {one[out]} at batch 1; at batch {batch} "
                                 f"its input is {shapes.get(x)} and no output shape keeps batch items apart")
            done.add(k)
            if shapes.get(out) == want and list(consts[node.input[1]]) == want:
                continue
            # A new constant per node: another Reshape may share the old one.
            target = numpy_helper.from_array(np.asarray(want, dtype=np.int64), f"{node.input[1]}__batch{batch}_{k}")
            work.graph.initializer.append(target)
            consts[target.name] = np.asarray(want, dtype=np.int64)
            node.input[1] = target.name
            fixed = True
            break  # shapes downstream change: infer again
        if not fixed:
            return work


def load_at_batch(load: Callable[..., Any], source: Union[str, bytes], names: Sequence[str], sizes: Sequence[Shape],
                  outputs: Sequence[str]) -> Any:
    """``load(source, names, sizes, outputs)`` (an ONNX import), re-batching a batch-1 graph when
    ``sizes`` ask for a batch above 1.

    The model is first imported at batch 1, where npuc's constant folding turns every shape
    computation (Shape, Gather, Slice bounds) into constants; that folded graph's Reshape targets
    are then re-batched (``rebatch``) and the result imported at ``sizes``."""
    batch = sizes[0][0] if sizes and sizes[0] else 1
    if batch == 1:
        return load(source, names, sizes, outputs)
    single = load(source, names, [[1] + list(s[1:]) for s in sizes], outputs)
    folded = onnx.load_from_string(single.to_onnx_bytes())
    try:
        return load(rebatch(folded, sizes, names, batch).SerializeToString(), names, sizes, [])
    except ShapeError as e:
        raise ShapeError(f"the model does not take batch {batch}: {e}. Its graph was exported at batch 1 and "
                         f"npuc could not re-batch it (a Reshape whose batch goes into another axis, as "
                         f"sequence-first attention does); export it with a dynamic batch dimension") from e
