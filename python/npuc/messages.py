"""How a value the user gave appears in an error message: ``shown(value)``.

A config value can be arbitrarily large (a 100k-character string, a list with a million entries, a
YAML alias expanded a billion times); echoing it whole turned one error into gigabytes of stderr.
Every message that quotes a user value goes through :func:`shown`, so the cap lives here only.
"""

from __future__ import annotations

import os
import reprlib
from typing import Any

__all__ = ["MAX_MESSAGE_CHARS", "MAX_SHOWN_CHARS", "MAX_SHOWN_PATH", "capped", "shown", "shown_key", "shown_path"]

#: Longest quotation of a user value in a message (the ``... (N chars)`` suffix is extra).
MAX_SHOWN_CHARS = 80
#: Longest quotation of a path: paths are quoted in full up to this (the OS's own PATH_MAX is 4096),
#: since a user needs the whole path to find the file, but a path-sized value is still capped.
MAX_SHOWN_PATH = 1024
#: Longest error message the command line prints (a last guard: values are already cut by shown()).
MAX_MESSAGE_CHARS = 4000

# reprlib bounds the work as well as the text: a huge list or a deeply nested value is summarized
# element by element without building its full repr first.
_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxfrozenset = _REPR.maxdeque = 8
_REPR.maxdict = 8
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = MAX_SHOWN_CHARS


def shown(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """``repr(value)`` for a message, cut to `limit` characters plus ``... (N chars)``.

    Strings are measured by their own length (N is ``len(value)``); other values by their
    summarized repr, which never expands a large container in full.
    """
    if isinstance(value, str):
        text, total = repr(value[: limit + 1]), len(value)
        if total <= limit:
            return repr(value)
        return f"{text[:limit]}... ({total} chars)"
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the error being reported
        text = f"<{type(value).__name__} object>"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} chars)"


def shown_key(key: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """A key for a dotted path in a message (``models[0].configs.mean_values``): a string as it
    is, without quotes, cut like :func:`shown`; any other key as :func:`shown` shows it."""
    if not isinstance(key, str):
        return shown(key, limit)
    return key if len(key) <= limit else f"{key[:limit]}... ({len(key)} chars)"


def shown_path(path: Any) -> str:
    """A path for a message: quoted like :func:`shown`, in full up to MAX_SHOWN_PATH characters."""
    return shown(os.fspath(path) if isinstance(path, os.PathLike) else path, MAX_SHOWN_PATH)


def capped(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`message` cut to `limit` characters plus ``... (N chars)``."""
    return message if len(message) <= limit else f"{message[:limit]}... ({len(message)} chars)"
