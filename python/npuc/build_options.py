"""The placement settings a ``.npub`` blob records in its build options (META), read back.

``Toolkit.export_blob`` records ``op_target`` and ``single_core_mode`` as Python reprs
(``Toolkit._blob_options``); the C++ side lowers, plans memory and verifies a loaded blob with the
same partition (``cpp/target/build_options.h``). This module gives Python the same settings, so
``eval_perf`` after ``load_blob`` and ``npuc perf blob.npub`` cost the partition the blob runs.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Mapping, Optional, Tuple

from npuc.errors import BlobError

__all__ = ["recorded_placement", "recorded_normalization"]


def recorded_placement(options: Mapping[str, str]) -> Tuple[Dict[str, str], bool]:
    """``(op_target, single_core_mode)`` from a blob's recorded build options.

    Args:
        options: ``meta["options"]`` of ``load_blob`` (str -> Python repr).

    Returns:
        The op_target dict (empty when not recorded) and whether single-core mode was on.

    Raises:
        BlobError: a recorded op_target that is not a str -> str dict literal.
    """
    op_target: Dict[str, str] = {}
    text = options.get("op_target")
    if text:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = None
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise BlobError(f"the blob's recorded op_target {text!r} is not a dict of node/op type -> 'cpu'/'npu'")
        op_target = dict(value)
    return op_target, options.get("single_core_mode") == "True"


def recorded_normalization(options: Mapping[str, str]) -> Tuple[Optional[List[List[float]]], Optional[List[List[float]]]]:
    """``(mean_values, std_values)`` a blob was built with (None when not recorded).

    A blob carries its input normalization as RKNN's models do, so ``inference`` on a loaded blob
    takes the same raw images the build's dataset held.

    Raises:
        BlobError: a recorded value that is not a list of lists of numbers.
    """
    values = []
    for key in ("mean_values", "std_values"):
        text = options.get(key)
        if not text:
            values.append(None)
            continue
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = None
        if not isinstance(value, list) or not all(
            isinstance(row, list) and all(isinstance(v, (int, float)) for v in row) for row in value
        ):
            raise BlobError(f"the blob's recorded {key} {text!r} is not a list of per-input lists of numbers")
        values.append(value)
    return values[0], values[1]
