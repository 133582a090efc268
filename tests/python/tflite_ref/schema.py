"""The TFLite schema subset the harness reads and writes: tables as fields in vtable-slot order,
the BuiltinOptions union, operator codes and tensor types (facts from the public ``schema.fbs``).

Data only (plus :class:`TFLiteFormatError`, what the reader raises): the flatbuffer reader and
writer (:mod:`.flatbuf`) interpret these tables, and every other module names ops and types through
them, so this module imports nothing of the harness.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

# Schema subset. Each table is its fields in vtable-slot order: (name, kind, arg). Kinds:
#   a struct format char (scalar), "str", "bytes" (ubyte vector kept as bytes, arg = alignment),
#   "vec" (scalar vector as numpy, arg = format char), "table" / "tvec" (arg = table name),
#   "union" (arg = union name; its type is the previous slot), None (a field we refuse).
# A union occupies two slots: <name>_type (ubyte) then the value.

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
