"""npuc: an open NPU model compiler toolchain.

The workflow follows RKNN-Toolkit2 (``config -> load_onnx -> build -> export -> inference``)
through :class:`Toolkit`; :class:`Model` and :class:`Runtime` are the lower-level objects it is
built on (an imported graph, and that graph compiled for the FP32 host executor).
"""

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
