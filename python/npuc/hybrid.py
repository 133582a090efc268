"""Hybrid quantization: keeping the layers INT8 hurts most in FP16 (RKNN-Toolkit2's two flows).

* **auto hybrid** (``Toolkit.build(auto_hybrid=True)``): after calibration, the accuracy analysis'
  *single* cosine of every INT8 layer (the layer alone, fed its FP32 inputs quantized with their
  own parameters: its own error, not what it inherits) is measured on the first calibration
  samples; layers below ``auto_hybrid_cos_thresh`` (default 0.98), or above
  ``auto_hybrid_euc_thresh`` when set, move to FP16. The report says which, and why.
* **two steps** (``hybrid_quantization_step1/2``): step 1 calibrates and writes
  ``<model>.model`` (the optimized graph, ONNX), ``<model>.data`` (the calibrated ranges, npz)
  and ``<model>.quantization.cfg`` (YAML: ``custom_quantize_layers`` the user edits, and
  ``quantize_parameters`` per activation). Step 2 rebuilds from those three files.

docs/quantization.md ("Hybrid quantization") shows both flows.
"""

from __future__ import annotations

import logging
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from npuc import dataset as _dataset
from npuc._npuc import Model, QuantizedModel, quantize_from_ranges
from npuc.config_check import check_config_values, finite_float32
from npuc.errors import ConfigError, ModelLoadError
from npuc.messages import capped, shown, shown_key, shown_path
from npuc.output_files import JobInputs, atomic_output, make_folder, refuse_output, write_text_output
from npuc.quantize import calibrate, calibration_algorithm_for, dtype_from_config, settings_from_config
from npuc.yaml_config import load_yaml_config

__all__ = [
    "DEFAULT_COS_THRESH",
    "HybridChoice",
    "AutoHybridReport",
    "propose_layers",
    "build_auto_hybrid",
    "STEP1_FILES",
    "step1_paths",
    "step1",
    "step2",
]

#: RKNN-Toolkit2's default ``auto_hybrid_cos_thresh``.
DEFAULT_COS_THRESH = 0.98
#: Calibration samples the isolated cosine is measured on by auto hybrid: each costs one FP32
#: run and two simulator runs; the worst value over them decides.
AUTO_HYBRID_SAMPLES = 4
#: The only precision ``custom_quantize_layers`` may name (RKNN-Toolkit2's spelling).
FLOAT16 = "float16"
CFG_KEYS = ("custom_quantize_layers", "quantize_parameters")
PARAM_KEYS = ("qtype", "qmethod", "dtype", "min", "max", "scale", "zero_point")
#: Step 1's files by kind: their suffix after the prefix, and what error messages call them.
STEP1_SUFFIXES = {"model": ".model", "data": ".data", "cfg": ".quantization.cfg"}
#: config() settings step 1 records in its .data file for step 2 (which RKNN scripts run in a
#: fresh object, without config()): the SoC and the preprocessing.
RECORDED_CONFIG = ("target_platform", "mean_values", "std_values", "quant_img_RGB2BGR")
STEP1_FILES = {"model": "the hybrid step1 model file", "data": "the hybrid step1 data file",
               "cfg": "the hybrid step1 quantization cfg"}


@dataclass
class HybridChoice:
    """A layer moved to FP16, with the measurement that moved it."""

    node: str
    op_type: str
    single_cosine: float  # worst over the analysed samples
    single_euclidean: float  # worst over the analysed samples
    reason: str


@dataclass
class AutoHybridReport:
    """What ``build(auto_hybrid=True)`` decided."""

    chosen: List[HybridChoice]
    cos_thresh: float
    euc_thresh: Optional[float]
    samples: int
    output_cosine_before: float  # worst graph-output cosine vs FP32, all INT8
    output_cosine_after: float  # the same with the chosen layers in FP16
    text: str


def _measure(qmodel: QuantizedModel, samples: Sequence[List[np.ndarray]]) -> Tuple[Dict[str, Dict[str, Any]], float]:
    """One accuracy analysis per sample gives both: per INT8 node its op, lowest single cosine and
    highest single distance; and the worst end-to-end cosine of the graph outputs."""
    worst: Dict[str, Dict[str, Any]] = {}
    outputs = {o["name"] for o in qmodel.outputs}
    output_cos = 1.0
    # A per-layer analysis per sample: most of auto hybrid's time on a large model; shown.
    for sample in _dataset.progress(samples, len(samples), "hybrid: per-layer analysis"):
        for r in qmodel.accuracy_analysis(sample):
            if r["value"] in outputs:
                output_cos = min(output_cos, _nan_low(r["cosine"]))
            if not r["node"] or not r["precision"].startswith("int8"):
                continue
            w = worst.setdefault(r["node"], {"op_type": r["op_type"], "cos": math.inf, "euc": -math.inf})
            w["cos"] = min(w["cos"], _nan_low(r["single_cosine"]))
            w["euc"] = max(w["euc"], r["single_euclidean"])
    return worst, output_cos


def _nan_low(x: float) -> float:
    """NaN (a NaN in either run) compares as the worst cosine."""
    return -1.0 if math.isnan(x) else x


def propose_layers(
    qmodel: QuantizedModel,
    samples: Sequence[List[np.ndarray]],
    cos_thresh: float = DEFAULT_COS_THRESH,
    euc_thresh: Optional[float] = None,
) -> List[HybridChoice]:
    """The INT8 layers whose single cosine is below `cos_thresh` (or single Euclidean distance
    above `euc_thresh`, when given) on any of `samples`, in graph order."""
    return _choose(_measure(qmodel, samples)[0], cos_thresh, euc_thresh)


def _choose(worst: Dict[str, Dict[str, Any]], cos_thresh: float, euc_thresh: Optional[float]) -> List[HybridChoice]:
    chosen = []
    for node, w in worst.items():
        reasons = []
        if w["cos"] < cos_thresh:
            reasons.append(f"single cosine {w['cos']:.5f} < {cos_thresh}")
        if euc_thresh is not None and w["euc"] > euc_thresh:
            reasons.append(f"single euclidean {w['euc']:.5g} > {euc_thresh}")
        if reasons:
            chosen.append(HybridChoice(node, w["op_type"], w["cos"], w["euc"], "; ".join(reasons)))
    return chosen


def _output_cosine(model: Model, qmodel: QuantizedModel, samples: Sequence[List[np.ndarray]]) -> float:
    """Worst cosine vs FP32 over the graph outputs and `samples` (end-to-end run)."""
    from npuc._npuc import Runtime
    from npuc.quantize import cosine_similarity

    runtime = Runtime(model)
    cosines = [
        _nan_low(cosine_similarity(ref, got))
        for s in _dataset.progress(samples, len(samples), "hybrid: output check")
        for ref, got in zip(runtime.run(s), qmodel.run(s))
    ]
    return min(cosines) if cosines else 1.0


def _thresholds(config: Dict[str, Any]) -> Tuple[float, Optional[float]]:
    cos = config.get("auto_hybrid_cos_thresh")
    euc = config.get("auto_hybrid_euc_thresh")
    # The rule for both keys is config()'s (npuc.config_check); checked again for a config dict
    # that did not come through Toolkit.config.
    check_config_values({"auto_hybrid_cos_thresh": cos, "auto_hybrid_euc_thresh": euc})
    return (DEFAULT_COS_THRESH if cos is None else float(cos)), (None if euc is None else float(euc))


def _format_report(chosen: Sequence[HybridChoice], before: float, after: float, cos: float,
                   euc: Optional[float], samples: int) -> str:
    lines = [f"auto hybrid: single (isolated) cosine of every INT8 layer on {samples} calibration sample(s), "
             f"threshold {cos}" + (f", euclidean threshold {euc}" if euc is not None else "")]
    if not chosen:
        lines.append("  every layer passes: nothing moved to FP16")
    else:
        width = max(len(c.node) for c in chosen)
        lines.append(f"  {len(chosen)} layer(s) moved to FP16:")
        lines += [f"    {c.node.ljust(width)}  {c.op_type:<10}  {c.reason}" for c in chosen]
    lines.append(f"  worst output cosine vs FP32: {before:.5f} all INT8 -> {after:.5f} hybrid")
    return "\n".join(lines)


def build_auto_hybrid(
    model: Model,
    config: Dict[str, Any],
    dataset: Optional[_dataset.DatasetLike],
    normalize: Optional[_dataset.Normalizer],
    logger: Optional[logging.Logger] = None,
) -> Tuple[QuantizedModel, AutoHybridReport]:
    """``build(auto_hybrid=True)``: calibrate, measure, move the bad layers to FP16, re-plan.

    ``config(hybrid_layers=[...])`` are kept in FP16 as well. Raises ConfigError like
    ``build_for_toolkit`` (no dataset, bad algorithm/method/thresholds).
    """
    log = logger or logging.getLogger("npuc.hybrid")
    algorithm, method = settings_from_config(config)
    cos, euc = _thresholds(config)
    if dataset is None:
        raise ConfigError("build(auto_hybrid=True) needs a calibration dataset (dataset='dataset.txt')")
    calibrator, samples = calibrate(model, dataset, normalize, bool(config.get("quant_img_RGB2BGR")),
                                    keep=AUTO_HYBRID_SAMPLES)
    given = list(config.get("hybrid_layers") or [])
    dtype = dtype_from_config(config)
    algorithm = calibration_algorithm_for(algorithm, dtype, log)
    int8 = calibrator.quantize(algorithm, method, given, False, dtype)
    worst, before = _measure(int8, samples)
    chosen = _choose(worst, cos, euc)
    hybrid, after = int8, before
    if chosen:
        hybrid = calibrator.quantize(algorithm, method, given + [c.node for c in chosen], False, dtype)
        after = _output_cosine(model, hybrid, samples)
    text = _format_report(chosen, before, after, cos, euc, len(samples))
    for warning in hybrid.warnings:
        log.warning("quantization: %s", warning)
    return hybrid, AutoHybridReport(chosen, cos, euc, len(samples), before, after, text)


# ---------------------------------------------------------------------- two-step flow


def step1_paths(prefix: Path) -> Dict[str, Path]:
    """The files step 1 writes, by kind ('model', 'data', 'cfg'): ``<prefix>.model`` ..."""
    return {kind: Path(f"{prefix}{suffix}") for kind, suffix in STEP1_SUFFIXES.items()}


def step1(
    model: Model,
    config: Dict[str, Any],
    dataset: Optional[_dataset.DatasetLike],
    normalize: Optional[_dataset.Normalizer],
    prefix: Path,
    proposal: bool = False,
    proposal_dataset_size: int = 1,
    inputs: Optional[JobInputs] = None,
) -> Dict[str, Path]:
    """Calibrates `model` and writes ``<prefix>.model``, ``<prefix>.data`` and
    ``<prefix>.quantization.cfg``; returns their paths by kind ('model', 'data', 'cfg').

    With `proposal`, ``custom_quantize_layers`` starts with the layers auto hybrid would move
    (single cosine below ``auto_hybrid_cos_thresh`` on `proposal_dataset_size` samples);
    ``config(hybrid_layers=...)`` are listed there too. None of the files is written when one
    of them would replace a file of `inputs` (OutputError); each is written whole or not at all.
    """
    paths = step1_paths(prefix)
    for kind, path in paths.items():
        refuse_output(path, STEP1_FILES[kind], inputs)
    if dataset is None:
        raise ConfigError("hybrid_quantization_step1 needs a calibration dataset (dataset='dataset.txt')")
    if isinstance(proposal_dataset_size, bool) or not isinstance(proposal_dataset_size, int) or proposal_dataset_size < 1:
        raise ConfigError(f"proposal_dataset_size={shown(proposal_dataset_size)}: must be an integer >= 1")
    algorithm, method = settings_from_config(config)
    cos, euc = _thresholds(config)
    calibrator, samples = calibrate(model, dataset, normalize, bool(config.get("quant_img_RGB2BGR")),
                                    keep=proposal_dataset_size)
    ranges = calibrator.ranges(algorithm)
    given = list(config.get("hybrid_layers") or [])
    dtype = dtype_from_config(config)
    qmodel = calibrator.quantize(calibration_algorithm_for(algorithm, dtype), method, given, False, dtype)
    custom = {name: FLOAT16 for name in given}
    worst, _ = _measure(qmodel, samples)
    if proposal:
        custom.update({c.node: FLOAT16 for c in _choose(worst, cos, euc)})

    make_folder(paths["cfg"].parent, "the hybrid quantization files")
    with atomic_output(paths["model"], STEP1_FILES["model"], inputs) as tmp:
        model.export_onnx(tmp)
    names = sorted(ranges)
    with atomic_output(paths["data"], STEP1_FILES["data"], inputs) as tmp, open(tmp, "wb") as f:
        # a file object: np.savez would append ".npz" to a name
        np.savez(f, names=np.array(names), min=np.array([ranges[n][0] for n in names], np.float32),
                 max=np.array([ranges[n][1] for n in names], np.float32),
                 algorithm=np.array(algorithm), method=np.array(method),
                 config=np.array(json.dumps({k: config.get(k) for k in RECORDED_CONFIG})))
    write_text_output(paths["cfg"], _cfg_text(custom, ranges, qmodel, worst, method, len(samples)),
                      STEP1_FILES["cfg"], inputs)
    return paths


def _cfg_text(custom: Dict[str, str], ranges: Dict[str, Tuple[float, float]], qmodel: QuantizedModel,
              worst: Dict[str, Dict[str, Any]], method: str, samples: int) -> str:
    import yaml

    params = qmodel.activation_params
    quantize_parameters = {}
    for name, (lo, hi) in sorted(ranges.items()):
        entry: Dict[str, Any] = {"qtype": "asymmetric_quantized", "qmethod": "layer", "dtype": "int8",
                                 "min": [float(lo)], "max": [float(hi)]}
        if name in params:
            entry["scale"] = [float(params[name][0])]
            entry["zero_point"] = [int(params[name][1])]
        quantize_parameters[name] = entry
    header = [
        "# npuc hybrid quantization config (RKNN-Toolkit2 hybrid_quantization_step1 layout).",
        "# custom_quantize_layers: node name -> float16 keeps that layer in FP16; add or remove entries,",
        "#   then run hybrid_quantization_step2(model_input, data_input, model_quantization_cfg).",
        "# quantize_parameters: per activation its calibrated range (min/max; editing them changes the",
        "#   quantization) and the int8 scale/zero_point the plan used (read only; data movement, MaxPool",
        "#   and Relu share their input's, an output fused into a Relu/Clip uses that activation's).",
        f"# weights: int8 per {'output channel' if method == 'channel' else 'tensor'} (quantized_method={method}).",
        "",
    ]
    layers = [f"# layers: node, op, precision, single cosine (worst of {samples} calibration sample(s))"]
    for node, precision in qmodel.node_precisions.items():
        w = worst.get(node)
        cos = f"{w['cos']:.5f}" if w else "-"
        layers.append(f"#   {node}  {w['op_type'] if w else ''}  {precision}  {cos}")
    body = yaml.safe_dump({"custom_quantize_layers": custom}, default_flow_style=False, sort_keys=False)
    body += "\n".join(layers) + "\n"
    body += yaml.safe_dump({"quantize_parameters": quantize_parameters}, default_flow_style=None, sort_keys=False)
    return "\n".join(header) + body


def recorded_config(data_input: str) -> Dict[str, Any]:
    """The config() settings step 1 recorded in its .data file (RECORDED_CONFIG; None where unset),
    so step 2 in a fresh toolkit builds for the same SoC with the same preprocessing. Empty for a
    .data file written before they were recorded."""
    try:
        with np.load(os.fspath(data_input), allow_pickle=False) as data:
            if "config" not in data.files:
                return {}
            recorded = json.loads(str(data["config"]))
    except (OSError, ValueError) as e:
        raise ConfigError(f"hybrid_quantization_step2: data_input {shown_path(data_input)} is not a step1 .data file "
                          f"({capped(str(e), 300)})") from None
    return {k: v for k, v in recorded.items() if k in RECORDED_CONFIG and v is not None} if isinstance(recorded, dict) else {}


def _layers_by_output(model_input: str) -> Dict[str, str]:
    """Output tensor name -> node name of the step-1 model: RKNN's step-1 tips name the layers to
    keep in float16 by their output tensor, npuc's cfg lists node names; both are accepted."""
    import onnx

    proto = onnx.load(os.fspath(model_input))
    return {out: node.name for node in proto.graph.node for out in node.output if out}


def step2(
    model_input: str,
    data_input: str,
    model_quantization_cfg: str,
    config: Dict[str, Any],
    custom_ops: Optional[Any] = None,
) -> Tuple[Model, QuantizedModel]:
    """Rebuilds the model step 1 wrote with the (edited) config: returns the graph and its simulator.

    A ``custom_quantize_layers`` key is a node name or the name of a node's output tensor (RKNN's
    tips use tensor names, with TensorFlow's ``:0`` suffix or without).

    Raises:
        ModelLoadError: a missing or unreadable model file.
        ConfigError: a missing/unreadable data or cfg file, or a cfg entry that is wrong: an unknown
            key, a layer that is not a float node of the model, a precision other than float16, an
            unknown activation, a bad min/max. The message names the key.
    """
    for what, path in (("model_input", model_input), ("data_input", data_input),
                       ("model_quantization_cfg", model_quantization_cfg)):
        if not os.path.isfile(os.fspath(path)):
            error = ModelLoadError if what == "model_input" else ConfigError
            raise error(f"hybrid_quantization_step2: {what} {shown_path(path)} does not exist")
    model = Model.load(os.fspath(model_input), custom_ops=custom_ops)
    ranges, data_method = _read_data(os.fspath(data_input))
    custom, edited = _read_cfg(os.fspath(model_quantization_cfg), ranges)
    ranges.update(edited)
    method = config.get("quantized_method") or data_method
    settings_from_config(dict(config, quantized_method=method))  # validates dtype and method
    dtype = dtype_from_config(config)
    all_int8 = quantize_from_ranges(model, ranges, method, [], dtype)
    by_output = _layers_by_output(model_input)
    layers = set()
    for name in custom:
        layer = name if name in all_int8.node_precisions else by_output.get(name, by_output.get(name.removesuffix(":0")))
        if layer not in all_int8.node_precisions:
            raise ConfigError(
                f"{model_quantization_cfg}: custom_quantize_layers.{shown_key(name)}: not a float layer of the model "
                f"nor the output of one (layers are listed in the '# layers' comment of the cfg)"
            )
        layers.add(layer)
    hybrid = sorted(layers | set(config.get("hybrid_layers") or []))
    return model, (quantize_from_ranges(model, ranges, method, hybrid, dtype) if hybrid else all_int8)


def _read_data(path: str) -> Tuple[Dict[str, Tuple[float, float]], str]:
    try:
        with np.load(path, allow_pickle=False) as data:
            names, lo, hi = [str(n) for n in data["names"]], data["min"], data["max"]
            method = str(data["method"])
    except (OSError, ValueError, KeyError) as e:
        raise ConfigError(f"hybrid_quantization_step2: data_input {shown_path(path)} is not a step1 .data file "
                          f"({capped(str(e), 300)})") from None
    return {n: (float(a), float(b)) for n, a, b in zip(names, lo, hi)}, method


def _read_cfg(path: str, ranges: Dict[str, Tuple[float, float]]) -> Tuple[Dict[str, str], Dict[str, Tuple[float, float]]]:
    """(custom layers, edited ranges) from the cfg, validated key by key."""
    cfg = load_yaml_config(path, ConfigError)
    if not isinstance(cfg, dict):
        raise ConfigError(f"{path}: expected a mapping with keys {', '.join(CFG_KEYS)}")
    for key in cfg:
        if key not in CFG_KEYS:
            raise ConfigError(f"{path}: unknown key {shown(key)} (valid: {', '.join(CFG_KEYS)})")
    layers = cfg.get("custom_quantize_layers") or {}
    if not isinstance(layers, dict):
        raise ConfigError(f"{path}: custom_quantize_layers must map layer names to '{FLOAT16}'")
    for name, precision in layers.items():
        if not isinstance(name, str):
            raise ConfigError(f"{path}: custom_quantize_layers: a layer name must be a string, "
                              f"got {type(name).__name__} {shown(name)}")
        if not isinstance(precision, str) or precision.lower() != FLOAT16:
            raise ConfigError(f"{path}: custom_quantize_layers.{shown_key(name)}: precision {shown(precision)} is not "
                              f"supported (only '{FLOAT16}'; remove the entry to keep the layer int8)")
    params = cfg.get("quantize_parameters") or {}
    if not isinstance(params, dict):
        raise ConfigError(f"{path}: quantize_parameters must map activation names to their parameters")
    edited = {}
    for name, entry in params.items():
        where = f"{path}: quantize_parameters.{shown_key(name)}"
        if not isinstance(name, str) or name not in ranges:
            raise ConfigError(f"{where}: not a calibrated activation of the model")
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected a mapping with min and max")
        unknown = [k for k in entry if k not in PARAM_KEYS]
        if unknown:
            raise ConfigError(f"{where}.{shown_key(unknown[0])}: unknown key (valid: {', '.join(PARAM_KEYS)})")
        lo, hi = (_one_number(entry.get(k, [ranges[name][i]]), f"{where}.{k}") for i, k in enumerate(("min", "max")))
        if lo > hi:
            raise ConfigError(f"{where}: min {lo} > max {hi}")
        edited[name] = (lo, hi)
    return {str(k): FLOAT16 for k in layers}, edited


def _one_number(value: Any, where: str) -> float:
    """A per-tensor min/max: one finite number, or a list holding one (RKNN writes lists)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, (list, dict)):
        raise ConfigError(f"{where}: expected one finite number (or a one-element list), got {shown(value)}")
    return finite_float32(value, where)
