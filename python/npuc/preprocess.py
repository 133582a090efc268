"""Per-channel input normalization configured by ``Toolkit.config(mean_values, std_values)``.

As in RKNN-Toolkit2: the model sees ``(x - mean[c]) / std[c]`` for channel ``c`` (axis 1 of an
NCHW input), computed in float32. Any numeric input (typically uint8 images) is accepted when
normalization is configured for it; the result has the model's float type.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from npuc.config_check import finite_float32
from npuc.errors import ConfigError, InputError
from npuc.messages import shown

__all__ = ["InputPreprocessor"]


class InputPreprocessor:
    """Holds validated mean/std values per input and applies them."""

    def __init__(
        self, mean_values: Optional[Sequence[Any]], std_values: Optional[Sequence[Any]]
    ) -> None:
        """Validates the config values.

        Args:
            mean_values: per input, a list of per-channel means (a flat list means one input).
            std_values: per input, a list of per-channel standard deviations (non-zero).

        Raises:
            ConfigError: malformed lists, a zero std, or mean and std lists of different shapes.
        """
        self._means = _per_input_lists("mean_values", mean_values)
        self._stds = _per_input_lists("std_values", std_values)
        for i, std in enumerate(self._stds or []):
            if std is not None and np.any(std == 0):
                raise ConfigError(f"std_values[{i}] contains 0")
        if self._means is not None and self._stds is not None:
            if len(self._means) != len(self._stds) or any(
                m.shape != s.shape for m, s in zip(self._means, self._stds)
            ):
                raise ConfigError("mean_values and std_values must list the same number of values per input")

    def check_model(self, infos: Sequence[Dict[str, Any]]) -> None:
        """Raises ConfigError when the values do not fit the model's inputs: lists for more inputs
        than it has, values for a non-float input, or a count other than 1 or the input's channels.
        ``build()`` calls it, so a misfit is reported before a blob records it."""
        for what, values in (("mean_values", self._means), ("std_values", self._stds)):
            if values is None:
                continue
            if len(values) > len(infos):
                raise ConfigError(f"{what} lists values for {len(values)} inputs; the model has {len(infos)}")
            for i, v in enumerate(values):
                name, dtype, shape = infos[i]["name"], infos[i]["dtype"], list(infos[i]["shape"])
                if dtype not in _FLOAT_DTYPES:
                    raise ConfigError(f"{what}[{i}] is set for input '{name}', which is {dtype}, not a float tensor")
                if v.size not in (1, _channels(shape)):
                    raise ConfigError(f"{what}[{i}] has {v.size} value(s) for input '{name}' {shape}, which has "
                                      f"{_channels(shape)} channel(s) (give 1 or one per channel)")

    def configured(self, index: int) -> bool:
        """True when normalization applies to input ``index``."""
        return any(v is not None and index < len(v) for v in (self._means, self._stds))

    def apply(self, index: int, x: Any, info: Dict[str, Any]) -> Any:
        """Normalizes input ``index`` (already NCHW) if configured, else returns it unchanged."""
        if not self.configured(index):
            return x
        if info["dtype"] not in _FLOAT_DTYPES:
            raise InputError(f"mean/std are configured for input '{info['name']}', which is not a float tensor")
        x = np.asarray(x)
        if not np.issubdtype(x.dtype, np.number):
            raise InputError(f"input '{info['name']}' must be numeric, got {x.dtype}")
        channels = _channels(x.shape)
        out = x.astype(np.float32)
        bshape = [1] * x.ndim
        if x.ndim >= 2:
            bshape[1] = -1
        for values, op in ((self._means, np.subtract), (self._stds, np.divide)):
            if values is None or index >= len(values):
                continue
            v = values[index]
            if v.size not in (1, channels):
                raise ConfigError(
                    f"input '{info['name']}' has {channels} channel(s) but {v.size} mean/std value(s) are configured"
                )
            op(out, v.reshape(bshape) if v.size > 1 else v[0], out=out)
        return out.astype(np.dtype(info["dtype"]), copy=False)


_FLOAT_DTYPES = ("float32", "float16", "float64")


def _channels(shape: Sequence[int]) -> int:
    """The channel count normalization applies to: axis 1 (NCHW), the only axis of a 1-D input."""
    return int(shape[1]) if len(shape) >= 2 else (int(shape[0]) if len(shape) == 1 else 1)


def _per_input_lists(what: str, values: Optional[Sequence[Any]]) -> Optional[List[np.ndarray]]:
    """Per input, the values as float32, each checked by the finite-number rule, named by position."""
    if values is None:
        return None
    if not _is_list(values):
        raise ConfigError(f"{what}: expected per input a list of per-channel numbers, e.g. [[0, 0, 0]], "
                          f"got {type(values).__name__} {shown(values)}")
    rows = list(values)
    flat = bool(rows) and not any(_is_list(v) for v in rows)  # a flat list: one input's channels
    out = []
    for i, row in enumerate([rows] if flat else rows):
        prefix = what if flat else f"{what}[{i}]"
        if not _is_list(row):
            raise ConfigError(f"{prefix}: expected a list of per-channel numbers, got {type(row).__name__} {shown(row)}")
        numbers = [finite_float32(v, f"{prefix}[{j}]") for j, v in enumerate(row)]
        out.append(np.asarray(numbers, dtype=np.float32))
    return out


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim > 0)
