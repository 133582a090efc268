"""The INT8 writer: :func:`write_quantized_tflite` quantizes a float32 model in TFLite's standard
full-integer scheme, calibrated by :func:`activation_ranges` on Arm NN's (or numpy_run's) FP32
activations, since no quantized TFLite model is available offline; :func:`cosine` compares outputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from .armnn import armnn_run
from .build import with_outputs
from .flatbuf import read_model, write_model
from .numpy_ref import numpy_run
from .queries import op_name, tensor_value
from .rewrite import _add_tensor, _opcode_index
from .schema import FLOAT32, INT8, INT32, OPS, Table

#: ops whose int8 output must carry the input's scale and zero point (TFLite's int8 kernels
#: require it: they move or select values without rescaling).
_SAME_QUANT_OPS = ("MAX_POOL_2D", "RESHAPE", "SQUEEZE", "PAD", "STRIDED_SLICE")
#: int8 LOGISTIC output is fixed by TFLite's spec: scale 1/256, zero point -128.
_LOGISTIC_QUANT = (1.0 / 256.0, -128)


def activation_ranges(path: "str | Path", samples: Sequence[Dict[str, np.ndarray]],
                      runner: str = "armnn") -> Dict[str, Tuple[float, float]]:
    """(min, max) of every float activation tensor over `samples`, from Arm NN (all activations made
    graph outputs for the calibration runs; runner="numpy" uses numpy_run instead, ~10x faster on
    CpuRef-sized models and within 1e-5 relative of Arm NN on the MediaPipe models); graph inputs
    are taken from the samples themselves."""
    import tempfile

    m = read_model(path)
    sg = m["subgraphs"][0]
    acts = [t["name"].decode() for t in sg["tensors"]
            if t.get("type", 0) == FLOAT32 and not m["buffers"][t.get("buffer", 0)].get("data")]
    inputs = {sg["tensors"][int(i)]["name"].decode() for i in sg["inputs"]}
    ranges: Dict[str, Tuple[float, float]] = {}

    def update(name: str, v: np.ndarray) -> None:
        lo, hi = float(np.min(v)), float(np.max(v))
        if name in ranges:
            lo, hi = min(lo, ranges[name][0]), max(hi, ranges[name][1])
        ranges[name] = (lo, hi)

    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "all_outputs.tflite"
        with_outputs(path, probe, [a for a in acts if a not in inputs])
        run = {"armnn": armnn_run, "numpy": numpy_run}[runner]
        for sample in samples:
            for name, v in run(probe, sample).items():
                update(name, v)
            for name in inputs:
                update(name, sample[name])
    return ranges


def _asym_params(lo: float, hi: float) -> Tuple[float, int]:
    # The range must hold 0 exactly (zero padding, ReLU): TFLite's asymmetric int8 nudging.
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0 or 1.0
    zp = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return scale, zp


def _quant(scale: Sequence[float], zp: Sequence[int], dim: Optional[int] = None) -> Table:
    q: Table = {"scale": np.asarray(scale, "<f4"), "zero_point": np.asarray(zp, "<i8")}
    if dim is not None:
        q["quantized_dimension"] = dim
    return q


def write_quantized_tflite(src: "str | Path", dst: "str | Path", calibration: Sequence[Dict[str, np.ndarray]],
                           int8_io: bool = False, runner: str = "armnn") -> Dict[str, Any]:
    """Quantize a float32 TFLite model (float32 constants, e.g. :func:`fp32_weight_copy`'s output)
    in TFLite's standard full-integer scheme and write it to `dst`:

    * CONV_2D weights int8 symmetric per output channel (quantized_dimension 0), DEPTHWISE_CONV_2D
      weights per channel on dimension 3, FULLY_CONNECTED weights per tensor (Arm NN 20.08 cannot
      take per-channel FC), values in [-127, 127], zero point 0;
    * their biases int32, scale = input scale * weight scale (per channel), zero point 0;
    * activations int8 asymmetric from the (min, max) Arm NN's FP32 run reaches on `calibration`
      (always holding 0; `runner` as in :func:`activation_ranges`); MAX_POOL_2D / RESHAPE / PAD outputs reuse their input's parameters and
      LOGISTIC outputs use 1/256, -128, as TFLite's int8 kernels require;
    * float graph inputs/outputs with QUANTIZE / DEQUANTIZE at the edges (I/O tensors keep their
      names), or int8 graph inputs/outputs when `int8_io`.
    Returns {"tensors": number quantized, "ranges": the activation ranges used}."""
    m = read_model(src)
    if len(m["subgraphs"]) != 1:
        raise NotImplementedError("write_quantized_tflite: one subgraph only")
    sg = m["subgraphs"][0]
    T = sg["tensors"]
    ranges = activation_ranges(src, calibration, runner)
    names = [t["name"].decode() for t in T]
    params: Dict[int, Tuple[float, int]] = {}
    # Activations in execution order, so same-quant ops inherit their (already set) input's params.
    for i in [int(j) for j in sg["inputs"]]:
        params[i] = _asym_params(*ranges[names[i]])
    for op in sg["operators"]:
        name = op_name(m, op)
        for o in (int(j) for j in op["outputs"]):
            if name in _SAME_QUANT_OPS and int(op["inputs"][0]) in params:
                params[o] = params[int(op["inputs"][0])]
            elif name == "LOGISTIC":
                params[o] = _LOGISTIC_QUANT
            else:
                params[o] = _asym_params(*ranges[names[o]])
    quantized = 0
    for i, (scale, zp) in params.items():
        T[i]["type"] = INT8
        T[i]["quantization"] = _quant([scale], [zp])
        quantized += 1
    # Weights and biases.
    for op in sg["operators"]:
        name = op_name(m, op)
        if name not in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            continue
        ins = [int(j) for j in op["inputs"]]
        w_t = T[ins[1]]
        w = tensor_value(m, w_t)
        if w is None or w_t.get("type", 0) != FLOAT32:
            raise NotImplementedError(f"write_quantized_tflite: {name} with non-constant or non-float weights")
        # FULLY_CONNECTED weights per tensor: TFLite's int8 spec allows both, and Arm NN 20.08
        # aborts (an assertion in GetBiasTypeFromWeightsType, killing the process) on per-channel FC.
        per_channel = name != "FULLY_CONNECTED"
        axis = 3 if name == "DEPTHWISE_CONV_2D" else 0
        if per_channel:
            amax = np.max(np.abs(np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)), axis=1).astype(np.float64)
        else:
            amax = np.asarray([np.max(np.abs(w))], np.float64)
        w_scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
        shape = [1] * w.ndim
        if per_channel:
            shape[axis] = -1
        q = np.clip(np.round(w / w_scale.reshape(shape)), -127, 127).astype(np.int8)
        m["buffers"][w_t["buffer"]] = {"data": q.tobytes()}
        w_t["type"] = INT8
        w_t["quantization"] = _quant(w_scale, [0] * len(w_scale), axis if per_channel else None)
        quantized += 1
        if len(ins) > 2 and ins[2] >= 0:
            b_t = T[ins[2]]
            b = tensor_value(m, b_t).astype(np.float64)
            b_scale = np.float64(params[ins[0]][0]) * w_scale.astype(np.float64)
            qb = np.clip(np.round(b / b_scale), -2 ** 31, 2 ** 31 - 1).astype("<i4")
            m["buffers"][b_t["buffer"]] = {"data": qb.tobytes()}
            b_t["type"] = INT32
            b_t["quantization"] = _quant(b_scale.astype(np.float32), [0] * len(b_scale), 0 if per_channel else None)
            quantized += 1
    leftovers = [names[i] for i, t in enumerate(T) if t.get("type", 0) == FLOAT32]
    if leftovers:
        raise NotImplementedError(f"write_quantized_tflite: float tensors left: {leftovers[:5]}")
    if not int8_io:
        new_inputs = []
        edge_ops = []
        for i in (int(j) for j in sg["inputs"]):
            f = _add_tensor(m, sg, names[i], [int(d) for d in T[i]["shape"]], FLOAT32)
            T[i]["name"] = (names[i] + "/int8").encode()
            edge_ops.append({"opcode_index": _opcode_index(m, OPS["QUANTIZE"]),
                             "inputs": np.asarray([f], "<i4"), "outputs": np.asarray([i], "<i4")})
            new_inputs.append(f)
        new_outputs = []
        tail_ops = []
        for i in (int(j) for j in sg["outputs"]):
            f = _add_tensor(m, sg, names[i], [int(d) for d in T[i]["shape"]], FLOAT32)
            T[i]["name"] = (names[i] + "/int8").encode()
            tail_ops.append({"opcode_index": _opcode_index(m, OPS["DEQUANTIZE"], version=2),
                             "inputs": np.asarray([i], "<i4"), "outputs": np.asarray([f], "<i4")})
            new_outputs.append(f)
        sg["operators"] = edge_ops + sg["operators"] + tail_ops
        sg["inputs"] = np.asarray(new_inputs, "<i4")
        sg["outputs"] = np.asarray(new_outputs, "<i4")
    m["description"] = m.get("description", b"") + b" (int8, npuc tflite_reference)"
    write_model(m, dst)
    return {"tensors": quantized, "ranges": ranges}


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))
