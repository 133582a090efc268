"""Already-quantized ONNX models (QDQ / QAT exports, ONNX Runtime static quantization, npuc's own
``export_onnx``): what ``Toolkit.load_onnx`` and ``Toolkit.build`` do with them.

``load(...)`` strips the QuantizeLinear / DequantizeLinear pairs into a float model that
carries the scales and zero points they gave; ``build(...)`` quantizes the optimized graph from
them (no dataset needed; a dataset calibrates only what the file lacks). The rules, the mapping
table and the measured figures are docs/qdq_import.md.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from npuc import _npuc
from npuc._npuc import Model, QuantizedModel

__all__ = ["is_imported_qdq", "load", "build"]


def is_imported_qdq(model: Optional[Model]) -> bool:
    """True for a QDQ model ``load`` imported with quantized activations. A model whose only
    Q/DQ nodes dequantize constant weights (weight-only storage) is a float model: its weights
    are dequantized and ``build`` treats it as any float model."""
    if model is None:
        return False
    counts = _npuc.qdq_counts(model)
    return bool(counts) and counts["activations"] > 0


def load(
    source: Union[str, bytes],
    inputs: Sequence[str],
    sizes: Sequence[Sequence[int]],
    outputs: Sequence[str],
    custom_ops: Optional[Any],
    strict: bool,
    log: logging.Logger,
) -> Model:
    """``Model.load`` (a path) or ``Model.from_bytes`` (bytes) recognizing a QDQ model: its Q/DQ
    nodes are stripped before constant folding (which would make its int8 weights float) and the
    parameters they gave are kept with the model.

    A Q/DQ pattern npuc cannot map leaves the model as loaded (its Q/DQ nodes run as ops and
    ``build`` calibrates as for a float model) with a warning naming the node and the pattern.

    Raises:
        UnsupportedOpError: that pattern, when `strict` (``load_onnx(qdq_strict=True)``).
    """
    model, not_imported = _npuc.load_onnx(source, list(inputs), [list(s) for s in sizes], list(outputs),
                                          custom_ops, strict)
    if not_imported:
        log.warning("load_onnx: the model's Q/DQ nodes are kept as ops, not imported as given quantization "
                    "parameters (load_onnx(qdq_strict=True) makes this an error): %s", not_imported)
    counts = _npuc.qdq_counts(model)
    if counts:
        shifted = f", {counts['uint8_shifted']} uint8 mapped to int8 (zero point - 128)" if counts["uint8_shifted"] else ""
        log.info("load_onnx: QDQ model: %d activation pair(s) and %d quantized constant(s) kept as given "
                 "parameters%s", counts["activations"], counts["constants"], shifted)
    return model


def build(
    optimized: Model,
    source: Model,
    method: str,
    strict: bool,
    ranges: Optional[Dict[str, Tuple[float, float]]],
    hybrid_layers: Optional[Sequence[str]],
    log: logging.Logger,
) -> Tuple[QuantizedModel, Dict[str, Any]]:
    """The INT8 simulator of `optimized` (the optimizer's output for `source`) from the given parameters.

    Args:
        ranges: calibrated ranges for the activations the file gives no parameters (None: none;
            an activation left without parameters is then refused by name).
        strict: refuse (ConfigError) a weight that cannot be kept exactly (asymmetric, -128, scales
            along another axis) instead of requantizing it and reporting the error.
    """
    quantized, report = _npuc.quantize_given(optimized, source, method, strict, dict(ranges or {}),
                                             list(hybrid_layers or []))
    for warning in quantized.warnings:
        log.warning("quantization: %s", warning)
    return quantized, report
