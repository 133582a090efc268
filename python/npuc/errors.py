"""The exceptions npuc raises on purpose.

Every one derives from :class:`NpucError`; the C++ core raises the same classes (the extension
module defines them and translates its C++ errors into them), so ``except npuc.NpucError``
catches everything npuc reports, and a subclass catches precisely one kind of problem.
"""

from npuc._npuc import (  # noqa: F401  (re-exported)
    BlobError,
    ConfigError,
    GraphError,
    InputError,
    ModelLoadError,
    NpucError,
    ResourceError,
    ShapeError,
    UnsupportedOpError,
)



class VerificationError(NpucError):
    """``build(verify=True)`` found the optimized graph's outputs too far from the original's."""


class OutputError(NpucError):
    """An output file npuc was asked to write cannot be written there: it is a file the same job
    reads (the loaded model, the dataset list, a listed sample, ...), a directory, or the folder is
    missing or not writable (see :mod:`npuc.output_files`)."""


__all__ = [
    "NpucError",
    "VerificationError",
    "OutputError",
    "ModelLoadError",
    "UnsupportedOpError",
    "ShapeError",
    "GraphError",
    "InputError",
    "ConfigError",
    "BlobError",
    "ResourceError",
    "NotSupportedError",
]


class NotSupportedError(NpucError):
    """An RKNN-Toolkit2 call or option npuc does not have (yet): a frontend still to be written,
    a board-only feature, or an RKNN feature npuc does not offer. The message names it and what
    npuc offers instead; nothing was done."""
