"""INT8 quantization and the FP16 model, on top of the C++ calibrator, quantizer and simulator.

``quantize(model, dataset, ...)`` streams the calibration samples through the FP32 model (only
per-activation histograms are kept, so any number of samples fits in memory), picks the ranges
with ``algorithm`` and returns a :class:`npuc._npuc.QuantizedModel` whose ``run()`` is the
bit-exact INT8 simulator. ``fp16(model)`` returns the same kind of object for FP16 mode (no
quantization; weights and every op output rounded to IEEE half). The numeric convention is
docs/quantization.md.

These are the functions ``Toolkit.build`` / ``Toolkit.inference`` delegate to.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from npuc import dataset as _dataset
from npuc._npuc import Calibrator, Model, QuantizedModel, fp16_model
from npuc.errors import ConfigError
from npuc.messages import shown

__all__ = [
    "ALGORITHMS",
    "METHODS",
    "quantize",
    "fp16",
    "build_for_toolkit",
    "calibrate",
    "settings_from_config",
    "dtype_from_config",
    "calibration_algorithm_for",
    "cosine_similarity",
]

#: ``quantized_algorithm`` values (RKNN-Toolkit2's, plus percentile).
ALGORITHMS = ("normal", "kl_divergence", "mmse", "percentile")
#: ``quantized_method`` values: per output channel or per tensor weight scales, or (w4a16 only)
#: per-channel scales with per-group multipliers over 32..256 reduction elements.
METHODS = ("channel", "layer")
GROUP_METHODS = ("group32", "group64", "group128", "group256")
#: ``quantized_dtype`` values meaning int8 activations and weights.
INT8_DTYPES = ("asymmetric_quantized-8", "w8a8", "int8")
#: RKNN-Toolkit2 2.3.2's other ``quantized_dtype`` values (docs/quantization.md "Quantized dtypes"):
#: int16 activations with int8 / int16 / power-of-two int16 / grouped int4 weights.
WIDE_DTYPES = ("w8a16", "w16a16i", "w16a16i_dfp", "w4a16")
DTYPES = INT8_DTYPES + WIDE_DTYPES

_log = logging.getLogger("npuc.quantize")


def quantize(
    model: Model,
    dataset: _dataset.DatasetLike,
    algorithm: str = "normal",
    method: str = "channel",
    hybrid_layers: Optional[Sequence[str]] = None,
    normalize: Optional[_dataset.Normalizer] = None,
    rgb2bgr: bool = False,
    reference: bool = False,
    logger: Optional[logging.Logger] = None,
    dtype: str = "w8a8",
    timings: Optional[Dict[str, float]] = None,
) -> QuantizedModel:
    """Calibrates `model` on `dataset` and returns its integer simulator.

    Args:
        model: the (optimized) FP32 model.
        dataset: a ``dataset.txt`` path or an iterable of samples (see :mod:`npuc.dataset`).
        algorithm: one of :data:`ALGORITHMS` (at 16-bit activations see
            :func:`calibration_algorithm_for`).
        method: one of :data:`METHODS`, or of :data:`GROUP_METHODS` with ``dtype='w4a16'``.
        dtype: one of :data:`DTYPES` (RKNN's ``quantized_dtype``).
        hybrid_layers: node names computed in FP16 instead of INT8.
        normalize: mean/std normalization applied to samples read from a ``dataset.txt``.
        rgb2bgr: reverse the channels of images read from a ``dataset.txt``.
        reference: run the simulator's plain reference loops instead of the fast path (same bits).
        timings: if given, filled with wall seconds per stage (a profile; also logged at debug
            level): 'read' (reading and preprocessing samples), 'inputs', 'collect', 'forward',
            'statistics', 'search', 'plan', 'simulator' (:attr:`npuc._npuc.Calibrator.timings`).

    Raises:
        ConfigError: unknown algorithm / method / hybrid layer, or an empty dataset.
        InputError: a sample that cannot be read or has the wrong shape (named by line).
    """
    log = logger or _log
    check_algorithm_and_method(algorithm, method, dtype)
    start = time.perf_counter()
    calibrator, _ = calibrate(model, dataset, normalize, rgb2bgr)
    streamed = time.perf_counter() - start
    used = calibration_algorithm_for(algorithm, dtype, log)
    log.info(
        "calibration: %d sample(s), algorithm %s, method %s, dtype %s", calibrator.num_samples, used, method, dtype
    )
    quantized = calibrator.quantize(used, method, list(hybrid_layers or []), reference, dtype)
    for warning in quantized.warnings:
        log.warning("quantization: %s", warning)
    stages = dict(calibrator.timings)
    # What the C++ side did not time while streaming: reading files and preprocessing in Python.
    stages["read"] = max(0.0, streamed - stages["inputs"] - stages["collect"])
    log.debug("calibration timings (s): %s", ", ".join(f"{k} {v:.3f}" for k, v in stages.items()))
    if timings is not None:
        timings.update(stages)
    return quantized


def check_algorithm_and_method(algorithm: str, method: str, dtype: str = "w8a8") -> None:
    """Raises ConfigError naming an unknown ``quantized_algorithm`` / ``quantized_method`` /
    ``quantized_dtype``, or a group method and a dtype that do not go together (naming both)."""
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"quantized_algorithm {shown(algorithm)} is not one of {', '.join(ALGORITHMS)}")
    if dtype not in DTYPES:
        raise ConfigError(f"quantized_dtype {shown(dtype)} is not one of {', '.join(DTYPES)}")
    if method not in METHODS + GROUP_METHODS:
        raise ConfigError(
            f"quantized_method {shown(method)} is not one of {', '.join(METHODS + GROUP_METHODS)}"
        )
    if dtype == "w4a16" and method not in GROUP_METHODS:
        raise ConfigError(
            f"quantized_dtype w4a16 needs quantized_method {', '.join(GROUP_METHODS)} (got {shown(method)})"
        )
    if method in GROUP_METHODS and dtype != "w4a16":
        raise ConfigError(f"quantized_method {method} applies to quantized_dtype w4a16 only, not {shown(dtype)}")


#: Calibration algorithms that keep their meaning at 16-bit activations. kl_divergence compares
#: the clipped distribution with its quantization on a 2048-bin histogram: at 32768 levels per side
#: every bin is its own level, so nothing is ever clipped (its own rule returns min/max). mmse's
#: search is laid out for 256 levels; at 65536 levels the rounding noise is 2^16 times smaller and
#: the optimum is (measured on ppocrv4_det, docs/quantization.md) the min/max range within its
#: search step. Both therefore run as ``normal`` at 16 bits, and the log says so.
_ALGORITHMS_AT_16_BITS = ("normal", "percentile")


def calibration_algorithm_for(algorithm: str, dtype: str, logger: Optional[logging.Logger] = None) -> str:
    """The calibration algorithm actually used for `algorithm` with `dtype` (logged when it differs)."""
    if dtype not in WIDE_DTYPES or algorithm in _ALGORITHMS_AT_16_BITS:
        return algorithm
    (logger or _log).warning(
        "quantized_algorithm %s is tuned for 256 levels; %s has 16-bit activations: using 'normal' (min/max) "
        "ranges instead (docs/quantization.md, 'Quantized dtypes')",
        algorithm,
        dtype,
    )
    return "normal"


def dtype_from_config(config: Dict[str, Any]) -> str:
    """The ``quantized_dtype`` of the Toolkit config, canonical (the int8 spellings -> ``w8a8``)."""
    dtype = config.get("quantized_dtype") or "w8a8"
    if dtype not in DTYPES:
        raise ConfigError(f"quantized_dtype {shown(dtype)} is not supported ({', '.join(DTYPES)})")
    return "w8a8" if dtype in INT8_DTYPES else dtype


def calibrate(
    model: Model,
    dataset: _dataset.DatasetLike,
    normalize: Optional[_dataset.Normalizer] = None,
    rgb2bgr: bool = False,
    keep: int = 0,
) -> Tuple[Calibrator, List[List[np.ndarray]]]:
    """Streams `dataset` through a :class:`Calibrator` of `model`.

    Returns the calibrator and the first `keep` samples (kept because a dataset given as an
    iterator can be read only once; the accuracy analysis of auto-hybrid reuses them).

    Raises:
        ConfigError: an empty dataset. InputError: an unreadable or wrongly shaped sample.
    """
    calibrator = Calibrator(model)
    kept: List[List[np.ndarray]] = []
    samples = _dataset.iterate_samples(dataset, model.inputs, normalize, rgb2bgr)
    # Handed over `threads` at a time: the calibrator runs them on the cores at once (same result
    # as one by one). Only that many samples are held, so memory still does not grow with the set.
    batch: List[List[np.ndarray]] = []
    for sample in _dataset.progress(samples, _dataset.count_samples(dataset), "calibrating"):
        batch.append(sample)
        if len(kept) < keep:
            kept.append(sample)
        if len(batch) == calibrator.threads:
            calibrator.add_samples(batch)
            batch = []
    if batch:
        calibrator.add_samples(batch)
    if calibrator.num_samples == 0:
        raise ConfigError("the calibration dataset is empty")
    return calibrator, kept


def settings_from_config(config: Dict[str, Any]) -> Tuple[str, str]:
    """(algorithm, method) from the Toolkit config keys, validated together with the dtype
    (:func:`dtype_from_config` gives the dtype)."""
    dtype = dtype_from_config(config)
    algorithm = config.get("quantized_algorithm") or "normal"
    method = config.get("quantized_method") or "channel"
    check_algorithm_and_method(algorithm, method, dtype)
    return algorithm, method


def fp16(model: Model) -> QuantizedModel:
    """`model` on the FP16 simulator (RKNN's ``do_quantization=False``)."""
    return fp16_model(model)


def build_for_toolkit(
    model: Model,
    config: Dict[str, Any],
    do_quantization: bool,
    dataset: Optional[_dataset.DatasetLike],
    normalize: Optional[_dataset.Normalizer],
    logger: Optional[logging.Logger] = None,
    timings: Optional[Dict[str, float]] = None,
) -> QuantizedModel:
    """The quantization step of ``Toolkit.build``: INT8 from the config keys, or FP16.

    Config keys read: ``quantized_dtype``, ``quantized_algorithm``, ``quantized_method``,
    ``quant_img_RGB2BGR`` and ``hybrid_layers`` (a list of node names; RKNN's hybrid
    quantization). ``dataset`` is required when quantizing. ``timings``: as :func:`quantize`.
    """
    if not do_quantization:
        return fp16(model)
    algorithm, method = settings_from_config(config)
    if dataset is None:
        raise ConfigError("build(do_quantization=True) needs a calibration dataset (dataset='dataset.txt')")
    return quantize(
        model,
        dataset,
        algorithm=algorithm,
        method=method,
        hybrid_layers=config.get("hybrid_layers"),
        normalize=normalize,
        rgb2bgr=bool(config.get("quant_img_RGB2BGR", False)),
        logger=logger,
        dtype=dtype_from_config(config),
        timings=timings,
    )


def cosine_similarity(reference: np.ndarray, test: np.ndarray) -> float:
    """cos(angle) between two outputs as flat vectors (1.0 when both are all zero)."""
    r = np.asarray(reference, dtype=np.float64).ravel()
    t = np.asarray(test, dtype=np.float64).ravel()
    nr, nt = np.linalg.norm(r), np.linalg.norm(t)
    if nr == 0 and nt == 0:
        return 1.0
    if nr == 0 or nt == 0:
        return 0.0
    return float(np.dot(r, t) / (nr * nt))


def run_samples(qmodel: QuantizedModel, samples: Iterable[List[np.ndarray]]) -> List[List[np.ndarray]]:
    """Runs the simulator on each sample (a helper for accuracy checks)."""
    return [qmodel.run(s) for s in samples]
