"""RKNN's NPU core masks (``init_runtime(core_mask=...)``, rknn_api.h ``rknn_core_mask``) and the
number of cores each gives eval_perf's multi-core schedule (docs/perf_model.md, "Multi-core").

The values are RKNN's: a bit per core, AUTO = 0 (the runtime picks one idle core, so one core is
modelled) and ALL = 0xffff (every core the SoC has).
"""
from __future__ import annotations

from typing import Dict, Optional

from npuc.errors import ConfigError

NPU_CORE_AUTO = 0
NPU_CORE_0 = 1
NPU_CORE_1 = 2
NPU_CORE_2 = 4
NPU_CORE_0_1 = 3
NPU_CORE_0_1_2 = 7
NPU_CORE_ALL = 0xFFFF

#: RKNN's names (the CLI's and the YAML's spelling, also with the ``NPU_CORE_`` prefix) to values.
CORE_MASKS: Dict[str, int] = {
    "AUTO": NPU_CORE_AUTO, "0": NPU_CORE_0, "1": NPU_CORE_1, "2": NPU_CORE_2,
    "0_1": NPU_CORE_0_1, "0_1_2": NPU_CORE_0_1_2, "ALL": NPU_CORE_ALL,
}
_NAMES = {v: k for k, v in CORE_MASKS.items()}


def core_mask_value(mask: object, where: str = "core_mask") -> int:
    """An int mask, or a name ('0_1', 'NPU_CORE_0_1', 'all'), as RKNN's value; ConfigError otherwise."""
    if isinstance(mask, str):
        key = mask.strip().upper()
        key = key[len("NPU_CORE_"):] if key.startswith("NPU_CORE_") else key
        if key in CORE_MASKS:
            return CORE_MASKS[key]
    elif isinstance(mask, int) and not isinstance(mask, bool) and mask in _NAMES:
        return mask
    raise ConfigError(f"{where}={mask!r} is not one of RKNN's core masks: "
                      + ", ".join(f"NPU_CORE_{k} ({v:#x})" for k, v in CORE_MASKS.items()))


def core_mask_name(mask: int) -> str:
    return "NPU_CORE_" + _NAMES.get(mask, hex(mask))


def cores_for_mask(mask: object, soc: Optional[str], soc_cores: int, single_core_mode: bool) -> int:
    """The number of NPU cores `mask` lets the runtime use on a SoC with `soc_cores`: AUTO one, ALL
    all (one with single_core_mode), else the cores named. ConfigError naming the SoC's cores when
    the mask names a core the SoC lacks, or more than one core for a single_core_mode build."""
    value = core_mask_value(mask)
    if value == NPU_CORE_AUTO:
        return 1
    if value == NPU_CORE_ALL:
        return 1 if single_core_mode else soc_cores
    have = "_".join(str(c) for c in range(soc_cores))
    cores = [c for c in range(16) if value & (1 << c)]
    if max(cores) >= soc_cores:
        raise ConfigError(f"init_runtime(core_mask={core_mask_name(value)}): {soc} has {soc_cores} NPU core(s) "
                          f"({have}); valid masks: " + ", ".join(
                              core_mask_name(v) for v in CORE_MASKS.values()
                              if v in (NPU_CORE_AUTO, NPU_CORE_ALL) or max(c for c in range(16) if v & (1 << c)) < soc_cores))
    if len(cores) > 1 and single_core_mode:
        raise ConfigError(f"init_runtime(core_mask={core_mask_name(value)}): the model is built with "
                          f"config(single_core_mode=True), which runs on one core of {soc}'s {soc_cores} ({have}); "
                          f"use NPU_CORE_AUTO or one core, or rebuild without single_core_mode")
    return len(cores)
