#!/usr/bin/env python3
"""Writes docs/passes.md: every graph pass with a real before/after text graph.

Each pass gets a tiny ONNX model (built here with onnx.helper) on which it applies; the script
imports it, prints ``Model.dump()``, runs ``npuc.optimize`` at level 3 with every other pass
disabled (except the clean-up passes an example names), and prints the result. It fails if the pass
did not fire, or if a registered pass has no example, so the page cannot go stale silently.

Usage (from the repository root, with the extension importable):
    PYTHONPATH=python /usr/bin/python3 tools/gen_pass_doc.py [--check]
``--check`` compares with the committed docs/passes.md instead of writing it (exit 1 on a difference).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import doc_generator
import npuc

REPO_ROOT = Path(__file__).resolve().parents[1]
DOC_PATH = REPO_ROOT / "docs" / "passes.md"
OPSET = 13


def _f(name: str, shape: Sequence[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _const(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def _i64(name: str, values: Sequence[int]) -> onnx.TensorProto:
    return _const(name, np.asarray(values, dtype=np.int64))


def _model(nodes: list, inputs: list, outputs: list, inits: list = ()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "example", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


# ---------------------------------------------------------------------- examples, one per pass


def canonicalize() -> onnx.ModelProto:
    n = [helper.make_node("Add", ["c", "x"], ["a"], name="add"),
         helper.make_node("Pow", ["a", "two"], ["p"], name="square"),
         helper.make_node("Identity", ["p"], ["y"], name="identity")]
    return _model(n, [_f("x", [1, 4, 8, 8])], [_f("y", [1, 4, 8, 8])],
                  [_const("c", np.ones((1, 4, 1, 1), np.float32)), _const("two", np.float32(2))])


def constant_folding() -> onnx.ModelProto:
    n = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
         helper.make_node("Gather", ["s", "zero"], ["batch"], name="gather", axis=0),
         helper.make_node("Unsqueeze", ["batch", "axes0"], ["b1"], name="unsqueeze"),
         helper.make_node("Concat", ["b1", "minus1"], ["target"], name="concat", axis=0),
         helper.make_node("Reshape", ["x", "target"], ["y"], name="flatten")]
    return _model(n, [_f("x", [1, 4, 8, 8])], [_f("y", [1, 256])],
                  [_const("zero", np.int64(0)), _i64("axes0", [0]), _i64("minus1", [-1])])


def dead_code_elimination() -> onnx.ModelProto:
    n = [helper.make_node("Relu", ["x"], ["y"], name="relu"),
         helper.make_node("Sigmoid", ["x"], ["unused"], name="sigmoid_nobody_reads"),
         helper.make_node("Mul", ["unused", "k"], ["unused2"], name="mul_nobody_reads")]
    return _model(n, [_f("x", [1, 4, 8, 8])], [_f("y", [1, 4, 8, 8])], [_const("k", np.float32(3))])


def common_subexpression_elimination() -> onnx.ModelProto:
    n = [helper.make_node("Sigmoid", ["x"], ["s1"], name="sigmoid_a"),
         helper.make_node("Sigmoid", ["x"], ["s2"], name="sigmoid_b"),
         helper.make_node("Add", ["s1", "s2"], ["y"], name="add")]
    return _model(n, [_f("x", [1, 4, 8, 8])], [_f("y", [1, 4, 8, 8])])


def fold_batchnorm() -> onnx.ModelProto:
    r = _rng()
    n = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["y"], name="bn")]
    return _model(n, [_f("x", [1, 3, 8, 8])], [_f("y", [1, 4, 8, 8])],
                  [_const("w", r.standard_normal((4, 3, 3, 3)).astype(np.float32)),
                   _const("b", r.standard_normal(4).astype(np.float32)),
                   _const("gamma", r.uniform(0.5, 1.5, 4).astype(np.float32)),
                   _const("beta", r.standard_normal(4).astype(np.float32)),
                   _const("mean", r.standard_normal(4).astype(np.float32)),
                   _const("var", r.uniform(0.5, 2, 4).astype(np.float32))])


def merge_reshapes() -> onnx.ModelProto:
    n = [helper.make_node("Reshape", ["x", "s1"], ["a"], name="reshape"),
         helper.make_node("Unsqueeze", ["a", "axes"], ["b"], name="unsqueeze"),
         helper.make_node("Flatten", ["b"], ["y"], name="flatten", axis=1)]
    return _model(n, [_f("x", [1, 4, 8, 8])], [_f("y", [1, 256])], [_i64("s1", [1, 4, 64]), _i64("axes", [3])])


def compose_transposes() -> onnx.ModelProto:
    n = [helper.make_node("Transpose", ["x"], ["a"], name="to_nhwc", perm=[0, 2, 3, 1]),
         helper.make_node("Transpose", ["a"], ["b"], name="swap_hw", perm=[0, 2, 1, 3]),
         helper.make_node("Relu", ["b"], ["y"], name="relu")]
    return _model(n, [_f("x", [1, 4, 8, 6])], [_f("y", [1, 6, 8, 4])])


def merge_slices() -> onnx.ModelProto:
    n = [helper.make_node("Slice", ["x", "st1", "en1", "ax1"], ["a"], name="slice_channels"),
         helper.make_node("Slice", ["a", "st2", "en2", "ax2"], ["y"], name="slice_rows")]
    return _model(n, [_f("x", [1, 8, 8, 8])], [_f("y", [1, 4, 4, 8])],
                  [_i64("st1", [0]), _i64("en1", [4]), _i64("ax1", [1]),
                   _i64("st2", [2]), _i64("en2", [6]), _i64("ax2", [2])])


def extract_common_factor() -> onnx.ModelProto:
    n = [helper.make_node("Relu", ["a"], ["ra"], name="relu_a"),
         helper.make_node("Relu", ["b"], ["rb"], name="relu_b"),
         helper.make_node("Concat", ["ra", "rb"], ["y"], name="concat", axis=1)]
    return _model(n, [_f("a", [1, 4, 8, 8]), _f("b", [1, 4, 8, 8])], [_f("y", [1, 8, 8, 8])])


def fuse_layernorm() -> onnx.ModelProto:
    r = _rng()
    n = [helper.make_node("ReduceMean", ["x"], ["mu"], name="mean", axes=[-1]),
         helper.make_node("Sub", ["x", "mu"], ["d"], name="sub"),
         helper.make_node("Pow", ["d", "two"], ["d2"], name="pow"),
         helper.make_node("ReduceMean", ["d2"], ["var"], name="var", axes=[-1]),
         helper.make_node("Add", ["var", "eps"], ["ve"], name="add_eps"),
         helper.make_node("Sqrt", ["ve"], ["sd"], name="sqrt"),
         helper.make_node("Div", ["d", "sd"], ["nrm"], name="div"),
         helper.make_node("Mul", ["nrm", "gamma"], ["sc"], name="scale"),
         helper.make_node("Add", ["sc", "beta"], ["y"], name="shift")]
    return _model(n, [_f("x", [1, 16, 32])], [_f("y", [1, 16, 32])],
                  [_const("two", np.float32(2)), _const("eps", np.float32(1e-5)),
                   _const("gamma", r.uniform(0.5, 1.5, 32).astype(np.float32)),
                   _const("beta", r.standard_normal(32).astype(np.float32))])


def fuse_activations() -> onnx.ModelProto:
    n = [helper.make_node("Sigmoid", ["x"], ["s"], name="sigmoid"),
         helper.make_node("Mul", ["x", "s"], ["y"], name="mul")]
    return _model(n, [_f("x", [1, 4, 8, 8])], [_f("y", [1, 4, 8, 8])])


def fuse_glu() -> onnx.ModelProto:
    n = [helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=1),
         helper.make_node("Sigmoid", ["b"], ["g"], name="gate"),
         helper.make_node("Mul", ["a", "g"], ["y"], name="mul")]
    return _model(n, [_f("x", [1, 8, 16])], [_f("y", [1, 4, 16])])


def transpose_reorder() -> onnx.ModelProto:
    r = _rng()
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
         helper.make_node("Transpose", ["c"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]),
         helper.make_node("Relu", ["t"], ["y"], name="relu")]
    return _model(n, [_f("x", [1, 3, 8, 8])], [_f("y", [1, 8, 8, 4])],
                  [_const("w", r.standard_normal((4, 3, 1, 1)).astype(np.float32))])


def channel_shuffle_to_conv() -> onnx.ModelProto:
    r = _rng()
    n = [helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1", kernel_shape=[1, 1]),
         helper.make_node("Reshape", ["c", "s5"], ["g"], name="split_groups"),
         helper.make_node("Transpose", ["g"], ["t"], name="shuffle", perm=[0, 2, 1, 3, 4]),
         helper.make_node("Reshape", ["t", "s4"], ["sh"], name="merge_groups"),
         helper.make_node("Conv", ["sh", "w2"], ["y"], name="conv2", kernel_shape=[1, 1])]
    return _model(n, [_f("x", [1, 8, 4, 4])], [_f("y", [1, 8, 4, 4])],
                  [_const("w1", r.standard_normal((8, 8, 1, 1)).astype(np.float32)),
                   _i64("s5", [1, 2, 4, 4, 4]), _i64("s4", [1, 8, 4, 4]),
                   _const("w2", r.standard_normal((8, 8, 1, 1)).astype(np.float32))])


def fold_channel_permutations() -> onnx.ModelProto:
    r = _rng()
    n = [helper.make_node("Conv", ["x", "wa"], ["a"], name="conv_a", kernel_shape=[1, 1]),
         helper.make_node("Conv", ["x", "wb"], ["b0"], name="conv_b", kernel_shape=[1, 1]),
         helper.make_node("Relu", ["b0"], ["b"], name="relu_b"),
         helper.make_node("Concat", ["a", "b"], ["c"], name="concat", axis=1),
         helper.make_node("Reshape", ["c", "s5"], ["g"], name="split_groups"),
         helper.make_node("Transpose", ["g"], ["t"], name="shuffle", perm=[0, 2, 1, 3, 4]),
         helper.make_node("Reshape", ["t", "s4"], ["sh"], name="merge_groups"),
         helper.make_node("Slice", ["sh", "zero", "four", "one"], ["lo"], name="first_half"),
         helper.make_node("Slice", ["sh", "four", "eight", "one"], ["hi"], name="second_half"),
         helper.make_node("Conv", ["lo", "wc"], ["y1"], name="conv_c", kernel_shape=[1, 1]),
         helper.make_node("Conv", ["hi", "wd"], ["y2"], name="conv_d", kernel_shape=[1, 1])]
    w = [_const(k, r.standard_normal(s).astype(np.float32))
         for k, s in (("wa", (4, 3, 1, 1)), ("wb", (4, 3, 1, 1)), ("wc", (2, 4, 1, 1)), ("wd", (2, 4, 1, 1)))]
    return _model(n, [_f("x", [1, 3, 4, 4])], [_f("y1", [1, 2, 4, 4]), _f("y2", [1, 2, 4, 4])],
                  w + [_i64("s5", [1, 2, 4, 4, 4]), _i64("s4", [1, 8, 4, 4]), _i64("zero", [0]),
                       _i64("four", [4]), _i64("eight", [8]), _i64("one", [1])])


def fold_focus() -> onnx.ModelProto:
    r = _rng()
    nodes, inits, parts = [], [_i64("axes", [2, 3]), _i64("steps", [2, 2]), _i64("ends", [1 << 30, 1 << 30])], []
    for i, (dy, dx) in enumerate(((0, 0), (1, 0), (0, 1), (1, 1))):
        inits.append(_i64(f"st{i}", [dy, dx]))
        nodes.append(helper.make_node("Slice", ["x", f"st{i}", "ends", "axes", "steps"], [f"p{i}"], name=f"slice{i}"))
        parts.append(f"p{i}")
    nodes += [helper.make_node("Concat", parts, ["cat"], name="concat", axis=1),
              helper.make_node("Conv", ["cat", "w"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    inits.append(_const("w", r.standard_normal((8, 12, 3, 3)).astype(np.float32)))
    return _model(nodes, [_f("x", [1, 3, 16, 16])], [_f("y", [1, 8, 8, 8])], inits)


def scatter_nd_to_concat() -> onnx.ModelProto:
    # y[..., 0:2] = u, as torch.onnx.export writes in-place slice assignment (YOLOv5 Detect).
    idx = np.stack(np.meshgrid(*[np.arange(d) for d in (1, 2, 3, 2)], indexing="ij"), axis=-1)
    n = [helper.make_node("ScatterND", ["x", "idx", "u"], ["y"], name="assign_xy")]
    return _model(n, [_f("x", [1, 2, 3, 6]), _f("u", [1, 2, 3, 2])], [_f("y", [1, 2, 3, 6])],
                  [_i64("idx", idx.astype(np.int64))])


def fuse_matmul_bias() -> onnx.ModelProto:
    r = _rng()
    n = [helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
         helper.make_node("Add", ["m", "b"], ["y"], name="add_bias")]
    return _model(n, [_f("x", [1, 6, 8])], [_f("y", [1, 6, 4])],
                  [_const("w", r.standard_normal((8, 4)).astype(np.float32)),
                   _const("b", r.standard_normal(4).astype(np.float32))])


def legalize_conv_stride() -> onnx.ModelProto:
    w = _rng().standard_normal((16, 3, 8, 8)).astype(np.float32)
    n = [helper.make_node("Conv", ["x", "w"], ["y"], name="patch_embed", kernel_shape=[8, 8], strides=[8, 8])]
    return _model(n, [_f("x", [1, 3, 32, 32])], [_f("y", [1, 16, 4, 4])], [_const("w", w)])


def legalize_pool_window() -> onnx.ModelProto:
    n = [helper.make_node("MaxPool", ["x"], ["y"], name="pool9", kernel_shape=[9, 9], strides=[9, 9])]
    return _model(n, [_f("x", [1, 8, 27, 27])], [_f("y", [1, 8, 3, 3])])


def reduce_transpose_rank() -> onnx.ModelProto:
    n = [helper.make_node("Transpose", ["x"], ["y"], name="qkv_heads", perm=[2, 0, 3, 1, 4])]
    return _model(n, [_f("x", [1, 40, 3, 8, 15])], [_f("y", [3, 1, 8, 40, 15])])


def fuse_hardsigmoid() -> onnx.ModelProto:
    n = [helper.make_node("Add", ["x", "three"], ["s"], name="add3"),
         helper.make_node("Clip", ["s", "zero", "six"], ["c"], name="relu6"),
         helper.make_node("Mul", ["c", "sixth"], ["y"], name="div6")]
    return _model(n, [_f("x", [1, 8, 4, 4])], [_f("y", [1, 8, 4, 4])],
                  [_const(name, np.array(v, np.float32)) for name, v in
                   (("three", 3.0), ("zero", 0.0), ("six", 6.0), ("sixth", 1.0 / 6.0))])


def attention_cleanup() -> onnx.ModelProto:
    # PyTorch's MultiheadAttention head split: one q/k/v Gemm, a Slice + Reshape to 2 heads of 4 per
    # part, q scaled by 1/sqrt(4), q and v to [heads, tokens, 4], k to [heads, 4, tokens].
    n = [helper.make_node("Gemm", ["x", "w", "b"], ["qkv"], name="in_proj"),
         helper.make_node("Reshape", ["qkv", "rows"], ["qkv3"], name="view")]
    outs = []
    for i, part in enumerate("qkv"):
        n.append(helper.make_node("Slice", ["qkv3", f"s{i}", f"e{i}", "axis2"], [f"{part}s"], name=f"slice_{part}"))
        n.append(helper.make_node("Reshape", [f"{part}s", "heads"], [f"{part}h"], name=f"heads_{part}"))
        src = f"{part}h"
        if part == "q":
            n.append(helper.make_node("Mul", ["qh", "scale"], ["qm"], name="scale_q"))
            src = "qm"
        perm = [1, 2, 0] if part == "k" else [1, 0, 2]
        n.append(helper.make_node("Transpose", [src], [part], name=f"t_{part}", perm=perm))
        outs.append(_f(part, [2, 4, 6] if part == "k" else [2, 6, 4]))
    rng = np.random.default_rng(0)
    inits = [_const("w", rng.standard_normal((8, 24)).astype(np.float32)),
             _const("b", rng.standard_normal(24).astype(np.float32)),
             _const("rows", np.array([6, 1, 24], np.int64)), _const("heads", np.array([6, 2, 4], np.int64)),
             _const("axis2", np.array([2], np.int64)), _const("scale", np.array(0.5, np.float32))]
    inits += [_const(f"s{i}", np.array([8 * i], np.int64)) for i in range(3)]
    inits += [_const(f"e{i}", np.array([8 * i + 8], np.int64)) for i in range(3)]
    return _model(n, [_f("x", [6, 8])], outs, inits)


def propagate_reshapes() -> onnx.ModelProto:
    # A Linear on [1, tokens, C] as exporters write it, between a row-wise Softmax and an activation.
    n = [helper.make_node("Softmax", ["x"], ["s"], name="softmax", axis=2),
         helper.make_node("Reshape", ["s", "rows"], ["r"], name="to_rows"),
         helper.make_node("Gemm", ["r", "w"], ["g"], name="linear"),
         helper.make_node("Reshape", ["g", "tokens"], ["g3"], name="to_tokens"),
         helper.make_node("Relu", ["g3"], ["a"], name="relu"),
         helper.make_node("Reshape", ["a", "rows"], ["y"], name="to_rows_again")]
    rng = np.random.default_rng(1)
    return _model(n, [_f("x", [1, 8, 16])], [_f("y", [8, 16])],
                  [_const("w", rng.standard_normal((16, 16)).astype(np.float32)),
                   _const("rows", np.array([8, 16], np.int64)), _const("tokens", np.array([1, 8, 16], np.int64))])


def hoist_transposes() -> onnx.ModelProto:
    # NHWC copy that is also an output; the Relu'd copy goes back to NCHW.
    n = [helper.make_node("Transpose", ["x"], ["nhwc"], name="to_nhwc", perm=[0, 2, 3, 1]),
         helper.make_node("Relu", ["nhwc"], ["r"], name="relu"),
         helper.make_node("Transpose", ["r"], ["y"], name="to_nchw", perm=[0, 3, 1, 2])]
    return _model(n, [_f("x", [1, 3, 4, 5])], [_f("nhwc", [1, 4, 5, 3]), _f("y", [1, 3, 4, 5])])


def lower_einsum() -> onnx.ModelProto:
    # Attention scores as torch.einsum exports them: q [b, h, q, d] times k [b, h, k, d].
    n = [helper.make_node("Einsum", ["q", "k"], ["y"], name="scores", equation="bhqd,bhkd->bhqk")]
    return _model(n, [_f("q", [1, 2, 8, 4]), _f("k", [1, 2, 6, 4])], [_f("y", [1, 2, 8, 6])])


def lower_trilu() -> onnx.ModelProto:
    # A lower triangle of run-time scores.
    n = [helper.make_node("Trilu", ["x", "k"], ["y"], name="tril", upper=0)]
    return _model(n, [_f("x", [2, 4, 4])], [_f("y", [2, 4, 4])], [_const("k", np.int64(0))])
def fold_qlinear() -> onnx.ModelProto:
    # An operator-form quantized Conv (uint8 activations, int8 per-channel weights, int32 bias).
    rng = np.random.default_rng(2)
    n = [helper.make_node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], name="qconv",
                          pads=[1, 1, 1, 1])]
    return _model(n, [helper.make_tensor_value_info("xq", TensorProto.UINT8, [1, 2, 6, 6])],
                  [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 4, 6, 6])],
                  [_const("xs", np.float32(0.02)), _const("xz", np.uint8(128)),
                   _const("w", rng.integers(-127, 128, (4, 2, 3, 3)).astype(np.int8)),
                   _const("ws", np.array([0.01, 0.02, 0.01, 0.03], np.float32)), _const("wz", np.zeros(4, np.int8)),
                   _const("ys", np.float32(0.05)), _const("yz", np.uint8(0)),
                   _const("b", rng.integers(-500, 500, 4).astype(np.int32))])


@dataclass
class Example:
    """A pass, the model it rewrites, and which other passes run with it (clean-up only)."""

    build: Optional[Callable[[], onnx.ModelProto]]
    note: str
    also: List[str] = field(default_factory=list)
    #: "pass": before = the imported graph, after = the pass ran (it must fire).
    #: "importer": the importer already does this on load; before = the ONNX file as written.
    #: "target": a target pass no example shows (see its section).
    mode: str = "pass"
    #: The SoC a target-stage pass rewrites for (``npuc.optimize(..., soc=...)``).
    soc: str = ""
    #: A paragraph after the note: why the pass is exact, what it measured on the shared models.
    detail: str = ""


def unroll_recurrent() -> onnx.ModelProto:
    r = _rng()
    n = [helper.make_node("RNN", ["x", "w", "r", "b"], ["y", "y_h"], name="rnn", hidden_size=2)]
    return _model(n, [_f("x", [3, 1, 2])], [_f("y", [3, 1, 1, 2])],
                  [_const("w", r.standard_normal((1, 2, 2)).astype(np.float32)),
                   _const("r", r.standard_normal((1, 2, 2)).astype(np.float32)),
                   _const("b", r.standard_normal((1, 4)).astype(np.float32))])


EXAMPLES: Dict[str, Example] = {
    "canonicalize": Example(canonicalize, "constant moved to the right of Add, `Pow(x, 2)` -> `Mul(x, x)`, "
                            "Identity removed"),
    "constant_folding": Example(constant_folding, "nodes whose inputs are all constants are evaluated at "
                                "compile time (here the Shape/Gather/Concat sub-graph computing a Reshape target)",
                                mode="importer"),
    "dead_code_elimination": Example(dead_code_elimination, "nodes and constants whose results reach no output "
                                     "are removed", mode="importer"),
    "common_subexpression_elimination": Example(common_subexpression_elimination,
                                                "two identical Sigmoids become one"),
    "fold_batchnorm": Example(fold_batchnorm, "BatchNormalization folded into the Conv's weights and bias"),
    "merge_reshapes": Example(merge_reshapes, "Reshape -> Unsqueeze -> Flatten becomes one Reshape"),
    "compose_transposes": Example(compose_transposes, "two Transposes become one with the composed perm"),
    "merge_slices": Example(merge_slices, "two Slices on different axes become one"),
    "extract_common_factor": Example(extract_common_factor, "the Relu on every Concat input moves after the Concat"),
    "fuse_layernorm": Example(fuse_layernorm, "the nine-node decomposed LayerNorm becomes LayerNormalization",
                              ["canonicalize"]),
    "fuse_activations": Example(fuse_activations, "`x * Sigmoid(x)` becomes SiLU (npuc's `ai.npuc` domain)"),
    "fuse_glu": Example(fuse_glu, "Split halves + Sigmoid + Mul become one GLU"),
    "transpose_reorder": Example(transpose_reorder, "the Relu moves above the Transpose, next to its Conv"),
    "align_channels": Example(None, "pads Conv/depthwise/Gemm channel counts to the SoC's channel alignment "
                              "with zero weights where the cost model says it pays", mode="target"),
    "channel_shuffle_to_conv": Example(channel_shuffle_to_conv, "the Reshape-Transpose-Reshape shuffle is folded "
                                       "into the next Conv's weights (a permutation of its input channels)"),
    "fold_channel_permutations": Example(
        fold_channel_permutations, "channel shuffles, Gathers, channel Slices and Concats between Convs become one "
        "Split per producing Conv and one Concat per consuming Conv (here: ShuffleNetV2 halves of a shuffled "
        "Concat); the permutations move into the Convs' weight rows and columns",
        detail=("Each consumer reads exactly the channels it read before (no zero weight columns, no gather "
                "Conv), so MACs never grow; the pass applies only when fewer data-movement nodes remain. "
                "Moving a producer's weight rows (and the per-channel Relu after it) is exact; a consumer "
                "Conv that reads its channels in another order sums them in another order, hence level 3. "
                "It runs before `channel_shuffle_to_conv`, which keeps the shuffles this pass refuses (a "
                "region value that is a graph output, a producer that cannot reorder its channels, a "
                "consumer that cannot absorb an order). On shufflenet_v2_x0_5 (baseline: "
                "`config(disable_passes=['fold_channel_permutations'])`) it removes the 13 gather Convs, "
                "every shuffle and every Slice (three regions, one per stage): MACs 55.15 M -> 40.48 M, "
                "Conv 69 -> 56, Slice 13 -> 0, Split 0 -> 16; eval_perf on rk3588 INT8 992.7 -> 1139.0 FPS "
                "(FP16 668.9 -> 793.2). INT8 output cosine vs FP32 on the reference input and 7 noisy copies, "
                "calibrated on those 8: mean 0.98887 -> 0.98934. In INT8 a Split piece keeps its producer's "
                "scale and is rescaled at the Concat it feeds; one Conv per piece (each piece on its "
                "Concat's grid) was measured and rejected: 124 tasks instead of 91, 971 FPS."
                )),
    "fuse_matmul_bias": Example(fuse_matmul_bias, "`MatMul(x, W) + b` with constant W and b becomes one Gemm (Reshapes around it for rank > 2)"),
    "fuse_hardsigmoid": Example(fuse_hardsigmoid, "`Clip(x + 3, 0, 6) * (1/6)` (relu6(x + 3) / 6) becomes one "
                                "HardSigmoid(alpha = 1/6, beta = 0.5)"),
    "fold_focus": Example(fold_focus, "the YOLOv5 Focus stem (4 strided Slices + Concat + Conv) becomes one "
                          "stride-2 Conv on the input"),
    "legalize_conv_stride": Example(legalize_conv_stride, "a Conv whose stride or kernel the target NPU does "
                                    "not run (a ViT patch embedding, 8x8 stride 8, on rk3588: strides 1-7) "
                                    "becomes SpaceToDepth + a Conv within the limits, so it stays on the NPU "
                                    "(target stage, run for `config(target_platform)`; shown for rk3588)",
                                    soc="rk3588"),
    "legalize_pool_window": Example(legalize_pool_window, "a MaxPool / AveragePool whose kernel or stride the "
                                    "target NPU does not run (rk3588: kernel 1-7) becomes a global pool when its "
                                    "window is the whole input, or two pools within the limits when the windows do "
                                    "not overlap (9 = 3 x 3; target stage; shown for rk3588)", soc="rk3588"),
    "unroll_recurrent": Example(unroll_recurrent, "an LSTM / GRU / RNN with at most 64 static steps and "
                                "constant weights becomes its per-step program: one Gemm for every step's input "
                                "projection, then per step a Gemm of the state, the gate activations and Mul/Add, "
                                "so the layer runs on the NPU (here a 3-step RNN; target stage; shown for rk3588)",
                                soc="rk3588"),
    "attention_cleanup": Example(attention_cleanup, "the q/k/v head split of an attention export (a Slice, a "
                                 "Reshape and a Transpose per part, q scaled) becomes one Reshape, a Transpose q "
                                 "and v share and k's own; the scale is folded into the q columns of the "
                                 "projection (q/k/v written as three Linears of one input become one first)", also=["common_subexpression_elimination", "merge_reshapes"]),
    "propagate_reshapes": Example(propagate_reshapes, "Reshapes move across the row-wise Softmax and the Relu "
                                  "until they merge: the Linear on [1, tokens, C] needs no Reshape around it",
                                  also=["merge_reshapes", "canonicalize"]),
    "hoist_transposes": Example(hoist_transposes, "the Transpose back to NCHW moves above the Relu and cancels "
                                "with the one to NHWC (which stays for its other reader)"),
    "lower_einsum": Example(lower_einsum, "the batched-matmul Einsum becomes Transpose + MatMul, which the NPU "
                            "runs (Einsum itself is CPU-only)"),
    "lower_trilu": Example(lower_trilu, "Trilu with a constant k becomes a Mul by a constant 0/1 mask"),
    "reduce_transpose_rank": Example(reduce_transpose_rank, "a Transpose above the target NPU's rank limit (the "
                                     "rank-5 q/k/v head split of an attention export; rk3588 runs rank 4) becomes "
                                     "Reshape + a Transpose of the smallest equivalent rank + Reshape: size-1 axes "
                                     "dropped, axes that move together merged (target stage; shown for rk3588)",
                                     soc="rk3588"),
    "scatter_nd_to_concat": Example(scatter_nd_to_concat, "a ScatterND writing one box at constant indices "
                                    "(in-place slice assignment `y[..., 0:2] = u`) becomes Slice + Concat, which "
                                    "the NPU runs"),
    "fold_qlinear": Example(fold_qlinear, "QLinearConv / QLinearMatMul become DequantizeLinear -> float Conv / "
                            "MatMul -> QuantizeLinear and ConvInteger / MatMulInteger become the same with scale 1 "
                            "and a Cast to int32, so the NPU runs the Conv; constant folding turns the weights' "
                            "DequantizeLinear into float weights (the QLinear forms may move an output by 1 LSB "
                            "at a rounding tie: level 3; the integer forms are exact)", ["constant_folding"]),
}


def _section(name: str, example: Example) -> str:
    title = [f"## {name}", ""]
    note = example.note[0].upper() + example.note[1:]
    if example.mode == "target":
        return "\n".join(title + [
            f"{note}. Target-specific, and the one pass of the target stage that `npuc.optimize(..., soc=...)` "
            "and `Toolkit.build()` leave out today: the padded graph changes every blob, and its benefit has "
            "not been measured against the cost model (C++ callers and tests run it with "
            "`OptimizeOptions::align_channels` or `createAlignChannelsPass(soc, dtype)`, see "
            "`passes/align_channels.h`); eval_perf models the alignment padding itself. Listed by "
            "`npuc.pass_names()`, so it can be named in `disable_passes`.",
            "",
        ])
    proto = example.build()
    model = npuc.Model.from_bytes(proto.SerializeToString())
    keep = {name, *example.also}
    disabled = [p for p in npuc.pass_names() if p not in keep]
    optimized, report = npuc.optimize(model, 3, disabled, "", soc=example.soc)
    fired = dict(report["fired"])
    if example.mode == "importer":
        if model.dump() != optimized.dump():
            raise SystemExit(f"gen_pass_doc: '{name}' changed an imported graph; show it as a normal example")
        return "\n".join(title + [
            f"{note}. The importer already does this when it loads a model (shape inference folds "
            "constants, unreachable nodes are dropped), so on a freshly imported graph the pass has nothing "
            "left to do; in the pipeline it cleans up after the rewrites (e.g. BatchNorm parameters left "
            "unused by `fold_batchnorm`). Below, the ONNX graph as written and the graph npuc works on.",
            "",
            "As written (ONNX):",
            "```",
            helper.printable_graph(proto.graph).rstrip(),
            "```",
            "Imported:",
            "```",
            model.dump().rstrip(),
            "```",
            "",
        ])
    if name not in fired:
        raise SystemExit(f"gen_pass_doc: pass '{name}' did not fire on its example; fix the example")
    others = ", ".join(f"`{p}`" for p in example.also)
    ran = f"`{name}`" + (f" (with {others})" if others else "")
    return "\n".join(title + [
        f"{note}. Ran: {ran}; `{name}` fired {fired[name]}x.",
        "",
        *([example.detail, ""] if example.detail else []),
        "Before:",
        "```",
        model.dump().rstrip(),
        "```",
        "After:",
        "```",
        optimized.dump().rstrip(),
        "```",
        "",
    ])


HEADER = """# Graph passes, before and after

Generated by `tools/gen_pass_doc.py` from the passes themselves: each section imports a tiny model,
prints the graph (`Model.dump()`), runs `npuc.optimize(model, 3, disable_passes=...)` with only that
pass enabled (plus the clean-up passes named), and prints the result. Regenerate after changing a
pass: `PYTHONPATH=python /usr/bin/python3 tools/gen_pass_doc.py`.

Reading a dump: `%name` is a computed value, `$name` a constant, `# name` the node's name; the
first line lists the graph inputs and the last `return` its outputs.

`Toolkit.build()` runs them (all but `align_channels`, see its section) at
`config(optimization_level=3)`, the default; levels 1-2 run only the bit-exact ones, 0 runs none;
`config(disable_passes=[...])` skips passes by name. With `config(target_platform=...)` set, `build()` also runs
the target stage (`unroll_recurrent`, `legalize_conv_stride`, `legalize_pool_window`, `reduce_transpose_rank`). What the target
stage and the attention / Reshape / Transpose clean-ups (`attention_cleanup`, `propagate_reshapes`,
`hoist_transposes`) change on the shared models and the YOLO exports (CPU ops, hand-overs, Reshape +
Transpose count, predicted FPS, before and after) is measured in
[target_stage.md](target_stage.md#what-it-changes-on-real-models). The table lists `npuc.pass_names()` in order. `build()` prints which passes fired and why a fusion did not apply. How to write
a pass: [passes/README.md](../passes/README.md).

| pass | what it does |
|---|---|
"""


def render() -> str:
    names = list(npuc.pass_names())
    missing = [n for n in names if n not in EXAMPLES]
    if missing:
        raise SystemExit(f"gen_pass_doc: no example for pass(es) {', '.join(missing)}; add one to EXAMPLES")
    rows = "".join(f"| [`{n}`](#{n}) | {EXAMPLES[n].note} |\n" for n in names)
    return HEADER + rows + "\n" + "\n".join(_section(n, EXAMPLES[n]) for n in names)


def main(argv: Sequence[str] = ()) -> int:
    return doc_generator.run(__doc__.splitlines()[0], DOC_PATH, REPO_ROOT, render, "tools/gen_pass_doc.py", argv, detail=f"{len(npuc.pass_names())} passes")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
