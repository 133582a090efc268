"""The one rule for a tensor shape a user gives: ``check_shape``.

``load_onnx(input_size_list=...)``, ``load_pytorch``, ``--input-size`` on the command line, a YAML
config's ``input_size_list`` and ``config(dynamic_input=...)`` all pass through it, so a shape is
either a list of integers npuc can hold or a ConfigError naming where it came from. The bound is
the core's tensor limit (``MAX_TENSOR_BYTES``, the largest tensor npuc allocates): a shape with
more elements than that can never be built, and checking it here keeps a huge integer from
reaching the core (where it would not fit int64) or ``torch.rand`` (which would try to allocate it).
"""

from __future__ import annotations

import numbers
from typing import Any, List

from npuc._npuc import MAX_RANK, MAX_TENSOR_BYTES
from npuc.errors import ConfigError
from npuc.messages import shown

__all__ = ["MAX_RANK", "MAX_SHAPE_ELEMENTS", "check_shape", "check_shapes"]

#: Most elements a shape may describe: the core's tensor limit at one byte per element.
MAX_SHAPE_ELEMENTS = MAX_TENSOR_BYTES


def check_shape(value: Any, where: str) -> List[int]:
    """`value` as a list of at most MAX_RANK ints, each >= 0, describing at most MAX_SHAPE_ELEMENTS
    elements (MAX_RANK is the largest rank a blob stores).

    Raises:
        ConfigError: naming `where`, the offending dimension and what is valid.
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ConfigError(f"{where}: expected a shape (a list of integers like [1, 3, 224, 224]), "
                          f"got {type(value).__name__} {shown(value)}")
    if len(value) > MAX_RANK:
        raise ConfigError(f"{where}: {len(value)} dimensions; a shape has at most {MAX_RANK}")
    dims = []
    for i, d in enumerate(value):
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise ConfigError(f"{where}[{i}]: expected an integer dimension, got {type(d).__name__} {shown(d)}")
        if d < 0:
            raise ConfigError(f"{where}[{i}]: a dimension cannot be negative, got {d}")
        if d > MAX_SHAPE_ELEMENTS:
            raise ConfigError(f"{where}[{i}]: dimension {shown(d)} is larger than any tensor npuc can hold "
                              f"({MAX_SHAPE_ELEMENTS} elements)")
        dims.append(int(d))
    total = 0 if 0 in dims else 1
    for d in dims if total else ():
        total *= d
        if total > MAX_SHAPE_ELEMENTS:
            raise ConfigError(f"{where}: shape {shown(dims)} has more elements than any tensor npuc can hold "
                              f"({MAX_SHAPE_ELEMENTS})")
    return dims


def check_shapes(value: Any, where: str) -> List[List[int]]:
    """A list of shapes (``input_size_list``), each checked by :func:`check_shape`."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ConfigError(f"{where}: expected a list of shapes like [[1, 3, 224, 224]], "
                          f"got {type(value).__name__} {shown(value)}")
    return [check_shape(shape, f"{where}[{i}]") for i, shape in enumerate(value)]
