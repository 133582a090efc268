"""TFLite reference harness: MediaPipe's trained models, a small flatbuffer reader/writer, Arm NN.

npuc's TFLite frontend is checked against Arm NN 20.08 (Debian ``python3-pyarmnn``, TfLiteParser on
the CpuRef backend). This module holds what those tests need and nothing of npuc:

* :func:`mediapipe_model`: the three trained models from npm (``tools/install_deps.sh test``).
* :func:`read_model` / :func:`write_model`: a schema-driven reader and a ``flatbuffers.Builder``
  writer for the subset of the TFLite schema these models use. The reader refuses any field it does
  not know (rather than silently dropping it), so a rewrite keeps every field the file had: same
  values, same presence (a field stored at its default value stays stored). Byte layout is
  flatbuffers.Builder's own, not the original converter's (see :func:`write_model`).
* :func:`fp32_weight_copy`: the copy Arm NN 20.08 runs correctly: float16 weights behind
  DEQUANTIZE folded to float32 (all three models), MediaPipe's custom Convolution2DTransposeBias as
  TRANSPOSE_CONV + ADD and half-pixel RESIZE_BILINEAR as ops Arm NN gets right (selfie_segmentation).
* :func:`armnn_run`: run a model in Arm NN, inputs and outputs by TFLite tensor name, NHWC;
  :func:`with_outputs` exposes intermediate tensors (Arm NN returns graph outputs only).
* :func:`numpy_run`: an independent numpy evaluation from the TFLite op definitions (float models,
  and int8 ones as fake-quant), which the tests hold Arm NN and the rewrites against.
* :func:`describe`: op counts, tensor dtypes, input/output names and shapes.
* :func:`write_quantized_tflite`: an INT8 TFLite model in TFLite's standard scheme, calibrated on
  Arm NN's FP32 activations (no quantized TFLite model is available offline);
  :func:`write_small_float_model` is a small CNN to quantize in fast tests; :class:`GraphBuilder`
  writes single-op models.

What Arm NN 20.08 gets wrong or refuses, found with numpy_run and single-op models: it cannot take
weights from a DEQUANTIZE; it knows no custom ops; its TfLiteParser ignores half_pixel_centers on
RESIZE_BILINEAR (25% error on selfie_segmentation, silently); it aborts the process (an assertion)
on per-channel int8 FULLY_CONNECTED weights. Its CpuRef int8 kernels dequantize, compute in float
and requantize, so it is a fake-quant reference: integer kernels may differ by about an LSB per op.

Only Debian's python3-flatbuffers (Builder, number types) and numpy are used for the file format;
the TFLite schema facts (field slots, enums, union order) come from the public ``schema.fbs``.

Layout: this file is a facade; the code is in the package ``tflite_ref`` next to it, one module per
job (``schema`` tables and op names, ``flatbuf`` reader/writer, ``queries`` describe/op_name/
tensor_value, ``rewrite`` fp32_weight_copy and its rewrites, ``armnn``, ``numpy_ref``, ``build``
GraphBuilder/with_outputs/the small model, ``quantize`` the INT8 writer). The MediaPipe model paths
and :func:`deps_missing` stay here: tests patch ``NODE_MODULES`` on this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional, Tuple

from tflite_ref.armnn import _runtime, armnn_run
from tflite_ref.build import GraphBuilder, with_outputs, write_small_float_model
from tflite_ref.flatbuf import buffer_data_offsets, flatbuffers, model_bytes, read_model, tables_equal, write_model
from tflite_ref.numpy_ref import numpy_run
# _quant is private but tests/fuzz/make_seeds.py writes quantized tensors with it.
from tflite_ref.quantize import _quant, activation_ranges, cosine, write_quantized_tflite  # noqa: F401
from tflite_ref.queries import describe, op_code, op_name, tensor_value
from tflite_ref.rewrite import (expand_half_pixel_resize, expand_transpose_conv_bias, fold_fp16_dequantize,
                                fp32_weight_copy)
from tflite_ref.schema import (BUILTIN_OPTIONS, FLOAT16, FLOAT32, INT8, INT32, OP_NAMES, OPS, SCHEMA, TENSOR_TYPES,
                               TYPE_NAMES, UNIONS, Table, TFLiteFormatError)

__all__ = [
    "REPO_ROOT", "NODE_MODULES", "INSTALL_HINT", "MEDIAPIPE_MODELS", "mediapipe_model", "deps_missing",
    "SCHEMA", "BUILTIN_OPTIONS", "UNIONS", "OPS", "OP_NAMES", "TENSOR_TYPES", "TYPE_NAMES",
    "FLOAT32", "FLOAT16", "INT32", "INT8", "Table", "TFLiteFormatError",
    "flatbuffers", "read_model", "buffer_data_offsets", "model_bytes", "write_model", "tables_equal",
    "op_code", "op_name", "tensor_value", "describe",
    "fold_fp16_dequantize", "expand_transpose_conv_bias", "expand_half_pixel_resize", "fp32_weight_copy",
    "armnn_run", "numpy_run", "GraphBuilder", "with_outputs", "write_small_float_model",
    "activation_ranges", "write_quantized_tflite", "cosine",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = REPO_ROOT / "bench" / "node_modules"
INSTALL_HINT = "tools/install_deps.sh test (npm install --ignore-scripts in bench/)"

#: model name -> (npm package, file inside it)
MEDIAPIPE_MODELS: Dict[str, Tuple[str, str]] = {
    "face_detection_short_range": ("@mediapipe/face_detection", "face_detection_short_range.tflite"),
    "selfie_segmentation": ("@mediapipe/selfie_segmentation", "selfie_segmentation.tflite"),
    "hand_landmark_lite": ("@mediapipe/hands", "hand_landmark_lite.tflite"),
}


def mediapipe_model(name: str) -> str:
    """Path of one of MediaPipe's trained TFLite models installed from npm into bench/node_modules."""
    if name not in MEDIAPIPE_MODELS:
        raise KeyError(f"unknown MediaPipe model {name!r}; known: {sorted(MEDIAPIPE_MODELS)}")
    package, filename = MEDIAPIPE_MODELS[name]
    path = NODE_MODULES / package / filename
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: npm package {package} is not installed; run {INSTALL_HINT}")
    return str(path)


def deps_missing() -> Optional[str]:
    """None when flatbuffers and pyarmnn import, else what is missing (for a skip or a failure)."""
    missing = []
    if flatbuffers is None:
        missing.append("python3-flatbuffers")
    try:
        backends = [str(b) for b in _runtime().GetDeviceSpec().GetSupportedBackends()]
        if "CpuRef" not in backends:  # pyarmnn imports without the backend package
            missing.append("libarmnn-cpuref-backend22 (Arm NN has no CpuRef backend)")
    except ImportError:
        missing.append("python3-pyarmnn")
    return ", ".join(missing) or None
