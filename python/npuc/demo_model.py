"""The demo's model: a small ShuffleNet-style classifier written with onnx.helper.

It is built to exercise what npuc's graph passes exist for, in the shapes PyTorch exports:
a YOLOv5 "Focus" stem (four stride-2 Slices + Concat feeding a Conv, SiLU as Sigmoid * x),
ShuffleNetV2 units (channel split by Slice, 1x1 / depthwise 3x3 / 1x1 branch, Concat, channel
shuffle as Reshape -> Transpose -> Reshape) and a head with a decomposed LayerNorm
(ReduceMean / Sub / Pow / Sqrt / Div / Mul / Add) before the classifier Gemm.
"""

from __future__ import annotations

from typing import List, Tuple

import numpy as np

INPUT_SHAPE = (1, 3, 64, 64)
STEM_CHANNELS = 32
UNITS = 3
CLASSES = 10


class _Builder:
    """Accumulates nodes and initializers with readable, unique names."""

    def __init__(self, rng: np.random.Generator) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper, self.rng = helper, numpy_helper, rng
        self.nodes: List[object] = []
        self.inits: List[object] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(self.numpy_helper.from_array(value, name))
        return name

    def weight(self, name: str, shape: Tuple[int, ...], fan_in: int) -> str:
        scale = np.sqrt(2.0 / fan_in)
        return self.const(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def node(self, op: str, inputs: List[str], name: str, **attrs: object) -> str:
        self.nodes.append(self.helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def ints(self, name: str, values: List[int]) -> str:
        return self.const(name, np.array(values, dtype=np.int64))

    def conv(self, x: str, cin: int, cout: int, k: int, name: str, stride: int = 1, group: int = 1) -> str:
        w = self.weight(name + ".weight", (cout, cin // group, k, k), cin // group * k * k)
        b = self.const(name + ".bias", (self.rng.standard_normal(cout) * 0.05).astype(np.float32))
        pad = k // 2
        return self.node("Conv", [x, w, b], name, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad] * 4, group=group)

    def channel_slice(self, x: str, start: int, end: int, name: str) -> str:
        return self.node("Slice", [x, self.ints(name + ".starts", [start]), self.ints(name + ".ends", [end]),
                               self.ints(name + ".axes", [1])], name)


def _focus_stem(b: _Builder) -> str:
    """Space-to-depth by four strided Slices (YOLOv5 order), Conv 3x3, SiLU."""
    parts = []
    for dy, dx in ((0, 0), (1, 0), (0, 1), (1, 1)):
        name = f"focus.slice_{dy}{dx}"
        parts.append(b.node("Slice", ["image", b.ints(name + ".starts", [dy, dx]),
                                      b.ints(name + ".ends", [INPUT_SHAPE[2], INPUT_SHAPE[3]]),
                                      b.ints(name + ".axes", [2, 3]), b.ints(name + ".steps", [2, 2])], name))
    cat = b.node("Concat", parts, "focus.concat", axis=1)
    conv = b.conv(cat, 12, STEM_CHANNELS, 3, "stem.conv")
    return b.node("Mul", [conv, b.node("Sigmoid", [conv], "stem.sigmoid")], "stem.silu")


def _shuffle_unit(b: _Builder, x: str, channels: int, size: int, index: int) -> str:
    """ShuffleNetV2 unit (stride 1): split, branch on one half, concat, shuffle 2 groups."""
    p = f"unit{index}"
    half = channels // 2
    keep = b.channel_slice(x, 0, half, p + ".split_a")
    branch = b.channel_slice(x, half, channels, p + ".split_b")
    branch = b.node("Relu", [b.conv(branch, half, half, 1, p + ".pw1")], p + ".relu1")
    branch = b.conv(branch, half, half, 3, p + ".dw", group=half)
    branch = b.node("Relu", [b.conv(branch, half, half, 1, p + ".pw2")], p + ".relu2")
    cat = b.node("Concat", [keep, branch], p + ".concat", axis=1)
    grouped = b.node("Reshape", [cat, b.ints(p + ".shape5", [1, 2, half, size, size])], p + ".shuffle_reshape")
    swapped = b.node("Transpose", [grouped], p + ".shuffle_transpose", perm=[0, 2, 1, 3, 4])
    return b.node("Reshape", [swapped, b.ints(p + ".shape4", [1, channels, size, size])], p + ".shuffle_flatten")


def _layernorm_head(b: _Builder, x: str, channels: int) -> str:
    """Global pooling, decomposed LayerNorm over channels, classifier."""
    pooled = b.node("Flatten", [b.node("GlobalAveragePool", [x], "head.pool")], "head.flatten", axis=1)
    mean = b.node("ReduceMean", [pooled], "head.ln.mean", axes=[-1], keepdims=1)
    centered = b.node("Sub", [pooled, mean], "head.ln.sub")
    sq = b.node("Pow", [centered, b.const("head.ln.two", np.array(2.0, np.float32))], "head.ln.pow")
    var = b.node("ReduceMean", [sq], "head.ln.var", axes=[-1], keepdims=1)
    std = b.node("Sqrt", [b.node("Add", [var, b.const("head.ln.eps", np.array(1e-5, np.float32))],
                                 "head.ln.add_eps")], "head.ln.sqrt")
    normed = b.node("Div", [centered, std], "head.ln.div")
    gamma = b.const("head.ln.gamma", (1 + 0.1 * b.rng.standard_normal(channels)).astype(np.float32))
    beta = b.const("head.ln.beta", (0.1 * b.rng.standard_normal(channels)).astype(np.float32))
    affine = b.node("Add", [b.node("Mul", [normed, gamma], "head.ln.mul"), beta], "head.ln.out")
    w = b.weight("head.fc.weight", (CLASSES, channels), channels)
    bias = b.const("head.fc.bias", np.zeros(CLASSES, np.float32))
    return b.node("Gemm", [affine, w, bias], "logits", transB=1)


def build_demo_model(seed: int = 0) -> bytes:
    """Serialized ONNX (opset 13) of the demo classifier, deterministic for a seed."""
    from onnx import TensorProto, checker, helper

    b = _Builder(np.random.default_rng(seed))
    x = _focus_stem(b)
    size = INPUT_SHAPE[2] // 2
    for i in range(UNITS):
        x = _shuffle_unit(b, x, STEM_CHANNELS, size, i)
    logits = _layernorm_head(b, x, STEM_CHANNELS)
    graph = helper.make_graph(
        b.nodes, "npuc_demo_shufflenet",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, list(INPUT_SHAPE))],
        [helper.make_tensor_value_info(logits, TensorProto.FLOAT, [INPUT_SHAPE[0], CLASSES])],
        b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc demo")
    checker.check_model(model)
    return model.SerializeToString()


def calibration_samples(count: int, seed: int = 1) -> List[np.ndarray]:
    """Synthetic images: smooth random fields in [0, 1], like natural images' low frequencies."""
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(count):
        coarse = rng.uniform(0, 1, (INPUT_SHAPE[0], INPUT_SHAPE[1], 8, 8))
        img = np.kron(coarse, np.ones((1, 1, INPUT_SHAPE[2] // 8, INPUT_SHAPE[3] // 8)))
        img += rng.normal(0, 0.05, INPUT_SHAPE)
        samples.append(np.clip(img, 0, 1).astype(np.float32))
    return samples
