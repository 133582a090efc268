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
"""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

try:
    import flatbuffers
    from flatbuffers import number_types as _fbn
except ImportError:  # callers decide whether that is a skip or a failure (NPUC_STRICT_DEPS)
    flatbuffers = None
    _fbn = None

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


# ---------------------------------------------------------------------------------------------
# Schema subset. Each table is its fields in vtable-slot order: (name, kind, arg). Kinds:
#   a struct format char (scalar), "str", "bytes" (ubyte vector kept as bytes, arg = alignment),
#   "vec" (scalar vector as numpy, arg = format char), "table" / "tvec" (arg = table name),
#   "union" (arg = union name; its type is the previous slot), None (a field we refuse).
# A union occupies two slots: <name>_type (ubyte) then the value.
# ---------------------------------------------------------------------------------------------

_ACT = ("fused_activation_function", "b", None)
_PAD = ("padding", "b", None)

SCHEMA: Dict[str, List[Tuple[str, Optional[str], Any]]] = {
    "Model": [("version", "I", None), ("operator_codes", "tvec", "OperatorCode"),
              ("subgraphs", "tvec", "SubGraph"), ("description", "str", None),
              ("buffers", "tvec", "Buffer"), ("metadata_buffer", "vec", "i"),
              ("metadata", "tvec", "Metadata"), ("signature_defs", "tvec", "SignatureDef")],
    "OperatorCode": [("deprecated_builtin_code", "b", None), ("custom_code", "str", None),
                     ("version", "i", None), ("builtin_code", "i", None)],
    "SubGraph": [("tensors", "tvec", "Tensor"), ("inputs", "vec", "i"), ("outputs", "vec", "i"),
                 ("operators", "tvec", "Operator"), ("name", "str", None)],
    "Tensor": [("shape", "vec", "i"), ("type", "b", None), ("buffer", "I", None), ("name", "str", None),
               ("quantization", "table", "QuantizationParameters"), ("is_variable", "?", None),
               ("sparsity", None, None), ("shape_signature", "vec", "i"), ("has_rank", "?", None)],
    "QuantizationParameters": [("min", "vec", "f"), ("max", "vec", "f"), ("scale", "vec", "f"),
                               ("zero_point", "vec", "q"), ("details_type", "B", None), ("details", None, None),
                               ("quantized_dimension", "i", None)],
    "Operator": [("opcode_index", "I", None), ("inputs", "vec", "i"), ("outputs", "vec", "i"),
                 ("builtin_options_type", "B", None), ("builtin_options", "union", "BuiltinOptions"),
                 ("custom_options", "bytes", 1), ("custom_options_format", "b", None),
                 ("mutating_variable_inputs", "vec", "?"), ("intermediates", "vec", "i"),
                 ("large_custom_options_offset", None, None), ("large_custom_options_size", None, None)],
    "Buffer": [("data", "bytes", 16), ("offset", None, None), ("size", None, None)],
    "Metadata": [("name", "str", None), ("buffer", "I", None)],
    "SignatureDef": [("inputs", "tvec", "TensorMap"), ("outputs", "tvec", "TensorMap"),
                     ("signature_key", "str", None), ("deprecated_tag", "str", None),
                     ("subgraph_index", "I", None)],
    "TensorMap": [("name", "str", None), ("tensor_index", "I", None)],
    # builtin options (only those with a schema here can be read; others are refused by name)
    "Conv2DOptions": [_PAD, ("stride_w", "i", None), ("stride_h", "i", None), _ACT,
                      ("dilation_w_factor", "i", None), ("dilation_h_factor", "i", None),
                      ("quantized_bias_type", "b", None)],
    "DepthwiseConv2DOptions": [_PAD, ("stride_w", "i", None), ("stride_h", "i", None),
                               ("depth_multiplier", "i", None), _ACT, ("dilation_w_factor", "i", None),
                               ("dilation_h_factor", "i", None)],
    "Pool2DOptions": [_PAD, ("stride_w", "i", None), ("stride_h", "i", None), ("filter_width", "i", None),
                      ("filter_height", "i", None), _ACT],
    "FullyConnectedOptions": [_ACT, ("weights_format", "b", None), ("keep_num_dims", "?", None),
                              ("asymmetric_quantize_inputs", "?", None), ("quantized_bias_type", "b", None)],
    "SoftmaxOptions": [("beta", "f", None)],
    "ConcatenationOptions": [("axis", "i", None), _ACT],
    "AddOptions": [_ACT, ("pot_scale_int16", "?", None)],
    "SubOptions": [_ACT, ("pot_scale_int16", "?", None)],
    "MulOptions": [_ACT],
    "DivOptions": [_ACT],
    "ResizeBilinearOptions": [("new_height", "i", None), ("new_width", "i", None),
                              ("align_corners", "?", None), ("half_pixel_centers", "?", None)],
    "ResizeNearestNeighborOptions": [("align_corners", "?", None), ("half_pixel_centers", "?", None)],
    "ReshapeOptions": [("new_shape", "vec", "i")],
    "ReducerOptions": [("keep_dims", "?", None)],
    "SqueezeOptions": [("squeeze_dims", "vec", "i")],
    "StridedSliceOptions": [("begin_mask", "i", None), ("end_mask", "i", None), ("ellipsis_mask", "i", None),
                            ("new_axis_mask", "i", None), ("shrink_axis_mask", "i", None), ("offset", "?", None)],
    "TransposeConvOptions": [_PAD, ("stride_w", "i", None), ("stride_h", "i", None), _ACT,
                             ("quantized_bias_type", "b", None)],
    "LeakyReluOptions": [("alpha", "f", None)],
    "GatherOptions": [("axis", "i", None), ("batch_dims", "i", None)],
    "SplitOptions": [("num_splits", "i", None)],
    "CastOptions": [("in_data_type", "b", None), ("out_data_type", "b", None)],
    "PackOptions": [("values_count", "i", None), ("axis", "i", None)],
}
for _empty in ("PadOptions", "PadV2Options", "TransposeOptions", "DequantizeOptions", "QuantizeOptions",
               "HardSwishOptions", "MaximumMinimumOptions", "ExpOptions", "SliceOptions", "SquaredDifferenceOptions"):
    SCHEMA[_empty] = []

#: BuiltinOptions union members in schema order (type index = position + 1; 0 is NONE).
BUILTIN_OPTIONS = (
    "Conv2DOptions DepthwiseConv2DOptions ConcatEmbeddingsOptions LSHProjectionOptions Pool2DOptions "
    "SVDFOptions RNNOptions FullyConnectedOptions SoftmaxOptions ConcatenationOptions AddOptions "
    "L2NormOptions LocalResponseNormalizationOptions LSTMOptions ResizeBilinearOptions CallOptions "
    "ReshapeOptions SkipGramOptions SpaceToDepthOptions EmbeddingLookupSparseOptions MulOptions PadOptions "
    "GatherOptions BatchToSpaceNDOptions SpaceToBatchNDOptions TransposeOptions ReducerOptions SubOptions "
    "DivOptions SqueezeOptions SequenceRNNOptions StridedSliceOptions ExpOptions TopKV2Options SplitOptions "
    "LogSoftmaxOptions CastOptions DequantizeOptions MaximumMinimumOptions ArgMaxOptions LessOptions "
    "NegOptions PadV2Options GreaterOptions GreaterEqualOptions LessEqualOptions SelectOptions SliceOptions "
    "TransposeConvOptions SparseToDenseOptions TileOptions ExpandDimsOptions EqualOptions NotEqualOptions "
    "ShapeOptions PowOptions ArgMinOptions FakeQuantOptions PackOptions LogicalOrOptions OneHotOptions "
    "LogicalAndOptions LogicalNotOptions UnpackOptions FloorDivOptions SquareOptions ZerosLikeOptions "
    "FillOptions BidirectionalSequenceLSTMOptions BidirectionalSequenceRNNOptions "
    "UnidirectionalSequenceLSTMOptions FloorModOptions RangeOptions ResizeNearestNeighborOptions "
    "LeakyReluOptions SquaredDifferenceOptions MirrorPadOptions AbsOptions SplitVOptions UniqueOptions "
    "ReverseV2Options AddNOptions GatherNdOptions CosOptions WhereOptions RankOptions ReverseSequenceOptions "
    "MatrixDiagOptions QuantizeOptions MatrixSetDiagOptions HardSwishOptions").split()
UNIONS: Dict[str, Sequence[str]] = {"BuiltinOptions": ("NONE",) + tuple(BUILTIN_OPTIONS)}

#: BuiltinOperator codes the harness names (schema.fbs enum values).
OPS: Dict[str, int] = {
    "ADD": 0, "AVERAGE_POOL_2D": 1, "CONCATENATION": 2, "CONV_2D": 3, "DEPTHWISE_CONV_2D": 4,
    "DEQUANTIZE": 6, "FULLY_CONNECTED": 9, "LOGISTIC": 14, "MAX_POOL_2D": 17, "MUL": 18, "RELU": 19,
    "RELU6": 21, "RESHAPE": 22, "RESIZE_BILINEAR": 23, "SOFTMAX": 25, "TANH": 28, "CUSTOM": 32, "PAD": 34,
    "TRANSPOSE": 39, "MEAN": 40, "SUB": 41, "DIV": 42, "SQUEEZE": 43, "STRIDED_SLICE": 45, "PRELU": 54,
    "MAXIMUM": 55, "MINIMUM": 57, "TRANSPOSE_CONV": 67, "RESIZE_NEAREST_NEIGHBOR": 97, "LEAKY_RELU": 98,
    "QUANTIZE": 114, "HARD_SWISH": 117,
}
OP_NAMES = {v: k for k, v in OPS.items()}

#: TensorType -> numpy dtype (the types these models and the quantized writer use).
TENSOR_TYPES: Dict[int, np.dtype] = {0: np.dtype("<f4"), 1: np.dtype("<f2"), 2: np.dtype("<i4"), 3: np.dtype("u1"),
                                     4: np.dtype("<i8"), 6: np.dtype("?"), 7: np.dtype("<i2"), 9: np.dtype("i1"),
                                     10: np.dtype("<f8")}
TYPE_NAMES = {0: "FLOAT32", 1: "FLOAT16", 2: "INT32", 3: "UINT8", 4: "INT64", 6: "BOOL", 7: "INT16", 9: "INT8",
              10: "FLOAT64"}
FLOAT32, FLOAT16, INT32, INT8 = 0, 1, 2, 9

Table = Dict[str, Any]


class TFLiteFormatError(ValueError):
    """A file this reader cannot represent faithfully (malformed, or a field outside the subset)."""


# ---------------------------------------------------------------------------------------------
# Reader
# ---------------------------------------------------------------------------------------------

class _Reader:
    def __init__(self, data: bytes, where: str) -> None:
        self.buf = memoryview(data)
        self.where = where

    def _u32(self, pos: int) -> int:
        if pos < 0 or pos + 4 > len(self.buf):
            raise TFLiteFormatError(f"{self.where}: offset {pos} is outside the file")
        return struct.unpack_from("<I", self.buf, pos)[0]

    def _deref(self, pos: int) -> int:
        return pos + self._u32(pos)

    def table(self, name: str, pos: int) -> Table:
        fields = SCHEMA.get(name)
        if fields is None:
            raise TFLiteFormatError(f"{self.where}: table {name} is outside the supported schema subset")
        vtable = pos - struct.unpack_from("<i", self.buf, pos)[0]
        vt_size = struct.unpack_from("<H", self.buf, vtable)[0]
        out: Table = {}
        for slot in range((vt_size - 4) // 2):
            off = struct.unpack_from("<H", self.buf, vtable + 4 + 2 * slot)[0]
            if off == 0:
                continue
            if slot >= len(fields) or fields[slot][1] is None:
                what = fields[slot][0] if slot < len(fields) else f"slot {slot}"
                raise TFLiteFormatError(f"{self.where}: {name}.{what} is present but not supported by this reader")
            fname, kind, arg = fields[slot]
            p = pos + off
            if kind == "str" or kind == "bytes":
                q = self._deref(p)
                n = self._u32(q)
                out[fname] = bytes(self.buf[q + 4:q + 4 + n])
            elif kind == "vec":
                q = self._deref(p)
                n = self._u32(q)
                out[fname] = np.frombuffer(self.buf, np.dtype("<" + arg), n, q + 4).copy()
            elif kind == "table":
                out[fname] = self.table(arg, self._deref(p))
            elif kind == "tvec":
                q = self._deref(p)
                out[fname] = [self.table(arg, self._deref(q + 4 + 4 * i)) for i in range(self._u32(q))]
            elif kind == "union":
                members = UNIONS[arg]
                t = out.get(fname + "_type", 0)
                if not 0 < t < len(members):
                    raise TFLiteFormatError(f"{self.where}: {name}.{fname} has union type {t} outside the subset")
                out[fname] = self.table(members[t], self._deref(p))
            else:
                out[fname] = struct.unpack_from("<" + kind, self.buf, p)[0]
        return out


def read_model(source: "str | bytes | Path") -> Table:
    """Parse a .tflite file (path or bytes) into nested dicts holding exactly the fields present."""
    if isinstance(source, (bytes, bytearray)):
        data, where = bytes(source), "<tflite bytes>"
    else:
        data, where = Path(source).read_bytes(), str(source)
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise TFLiteFormatError(f"{where}: not a TFLite flatbuffer (no TFL3 identifier)")
    r = _Reader(data, where)
    try:
        return r.table("Model", r._u32(0))
    except (struct.error, IndexError, KeyError, ValueError) as e:
        if isinstance(e, TFLiteFormatError):
            raise
        raise TFLiteFormatError(f"{where}: malformed flatbuffer ({type(e).__name__}: {e})") from e


def buffer_data_offsets(data: bytes) -> List[Optional[int]]:
    """File offset of each Buffer's data bytes (None for an empty buffer): for alignment checks."""
    r = _Reader(data, "<tflite bytes>")
    root = r._u32(0)
    out: List[Optional[int]] = []
    fields = [f[0] for f in SCHEMA["Model"]]
    vt = root - struct.unpack_from("<i", data, root)[0]
    slot = fields.index("buffers")
    off = struct.unpack_from("<H", data, vt + 4 + 2 * slot)[0]
    vec = r._deref(root + off)
    for i in range(r._u32(vec)):
        b = r._deref(vec + 4 + 4 * i)
        bvt = b - struct.unpack_from("<i", data, b)[0]
        boff = struct.unpack_from("<H", data, bvt + 4)[0] if struct.unpack_from("<H", data, bvt)[0] > 4 else 0
        if boff == 0:
            out.append(None)
            continue
        q = r._deref(b + boff)
        out.append(q + 4 if r._u32(q) else None)
    return out


# ---------------------------------------------------------------------------------------------
# Writer
# ---------------------------------------------------------------------------------------------

def _flags(fmt: str) -> Any:
    return {"b": _fbn.Int8Flags, "B": _fbn.Uint8Flags, "?": _fbn.BoolFlags, "h": _fbn.Int16Flags,
            "H": _fbn.Uint16Flags, "i": _fbn.Int32Flags, "I": _fbn.Uint32Flags, "q": _fbn.Int64Flags,
            "Q": _fbn.Uint64Flags, "f": _fbn.Float32Flags, "d": _fbn.Float64Flags}[fmt]


def _raw_vector(b: "flatbuffers.Builder", data: bytes, elem_size: int, align: int) -> int:
    # Builder has no aligned byte-vector helper: Buffer.data is force_align 16 in the schema (TFLite
    # and Arm NN may map weights in place), so place the bytes by hand after an aligned StartVector.
    n = len(data) // elem_size
    b.StartVector(elem_size, n, max(align, elem_size))
    b.head = b.head - len(data)
    b.Bytes[b.head:b.head + len(data)] = data
    return b.EndVector()


def _emit(b: "flatbuffers.Builder", name: str, t: Table) -> int:
    fields = SCHEMA[name]
    offsets: Dict[int, int] = {}
    for slot, (fname, kind, arg) in enumerate(fields):
        if fname not in t or kind is None:
            continue
        v = t[fname]
        if kind == "str":
            offsets[slot] = b.CreateString(bytes(v))
        elif kind == "bytes":
            offsets[slot] = _raw_vector(b, bytes(v), 1, arg)
        elif kind == "vec":
            a = np.asarray(v, dtype=np.dtype("<" + arg))
            offsets[slot] = _raw_vector(b, a.tobytes(), a.dtype.itemsize, a.dtype.itemsize)
        elif kind == "table":
            offsets[slot] = _emit(b, arg, v)
        elif kind == "tvec":
            children = [_emit(b, arg, x) for x in v]
            b.StartVector(4, len(children), 4)
            for o in reversed(children):
                b.PrependUOffsetTRelative(o)
            offsets[slot] = b.EndVector()
        elif kind == "union":
            offsets[slot] = _emit(b, UNIONS[arg][t[fname + "_type"]], v)
    b.StartObject(len(fields))
    # Scalars go in as stored, defaults included: presence is part of what the rewrite keeps.
    for slot, (fname, kind, arg) in enumerate(fields):
        if fname in t and kind is not None and len(kind) == 1:
            b.Prepend(_flags(kind), t[fname])
            b.Slot(slot)
    for slot, off in offsets.items():
        b.PrependUOffsetTRelative(off)
        b.Slot(slot)
    return b.EndObject()


def model_bytes(model: Table) -> bytes:
    """Serialize a model dict (as :func:`read_model` returns) with flatbuffers.Builder.

    The result is semantically identical to the source (same fields, values and presence), not
    byte-identical: the original converter orders and deduplicates differently. Emission is
    deterministic, so write(read(write(m))) == write(m) byte for byte."""
    if flatbuffers is None:
        raise ImportError("python3-flatbuffers is required to write TFLite files")
    size = 1024 + sum(len(buf.get("data", b"")) + 32 for buf in model.get("buffers", []))
    b = flatbuffers.Builder(size)
    root = _emit(b, "Model", model)
    b.Finish(root, file_identifier=b"TFL3")
    return bytes(b.Output())


def write_model(model: Table, path: "str | Path") -> None:
    Path(path).write_bytes(model_bytes(model))


def tables_equal(a: Any, b: Any) -> bool:
    """Deep equality of two parsed models (numpy vectors compared by dtype and value bits)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(tables_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(tables_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and a.tobytes() == b.tobytes())
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)  # bit-exact, NaN-safe
    return type(a) == type(b) and a == b


# ---------------------------------------------------------------------------------------------
# Model queries
# ---------------------------------------------------------------------------------------------

def op_code(model: Table, op: Table) -> Tuple[int, bytes]:
    """(builtin code, custom code): the larger of deprecated_builtin_code and builtin_code, as TFLite
    reads it (old files fill only the byte field, new ones both)."""
    oc = model["operator_codes"][op.get("opcode_index", 0)]
    return max(oc.get("deprecated_builtin_code", 0), oc.get("builtin_code", 0)), oc.get("custom_code", b"")


def op_name(model: Table, op: Table) -> str:
    code, custom = op_code(model, op)
    if code == OPS["CUSTOM"]:
        return "CUSTOM:" + custom.decode()
    return OP_NAMES.get(code, f"BUILTIN_{code}")


def tensor_value(model: Table, tensor: Table) -> Optional[np.ndarray]:
    """A constant tensor's data (shape and dtype from the tensor), or None for activations."""
    data = model["buffers"][tensor.get("buffer", 0)].get("data", b"")
    if not data:
        return None
    dtype = TENSOR_TYPES[tensor.get("type", 0)]
    return np.frombuffer(data, dtype).reshape([int(d) for d in tensor.get("shape", [])]).copy()


def describe(path: "str | Path") -> Dict[str, Any]:
    """Op counts, tensor dtype counts (constants and activations apart), inputs/outputs (name, shape,
    dtype) of subgraph 0."""
    m = read_model(path)
    sg = m["subgraphs"][0]
    tensors = sg["tensors"]
    const = Counter()
    act = Counter()
    for t in tensors:
        kind = TYPE_NAMES.get(t.get("type", 0), str(t.get("type", 0)))
        (const if m["buffers"][t.get("buffer", 0)].get("data") else act)[kind] += 1

    def io(indices: Iterable[int]) -> List[Tuple[str, List[int], str]]:
        return [(tensors[i]["name"].decode(), [int(d) for d in tensors[i]["shape"]],
                 TYPE_NAMES[tensors[i].get("type", 0)]) for i in indices]

    return {"ops": dict(Counter(op_name(m, op) for op in sg["operators"]).most_common()),
            "constant_dtypes": dict(const), "activation_dtypes": dict(act),
            "inputs": io(sg["inputs"]), "outputs": io(sg["outputs"]),
            "subgraphs": len(m["subgraphs"])}



# ---------------------------------------------------------------------------------------------
# Graph edits
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Arm NN
# ---------------------------------------------------------------------------------------------

_RUNTIME: List[Any] = []


def _armnn() -> Any:
    import pyarmnn  # noqa: deferred so that importing this module never needs Arm NN

    return pyarmnn


def _runtime() -> Any:
    ann = _armnn()
    if not _RUNTIME:
        _RUNTIME.append(ann.IRuntime(ann.CreationOptions()))
    return _RUNTIME[0]


def armnn_run(path: "str | Path", inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """Run a TFLite model (an Arm NN-readable one, e.g. from :func:`fp32_weight_copy`) with Arm NN's
    TfLiteParser on the CpuRef backend. Inputs and outputs are keyed by TFLite tensor name, in the
    model's own layout (NHWC) and dtype."""
    ann = _armnn()
    parser = ann.ITfLiteParser()
    network = parser.CreateNetworkFromBinaryFile(str(path))
    runtime = _runtime()
    opt, _messages = ann.Optimize(network, [ann.BackendId("CpuRef")], runtime.GetDeviceSpec(),
                                  ann.OptimizerOptions())
    net_id, _ = runtime.LoadNetwork(opt)
    try:
        in_names = list(parser.GetSubgraphInputTensorNames(0))
        missing = set(in_names) - set(inputs)
        if missing:
            raise KeyError(f"{path}: inputs {sorted(missing)} not given (model inputs: {in_names})")
        bindings = [parser.GetNetworkInputBindingInfo(0, n) for n in in_names]
        arrays = []
        for n, (_, info) in zip(in_names, bindings):
            a = np.ascontiguousarray(inputs[n])
            if a.size != info.GetNumElements():
                raise ValueError(f"{path}: input {n} has {a.size} elements, the model wants {info.GetNumElements()}")
            arrays.append(a)
        out_names = list(parser.GetSubgraphOutputTensorNames(0))
        out_bindings = [parser.GetNetworkOutputBindingInfo(0, n) for n in out_names]
        in_tensors = ann.make_input_tensors(bindings, arrays)
        out_tensors = ann.make_output_tensors(out_bindings)
        runtime.EnqueueWorkload(net_id, in_tensors, out_tensors)
        results = ann.workload_tensors_to_ndarray(out_tensors)
        shapes = {n: [int(d) for d in info.GetShape()] for n, (_, info) in zip(out_names, out_bindings)}
        return {n: np.asarray(r).reshape(shapes[n]) for n, r in zip(out_names, results)}
    finally:
        runtime.UnloadNetwork(net_id)


# ---------------------------------------------------------------------------------------------
# numpy reference (float models): an independent check of Arm NN itself
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Building small models from scratch (single-op checks, the quantized writer)
# ---------------------------------------------------------------------------------------------

class GraphBuilder:
    """A one-subgraph TFLite model as the dicts :func:`write_model` takes."""

    def __init__(self, description: str = "npuc tflite_reference") -> None:
        self.model: Table = {"version": 3, "operator_codes": [], "description": description.encode(),
                             "buffers": [{}], "subgraphs": [{"tensors": [], "operators": [], "name": b"main"}]}
        self.sg: Table = self.model["subgraphs"][0]

    def tensor(self, name: str, shape: Sequence[int], ttype: int = FLOAT32, data: Optional[np.ndarray] = None,
               quant: Optional[Table] = None) -> int:
        raw = None if data is None else np.ascontiguousarray(data, TENSOR_TYPES[ttype]).tobytes()
        return _add_tensor(self.model, self.sg, name, shape, ttype, raw, quant)

    def op(self, code: str, inputs: Sequence[int], outputs: Sequence[int], options: Optional[str] = None,
           **fields: Any) -> None:
        op: Table = {"opcode_index": _opcode_index(self.model, OPS[code]),
                     "inputs": np.asarray(inputs, "<i4"), "outputs": np.asarray(outputs, "<i4")}
        if options is not None:
            op["builtin_options_type"] = UNIONS["BuiltinOptions"].index(options)
            op["builtin_options"] = dict(fields)
        self.sg["operators"].append(op)

    def custom_op(self, custom_code: str, inputs: Sequence[int], outputs: Sequence[int], options: bytes) -> None:
        codes = self.model["operator_codes"]
        code = {"deprecated_builtin_code": OPS["CUSTOM"], "custom_code": custom_code.encode(),
                "builtin_code": OPS["CUSTOM"]}
        if code not in codes:
            codes.append(code)
        self.sg["operators"].append({"opcode_index": codes.index(code), "inputs": np.asarray(inputs, "<i4"),
                                     "outputs": np.asarray(outputs, "<i4"), "custom_options": bytes(options)})

    def finish(self, inputs: Sequence[int], outputs: Sequence[int]) -> Table:
        self.sg["inputs"] = np.asarray(inputs, "<i4")
        self.sg["outputs"] = np.asarray(outputs, "<i4")
        return self.model


def with_outputs(src: "str | Path", dst: "str | Path", names: Sequence[str]) -> None:
    """Copy of `src` whose graph outputs are its own outputs plus the tensors `names` (e.g. the
    logits before a final LOGISTIC, or every activation for calibration): Arm NN returns only graph
    outputs."""
    m = read_model(src)
    sg = m["subgraphs"][0]
    index = {t["name"].decode(): i for i, t in enumerate(sg["tensors"])}
    unknown = [n for n in names if n not in index]
    if unknown:
        raise KeyError(f"{src}: no tensors named {unknown}")
    outs = [int(i) for i in sg["outputs"]]
    sg["outputs"] = np.asarray(outs + [index[n] for n in names if index[n] not in outs], "<i4")
    write_model(m, dst)


# ---------------------------------------------------------------------------------------------
# INT8 writer
# ---------------------------------------------------------------------------------------------

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


def write_small_float_model(path: "str | Path", seed: int = 0) -> Dict[str, Any]:
    """A small float32 TFLite CNN with deterministic He-scaled random weights, for INT8 tests that
    must be fast (quantizing hand_landmark_lite takes ~15 s of Arm NN CpuRef time):
    input [1,32,32,3] -> CONV 3x3/2 (8, RELU6) -> DEPTHWISE 3x3 (RELU) -> CONV 1x1 (8) -> ADD
    (residual) -> MAX_POOL 2x2 -> CONV 3x3 (16, RELU) -> MEAN over H,W -> RESHAPE -> FULLY_CONNECTED
    (10) = output "logits" [1,10]. Returns the input/output names and shapes."""
    rng = np.random.default_rng(seed)

    def he(shape: Sequence[int], fan_in: int) -> np.ndarray:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def bias(n: int) -> np.ndarray:
        return (rng.standard_normal(n) * 0.1).astype(np.float32)

    g = GraphBuilder("npuc tflite_reference small CNN")
    x = g.tensor("input", [1, 32, 32, 3])
    c1 = g.tensor("conv1", [1, 16, 16, 8])
    g.op("CONV_2D", [x, g.tensor("conv1/w", [8, 3, 3, 3], data=he([8, 3, 3, 3], 27)),
                     g.tensor("conv1/b", [8], data=bias(8))], [c1], "Conv2DOptions",
         padding=0, stride_w=2, stride_h=2, fused_activation_function=3)
    d1 = g.tensor("dw1", [1, 16, 16, 8])
    g.op("DEPTHWISE_CONV_2D", [c1, g.tensor("dw1/w", [1, 3, 3, 8], data=he([1, 3, 3, 8], 9)),
                               g.tensor("dw1/b", [8], data=bias(8))], [d1], "DepthwiseConv2DOptions",
         padding=0, stride_w=1, stride_h=1, depth_multiplier=1, fused_activation_function=1)
    p1 = g.tensor("pw1", [1, 16, 16, 8])
    g.op("CONV_2D", [d1, g.tensor("pw1/w", [8, 1, 1, 8], data=he([8, 1, 1, 8], 8)),
                     g.tensor("pw1/b", [8], data=bias(8))], [p1], "Conv2DOptions",
         padding=1, stride_w=1, stride_h=1)
    a1 = g.tensor("add1", [1, 16, 16, 8])
    g.op("ADD", [p1, c1], [a1], "AddOptions")
    m1 = g.tensor("pool1", [1, 8, 8, 8])
    g.op("MAX_POOL_2D", [a1], [m1], "Pool2DOptions", padding=1, stride_w=2, stride_h=2,
         filter_width=2, filter_height=2)
    c2 = g.tensor("conv2", [1, 8, 8, 16])
    g.op("CONV_2D", [m1, g.tensor("conv2/w", [16, 3, 3, 8], data=he([16, 3, 3, 8], 72)),
                     g.tensor("conv2/b", [16], data=bias(16))], [c2], "Conv2DOptions",
         padding=0, stride_w=1, stride_h=1, fused_activation_function=1)
    gm = g.tensor("mean", [1, 1, 1, 16])
    g.op("MEAN", [c2, g.tensor("mean/axis", [2], INT32, np.array([1, 2]))], [gm], "ReducerOptions", keep_dims=True)
    r = g.tensor("flat", [1, 16])
    g.op("RESHAPE", [gm, g.tensor("flat/shape", [2], INT32, np.array([1, 16]))], [r], "ReshapeOptions",
         new_shape=np.array([1, 16], "<i4"))
    y = g.tensor("logits", [1, 10])
    g.op("FULLY_CONNECTED", [r, g.tensor("fc/w", [10, 16], data=he([10, 16], 16)),
                             g.tensor("fc/b", [10], data=bias(10))], [y], "FullyConnectedOptions")
    write_model(g.finish([x], [y]), path)
    return {"inputs": [("input", [1, 32, 32, 3])], "outputs": [("logits", [1, 10])]}
