"""Read-only queries on a parsed model: an op's code and name, a constant tensor's value, and
:func:`describe` (op counts, dtypes, inputs/outputs). Shared by the rewrites, the runners and the
quantized writer, none of which change what these report.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from .flatbuf import read_model
from .schema import OP_NAMES, OPS, TENSOR_TYPES, TYPE_NAMES, Table

def op_code(model: Table, op: Table) -> Tuple[int, bytes]:
    """(builtin code, custom code): the larger of deprecated_builtin_code and builtin_code, as TFLite
    reads it (old files fill only the byte field, new ones both)."""
    oc = model["operator_codes"][op.get("opcode_index", 0)]
    return max(oc.get("deprecated_builtin_code", 0), oc.get("builtin_code", 0)), oc.get("custom_code", b"")


def op_name(model: Table, op: Table) -> str:
    code, custom = op_code(model, op)
    if code == OPS["CUSTOM"]:
        return "CUSTOM:" + custom.decode()
    return OP_NAMES.get(code, f"BUILTIN_{code}")


def tensor_value(model: Table, tensor: Table) -> Optional[np.ndarray]:
    """A constant tensor's data (shape and dtype from the tensor), or None for activations."""
    data = model["buffers"][tensor.get("buffer", 0)].get("data", b"")
    if not data:
        return None
    dtype = TENSOR_TYPES[tensor.get("type", 0)]
    return np.frombuffer(data, dtype).reshape([int(d) for d in tensor.get("shape", [])]).copy()


def describe(path: "str | Path") -> Dict[str, Any]:
    """Op counts, tensor dtype counts (constants and activations apart), inputs/outputs (name, shape,
    dtype) of subgraph 0."""
    m = read_model(path)
    sg = m["subgraphs"][0]
    tensors = sg["tensors"]
    const = Counter()
    act = Counter()
    for t in tensors:
        kind = TYPE_NAMES.get(t.get("type", 0), str(t.get("type", 0)))
        (const if m["buffers"][t.get("buffer", 0)].get("data") else act)[kind] += 1

    def io(indices: Iterable[int]) -> List[Tuple[str, List[int], str]]:
        return [(tensors[i]["name"].decode(), [int(d) for d in tensors[i]["shape"]],
                 TYPE_NAMES[tensors[i].get("type", 0)]) for i in indices]

    return {"ops": dict(Counter(op_name(m, op) for op in sg["operators"]).most_common()),
            "constant_dtypes": dict(const), "activation_dtypes": dict(act),
            "inputs": io(sg["inputs"]), "outputs": io(sg["outputs"]),
            "subgraphs": len(m["subgraphs"])}
