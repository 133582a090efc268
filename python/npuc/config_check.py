"""Value checks of ``Toolkit.config`` keys, so a typo fails at ``config()`` with the valid choices.

Key names are checked by ``Toolkit.config`` against ``CONFIG_KEYS``; this module checks values.
A ``None`` value always means "the default" and is accepted. Keys that npuc accepts for RKNN
compatibility but does not act on (``remove_weight``, ``compress_weight``, ...) get a type check,
so a script written for RKNN-Toolkit2 still runs, and :func:`inert_settings` names every one set
away from its default, which ``config()`` logs as a warning: a setting is never ignored silently.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from npuc.errors import ConfigError
from npuc.messages import shown

__all__ = ["check_config_values", "inert_settings", "known_target_platforms", "finite_number", "finite_float32", "OPTIMIZATION_LEVELS",
           "OP_TARGET_DEVICES", "FLOAT_DTYPES"]

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


#: Keys accepted for RKNN compatibility whose non-default values npuc does not act on, with what
#: happens instead (the warning's text).
_INERT_EFFECT = {
    "remove_weight": "the blob keeps its weights",
    "compress_weight": "weights are stored uncompressed",
    "model_pruning": "no channels are pruned",
    "remove_reshape": "the model's Reshapes are kept (graph passes still merge and cancel them)",
    "sparse_infer": "weights run dense",
    "enable_flash_attention": "attention runs as its separate ops",
    "quantize_weight": "weights are quantized only by build(do_quantization=True)",
    "quantized_hybrid_level": "use hybrid_layers or build(auto_hybrid=True) to keep layers in FP16",
    "inputs_yuv_fmt": "inputs are taken as the arrays given (no YUV conversion)",
}


def inert_settings(values: Mapping[str, Any]) -> List[str]:
    """One sentence per key set away from its default that npuc accepts but does not act on."""
    out = []
    for key, effect in _INERT_EFFECT.items():
        value = values.get(key)
        if value is None or value is False or (key == "quantized_hybrid_level" and value == 0):
            continue
        out.append(f"config({key}={shown(value)}) has no effect in npuc: {effect}")
    return out


def _fail(key: str, value: Any, expected: str) -> ConfigError:
    return ConfigError(f"config({key}={shown(value)}): expected {expected}")


def finite_number(value: Any, where: str) -> float:
    """`value` as a float when it is a finite real number (not a bool), else a ConfigError naming
    `where` (e.g. ``mean_values[0][2]``). The one rule for every float option: a NaN or Inf mean,
    std or threshold once gave all-zero INT8 outputs instead of an error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{where}: expected a number, got {type(value).__name__} {shown(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond float's range
        number = math.inf
    if not math.isfinite(number):
        raise ConfigError(f"{where}: expected a finite number, got {shown(value)}")
    return number


#: Largest magnitude a float32 holds: values the core computes with in float32 must fit.
FLOAT32_MAX = 3.4028234663852886e38


def finite_float32(value: Any, where: str) -> float:
    """:func:`finite_number`, and within float32's range (the core computes mean/std and
    quantization ranges in float32, where a larger value becomes Inf)."""
    number = finite_number(value, where)
    if abs(number) > FLOAT32_MAX:
        raise ConfigError(f"{where}: {shown(value)} is beyond float32's range")
    return number


def _one_of(choices: Sequence[Any]) -> Callable[[str, Any], None]:
    def check(key: str, value: Any) -> None:
        # Choices are strings or ints; anything else (a float, a list, a numpy array) is refused
        # before `in`, which would compare it element-wise.
        if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)) or value not in choices:
            raise _fail(key, value, f"one of {', '.join(repr(c) for c in choices)}")

    return check


def _boolean(key: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise _fail(key, value, "True or False")


def _encodable(text: str) -> bool:
    """Whether `text` is valid Unicode the core can take (lone surrogates are not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _string(key: str, value: Any) -> None:
    if not isinstance(value, str) or not _encodable(value):
        raise _fail(key, value, "a string (valid Unicode text)")


def _custom_string(key: str, value: Any) -> None:
    """A string the blob can record: its recorded text within the reader's limit (_npuc.BLOB_LIMITS),
    checked by the blob writer's own function, so the numbers cannot drift apart."""
    from npuc._npuc import CompileOptions

    _string(key, value)
    options = CompileOptions()
    options.custom_string = value
    options.check_blob_limits()  # ConfigError naming custom_string and the limit


def _names(key: str, value: Any) -> None:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(
        isinstance(v, str) and _encodable(v) for v in value
    ):
        raise _fail(key, value, "a list of node names (strings)")


def _names_or_none(key: str, value: Any) -> None:
    """RKNN's ``inputs_yuv_fmt``: per input a format name or None."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(
        v is None or isinstance(v, str) for v in value
    ):
        raise _fail(key, value, "a list with a format name (or None) per input")


def _fraction(key: str, value: Any) -> None:
    if not 0.0 <= finite_number(value, f"config({key})") <= 1.0:
        raise _fail(key, value, "a number from 0 to 1 (a cosine similarity)")


def _non_negative(key: str, value: Any) -> None:
    if finite_number(value, f"config({key})") < 0.0:
        raise _fail(key, value, "a non-negative number")


def _non_negative_int(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise _fail(key, value, "a non-negative integer")


def _dynamic_input(key: str, value: Any) -> None:
    """RKNN's ``[[shape per input], ...]`` per input-shape set (each checked against the model at build)."""
    from npuc.shapes import check_shape

    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise _fail(key, value, "a list of input-shape sets, e.g. [[[1, 3, 224, 224]], [[1, 3, 160, 160]]]")
    for i, shapes in enumerate(value):
        if isinstance(shapes, (str, bytes)) or not isinstance(shapes, (list, tuple)):
            raise _fail(key, value, f"a list of shapes at [{i}]")
        for j, shape in enumerate(shapes):
            check_shape(shape, f"config({key})[{i}][{j}]")


def _op_target(key: str, value: Any) -> None:
    if not isinstance(value, Mapping):
        raise _fail(key, value, "a dict {node name or op type: 'cpu' | 'npu'}")
    for name, device in value.items():
        if not isinstance(name, str) or not name or not _encodable(name):
            raise _fail(key, value, f"node names or op types as keys, got {shown(name)}")
        if not isinstance(device, str) or device.lower() not in OP_TARGET_DEVICES:
            raise ConfigError(
                f"config(op_target): {shown(name)} -> {shown(device)}; a target is one of {', '.join(OP_TARGET_DEVICES)}"
            )


def check_op_target_names(op_target: Mapping[str, str], node_names: Sequence[str], op_types: Sequence[str],
                           extra_op_types: Sequence[str] = ()) -> None:
    """Refuses an ``op_target`` key that is neither a node of the model being built nor an op type
    npuc knows (a typo would otherwise be ignored and the node stay where it was). An op type the
    model does not use is fine: one config serves several models.

    Raises:
        ConfigError: naming the key and the closest node names or op types.
    """
    import difflib

    nodes = set(node_names)
    # supported_ops() spells other domains' ops "domain.Op"; op_target keys use the bare op type.
    types = {t.rsplit(".", 1)[-1] for t in op_types} | set(extra_op_types)
    for name in op_target:
        if name in nodes or name in types:
            continue
        close = difflib.get_close_matches(name, sorted(nodes | types), n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ConfigError(f"config(op_target): {shown(name)} is neither a node of the model nor an op type{hint}")


def _pass_names(key: str, value: Any) -> None:
    from npuc._npuc import pass_names

    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise _fail(key, value, "a list of pass names (strings; npuc.pass_names() lists them)")
    valid = list(pass_names())
    unknown = [v for v in value if v not in valid]
    if unknown:
        raise ConfigError(f"config({key}): unknown pass(es) {shown(', '.join(unknown))}; valid passes: {', '.join(valid)}")


def _checkers() -> Dict[str, Callable[[str, Any], None]]:
    from npuc.quantize import ALGORITHMS, DTYPES, GROUP_METHODS, METHODS

    checks: Dict[str, Callable[[str, Any], None]] = {
        "quantized_dtype": _one_of(DTYPES),
        "quantized_algorithm": _one_of(ALGORITHMS),
        "quantized_method": _one_of(METHODS + GROUP_METHODS),
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
        "quantized_hybrid_level": _non_negative_int,
        "inputs_yuv_fmt": _names_or_none,
        "dynamic_input": _dynamic_input,
    }
    checks.update({key: _boolean for key in _INERT_BOOL_KEYS})
    return checks


def check_quantized_dtype_for_soc(target_platform: Optional[str], quantized_dtype: Optional[str]) -> None:
    """ConfigError naming the SoCs that have `quantized_dtype` when `target_platform` lacks it.

    What each SoC builds is data: the ``quantized_dtypes`` list of its profile (opset/soc/*.yaml).
    """
    if not target_platform or not quantized_dtype:
        return
    from npuc._npuc import require_quantized_dtype

    require_quantized_dtype(target_platform, quantized_dtype)


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
