"""Which numpy arrays may feed a model input, and how they are converted: ``coerce_input``.

One rule for every place an array meets a model input: ``Toolkit.inference`` (the FP32 host
runtime before ``build()``, the NPU simulator after it), ``accuracy_analysis`` inputs,
calibration samples and ``npuc run``. Before it existed the host runtime refused every dtype but
the model's own while the simulator cast anything, dropping a complex array's imaginary part.

The rule (:data:`RULE`, also in the ``Toolkit.inference`` docstring):

* a **float** input (float16/32/64) takes float16/32/64 arrays and 8/16/32-bit integer arrays
  (uint8 images), converted to the input's type by rounding; int64/uint64 arrays only when
  every value is exactly representable in that type (a Python list of ints becomes int64);
* an **integer** input takes integer arrays of any width whose every value is within its range;
* a **bool** input takes bool arrays;
* everything else is refused: bool for a numeric input, floats for an integer input, complex,
  object, str/bytes, datetime/timedelta and structured (void) arrays.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import numpy as np

from npuc.errors import InputError

__all__ = ["RULE", "as_array", "coerce_input"]

#: The rule in one sentence per input kind (quoted in error messages and docs).
RULE = {
    "float": "float16/32/64 or 8/16/32-bit integer arrays, or int64/uint64 arrays whose values are "
             "exactly representable",
    "int": "integer arrays whose values are within the input's range",
    "bool": "bool arrays",
}

#: Integer array types converted to a float input without a value check (uint8 images, ...).
_ROUNDED_INTS = frozenset(np.dtype(t) for t in ("int8", "int16", "int32", "uint8", "uint16", "uint32"))


def _input_kind(dtype: np.dtype) -> str:
    if dtype.kind == "f":
        return "float"
    if dtype.kind in "iu":
        return "int"
    if dtype.kind == "b":
        return "bool"
    raise InputError(f"model input type {dtype} is not one npuc feeds")  # the importer never makes one


def _exactly_representable(array: np.ndarray, target: np.dtype) -> bool:
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.array_equal(array.astype(target).astype(array.dtype), array))


def _within_range(array: np.ndarray, target: np.dtype) -> bool:
    if array.size == 0:
        return True
    info = np.iinfo(target)
    return info.min <= int(array.min()) and int(array.max()) <= info.max


def _refusal(array: np.ndarray, target: np.dtype) -> Optional[str]:
    """Why `array` cannot feed an input of type `target` (None when it can)."""
    src = array.dtype.newbyteorder("=") if array.dtype.byteorder not in "=|" else array.dtype
    kind = _input_kind(target)
    if src == target:
        return None
    if kind == "float":
        if src.kind == "f" or src in _ROUNDED_INTS:
            return None
        if src.kind in "iu":
            return None if _exactly_representable(array, target) else f"holds values {target} cannot represent exactly"
    elif kind == "int" and src.kind in "iu":
        return None if _within_range(array, target) else f"holds values outside the range of {target}"
    return "is not accepted"


def as_array(value: Any, info: Dict[str, Any], where: str) -> np.ndarray:
    """``np.asarray(value)``, or an InputError naming `where` (ragged nested lists, ...)."""
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as e:
        raise InputError(f"{where}: cannot be read as an array for input '{info['name']}' ({e})") from None


def coerce_input(
    value: Any,
    info: Dict[str, Any],
    where: str,
    transform: Optional[Callable[[np.ndarray], Any]] = None,
) -> np.ndarray:
    """`value` as a C-contiguous array of the input's dtype, under the rule above.

    Args:
        value: an array, or anything ``np.asarray`` takes (nested lists, ...).
        info: the model input as ``{'name', 'dtype', 'shape'}``.
        where: what the value is, for the message (e.g. ``"inference input 0"``).
        transform: applied after the check and before the final conversion (mean/std
            normalization, which computes in float32 from the original values).

    Raises:
        InputError: naming `where`, the input, the array's dtype and what the input accepts.
    """
    array = as_array(value, info, where)
    target = np.dtype(info["dtype"])
    problem = _refusal(array, target)
    if problem is not None:
        raise InputError(
            f"{where}: an array of dtype {array.dtype} {problem} for input '{info['name']}' ({target}); "
            f"it takes {RULE[_input_kind(target)]}"
        )
    if transform is not None:
        array = np.asarray(transform(array))
    # A float64 value beyond float32 becomes +/-Inf here, as a cast does; numpy's overflow warning
    # is silenced because the value is not lost silently: calibration refuses non-finite samples
    # by name after this conversion, and inference follows IEEE (the CLI prints one line, not a
    # warning above it).
    with np.errstate(over="ignore", invalid="ignore"):
        return np.ascontiguousarray(array, dtype=target)
