"""numpy_run: a float64 numpy evaluation of TFLite models written from the TFLite op definitions,
independently of Arm NN, so the two references check each other (float models, and int8 ones as
fake-quant). Its quantization helpers (``_quantized``, ``_real``, ``_to_int``) live here too.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Dict, Tuple

import numpy as np

from .flatbuf import read_model
from .queries import op_name, tensor_value
from .rewrite import _same_pad_total
from .schema import INT8, INT32, TENSOR_TYPES, Table

def _act(x: np.ndarray, fused: int) -> np.ndarray:
    # ActivationFunctionType: 0 NONE, 1 RELU, 2 RELU_N1_TO_1, 3 RELU6, 4 TANH
    if fused == 0:
        return x
    if fused == 1:
        return np.maximum(x, 0)
    if fused == 2:
        return np.clip(x, -1, 1)
    if fused == 3:
        return np.clip(x, 0, 6)
    if fused == 4:
        return np.tanh(x)
    raise NotImplementedError(f"fused activation {fused}")


def _pads(size: int, kernel: int, stride: int, dilation: int, same: bool) -> Tuple[int, int, int]:
    """(output size, pad before, pad after) per TFLite: SAME keeps ceil(size/stride), padding the
    extra at the end; VALID pads nothing."""
    eff = (kernel - 1) * dilation + 1
    if not same:
        return (size - eff) // stride + 1, 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return out, total // 2, total - total // 2


def _window(x: np.ndarray, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, same: bool,
            fill: float = 0.0) -> Tuple[np.ndarray, int, int]:
    """Padded input plus output size, for strided slicing per kernel tap."""
    oh, pt, pb = _pads(x.shape[1], kh, sh, dh, same)
    ow, pl, pr = _pads(x.shape[2], kw, sw, dw, same)
    return np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill), oh, ow


def _taps(xp: np.ndarray, ky: int, kx: int, oh: int, ow: int, sh: int, sw: int, dh: int, dw: int) -> np.ndarray:
    return xp[:, ky * dh:ky * dh + (oh - 1) * sh + 1:sh, kx * dw:kx * dw + (ow - 1) * sw + 1:sw, :]


def numpy_run(path: "str | Path", inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """Evaluate a TFLite model in numpy (float64 arithmetic), for the ops the MediaPipe models and
    the models of :func:`write_quantized_tflite` use. Written from the TFLite op definitions,
    independently of Arm NN, so that the two references check each other. float16 constants behind
    DEQUANTIZE are read as float32 (the same values fp32_weight_copy writes).

    Quantized tensors are held as real values (scale * (q - zero_point)) and every quantized output
    is rounded to its int8 grid: a fake-quant model of the integer kernels, which round their
    fixed-point requantization differently, so expect a difference of an LSB or so per op. Float
    outputs are float32; quantized outputs come back as their integer type."""
    m = read_model(path)
    sg = m["subgraphs"][0]
    T = sg["tensors"]
    vals: Dict[int, np.ndarray] = {}
    for i, t in enumerate(T):
        v = tensor_value(m, t)
        if v is not None:
            vals[i] = _real(t, v) if _quantized(t) else (v.astype(np.float64) if v.dtype.kind == "f" else v)
    for i in sg["inputs"]:
        v = np.asarray(inputs[T[int(i)]["name"].decode()])
        vals[int(i)] = _real(T[int(i)], v) if _quantized(T[int(i)]) else v.astype(np.float64)
    for op in sg["operators"]:
        name = op_name(m, op)
        o = op.get("builtin_options", {})
        ins = [vals.get(int(i)) if i >= 0 else None for i in op["inputs"]]
        out_t = T[int(op["outputs"][0])]
        out_shape = [int(d) for d in out_t["shape"]]
        x = ins[0]
        act = o.get("fused_activation_function", 0)
        if name in ("DEQUANTIZE", "QUANTIZE"):
            y = x  # values are held as real numbers; the output's own rounding happens below
        elif name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            w, b = ins[1], ins[2] if len(ins) > 2 else None
            sh, sw = o.get("stride_h", 1), o.get("stride_w", 1)
            dh, dw = o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1)
            kh, kw = w.shape[1], w.shape[2]
            xp, oh, ow = _window(x, kh, kw, sh, sw, dh, dw, o.get("padding", 0) == 0)
            cout = w.shape[0] if name == "CONV_2D" else w.shape[3]
            y = np.zeros((x.shape[0], oh, ow, cout))
            mult = cout // x.shape[3]
            for ky in range(kh):
                for kx in range(kw):
                    tap = _taps(xp, ky, kx, oh, ow, sh, sw, dh, dw)
                    if name == "CONV_2D":
                        y += tap @ w[:, ky, kx, :].T
                    else:  # output channel c*mult + m reads input channel c
                        y += np.repeat(tap, mult, axis=3) * w[0, ky, kx, :]
            y = _act(y + (b if b is not None else 0), act)
        elif name == "TRANSPOSE_CONV":
            w = ins[1]
            x = ins[2]
            sh, sw = o.get("stride_h", 1), o.get("stride_w", 1)
            oh, ow = out_shape[1], out_shape[2]
            kh, kw = w.shape[1], w.shape[2]
            pt = max(0, (x.shape[1] - 1) * sh + kh - oh) // 2 if o.get("padding", 0) == 0 else 0
            pl = max(0, (x.shape[2] - 1) * sw + kw - ow) // 2 if o.get("padding", 0) == 0 else 0
            full = np.zeros((x.shape[0], (x.shape[1] - 1) * sh + kh, (x.shape[2] - 1) * sw + kw, w.shape[0]))
            for ky in range(kh):
                for kx in range(kw):
                    full[:, ky:ky + (x.shape[1] - 1) * sh + 1:sh, kx:kx + (x.shape[2] - 1) * sw + 1:sw, :] += \
                        x @ w[:, ky, kx, :].T
            y = full[:, pt:pt + oh, pl:pl + ow, :]
            if len(ins) > 3 and ins[3] is not None:
                y = y + ins[3]
            y = _act(y, act)
        elif name == "CUSTOM:Convolution2DTransposeBias":
            # MediaPipe's kernel: out = bias + scatter of input*weight (OHWI), custom_options int32
            # {padding 1 SAME / 2 VALID, stride_w, stride_h}, SAME pad = max(0, k - (in-1) % s - 1)
            # of which pad/2 is cropped at the top/left; output size stride*(in-1) + k - pad.
            padding, sw, sh = struct.unpack_from("<iii", op["custom_options"], 0)
            w, b = ins[1], ins[2]
            kh, kw = w.shape[1], w.shape[2]
            ph = _same_pad_total(x.shape[1], kh, sh) if padding == 1 else 0
            pw = _same_pad_total(x.shape[2], kw, sw) if padding == 1 else 0
            full = np.zeros((x.shape[0], (x.shape[1] - 1) * sh + kh, (x.shape[2] - 1) * sw + kw, w.shape[0]))
            for ky in range(kh):
                for kx in range(kw):
                    full[:, ky:ky + (x.shape[1] - 1) * sh + 1:sh, kx:kx + (x.shape[2] - 1) * sw + 1:sw, :] += \
                        x @ w[:, ky, kx, :].T
            oh, ow = full.shape[1] - ph, full.shape[2] - pw
            y = full[:, ph // 2:ph // 2 + oh, pw // 2:pw // 2 + ow, :] + b
        elif name in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
            kh, kw = o["filter_height"], o["filter_width"]
            sh, sw = o.get("stride_h", 1), o.get("stride_w", 1)
            same = o.get("padding", 0) == 0
            big = name == "MAX_POOL_2D"
            xp, oh, ow = _window(x, kh, kw, sh, sw, 1, 1, same, -np.inf if big else 0.0)
            # TFLite's average excludes padded cells from the divisor.
            ones, _, _ = _window(np.ones_like(x[..., :1]), kh, kw, sh, sw, 1, 1, same)
            taps = [_taps(xp, ky, kx, oh, ow, sh, sw, 1, 1) for ky in range(kh) for kx in range(kw)]
            if big:
                y = np.max(taps, axis=0)
            else:
                count = sum(_taps(ones, ky, kx, oh, ow, sh, sw, 1, 1) for ky in range(kh) for kx in range(kw))
                y = np.sum(taps, axis=0) / count
            y = _act(y, act)
        elif name in ("ADD", "MUL", "SUB", "DIV", "MAXIMUM", "MINIMUM"):
            f = {"ADD": np.add, "MUL": np.multiply, "SUB": np.subtract, "DIV": np.divide,
                 "MAXIMUM": np.maximum, "MINIMUM": np.minimum}[name]
            y = _act(f(x, ins[1]), act)
        elif name == "RELU":
            y = np.maximum(x, 0)
        elif name == "RELU6":
            y = np.clip(x, 0, 6)
        elif name == "LOGISTIC":
            with np.errstate(over="ignore"):  # exp overflow -> inf -> 0, the right limit
                y = 1 / (1 + np.exp(-x))
        elif name == "TANH":
            y = np.tanh(x)
        elif name == "HARD_SWISH":
            y = x * np.clip(x + 3, 0, 6) / 6
        elif name == "PAD":
            y = np.pad(x, [tuple(int(v) for v in p) for p in ins[1]])
        elif name in ("RESHAPE", "SQUEEZE"):
            y = x.reshape(out_shape)
        elif name == "CONCATENATION":
            y = _act(np.concatenate([v for v in ins], axis=o.get("axis", 0)), act)
        elif name == "MEAN":
            y = np.mean(x, axis=tuple(int(a) for a in np.atleast_1d(ins[1])), keepdims=True).reshape(out_shape)
        elif name == "FULLY_CONNECTED":
            w, b = ins[1], ins[2] if len(ins) > 2 else None
            y = x.reshape(-1, w.shape[1]) @ w.T + (b if b is not None else 0)
            y = _act(y, act).reshape(out_shape)
        elif name == "SOFTMAX":
            z = np.exp(o.get("beta", 1.0) * (x - x.max(axis=-1, keepdims=True)))
            y = z / z.sum(axis=-1, keepdims=True)
        elif name == "STRIDED_SLICE":
            if any(o.get(k, 0) for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                         "shrink_axis_mask")):
                raise NotImplementedError("numpy_run: STRIDED_SLICE masks")
            y = x[tuple(slice(int(b), int(e), int(st)) for b, e, st in zip(ins[1], ins[2], ins[3]))]
        elif name == "RESIZE_BILINEAR":
            y = _resize_bilinear(x, out_shape[1], out_shape[2], o.get("align_corners", False),
                                 o.get("half_pixel_centers", False))
        else:
            raise NotImplementedError(f"numpy_run: op {name}")
        if list(y.shape) != out_shape:
            raise AssertionError(f"numpy_run: {name} -> {list(y.shape)}, the file says {out_shape}")
        if _quantized(out_t):
            y = _real(out_t, _to_int(out_t, y))  # the int8 grid the output tensor holds
        vals[int(op["outputs"][0])] = y
    return {T[int(i)]["name"].decode(): _to_int(T[int(i)], vals[int(i)]) if _quantized(T[int(i)])
            else vals[int(i)].astype(np.float32) for i in sg["outputs"]}


def _quantized(t: Table) -> bool:
    return t.get("type", 0) in (INT8, 3, INT32, 7) and len(t.get("quantization", {}).get("scale", [])) > 0


def _qparams(t: Table, ndim: int) -> Tuple[np.ndarray, np.ndarray]:
    q = t["quantization"]
    scale, zp = q["scale"].astype(np.float64), q.get("zero_point", np.zeros(1, np.int64)).astype(np.float64)
    if len(scale) > 1:  # per channel along quantized_dimension
        shape = [1] * ndim
        shape[q.get("quantized_dimension", 0)] = -1
        scale = scale.reshape(shape)
        zp = (zp if len(zp) == len(q["scale"]) else np.zeros(len(q["scale"]))).reshape(shape)
    return scale, zp


def _real(t: Table, v: np.ndarray) -> np.ndarray:
    scale, zp = _qparams(t, np.ndim(v))
    return (np.asarray(v, np.float64) - zp) * scale


def _to_int(t: Table, real: np.ndarray) -> np.ndarray:
    """Quantize to the tensor's type: round half away from zero (TFLite's QUANTIZE), clamp."""
    dtype = TENSOR_TYPES[t.get("type", 0)]
    scale, zp = _qparams(t, np.ndim(real))
    r = real / scale
    q = np.sign(r) * np.floor(np.abs(r) + 0.5) + zp
    info = np.iinfo(dtype)
    return np.clip(q, info.min, info.max).astype(dtype)


def _resize_bilinear(x: np.ndarray, oh: int, ow: int, align: bool, half: bool) -> np.ndarray:
    def coords(out: int, size: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        scale = (size - 1) / (out - 1) if align and out > 1 else size / out
        pos = (np.arange(out) + 0.5) * scale - 0.5 if half else np.arange(out) * scale
        lo = np.maximum(np.floor(pos), 0).astype(int)
        hi = np.minimum(np.ceil(pos), size - 1).astype(int)
        return pos - lo, lo, hi

    fy, y0, y1 = coords(oh, x.shape[1])
    fx, x0, x1 = coords(ow, x.shape[2])
    fy, fx = fy[None, :, None, None], fx[None, None, :, None]
    top = x[:, y0][:, :, x0] * (1 - fx) + x[:, y0][:, :, x1] * fx
    bottom = x[:, y1][:, :, x0] * (1 - fx) + x[:, y1][:, :, x1] * fx
    return top * (1 - fy) + bottom * fy
