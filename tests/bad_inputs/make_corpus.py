#!/usr/bin/env python3
"""Writes npuc's bad-input corpus: broken ONNX models, each with the error npuc must give.

    python3 tests/bad_inputs/make_corpus.py OUT_DIR

Every case is built here from onnx.helper / protobuf messages (nothing is a hand-edited binary),
so the corpus can be regenerated on any machine and reviewed as code. Each case names the npuc
exception class and a message fragment (a regular expression) that tests/python/test_bad_inputs.py
asserts, and the stage that must refuse it:

* ``load``    - ``npuc.Model.load`` raises;
* ``bytes``   - ``npuc.Model.from_bytes`` raises (the problem only exists without a file).

The fuzz seeds (tests/fuzz/make_seeds.py) reuse this module, so every bad input is also a starting
point for the ONNX fuzzer.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DEFAULT_OPSET = 13
# 1 << 40 float32 elements (4 TiB): far beyond any tensor npuc allows, but each dim fits in int32.
HUGE_DIMS = [1 << 20, 1 << 20]


@dataclass(frozen=True)
class BadInput:
    name: str  # file stem of the model
    what: str  # one line: what is wrong with it
    build: Callable[[], bytes]  # serialized model
    error: str  # npuc exception class name
    message: str  # regular expression the error message must match (re.search)
    stage: str = "load"  # "load" or "bytes" (see the module docstring)
    # Extra files written next to the model (external data), name -> bytes.
    companions: Dict[str, bytes] = field(default_factory=dict)


# ---------------------------------------------------------------------------- model builders


def float_info(name: str, shape: Sequence[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def model_bytes(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[onnx.ValueInfoProto] = (),
    outputs: Sequence[onnx.ValueInfoProto] = (),
    initializers: Sequence[onnx.TensorProto] = (),
    opset: int = DEFAULT_OPSET,
    extra_opsets: Sequence[onnx.OperatorSetIdProto] = (),
) -> bytes:
    """Serializes without onnx.checker: most of these models are invalid on purpose."""
    graph = helper.make_graph(list(nodes), "bad", list(inputs), list(outputs), initializer=list(initializers))
    opsets = [helper.make_opsetid("", opset), *extra_opsets]
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


def add_model(initializer: onnx.TensorProto, shape: Sequence[int] = (1, 4)) -> bytes:
    """y = x + <initializer>, the smallest model that reads one initializer."""
    return model_bytes(
        [helper.make_node("Add", ["x", initializer.name], ["y"], name="add")],
        [float_info("x", shape)],
        [float_info("y", shape)],
        [initializer],
    )


def relu_model(opset: int = DEFAULT_OPSET) -> bytes:
    return model_bytes(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [float_info("x", [1, 4])], [float_info("y", [1, 4])],
        opset=opset,
    )


def conv_model() -> bytes:
    """A valid Conv + Relu model large enough that truncating it cuts through a weight."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    return model_bytes(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"], name="relu"),
        ],
        [float_info("x", [1, 3, 8, 8])],
        [float_info("y", [1, 8, 8, 8])],
        [w],
    )


def raw_tensor(name: str, dims: Sequence[int], nbytes: int, data_type: int = TensorProto.FLOAT) -> onnx.TensorProto:
    return TensorProto(name=name, data_type=data_type, dims=list(dims), raw_data=b"\x00" * nbytes)


def external_tensor(name: str, dims: Sequence[int], location: str, length: int) -> onnx.TensorProto:
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(dims))
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(length))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


# ---------------------------------------------------------------------------- the cases


def _truncated(fraction: float) -> Callable[[], bytes]:
    def build() -> bytes:
        data = conv_model()
        return data[: int(len(data) * fraction)]

    return build


def _cycle() -> bytes:
    return model_bytes(
        [
            helper.make_node("Add", ["x", "b"], ["a"], name="add_a"),
            helper.make_node("Relu", ["a"], ["b"], name="relu_b"),
            helper.make_node("Relu", ["b"], ["y"], name="relu_y"),
        ],
        [float_info("x", [1, 4])],
        [float_info("y", [1, 4])],
    )


def _self_loop() -> bytes:
    return model_bytes(
        [helper.make_node("Add", ["x", "a"], ["a"], name="add_self")], [float_info("x", [1, 4])], [float_info("a", [1, 4])]
    )


def _two_producers() -> bytes:
    return model_bytes(
        [helper.make_node("Relu", ["x"], ["a"], name="relu_1"), helper.make_node("Neg", ["x"], ["a"], name="neg_2")],
        [float_info("x", [1, 4])],
        [float_info("a", [1, 4])],
    )


def _output_shadows_input() -> bytes:
    return model_bytes(
        [helper.make_node("Relu", ["x"], ["x"], name="relu_x")], [float_info("x", [1, 4])], [float_info("x", [1, 4])]
    )


def _duplicate_initializer() -> bytes:
    w = numpy_helper.from_array(np.ones((1, 4), np.float32), "w")
    return model_bytes(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [float_info("x", [1, 4])],
        [float_info("y", [1, 4])],
        [w, w],
    )


def _unknown_domain() -> bytes:
    return model_bytes(
        [helper.make_node("FancyOp", ["x"], ["y"], name="fancy", domain="com.example")],
        [float_info("x", [1, 4])],
        [float_info("y", [1, 4])],
        extra_opsets=[helper.make_opsetid("com.example", 1)],
    )


def _unknown_op() -> bytes:
    return model_bytes(
        [helper.make_node("NotAnOnnxOp", ["x"], ["y"], name="mystery")], [float_info("x", [1, 4])], [float_info("y", [1, 4])]
    )


def _legacy_broadcast_axis_misfit() -> bytes:
    """Opset-6 Add whose broadcast axis leaves no room for B: no numpy form exists."""
    return model_bytes(
        [helper.make_node("Add", ["x", "b"], ["y"], name="add6", broadcast=1, axis=1)],
        [float_info("x", [1, 4]), float_info("b", [1, 4])], [float_info("y", [1, 4])], opset=6,
    )


def _legacy_tile_runtime_tiles() -> bytes:
    """Tile-1 whose tile count is a graph input: the opset-6 repeats cannot be built."""
    return model_bytes(
        [helper.make_node("Tile", ["x", "tiles", "axis"], ["y"], name="tile1")],
        [float_info("x", [1, 4]), helper.make_tensor_value_info("tiles", TensorProto.INT64, [1])],
        [float_info("y", [1, 8])], [numpy_helper.from_array(np.array([1], np.int64), "axis")], opset=5,
    )


def _no_default_opset() -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "bad", [float_info("x", [1, 4])], [float_info("y", [1, 4])]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("com.example", 1)]).SerializeToString()


def _perm_as_int() -> bytes:
    node = helper.make_node("Transpose", ["x"], ["y"], name="transpose")
    node.attribute.append(helper.make_attribute("perm", 1))  # an INT, not INTS
    return model_bytes([node], [float_info("x", [2, 4])], [float_info("y", [4, 2])])


def _kernel_shape_as_string() -> bytes:
    w = numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv")
    node.attribute.append(helper.make_attribute("kernel_shape", "3x3"))
    return model_bytes([node], [float_info("x", [1, 1, 5, 5])], [float_info("y", [1, 1, 3, 3])], [w])


def _axis_as_float() -> bytes:
    node = helper.make_node("Softmax", ["x"], ["y"], name="softmax")
    node.attribute.append(helper.make_attribute("axis", 1.0))
    return model_bytes([node], [float_info("x", [1, 4])], [float_info("y", [1, 4])])


def _empty_graph() -> bytes:
    return model_bytes([], [], [])


def _output_never_defined() -> bytes:
    return model_bytes(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [float_info("x", [1, 4])], [float_info("z", [1, 4])]
    )


def _dangling_input() -> bytes:
    return model_bytes(
        [helper.make_node("Add", ["x", "ghost"], ["y"], name="add")], [float_info("x", [1, 4])], [float_info("y", [1, 4])]
    )


def _input_negative_dim() -> bytes:
    return model_bytes([helper.make_node("Relu", ["x"], ["y"], name="relu")], [float_info("x", [-3, 4])], [float_info("y", [-3, 4])])


def _input_huge() -> bytes:
    return model_bytes([helper.make_node("Relu", ["x"], ["y"], name="relu")], [float_info("x", HUGE_DIMS)], [float_info("y", HUGE_DIMS)])


def _constant_of_shape_huge() -> bytes:
    """The constant folder must keep this op (its result is 4 TiB) rather than allocate it."""
    shape = numpy_helper.from_array(np.array(HUGE_DIMS, np.int64), "shape")
    return model_bytes(
        [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill")], [], [float_info("y", HUGE_DIMS)], [shape]
    )


def _tile_chain_huge() -> bytes:
    """Tile x1024 four times: 16 B -> 16 KiB -> 16 MiB (folded) -> 16 GiB (kept: over the fold cap)
    -> 16 TiB, which no tensor may hold. Sizes come from the inferred shapes; nothing big is built."""
    inits = [numpy_helper.from_array(np.ones(4, np.float32), "c0"),
             numpy_helper.from_array(np.array([1024], np.int64), "reps")]
    nodes = [helper.make_node("Tile", [f"c{i}", "reps"], [f"c{i + 1}"], name=f"tile{i}") for i in range(4)]
    return model_bytes(nodes, [], [float_info("c4", [4 << 40])], inits)


def _tile_bytes_wrap() -> bytes:
    """Tile of 4 int64 by 2**60: 2**62 elements, whose byte count (2**65) wraps int64 to 0."""
    inits = [numpy_helper.from_array(np.arange(4, dtype=np.int64), "c"),
             numpy_helper.from_array(np.array([1 << 60], np.int64), "reps")]
    return model_bytes([helper.make_node("Tile", ["c", "reps"], ["t"], name="tile_wrap")], [],
                       [helper.make_tensor_value_info("t", TensorProto.INT64, [1 << 62])], inits)


def _tile_dim_overflow() -> bytes:
    """Tile of 4 int64 by 2**62: the output dim itself (2**64) does not fit int64 (fuzz_onnx_import
    found it: the multiplication was unchecked, undefined behaviour under UBSan)."""
    inits = [numpy_helper.from_array(np.arange(4, dtype=np.int64), "c"),
             numpy_helper.from_array(np.array([1 << 62], np.int64), "reps")]
    return model_bytes([helper.make_node("Tile", ["c", "reps"], ["t"], name="tile_overflow")], [],
                       [helper.make_tensor_value_info("t", TensorProto.INT64, [4])], inits)


def _shape_mismatch() -> bytes:
    b = numpy_helper.from_array(np.ones((1, 3), np.float32), "b")
    return model_bytes(
        [helper.make_node("Add", ["x", "b"], ["y"], name="add_mismatch")], [float_info("x", [1, 4])], [float_info("y", [1, 4])], [b]
    )


def _gemm_inner_mismatch() -> bytes:
    w = numpy_helper.from_array(np.ones((5, 2), np.float32), "w")
    return model_bytes(
        [helper.make_node("Gemm", ["x", "w"], ["y"], name="gemm_mismatch")], [float_info("x", [1, 4])], [float_info("y", [1, 2])], [w]
    )


def _reshape_bad_count() -> bytes:
    shape = numpy_helper.from_array(np.array([3, 3], np.int64), "shape")
    return model_bytes(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_bad")], [float_info("x", [1, 4])], [float_info("y", [3, 3])], [shape]
    )


def _reshape_wrapping_shape() -> bytes:
    """Found by fuzz_onnx_import: (2**62 + 1) * 4 wraps int64 to exactly 4, the input's element count."""
    shape = numpy_helper.from_array(np.array([(1 << 62) + 1, 4], np.int64), "shape")
    return model_bytes(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_wrap")], [float_info("x", [1, 4])], [float_info("y", [1, 4])], [shape]
    )


def _constant_without_value() -> bytes:
    return model_bytes(
        [helper.make_node("Constant", [], ["c"], name="empty_const"), helper.make_node("Add", ["x", "c"], ["y"], name="add")],
        [float_info("x", [1, 4])],
        [float_info("y", [1, 4])],
    )


def _sequence_input() -> bytes:
    seq = helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, [1, 4])
    return model_bytes([helper.make_node("Identity", ["x"], ["y"], name="id")], [seq], [float_info("y", [1, 4])])


def _if_branch_shapes_differ() -> bytes:
    """An If on a run-time condition whose branches give different shapes (npuc compiles static
    shapes, so a data-dependent If must give one shape)."""
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["z"])], "then", [], [float_info("z", [1, 4])])
    shape = numpy_helper.from_array(np.array([4, 1], np.int64), "shape")
    else_g = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["w"])], "else", [], [float_info("w", [4, 1])])
    node = helper.make_node("If", ["cond"], ["y"], name="if_node", then_branch=then_g, else_branch=else_g)
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    return model_bytes([node], [float_info("x", [1, 4]), cond], [float_info("y", [1, 4])], [shape])


def _conv_with_weight_value(value: float, index: int = 5) -> bytes:
    """conv_model() with one element of the Conv weight 'w' replaced by `value`."""
    model = onnx.load_from_string(conv_model())
    w = numpy_helper.to_array(model.graph.initializer[0]).copy()
    w.flat[index] = value
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(w, "w"))
    return model.SerializeToString()


def _gemm_bias_inf() -> bytes:
    w = numpy_helper.from_array(np.ones((4, 2), np.float32), "w")
    b = numpy_helper.from_array(np.array([0.0, -np.inf], np.float32), "b")
    return model_bytes(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc")], [float_info("x", [1, 4])], [float_info("y", [1, 2])], [w, b]
    )


def _constant_node_nan() -> bytes:
    value = numpy_helper.from_array(np.array([[1.0, 2.0, np.nan, 4.0]], np.float32), "c_value")
    return model_bytes(
        [helper.make_node("Constant", [], ["c"], name="const", value=value), helper.make_node("Add", ["x", "c"], ["y"], name="add")],
        [float_info("x", [1, 4])],
        [float_info("y", [1, 4])],
    )


CASES: List[BadInput] = [
    # --- not a (complete) ONNX model
    BadInput("empty_file", "zero bytes", lambda: b"", "ModelLoadError", r"not an ONNX model \(no graph"),
    BadInput("text_file", "a text file renamed .onnx", lambda: b"hello, I am not a model\n" * 8, "ModelLoadError", r"not a valid ONNX model"),
    BadInput("truncated_header", "cut after 16 bytes", _truncated(0.01), "ModelLoadError", r"not a valid ONNX model \(protobuf parse failed"),
    BadInput("truncated_half", "cut in the middle of a weight", _truncated(0.5), "ModelLoadError", r"protobuf parse failed: the file is truncated"),
    BadInput("truncated_last_byte", "missing its last byte", _truncated(0.9999), "ModelLoadError", r"protobuf parse failed"),
    # --- initializers whose data does not match their declaration
    BadInput("init_raw_too_short", "raw_data of 2 floats for [1,4]", lambda: add_model(raw_tensor("w", [1, 4], 8)),
             "ModelLoadError", r"tensor 'w' has 8 bytes of raw_data but float32\[1,4\] needs 16"),
    BadInput("init_raw_too_long", "raw_data of 5 floats for [1,4]", lambda: add_model(raw_tensor("w", [1, 4], 20)),
             "ModelLoadError", r"tensor 'w' has 20 bytes of raw_data but float32\[1,4\] needs 16"),
    BadInput("init_float_data_short", "float_data with 3 values for [1,4]",
             lambda: add_model(TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4], float_data=[1.0, 2.0, 3.0])),
             "ModelLoadError", r"tensor 'w' holds 3 values in float_data but its shape \[1,4\] needs 4"),
    BadInput("init_negative_dim", "initializer dims [-1,4]", lambda: add_model(raw_tensor("w", [-1, 4], 16)),
             "ModelLoadError", r"tensor 'w' declares shape \[\?,4\] that is invalid: .*negative dimension"),
    BadInput("init_huge_dims", "initializer of 1<<40 floats with 16 bytes of data",
             lambda: add_model(raw_tensor("w", HUGE_DIMS, 16)),
             "ModelLoadError", r"tensor 'w' declares shape \[1048576,1048576\] that is invalid: .*16 GiB tensor limit"),
    BadInput("init_overflowing_dims", "initializer dims whose product overflows int64",
             lambda: add_model(raw_tensor("w", [1 << 40, 1 << 40], 16)),
             "ModelLoadError", r"tensor 'w' declares shape \[1099511627776,1099511627776\] that is invalid"),
    BadInput("init_unknown_dtype", "initializer of data_type 99", lambda: add_model(raw_tensor("w", [1, 4], 16, data_type=99)),
             "ModelLoadError", r"tensor 'w' has unsupported data type 99"),
    BadInput("init_string_dtype", "a string initializer feeding Add",
             lambda: add_model(TensorProto(name="w", data_type=TensorProto.STRING, dims=[1, 4], string_data=[b"a"] * 4)),
             "ModelLoadError", r"tensor 'w' has unsupported data type 8"),
    BadInput("external_data_from_bytes", "external data in a model given as bytes",
             lambda: add_model(external_tensor("w", [1, 4], "w.bin", 16)),
             "ModelLoadError", r"tensor 'w' uses external data \('w.bin'\) but the model was not loaded from a file",
             stage="bytes"),
    BadInput("external_data_escapes", "external data location '../secret.bin'",
             lambda: add_model(external_tensor("w", [1, 4], "../secret.bin", 16)),
             "ModelLoadError", r"tensor 'w' external data location '\.\./secret\.bin' escapes the model's folder"),
    BadInput("external_data_absolute", "external data location '/etc/hostname'",
             lambda: add_model(external_tensor("w", [1, 4], "/etc/hostname", 16)),
             "ModelLoadError", r"tensor 'w' external data location '/etc/hostname' must be a relative path"),
    BadInput("external_data_short_file", "external data file of 8 bytes for 16 expected",
             lambda: add_model(external_tensor("w", [1, 4], "short_w.bin", 16)),
             "ModelLoadError", r"tensor 'w' external data reads bytes 0\.\.16 past the end of '.*short_w\.bin' \(8 bytes\)",
             companions={"short_w.bin": b"\x00" * 8}),
    BadInput("external_data_length_mismatch", "external data length 12 for a [1,4] float tensor",
             lambda: add_model(external_tensor("w", [1, 4], "w12.bin", 12)),
             "ModelLoadError", r"tensor 'w' external data length 12 does not match 16 bytes of float32\[1,4\]",
             companions={"w12.bin": b"\x00" * 16}),
    # --- weights no correct export holds (Inf is accepted outside Conv/Gemm/MatMul/BN weights: masks)
    BadInput("nan_weight_add", "NaN in an initializer feeding Add", lambda: add_model(numpy_helper.from_array(np.array([[0.0, np.nan, 1.0, 2.0]], np.float32), "w")),
             "ModelLoadError", r"tensor 'w' \(float32\[1,4\]\) holds NaN at index 1"),
    BadInput("nan_weight_conv", "NaN in a Conv weight", lambda: _conv_with_weight_value(np.nan),
             "ModelLoadError", r"tensor 'w' \(float32\[8,3,3,3\]\) holds NaN at index 5"),
    BadInput("nan_constant_node", "NaN in the value of a Constant node", _constant_node_nan,
             "ModelLoadError", r"tensor 'c' \(float32\[1,4\]\) holds NaN at index 2"),
    BadInput("inf_weight_conv", "+Inf in a Conv weight", lambda: _conv_with_weight_value(np.inf, 7),
             "ModelLoadError", r"tensor 'w' \(float32\[8,3,3,3\]\) holds \+Inf at index 7, and it is an operand of Conv 'conv'"),
    BadInput("inf_bias_gemm", "-Inf in a Gemm bias", _gemm_bias_inf,
             "ModelLoadError", r"tensor 'b' \(float32\[2\]\) holds -Inf at index 1, and it is an operand of Gemm 'fc'"),
    # --- graph structure
    BadInput("empty_graph", "no nodes, inputs or outputs", _empty_graph, "ModelLoadError",
             r"graph 'bad' has no outputs: there is nothing to compute"),
    BadInput("cycle", "Add -> Relu -> back into Add", _cycle, "GraphError", r"graph has a cycle"),
    BadInput("self_loop", "a node consuming its own output", _self_loop, "GraphError", r"graph has a cycle.*add_self"),
    BadInput("duplicate_node_output", "two nodes produce 'a'", _two_producers, "ModelLoadError", r"'a' is (already )?defined"),
    BadInput("output_shadows_input", "a node output named like the graph input", _output_shadows_input,
             "ModelLoadError", r"'x' is (already )?defined"),
    BadInput("duplicate_initializer", "initializer 'w' listed twice", _duplicate_initializer,
             "ModelLoadError", r"initializer 'w' is defined twice"),
    BadInput("dangling_input", "a node input that nothing defines", _dangling_input,
             "GraphError", r"node 'add'.*input 1 'ghost' is never defined"),
    BadInput("output_never_defined", "a graph output that nothing produces", _output_never_defined,
             "GraphError", r"graph output 'z' is never defined"),
    BadInput("sequence_input", "a graph input of sequence type", _sequence_input,
             "ModelLoadError", r"graph input 'x' is not a tensor"),
    BadInput("constant_without_value", "a Constant node with no value attribute", _constant_without_value,
             "ModelLoadError", r"empty_const.*Constant needs exactly one value attribute"),
    BadInput("if_branch_shapes_differ", "a data-dependent If whose branches give different shapes",
             _if_branch_shapes_differ, "ShapeError",
             r"node 'if_node' \(If\): output 0 of else_branch is float32 \[4,1\] but must be float32 \[1,4\]"),
    # --- opsets and ops
    BadInput("opset_too_new", "default-domain opset 99", lambda: relu_model(opset=99),
             "ModelLoadError", r"opset 99 is not supported; npuc imports ai.onnx opsets 1 to 21"),
    BadInput("opset_too_old", "default-domain opset -1", lambda: relu_model(opset=-1),
             "ModelLoadError", r"opset -1 is not supported"),
    BadInput("legacy_broadcast_axis_misfit", "opset-6 Add broadcast=1 axis=1 of two [1,4]", _legacy_broadcast_axis_misfit,
             "UnsupportedOpError", r"node 'add6' \(Add, opset 6\): broadcast axis 1 does not fit"),
    BadInput("legacy_tile_runtime_tiles", "Tile-1 with tiles as a graph input", _legacy_tile_runtime_tiles,
             "UnsupportedOpError", r"node 'tile1' \(Tile, opset 5\): Tile-1 \(tiles, axis\) needs constant"),
    BadInput("no_default_opset", "only a custom domain imported", _no_default_opset,
             "ModelLoadError", r"imports no default-domain \(ai.onnx\) opset"),
    BadInput("unknown_domain", "an op of domain com.example", _unknown_domain,
             "UnsupportedOpError", r"unsupported op 'com.example.FancyOp'"),
    BadInput("unknown_op", "an op the default domain does not have", _unknown_op,
             "UnsupportedOpError", r"NotAnOnnxOp"),
    # --- attributes of the wrong kind
    BadInput("attr_perm_int", "Transpose perm=1 instead of a list", _perm_as_int,
             "ModelLoadError", r"node 'transpose'.*attribute 'perm' must be of kind ints"),
    BadInput("attr_kernel_shape_string", "Conv kernel_shape='3x3'", _kernel_shape_as_string,
             "ModelLoadError", r"node 'conv'.*attribute 'kernel_shape' must be of kind ints"),
    BadInput("attr_axis_float", "Softmax axis=1.0", _axis_as_float,
             "ModelLoadError", r"node 'softmax'.*attribute 'axis' must be of kind int"),
    # --- shapes
    # A negative dim_value is read as unknown, so the user is told to fix it with input_size_list.
    BadInput("input_negative_dim", "graph input of shape [-3,4]", _input_negative_dim, "ShapeError",
             r"dynamic inputs; fix them at load with input_size_list.*inputs=\['x'\], input_size_list=\[\[\?,4\]\]"),
    BadInput("add_shape_mismatch", "Add of [1,4] and [1,3]", _shape_mismatch, "ShapeError", r"add_mismatch.*\[1,4\].*\[1,3\]"),
    BadInput("gemm_inner_mismatch", "Gemm of [1,4] and [5,2]", _gemm_inner_mismatch, "ShapeError", r"gemm_mismatch"),
    BadInput("reshape_bad_count", "Reshape of 4 elements to [3,3]", _reshape_bad_count, "ShapeError", r"reshape_bad"),
    BadInput("reshape_wrapping_shape", "Reshape to [2**62+1, 4], whose element count wraps to 4", _reshape_wrapping_shape,
             "ShapeError", r"node 'reshape_wrap' \(Reshape\): shape \[4611686018427387905,4\] has more elements than int64 can count"),
    # --- sizes no buffer can have: refused at load, before the executor plans or allocates anything
    BadInput("input_huge", "graph input of 1<<40 floats", _input_huge, "ResourceError",
             r"tensor 'x' \(graph input\) is float32\[1048576,1048576\], which exceeds the 16 GiB tensor limit"),
    BadInput("constant_of_shape_huge", "ConstantOfShape producing 1<<40 floats (too big to fold)", _constant_of_shape_huge,
             "ResourceError", r"tensor 'y' \(output of node 'fill', ConstantOfShape\) is float32\[1048576,1048576\]"),
    BadInput("tile_chain_huge", "four Tile x1024 of a 4-float constant: 16 TiB at the end", _tile_chain_huge,
             "ResourceError", r"tensor 'c4' \(output of node 'tile3', Tile\) is float32\[4398046511104\], which "
             r"exceeds the 16 GiB tensor limit"),
    BadInput("tile_bytes_wrap", "Tile to 2**62 int64 elements (the byte count wraps int64)", _tile_bytes_wrap,
             "ResourceError", r"tensor 't' \(output of node 'tile_wrap', Tile\) is int64\[4611686018427387904\], "
             r"which exceeds the 16 GiB tensor limit"),
    BadInput("tile_dim_overflow", "Tile to a dim of 2**64 (beyond int64)", _tile_dim_overflow,
             "ShapeError", r"tile_overflow.*Tile output dim: 4 x 4611686018427387904 overflows int64"),
]


def write_corpus(out_dir: Path) -> List[Path]:
    """Writes every case (and its companion files) into out_dir; returns the model paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for case in CASES:
        path = out_dir / f"{case.name}.onnx"
        path.write_bytes(case.build())
        for name, data in case.companions.items():
            (out_dir / name).write_bytes(data)
        paths.append(path)
    return paths


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    paths = write_corpus(args.out_dir)
    print(f"wrote {len(paths)} bad models to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
