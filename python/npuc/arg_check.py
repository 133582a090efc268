"""Type checks of ``Toolkit`` method arguments, so a wrong type is a ConfigError naming the call
and the argument instead of whichever TypeError or ValueError it caused further down.

One function per kind of argument (a flag, a path, a list of names, a small integer); every
public method checks its arguments with these before it does anything.
"""

from __future__ import annotations

import numbers
import os
from typing import Any, List, Optional, Sequence

import numpy as np

from npuc.errors import ConfigError
from npuc.messages import shown

__all__ = ["flag", "path", "optional_path", "names", "integer", "one_of"]


def _fail(call: str, arg: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"{call}({arg}=...): expected {expected}, got {type(value).__name__} {shown(value)}")


def flag(call: str, arg: str, value: Any) -> bool:
    """True or False (numpy's bool too): a string or a number is not silently read as one."""
    if not isinstance(value, (bool, np.bool_)):
        raise _fail(call, arg, "True or False", value)
    return bool(value)


def path(call: str, arg: str, value: Any) -> str:
    """A file or folder path: a non-empty str or os.PathLike, as a str."""
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        if isinstance(text, str) and text:
            return text
    raise _fail(call, arg, "a path (a non-empty str or os.PathLike)", value)


def optional_path(call: str, arg: str, value: Any) -> Optional[str]:
    """None, or a path as :func:`path` takes it."""
    return None if value is None else path(call, arg, value)


def names(call: str, arg: str, value: Any) -> Optional[List[str]]:
    """None, or a list/tuple of strings (a lone string is refused: it is not a list of names)."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise _fail(call, arg, "a list of names (strings)", value)
    return list(value)


def integer(call: str, arg: str, value: Any, low: int, high: Optional[int] = None) -> int:
    """An int (not a bool) in [low, high]."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < low or (
        high is not None and value > high
    ):
        bound = f"from {low} to {high}" if high is not None else f">= {low}"
        raise _fail(call, arg, f"an integer {bound}", value)
    return int(value)


def one_of(call: str, arg: str, value: Any, choices: Sequence[Any]) -> Any:
    """`value` when it is one of `choices` (strings or ints; compared without numpy broadcasting)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (str, numbers.Integral, type(None))) or (
        value not in choices
    ):
        raise _fail(call, arg, f"one of {', '.join(repr(c) for c in choices)}", value)
    return value
