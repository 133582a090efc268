"""A small ONNX model with one layer that quantizes badly with per-tensor ("layer") weights,
shared by the hybrid quantization and accuracy analysis tests."""

from __future__ import annotations

from pathlib import Path
from typing import List

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

#: The layer whose weights hold the outlier.
BAD_LAYER = "c2"
INPUT_SHAPE = (1, 3, 8, 8)


def outlier_chain_model() -> onnx.ModelProto:
    """x -> c1 -> c2 -> c3 (3x3 convs, 4 channels; c3's output is y).

    c1's output channel 0 is exactly zero (zero weights and bias: a dead channel) and c2's output
    channel 0 is one weight of 1000 reading it (an outlier channel). In FP32 it multiplies zeros;
    per output channel it only sets its own scale; with one weight scale per tensor ("layer") it
    sets c2's scale, all other weights of c2 round to 0 and c2's output is its bias alone.
    """
    rng = np.random.default_rng(3)
    w1 = rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32)
    b1 = rng.uniform(-1, 1, 4).astype(np.float32)
    w1[0], b1[0] = 0.0, 0.0
    w2 = rng.uniform(-1, 1, (4, 4, 3, 3)).astype(np.float32)
    w2[0] = 0.0
    w2[0, 0, 1, 1] = 1000.0  # output channel 0: one huge weight, reading the dead channel
    b2 = rng.uniform(-0.1, 0.1, 4).astype(np.float32)
    w3 = rng.uniform(-1, 1, (4, 4, 3, 3)).astype(np.float32)
    b3 = rng.uniform(-1, 1, 4).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"),
                                                          (w3, "w3"), (b3, "b3"))]
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["t1"], name="c1", **conv),
        helper.make_node("Conv", ["t1", "w2", "b2"], ["t2"], name="c2", **conv),
        helper.make_node("Conv", ["t2", "w3", "b3"], ["y"], name="c3", **conv),
    ]
    graph = helper.make_graph(
        nodes, "outlier_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(INPUT_SHAPE))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def save_outlier_chain(folder: Path) -> Path:
    path = folder / "outlier_chain.onnx"
    onnx.save(outlier_chain_model(), str(path))
    return path


def samples(count: int, seed: int = 5) -> List[np.ndarray]:
    """Calibration / test inputs: uniform in [-2, 2]."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, INPUT_SHAPE).astype(np.float32) for _ in range(count)]


def write_dataset(folder: Path, count: int) -> Path:
    """A dataset.txt listing `count` .npy samples."""
    lines = []
    for i, s in enumerate(samples(count)):
        np.save(folder / f"sample{i}.npy", s)
        lines.append(f"sample{i}.npy")
    path = folder / "dataset.txt"
    path.write_text("\n".join(lines) + "\n")
    return path
