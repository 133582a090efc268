"""Value checks of ``Toolkit.config`` keys, so a typo fails at ``config()`` with the valid choices.

Key names are checked by ``Toolkit.config`` against ``CONFIG_KEYS``; this module checks values.
A ``None`` value always means "the default" and is accepted. Keys that npuc accepts for RKNN
compatibility but does not act on (``remove_weight``, ``compress_weight``, ...) get a type check
only, so a script written for RKNN-Toolkit2 still runs.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Dict, List, Mapping, Sequence

from npuc.errors import ConfigError

__all__ = ["check_config_values", "known_target_platforms", "OPTIMIZATION_LEVELS", "OP_TARGET_DEVICES", "FLOAT_DTYPES"]

#: ``optimization_level`` values: 0 runs no pass, 1-2 only exact ones, 3 everything (the default).
OPTIMIZATION_LEVELS = (0, 1, 2, 3)
#: Devices an ``op_target`` entry can force a node (by name or op type) onto.
OP_TARGET_DEVICES = ("cpu", "npu")
#: ``float_dtype`` values (RKNN-Toolkit2's; the NPU's float type is IEEE half).
FLOAT_DTYPES = ("float16",)
#: RKNN-Toolkit2 boolean keys npuc accepts but does not act on (see docs/migration_from_rknn.md).
_INERT_BOOL_KEYS = (
    "remove_weight",
    "compress_weight",
    "model_pruning",
    "remove_reshape",
    "sparse_infer",
    "enable_flash_attention",
    "quantize_weight",
)


def _fail(key: str, value: Any, expected: str) -> ConfigError:
    return ConfigError(f"config({key}={value!r}): expected {expected}")


def _one_of(choices: Sequence[Any]) -> Callable[[str, Any], None]:
    def check(key: str, value: Any) -> None:
        if isinstance(value, bool) or value not in choices:
            raise _fail(key, value, f"one of {', '.join(repr(c) for c in choices)}")

    return check


def _boolean(key: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise _fail(key, value, "True or False")


def _string(key: str, value: Any) -> None:
    if not isinstance(value, str):
        raise _fail(key, value, "a string")


def _custom_string(key: str, value: Any) -> None:
    """A string the blob can record: its recorded text within the reader's limit (_npuc.BLOB_LIMITS),
    checked by the blob writer's own function, so the numbers cannot drift apart."""
    from npuc._npuc import CompileOptions

    _string(key, value)
    options = CompileOptions()
    options.custom_string = value
    options.check_blob_limits()  # ConfigError naming custom_string and the limit


def _names(key: str, value: Any) -> None:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise _fail(key, value, "a list of node names (strings)")


def _fraction(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= float(value) <= 1.0:
        raise _fail(key, value, "a number from 0 to 1 (a cosine similarity)")


def _non_negative(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or float(value) < 0.0:
        raise _fail(key, value, "a non-negative number")


def _op_target(key: str, value: Any) -> None:
    if not isinstance(value, Mapping):
        raise _fail(key, value, "a dict {node name or op type: 'cpu' | 'npu'}")
    for name, device in value.items():
        if not isinstance(name, str) or not name:
            raise _fail(key, value, f"node names or op types as keys, got {name!r}")
        if not isinstance(device, str) or device.lower() not in OP_TARGET_DEVICES:
            raise ConfigError(
                f"config(op_target): {name!r} -> {device!r}; a target is one of {', '.join(OP_TARGET_DEVICES)}"
            )


def _pass_names(key: str, value: Any) -> None:
    from npuc._npuc import pass_names

    _names(key, value)
    valid = list(pass_names())
    unknown = [v for v in value if v not in valid]
    if unknown:
        raise ConfigError(f"config({key}): unknown pass(es) {', '.join(unknown)}; valid passes: {', '.join(valid)}")


def _checkers() -> Dict[str, Callable[[str, Any], None]]:
    from npuc.quantize import ALGORITHMS, INT8_DTYPES, METHODS

    checks: Dict[str, Callable[[str, Any], None]] = {
        "quantized_dtype": _one_of(INT8_DTYPES),
        "quantized_algorithm": _one_of(ALGORITHMS),
        "quantized_method": _one_of(METHODS),
        "optimization_level": _one_of(OPTIMIZATION_LEVELS),
        "float_dtype": _one_of(FLOAT_DTYPES),
        "custom_string": _custom_string,
        "op_target": _op_target,
        "hybrid_layers": _names,
        "disable_passes": _pass_names,
        "auto_hybrid_cos_thresh": _fraction,
        "auto_hybrid_euc_thresh": _non_negative,
        "single_core_mode": _boolean,
        "quant_img_RGB2BGR": _boolean,
    }
    checks.update({key: _boolean for key in _INERT_BOOL_KEYS})
    return checks


def known_target_platforms() -> List[str]:
    """Every SoC name and alias the profile catalogue knows (built-in plus ``NPUC_SOC_DIR``), sorted."""
    from npuc._npuc import soc_names, soc_profile

    names = set()
    for name in soc_names():
        names.add(name.lower())
        names.update(alias.lower() for alias in soc_profile(name)["aliases"])
    return sorted(names)


def check_config_values(values: Mapping[str, Any]) -> None:
    """Checks each known key's value; keys without a rule (or set to None) pass.

    Raises:
        ConfigError: the first invalid value, naming the key, the value and what is valid.
    """
    checks = _checkers()
    for key, value in values.items():
        check = checks.get(key)
        if check is not None and value is not None:
            check(key, value)
