"""``npuc demo``: a self-contained tour of the FP32 flow on a small generated model.

Builds a tiny classifier with onnx.helper (Conv -> Relu -> Conv + residual Add -> Relu ->
GlobalAveragePool -> Flatten -> Gemm), then shows what ``npuc info`` shows, runs it through the
Toolkit and checks the result against a direct numpy evaluation.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

__all__ = ["run_demo"]

CHANNELS = 8
CLASSES = 5
SIZE = 16


def _conv3x3(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Stride-1, pad-1 3x3 convolution in float64 (the demo's reference)."""
    n, _, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.empty((n, w.shape[0], h, wd))
    for i in range(h):
        for j in range(wd):
            out[:, :, i, j] = np.tensordot(xp[:, :, i : i + 3, j : j + 3], w, axes=([1, 2, 3], [1, 2, 3])) + b
    return out


def _build_model(rng: np.random.Generator):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weights = {
        "w1": rng.standard_normal((CHANNELS, 3, 3, 3)).astype(np.float32) * 0.3,
        "b1": rng.standard_normal(CHANNELS).astype(np.float32) * 0.1,
        "w2": rng.standard_normal((CHANNELS, CHANNELS, 3, 3)).astype(np.float32) * 0.1,
        "b2": rng.standard_normal(CHANNELS).astype(np.float32) * 0.1,
        "fc_w": rng.standard_normal((CLASSES, CHANNELS)).astype(np.float32),
        "fc_b": rng.standard_normal(CLASSES).astype(np.float32),
    }
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], name="conv1", **conv),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", **conv),
        helper.make_node("Add", ["c2", "r1"], ["s"], name="residual"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="pool"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "npuc_demo",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", CLASSES])],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), weights


def _reference(x: np.ndarray, w: dict) -> np.ndarray:
    r1 = np.maximum(_conv3x3(x.astype(np.float64), w["w1"], w["b1"]), 0)
    r2 = np.maximum(_conv3x3(r1, w["w2"], w["b2"]) + r1, 0)
    return r2.mean(axis=(2, 3)) @ w["fc_w"].T.astype(np.float64) + w["fc_b"]


def run_demo() -> int:
    """Runs the demo, printing each step; returns 0 when npuc matches the numpy reference."""
    import onnx

    from npuc.cli import cmd_info_for
    from npuc.toolkit import Toolkit

    rng = np.random.default_rng(0)
    model, weights = _build_model(rng)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "npuc_demo.onnx")
        onnx.save(model, path)
        print(f"== generated a small classifier ({path}); its batch dim is dynamic, fixed to 2 at load\n")
        cmd_info_for(path, input_sizes=[[2, 3, SIZE, SIZE]])
        images = rng.integers(0, 256, (2, SIZE, SIZE, 3), dtype=np.uint8)
        mean, std = [123.7, 116.3, 103.5], [58.4, 57.1, 57.4]
        print("\n== Toolkit: config(mean/std) -> load_onnx -> inference(uint8 NHWC images)")
        with Toolkit() as tk:
            tk.config(mean_values=[mean], std_values=[std])
            tk.load_onnx(model=path, inputs=["image"], input_size_list=[[2, 3, SIZE, SIZE]])
            (logits,) = tk.inference(inputs=[images], data_format="nhwc")
    normalized = (images.transpose(0, 3, 1, 2) - np.array(mean).reshape(1, 3, 1, 1)) / np.array(std).reshape(
        1, 3, 1, 1
    )
    want = _reference(normalized, weights)
    err = float(np.max(np.abs(logits - want)) / max(float(np.max(np.abs(want))), 1e-6))
    print(f"logits:\n{np.array2string(logits, precision=4)}")
    print(f"max relative error vs numpy float64 reference: {err:.2e}")
    return 0 if err < 1e-4 else 1
