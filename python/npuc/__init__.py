"""npuc: an open NPU model compiler toolchain.

The workflow follows RKNN-Toolkit2 (``config -> load_onnx -> build -> export -> inference``)
through :class:`Toolkit`; :class:`Model` and :class:`Runtime` are the lower-level objects it is
built on (an imported graph, and that graph compiled for the FP32 host executor).
"""

import os as _os

# The host kernels (oneDNN and npuc's own) run on OpenMP (libgomp), which reads its settings
# once, when the extension below loads it. libgomp's default lets a thread that reaches a barrier
# spin before sleeping; when other processes keep the cores busy, the spinning thread holds a
# core the thread it waits for needs, and a 2-thread run measured 10-50x slower than with
# passive waiting (docs/performance.md). Passive is the default here unless the user chose a
# policy; it has no effect if another library loaded libgomp before npuc.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["OMP_WAIT_POLICY"] = "passive"

from npuc._npuc import Model, Runtime, __version__, optimize, pass_names, supported_ops
from npuc.errors import (
    BlobError,
    ConfigError,
    GraphError,
    InputError,
    ModelLoadError,
    NotSupportedError,
    NpucError,
    OutputError,
    ResourceError,
    ShapeError,
    UnsupportedOpError,
    VerificationError,
)
from npuc.toolkit import Toolkit

__all__ = [
    "Toolkit",
    "Model",
    "Runtime",
    "supported_ops",
    "optimize",
    "pass_names",
    "__version__",
    "NpucError",
    "ModelLoadError",
    "UnsupportedOpError",
    "ShapeError",
    "GraphError",
    "InputError",
    "ConfigError",
    "BlobError",
    "ResourceError",
    "VerificationError",
    "OutputError",
    "NotSupportedError",
]
