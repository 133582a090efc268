"""Graph edits on parsed models, and :func:`fp32_weight_copy`, the copy Arm NN 20.08 runs correctly:
float16 weights behind DEQUANTIZE folded to float32, MediaPipe's Convolution2DTransposeBias as
TRANSPOSE_CONV + ADD, half-pixel 2x RESIZE_BILINEAR as ops Arm NN gets right.

Also owns the low-level edit helpers (``_opcode_index``, ``_add_buffer``, ``_add_tensor``,
``_same_pad_total``) that :mod:`.build`, :mod:`.quantize` and :mod:`.numpy_ref` import.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Dict, Iterable, Optional, Sequence

import numpy as np

from .flatbuf import read_model, write_model
from .queries import op_code, tensor_value
from .schema import FLOAT16, FLOAT32, INT32, OPS, UNIONS, Table

def _opcode_index(model: Table, code: int, version: int = 1) -> int:
    """Index of the builtin operator code `code` in model.operator_codes, appended if absent (both
    the byte field and the int field are filled, as current converters do, so old readers like Arm NN
    20.08, which read only the byte, and new ones agree)."""
    for i, oc in enumerate(model["operator_codes"]):
        if max(oc.get("deprecated_builtin_code", 0), oc.get("builtin_code", 0)) == code and not oc.get("custom_code"):
            return i
    model["operator_codes"].append({"deprecated_builtin_code": min(code, 127), "version": version,
                                    "builtin_code": code})
    return len(model["operator_codes"]) - 1


def _add_buffer(model: Table, data: bytes) -> int:
    model["buffers"].append({"data": data})
    return len(model["buffers"]) - 1


def _add_tensor(model: Table, sg: Table, name: str, shape: Sequence[int], ttype: int,
                data: Optional[bytes] = None, quant: Optional[Table] = None) -> int:
    t: Table = {"shape": np.asarray(shape, "<i4"), "type": ttype, "name": name.encode()}
    if data is not None:
        t["buffer"] = _add_buffer(model, data)
    if quant is not None:
        t["quantization"] = quant
    sg["tensors"].append(t)
    return len(sg["tensors"]) - 1


def _drop_unused_tensors(model: Table, sg: Table, candidates: Iterable[int]) -> None:
    """Remove those of `candidates` (tensors a rewrite orphaned) no operator or graph input/output
    references any more, renumbering every index; a buffer only they used is emptied (not removed:
    metadata entries index buffers). Tensors the file itself left unused stay."""
    used = set(int(i) for i in sg.get("inputs", [])) | set(int(i) for i in sg.get("outputs", []))
    for op in sg["operators"]:
        for key in ("inputs", "outputs", "intermediates"):
            used |= set(int(i) for i in op.get(key, []) if i >= 0)
    drop = set(int(i) for i in candidates) - used
    keep = [i for i in range(len(sg["tensors"])) if i not in drop]
    if len(keep) == len(sg["tensors"]):
        return
    remap = {old: new for new, old in enumerate(keep)}
    dropped_buffers = {sg["tensors"][i].get("buffer", 0) for i in range(len(sg["tensors"])) if i not in remap}
    sg["tensors"] = [sg["tensors"][i] for i in keep]
    still = {t.get("buffer", 0) for s in model["subgraphs"] for t in s["tensors"]}
    meta = set(int(b) for b in model.get("metadata_buffer", [])) | {m.get("buffer", 0) for m in model.get("metadata", [])}
    for b in dropped_buffers - still - meta - {0}:
        model["buffers"][b] = {}

    def renumber(v: np.ndarray) -> np.ndarray:
        return np.asarray([remap[int(i)] if i >= 0 else -1 for i in v], "<i4")

    for key in ("inputs", "outputs"):
        if key in sg:
            sg[key] = renumber(sg[key])
    for op in sg["operators"]:
        for key in ("inputs", "outputs", "intermediates"):
            if key in op:
                op[key] = renumber(op[key])
    sg_index = model["subgraphs"].index(sg)
    for sig in model.get("signature_defs", []):
        if sig.get("subgraph_index", 0) == sg_index:
            for tm in sig.get("inputs", []) + sig.get("outputs", []):
                tm["tensor_index"] = remap[tm.get("tensor_index", 0)]


def fold_fp16_dequantize(model: Table) -> int:
    """Fold each DEQUANTIZE of a constant FLOAT16 tensor: its FLOAT32 output tensor (same index,
    name, shape, so every consumer already points at it) gets the float32 value as its own
    buffer; the DEQUANTIZE and the orphaned float16 tensor go. Returns how many were folded."""
    folded = 0
    for sg in model["subgraphs"]:
        tensors = sg["tensors"]
        kept_ops = []
        orphans = []
        for op in sg["operators"]:
            if op_code(model, op)[0] == OPS["DEQUANTIZE"]:
                src, dst = tensors[int(op["inputs"][0])], tensors[int(op["outputs"][0])]
                value = tensor_value(model, src)
                if src.get("type", 0) == FLOAT16 and value is not None and dst.get("type", 0) == FLOAT32:
                    dst["buffer"] = _add_buffer(model, value.astype("<f4").tobytes())
                    orphans.append(int(op["inputs"][0]))
                    folded += 1
                    continue
            kept_ops.append(op)
        sg["operators"] = kept_ops
        _drop_unused_tensors(model, sg, orphans)
    return folded


def _same_pad_total(in_size: int, kernel: int, stride: int) -> int:
    return max(0, kernel - (in_size - 1) % stride - 1)


def expand_transpose_conv_bias(model: Table) -> int:
    """MediaPipe's custom Convolution2DTransposeBias (selfie_segmentation's last layer) as builtin
    TRANSPOSE_CONV (no bias) + ADD of the bias, since Arm NN knows no custom ops.

    Semantics per MediaPipe's kernel (mediapipe/util/tflite/operations/transpose_conv_bias.cc):
    custom_options = int32 {padding (1 SAME, 2 VALID), stride_w, stride_h}; weights OHWI; output
    size stride*(in-1) + k - pad, with SAME pad = max(0, k - (in-1) % stride - 1), pad/2 at the
    top/left; out = bias + sum of input*weight. Only pad == 0 is rewritten (the case the model has;
    then TRANSPOSE_CONV VALID has exactly that output size and no cropping); anything else raises.
    The sum is the same; only the float32 rounding order of the bias add differs (bias added last
    instead of first), so results agree to float32 rounding, which the tests check against numpy."""
    rewritten = 0
    for sg in model["subgraphs"]:
        tensors = sg["tensors"]
        new_ops = []
        for op in sg["operators"]:
            code, custom = op_code(model, op)
            if code != OPS["CUSTOM"] or custom != b"Convolution2DTransposeBias":
                new_ops.append(op)
                continue
            padding, stride_w, stride_h = struct.unpack_from("<iii", op["custom_options"], 0)
            x_i, w_i, b_i = (int(i) for i in op["inputs"])
            y_i = int(op["outputs"][0])
            n, h, w, _ = (int(d) for d in tensors[x_i]["shape"])
            o, kh, kw, _ = (int(d) for d in tensors[w_i]["shape"])
            pad_h = _same_pad_total(h, kh, stride_h) if padding == 1 else 0
            pad_w = _same_pad_total(w, kw, stride_w) if padding == 1 else 0
            if padding not in (1, 2) or pad_h or pad_w:
                raise NotImplementedError(f"Convolution2DTransposeBias with padding {padding} "
                                          f"(pads {pad_h},{pad_w}) is not rewritten")
            out_shape = [n, stride_h * (h - 1) + kh, stride_w * (w - 1) + kw, o]
            base = tensors[y_i]["name"].decode()
            shape_i = _add_tensor(model, sg, base + "/output_shape", [4], INT32,
                                  np.asarray(out_shape, "<i4").tobytes())
            # The bias tensor ([O]) is kept as it is: ADD broadcasts it over NHWC's last axis
            # (Arm NN's parser reshapes the lower-rank operand itself).
            bias_i = b_i
            conv_i = _add_tensor(model, sg, base + "/transpose_conv", out_shape, FLOAT32)
            new_ops.append({"opcode_index": _opcode_index(model, OPS["TRANSPOSE_CONV"]),
                            "inputs": np.asarray([shape_i, w_i, x_i], "<i4"),
                            "outputs": np.asarray([conv_i], "<i4"),
                            "builtin_options_type": UNIONS["BuiltinOptions"].index("TransposeConvOptions"),
                            "builtin_options": {"padding": 1, "stride_w": stride_w, "stride_h": stride_h}})
            new_ops.append({"opcode_index": _opcode_index(model, OPS["ADD"]),
                            "inputs": np.asarray([conv_i, bias_i], "<i4"),
                            "outputs": np.asarray([y_i], "<i4"),
                            "builtin_options_type": UNIONS["BuiltinOptions"].index("AddOptions"),
                            "builtin_options": {}})
            rewritten += 1
        sg["operators"] = new_ops
    return rewritten


def expand_half_pixel_resize(model: Table) -> int:
    """RESIZE_BILINEAR with half_pixel_centers by exactly 2x (selfie_segmentation's three
    upsamplings) as ops whose meaning Arm NN 20.08 keeps: its TfLiteParser ignores
    half_pixel_centers (it samples at out*in/out, the pre-TF2 mapping; checked on a single-op model).

    Per axis, half-pixel 2x samples the input at j/2 - 1/4 (clamped to the edges); the plain
    resize V samples at j/2. Linear interpolation is affine between samples, so the value at
    j/2 - 1/4 is the mean of V[j-1] and V[j] (both lie on one linear piece), and at j = 0 the clamp
    makes it V[0]. Hence: V = plain RESIZE_BILINEAR; prepend V's first row, then its first column
    (STRIDED_SLICE + CONCATENATION, i.e. edge replication); AVERAGE_POOL_2D 2x2 stride 1 VALID.
    Both axes are separable, so the 2x2 mean does both at once. Same value as TFLite's kernel up
    to float32 rounding (V is rounded before the mean). Other scales raise NotImplementedError."""
    rewritten = 0
    for sg in model["subgraphs"]:
        tensors = sg["tensors"]
        new_ops = []
        for op in sg["operators"]:
            opts = op.get("builtin_options", {})
            if op_code(model, op)[0] != OPS["RESIZE_BILINEAR"] or not opts.get("half_pixel_centers"):
                new_ops.append(op)
                continue
            if opts.get("align_corners"):
                raise NotImplementedError("RESIZE_BILINEAR with align_corners and half_pixel_centers")
            x_i, size_i = (int(i) for i in op["inputs"][:2])
            y_i = int(op["outputs"][0])
            n, h, w, c = (int(d) for d in tensors[x_i]["shape"])
            size = tensor_value(model, tensors[size_i])
            if size is None or [int(v) for v in size] != [2 * h, 2 * w]:
                raise NotImplementedError(f"half-pixel RESIZE_BILINEAR {h}x{w} -> {size}: only 2x is rewritten")
            base = tensors[y_i]["name"].decode()

            def const_i32(suffix: str, values: Sequence[int]) -> int:
                return _add_tensor(model, sg, f"{base}/{suffix}", [len(values)], INT32,
                                   np.asarray(values, "<i4").tobytes())

            v_i = _add_tensor(model, sg, base + "/plain_resize", [n, 2 * h, 2 * w, c], FLOAT32)
            plain = {k: v for k, v in opts.items() if k != "half_pixel_centers"}
            new_ops.append({**{k: v for k, v in op.items() if k not in ("outputs", "builtin_options")},
                            "outputs": np.asarray([v_i], "<i4"), "builtin_options": plain})
            src, hh, ww = v_i, 2 * h, 2 * w
            for axis in (1, 2):
                end = [n, hh, ww, c]
                end[axis] = 1
                edge_shape = list(end)
                edge_i = _add_tensor(model, sg, f"{base}/edge{axis}", edge_shape, FLOAT32)
                new_ops.append({"opcode_index": _opcode_index(model, OPS["STRIDED_SLICE"]),
                                "inputs": np.asarray([src, const_i32(f"edge{axis}/begin", [0, 0, 0, 0]),
                                                      const_i32(f"edge{axis}/end", end),
                                                      const_i32(f"edge{axis}/strides", [1, 1, 1, 1])], "<i4"),
                                "outputs": np.asarray([edge_i], "<i4"),
                                "builtin_options_type": UNIONS["BuiltinOptions"].index("StridedSliceOptions"),
                                "builtin_options": {}})
                if axis == 1:
                    hh += 1
                else:
                    ww += 1
                cat_i = _add_tensor(model, sg, f"{base}/edge_padded{axis}", [n, hh, ww, c], FLOAT32)
                new_ops.append({"opcode_index": _opcode_index(model, OPS["CONCATENATION"]),
                                "inputs": np.asarray([edge_i, src], "<i4"), "outputs": np.asarray([cat_i], "<i4"),
                                "builtin_options_type": UNIONS["BuiltinOptions"].index("ConcatenationOptions"),
                                "builtin_options": {"axis": axis}})
                src = cat_i
            new_ops.append({"opcode_index": _opcode_index(model, OPS["AVERAGE_POOL_2D"]),
                            "inputs": np.asarray([src], "<i4"), "outputs": np.asarray([y_i], "<i4"),
                            "builtin_options_type": UNIONS["BuiltinOptions"].index("Pool2DOptions"),
                            "builtin_options": {"padding": 1, "stride_w": 1, "stride_h": 1,
                                                "filter_width": 2, "filter_height": 2}})
            rewritten += 1
        sg["operators"] = new_ops
    return rewritten


def fp32_weight_copy(src: "str | Path", dst: "str | Path") -> Dict[str, int]:
    """Write the copy of `src` Arm NN 20.08 can run. Everything not named here is kept as read
    (same fields, values and presence), including metadata buffers and the description.

    Changes, and which MediaPipe model needs them:
    * float16 constants behind DEQUANTIZE folded to float32 (all three models: Arm NN's parser
      wants convolution/FC weights as constant tensors, not as a DEQUANTIZE output);
    * Convolution2DTransposeBias -> TRANSPOSE_CONV + ADD (selfie_segmentation, its only custom op);
    * half-pixel 2x RESIZE_BILINEAR -> plain resize + edge replication + 2x2 mean (selfie_segmentation:
      Arm NN 20.08 silently ignores half_pixel_centers, 25% relative error otherwise).
    face_detection_short_range and hand_landmark_lite need only the first.
    Returns the count of each change."""
    model = read_model(src)
    changes = {"fp16_dequantize_folded": fold_fp16_dequantize(model),
               "transpose_conv_bias_expanded": expand_transpose_conv_bias(model),
               "half_pixel_resize_expanded": expand_half_pixel_resize(model)}
    write_model(model, dst)
    return changes
