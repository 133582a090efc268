"""``from npuc.rknn.utils import onnx_edit``: RKNN-Toolkit2's ``rknn.utils.onnx_edit``.

``onnx_edit`` changes the shapes a model's inputs and outputs have at its boundary, so that a
deployment can feed tensors in the layout it already holds (a KV cache as ``[1, a*d, b, c]``
instead of ``[a, b, c, d]``, ...). A transform is written as RKNN writes it:
``'a,b,c,d->1,ad,b,c'``: the axes of the tensor as the model has it, named by letters, then the
shape it gets, where adjacent letters merge axes (``ad`` is one axis of size a*d) and ``1`` adds
a unit axis. Every letter appears once on each side.

- An input ``x`` with ``'a,b,c,d->1,ad,b,c'`` becomes a new input of shape ``[1, a*d, b, c]``;
  inside, a Reshape to ``[a, d, b, c]`` and a Transpose bring it back to ``[a, b, c, d]``.
- An output ``y`` with ``'a,b,c,d->1,ab,c,d'`` gets a Transpose (when the letters move) and a
  Reshape to ``[1, a*b, c, d]`` after its producer.

With ``dataset``, every ``.npy`` the dataset file lists for an edited input is rewritten in the
new shape (next to the original, suffixed ``_edited``) and a new dataset file
``dataset_for_<export stem>.txt`` lists them, as RKNN-Toolkit2 does.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from npuc.errors import ConfigError, ModelLoadError

__all__ = ["onnx_edit", "parse_transform"]

PathLike = Union[str, "os.PathLike[str]"]


def parse_transform(spec: str) -> Tuple[List[str], List[str]]:
    """'a,b,c,d->1,ad,b,c' -> (['a','b','c','d'], ['1','ad','b','c']), checked."""
    if not isinstance(spec, str) or spec.count("->") != 1:
        raise ConfigError(f"onnx_edit: transform {spec!r} is not of the form 'a,b,c->1,ab,c'")
    left, right = ([t.strip() for t in side.split(",")] for side in spec.split("->"))
    if any(not re.fullmatch(r"[a-z]", t) for t in left):
        raise ConfigError(f"onnx_edit: transform {spec!r}: the left side names each axis by one letter")
    if any(not re.fullmatch(r"1|[a-z]+", t) for t in right):
        raise ConfigError(f"onnx_edit: transform {spec!r}: the right side holds letters (merged when adjacent) or 1")
    used = "".join(t for t in right if t != "1")
    if sorted(used) != sorted(left):
        raise ConfigError(f"onnx_edit: transform {spec!r}: every axis letter must appear once on each side")
    return left, right


def _plan(spec: str, shape: Sequence[int], where: str) -> Tuple[List[int], List[int], List[int]]:
    """(perm from the model's axes to the new order, the new shape, the permuted unmerged shape)."""
    left, right = parse_transform(spec)
    if len(left) != len(shape) or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise ConfigError(f"onnx_edit: {where} has shape {list(shape)}; transform {spec!r} names {len(left)} axes "
                          f"of a static shape")
    size = dict(zip(left, shape))
    order = [c for t in right if t != "1" for c in t]
    perm = [left.index(c) for c in order]
    new_shape = [1 if t == "1" else int(np.prod([size[c] for c in t])) for t in right]
    return perm, new_shape, [size[c] for c in order]


def _static_shape(value_info) -> List[int]:  # type: ignore[no-untyped-def]
    return [d.dim_value if d.HasField("dim_value") else -1 for d in value_info.type.tensor_type.shape.dim]


def _named(table: Dict, name: str, kind: str):  # type: ignore[no-untyped-def]
    """The value info of the model's `kind` ('input' / 'output') called `name`; ConfigError naming
    the ones there are otherwise."""
    if name not in table:
        raise ConfigError(f"onnx_edit: {kind}s_transform names {name!r}, not an {kind} of the model "
                          f"({kind}s: {', '.join(table)})")
    return table[name]


def _reshape_value_info(repeated, old, shape: List[int]) -> None:  # type: ignore[no-untyped-def]
    """Replaces value info `old` in `repeated` (graph.input / graph.output) by one of `shape`, at
    its position (inputs keep their order: the dataset lists files in it)."""
    from onnx import helper

    index = list(repeated).index(old)
    repeated.remove(old)
    repeated.insert(index, helper.make_tensor_value_info(old.name, old.type.tensor_type.elem_type, shape))


def onnx_edit(model: PathLike, export_path: PathLike, inputs_transform: Optional[Dict[str, str]] = None,
              outputs_transform: Optional[Dict[str, str]] = None, dataset: Optional[PathLike] = None) -> int:
    """Writes `model` with its inputs / outputs reshaped per the transforms to `export_path`.

    Returns:
        0 (RKNN's convention); errors raise ConfigError / ModelLoadError naming the tensor.
    """
    import onnx
    from onnx import helper, numpy_helper

    try:
        proto = onnx.load(os.fspath(model))
    except Exception as e:  # noqa: BLE001  (OSError, protobuf's DecodeError, ...): named below
        raise ModelLoadError(f"onnx_edit: cannot read model {os.fspath(model)!r}: {e}") from None
    graph = proto.graph
    nodes = list(graph.node)
    inputs = {vi.name: vi for vi in graph.input}
    outputs = {vi.name: vi for vi in graph.output}
    new_inputs: Dict[str, Tuple[List[int], List[int]]] = {}
    front: List = []
    for name, spec in (inputs_transform or {}).items():
        perm, new_shape, permuted = _plan(spec, _static_shape(_named(inputs, name, "input")), f"input {name!r}")
        inner = f"{name}__onnx_edit"
        for n in nodes:  # the model's nodes read the restored tensor
            n.input[:] = [inner if i == name else i for i in n.input]
        back = [perm.index(k) for k in range(len(perm))]
        shape_name = f"{name}__unmerged_shape"
        graph.initializer.append(numpy_helper.from_array(np.array(permuted, np.int64), shape_name))
        front += [helper.make_node("Reshape", [name, shape_name], [f"{name}__unmerged"], name=f"{name}/onnx_edit_reshape"),
                  helper.make_node("Transpose", [f"{name}__unmerged"], [inner], perm=back,
                                   name=f"{name}/onnx_edit_transpose")]
        _reshape_value_info(graph.input, inputs[name], new_shape)
        new_inputs[name] = (perm, new_shape)
    back_nodes: List = []
    for name, spec in (outputs_transform or {}).items():
        perm, new_shape, _ = _plan(spec, _static_shape(_named(outputs, name, "output")), f"output {name!r}")
        inner = f"{name}__onnx_edit"
        for n in nodes:
            n.output[:] = [inner if o == name else o for o in n.output]
            n.input[:] = [inner if i == name else i for i in n.input]
        source = inner
        if perm != sorted(perm):
            back_nodes.append(helper.make_node("Transpose", [inner], [f"{name}__permuted"], perm=perm,
                                               name=f"{name}/onnx_edit_transpose"))
            source = f"{name}__permuted"
        shape_name = f"{name}__edited_shape"
        graph.initializer.append(numpy_helper.from_array(np.array(new_shape, np.int64), shape_name))
        back_nodes.append(helper.make_node("Reshape", [source, shape_name], [name], name=f"{name}/onnx_edit_reshape"))
        _reshape_value_info(graph.output, outputs[name], new_shape)
    del graph.node[:]
    graph.node.extend(front + nodes + back_nodes)
    onnx.checker.check_model(proto)
    onnx.save(proto, os.fspath(export_path))
    if dataset is not None and new_inputs:
        _edit_dataset(Path(dataset), Path(export_path), [vi.name for vi in graph.input], new_inputs)
    return 0


def _edit_dataset(dataset: Path, export_path: Path, input_names: List[str],
                  new_inputs: Dict[str, Tuple[List[int], List[int]]]) -> None:
    """Writes dataset_for_<export stem>.txt next to `dataset`, with the edited inputs' .npy files
    rewritten in their new shape (`<file>_edited.npy`)."""
    from npuc._npuc import read_npy

    if not dataset.is_file():
        raise ConfigError(f"onnx_edit: dataset {os.fspath(dataset)!r} does not exist")
    lines = []
    for number, line in enumerate(dataset.read_text().splitlines(), 1):
        files = line.split()
        if not files or files[0].startswith("#"):
            continue
        if len(files) != len(input_names):
            raise ConfigError(f"onnx_edit: dataset {os.fspath(dataset)!r} line {number} lists {len(files)} file(s) "
                              f"for {len(input_names)} input(s)")
        out = []
        for name, file in zip(input_names, files):
            if name not in new_inputs:
                out.append(file)
                continue
            perm, new_shape = new_inputs[name]
            array = read_npy(os.fspath(dataset.parent / file))
            edited = Path(file).with_name(Path(file).stem + "_edited.npy")
            np.save(dataset.parent / edited, np.ascontiguousarray(array.transpose(perm)).reshape(new_shape))
            out.append(str(edited))
        lines.append(" ".join(out))
    (dataset.parent / f"dataset_for_{export_path.stem}.txt").write_text("\n".join(lines) + "\n")
