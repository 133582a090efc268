"""An ONNX model exported at batch 1, made to run at batch N with its items kept apart.

Exporters often freeze a Reshape's target shape at the export batch (``[1, 2, 24, 28, 28]`` in a
ShuffleNet channel shuffle, ``[64, 4, 16]`` for sequence-first attention heads). Loaded at batch
N such a Reshape either fails shape inference or, with a ``-1`` in its target, silently mixes
batch items (``[1, -1]`` flattens all N images into one row). This module rewrites each constant
Reshape target so that the items stay where they are in the flat layout: after ``p`` outer
elements (``p = prod(S1[:a])`` with the items the outer factor of input axis ``a``), N multiplies
an output axis bounded there. Items are then contiguous blocks inside each of the ``p`` outer
rows before and after, so no item's elements move into another's. Two axes can qualify (N as
the outer factor of the axis after the boundary, or the inner factor of the one before); the
graph's later ops decide, by a search checked with shape inference (``rebatch``).
"""

from __future__ import annotations

import re
from math import prod
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

from npuc.errors import ShapeError

Shape = List[int]

#: Re-batching attempts before the graph is handed to the import as it is (each one re-runs
#: ONNX shape inference over the whole graph).
MAX_SEARCH = 64


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


def _placements(s1: Shape, a: int, kind: str, o1: Shape, batch: int) -> List[Tuple[Shape, str]]:
    """The batch-N output shapes of a Reshape whose input has its items on axis ``a`` (as the
    outer or inner factor of that axis, ``kind``), each with where the items then are. Items sit
    in the flat layout after ``p`` outer elements; an output keeps them apart when an axis boundary
    falls there: N multiplies the next axis (outer factor) or the previous one (inner factor)."""
    p = prod(s1[:a]) if kind == "outer" else prod(s1[:a + 1])
    found: List[Tuple[Shape, str]] = []
    for k in ("outer", "inner"):  # outer first: what exporters write for a leading batch
        for b in range(len(o1)):
            if prod(o1[:b] if k == "outer" else o1[:b + 1]) == p:
                shape = o1[:b] + [o1[b] * batch] + o1[b + 1:]
                if all(shape != f for f, _ in found):
                    found.append((shape, k))
    return found


def _error_node(model: onnx.ModelProto) -> Optional[str]:
    """The first node whose shapes do not fit ("" when unnamed), None when all fit: ONNX's strict
    shape inference, plus the checks it leaves out (a Reshape's element count, the inner
    dimension of Gemm and MatMul)."""
    try:
        shape_inference.infer_shapes(model, strict_mode=True)
    except Exception as e:  # onnx raises InferenceError naming the op and node
        found = re.search(r"node name: ([^)]*)\)", str(e))
        return found.group(1) if found else ""
    consts = _constants(model)
    shapes = {**{name: list(v.shape) for name, v in consts.items()}, **_static_shapes(model)}
    for node in model.graph.node:
        ins = [shapes.get(i) for i in node.input[:2]]
        if node.op_type == "Reshape" and ins[0] and node.input[1] in consts:
            target = [int(d) for d in consts[node.input[1]]]
            if -1 not in target and 0 not in target and prod(target) != prod(ins[0]):
                return node.name
        elif node.op_type in ("Gemm", "MatMul") and ins[0] and ins[1] and len(ins[0]) >= 2 and len(ins[1]) >= 2:
            attrs = {a.name: a.i for a in node.attribute}
            k_a = ins[0][-2] if attrs.get("transA", 0) else ins[0][-1]
            k_b = ins[1][-1] if attrs.get("transB", 0) else ins[1][-2]
            if k_a != k_b:
                return node.name
    return None


def _ancestors(model: onnx.ModelProto, node_name: str) -> set:
    """Indices of the nodes ``node_name`` depends on."""
    producer = {o: k for k, n in enumerate(model.graph.node) for o in n.output}
    start = [k for k, n in enumerate(model.graph.node) if n.name == node_name]
    seen: set = set()
    todo = list(start)
    while todo:
        k = todo.pop()
        for i in model.graph.node[k].input:
            j = producer.get(i)
            if j is not None and j not in seen:
                seen.add(j)
                todo.append(j)
    return seen


def _set_target(work: onnx.ModelProto, node: Any, name: str, shape: Shape) -> None:
    if not any(t.name == name for t in work.graph.initializer):
        work.graph.initializer.append(numpy_helper.from_array(np.asarray(shape, dtype=np.int64), name))
    node.input[1] = name


def _apply(model: onnx.ModelProto, at_1: Dict[str, Shape], at_n: Dict[str, Shape], batch: int,
           decisions: Dict[int, int]) -> Tuple[onnx.ModelProto, Dict[int, int]]:
    """``model`` at ``at_n`` with its frozen Reshapes re-made in graph order, Reshape k taking its
    ``decisions[k]``-th placement (default the first). Returns it and each re-made Reshape's
    number of placements."""
    one = _static_shapes(_with_inputs(model, at_1))
    work = _with_inputs(model, at_n)
    consts = _constants(work)
    kinds: Dict[str, str] = {}  # value -> where its items are on its batch axis ("outer"/"inner" factor)
    counts: Dict[int, int] = {}
    done: set = set()
    while True:
        shapes = _static_shapes(work)
        fixed = False
        for k, node in enumerate(work.graph.node):
            if node.op_type != "Reshape":
                kind = next((kinds[i] for i in node.input if i in kinds), None)
                if kind is not None:
                    kinds.update({o: kind for o in node.output})
                continue
            if k in done or len(node.input) < 2 or node.input[1] not in consts:
                continue
            x, out = node.input[0], node.output[0]
            if x not in one or out not in one or x not in shapes:
                continue
            a = _batch_axis(one[x], shapes[x], batch)
            if a is None:
                continue
            options = _placements(one[x], a, kinds.get(x, "outer"), one[out], batch) if a >= 0 else []
            if not options:
                raise ShapeError(f"Reshape '{node.name}' takes {one[x]} to {one[out]} at batch 1; at batch {batch} "
                                 f"its input is {shapes.get(x)} and no output shape keeps batch items apart")
            done.add(k)
            counts[k] = len(options)
            shape, kinds[out] = options[min(decisions.get(k, 0), len(options) - 1)]
            if shapes.get(out) == shape and list(consts[node.input[1]]) == shape:
                continue
            _set_target(work, node, f"{node.input[1]}__batch{batch}_{k}", shape)
            fixed = True
            break  # shapes downstream change: infer again
        if not fixed:
            return work, counts


def rebatch(model: onnx.ModelProto, sizes: Sequence[Shape], names: Sequence[str], batch: int) -> onnx.ModelProto:
    """``model`` with inputs at ``sizes`` (dim 0 = ``batch``) and every constant Reshape target
    frozen at batch 1 re-made for ``batch``.

    Where two placements keep items apart (N on the axis after the item boundary, or on the one
    before it; where the items are is carried from each Reshape through the ops after it), the
    first is taken; when strict shape inference then fails at a node, the latest Reshape it
    depends on that has another placement takes it (a depth-first search over the placements,
    in graph order). Raises ShapeError naming a Reshape no placement fits; a graph no placement
    makes consistent is returned as it is and refused by the import."""
    graph_inputs = [i.name for i in model.graph.input
                    if i.name not in {t.name for t in model.graph.initializer}]
    names = list(names) or graph_inputs[: len(sizes)]
    at_n = {n: list(s) for n, s in zip(names, sizes)}
    at_1 = {n: [1] + list(s[1:]) for n, s in zip(names, sizes)}
    decisions: Dict[int, int] = {}
    for _ in range(MAX_SEARCH):
        work, counts = _apply(model, at_1, at_n, batch, decisions)
        failed = _error_node(work)
        if failed is None:
            return work
        upstream = _ancestors(work, failed)
        flippable = [k for k in counts if k in upstream and decisions.get(k, 0) + 1 < counts[k]]
        if not flippable:
            return work
        k = max(flippable)
        decisions = {j: v for j, v in decisions.items() if j < k}
        decisions[k] = decisions.get(k, 0) + 1 if k in decisions else 1
    return work


def _declared_batches(source: Union[str, bytes], names: Sequence[str], count: int) -> List[int]:
    """Dim 0 of the inputs as the file declares them (0: dynamic), for ``names`` or the first ``count``."""
    model = (onnx.load_from_string(bytes(source)) if isinstance(source, (bytes, bytearray))
             else onnx.load(source, load_external_data=False))
    inits = {t.name for t in model.graph.initializer}
    dims = {i.name: (i.type.tensor_type.shape.dim[0].dim_value if i.type.tensor_type.shape.dim else 0)
            for i in model.graph.input if i.name not in inits}
    keys = list(names) or list(dims)[:count]
    return [dims.get(k, 0) for k in keys]


def rebatched_to(source: Union[str, bytes], names: Sequence[str], sizes: Sequence[Shape]) -> int:
    """The batch ``sizes`` load the model at when it is not the file's own: N when every size has
    dim 0 = N > 1 and some input's declared dim 0 differs (or is dynamic), else 1. A model whose
    file declares dim 0 = 2 (a KV cache, a pair) and is loaded so is not a batch."""
    firsts = {s[0] for s in sizes if s}
    if len(firsts) != 1 or len(sizes) == 0 or any(not s for s in sizes):
        return 1
    batch = firsts.pop()
    if batch <= 1:
        return 1
    return batch if any(d != batch for d in _declared_batches(source, names, len(sizes))) else 1


def load_at_batch(load: Callable[..., Any], source: Union[str, bytes], names: Sequence[str], sizes: Sequence[Shape],
                  outputs: Sequence[str]) -> Any:
    """``load(source, names, sizes, outputs)`` (an ONNX import), re-batching a batch-1 graph when
    ``sizes`` ask for a batch above 1.

    The model is first imported at batch 1, where npuc's constant folding turns every shape
    computation (Shape, Gather, Slice bounds) into constants; that folded graph's Reshape targets
    are then re-batched (``rebatch``) and the result imported at ``sizes``."""
    batch = rebatched_to(source, names, sizes)
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
