"""What the ``npuc`` sub-command modules share: exit codes, the user-error types, argument parsers.

``cli`` (the entry point) imports ``cli_compile`` and ``cli_analyze``; all three import this module
and none imports another back, so the command modules form no import cycle.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import List, Optional

__all__ = ["EXIT_OK", "EXIT_USER_ERROR", "EXIT_INTERNAL_ERROR", "UserError", "ConfigFileError",
           "parse_shape", "parse_floats", "terminal_width", "fit_width", "add_blobs_arg"]

EXIT_OK = 0
EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 2


class UserError(Exception):
    """A problem with what the user asked for, reported without a traceback."""


class ConfigFileError(UserError):
    """A problem in a YAML config file or a conversion option, reported as a user error."""


def parse_shape(text: str) -> List[int]:
    """``1,3,224,224`` (or ``1x3x224x224``) as a list of non-negative integers (argparse type),
    within the shape rule of :func:`npuc.shapes.check_shape`."""
    from npuc.errors import ConfigError
    from npuc.messages import shown
    from npuc.shapes import check_shape

    try:
        dims = [int(d) for d in text.replace("x", ",").split(",") if d.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid shape {shown(text)}: expected comma-separated integers like 1,3,224,224")
    if not dims or any(d < 0 for d in dims):
        raise argparse.ArgumentTypeError(f"invalid shape {shown(text)}: expected non-negative integers like 1,3,224,224")
    try:
        return check_shape(dims, "shape")
    except ConfigError as e:
        raise argparse.ArgumentTypeError(f"invalid shape {shown(text)}: {e}") from None


def parse_floats(text: str) -> List[float]:
    """``0,0,0`` as a list of finite floats (argparse type)."""
    from npuc.config_check import finite_number
    from npuc.errors import ConfigError
    from npuc.messages import shown

    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid list {shown(text)}: expected comma-separated numbers like 0,0,0")
    try:
        return [finite_number(v, f"value [{i}]") for i, v in enumerate(values)]
    except ConfigError as e:
        raise argparse.ArgumentTypeError(f"invalid list {shown(text)}: {e}") from None


def terminal_width() -> Optional[int]:
    """The width wide tables are cut to: ``$COLUMNS`` when set, else the terminal's when stdout is
    one; None (no limit) when the output goes to a file or a pipe."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def fit_width(text: str, width: Optional[int]) -> str:
    """`text` with every line longer than `width` cut to it, ending in "…" (the tables' last
    columns are the long layer names); unchanged for width None. ``--wide`` passes None."""
    if width is None:
        return text
    width = max(width, 40)
    return "\n".join(line if len(line) <= width else line[: width - 1] + "…" for line in text.split("\n"))


def add_blobs_arg(p: argparse.ArgumentParser) -> None:
    """``--blobs``: the trained weights of a Caffe model (RKNN's ``load_caffe(model, blobs)``)."""
    p.add_argument("--blobs", metavar="CAFFEMODEL",
                   help="the .caffemodel with the trained weights when the model is a Caffe .prototxt")
