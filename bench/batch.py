"""Batch > 1 (issue #18): the full bit-exactness matrix and the eval_perf scaling table.

1. Every shared model x N = 1..8, INT8 (calibrated at batch 1 on 2 seeded noise samples) and
   FP16: the N outputs of a batch build equal the single-image outputs bit for bit? ("ok",
   "DIFF", or the error class when the model is refused at batch N); then each model's batch-4
   blob on the compiled program runtime (load_blob) against the same single-image outputs.
2. Predicted per-image FPS and DDR traffic per image vs N (1, 2, 4, 8) on rk3588, INT8, for
   mobilenet_v2, resnet18, resnet50 and ppocrv4_det. ResNets are built here with onnx.helper
   (the torchvision layer structure, seeded random weights: the cost model reads only shapes), as
   PyTorch may be missing (bench/export_torchvision.py needs it).

Usage: PYTHONPATH=python python3 bench/batch.py [--exact-only | --perf-only] [--models a,b]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CACHE, shared_models_dir  # noqa: E402

import npuc  # noqa: E402


def _toolkit(path: str) -> npuc.Toolkit:
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588")
    tk.load_onnx(model=path)
    return tk


def _samples(shape: List[int], count: int, seed: int) -> List[List[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(shape).astype(np.float32)] for _ in range(count)]


def blob_check(path: Path, n: int, quantize: bool, folder: Path) -> str:
    """The batch-n blob on the compiled program runtime (load_blob) vs single images on the
    batch-1 simulator: "ok", "DIFF" or the error class."""
    tk = _toolkit(str(path))
    shape = list(tk._model.inputs[0]["shape"])
    dataset = _samples(shape, 2, 0)
    tk.build(do_quantization=quantize, dataset=dataset)
    x = np.random.default_rng(1).standard_normal([n] + shape[1:]).astype(np.float32)
    singles = [tk.inference(inputs=[x[i:i + 1]]) for i in range(n)]
    try:
        tk.build(do_quantization=quantize, dataset=dataset, rknn_batch_size=n)
        blob = folder / f"{path.stem}_b{n}.npub"
        tk.export_blob(str(blob))
        loaded = npuc.Toolkit()
        loaded.load_blob(str(blob))
        loaded.init_runtime()
        outs = loaded.inference(inputs=[x])
    except npuc.NpucError as e:
        return type(e).__name__
    same = all(np.array_equal(o[i:i + 1], singles[i][k]) for i in range(n) for k, o in enumerate(outs))
    return "ok" if same else "DIFF"


def exact_row(path: Path, batches: List[int], quantize: bool) -> Tuple[str, List[str], float]:
    tk = _toolkit(str(path))
    shape = list(tk._model.inputs[0]["shape"])
    dataset = _samples(shape, 2, 0)
    tk.build(do_quantization=quantize, dataset=dataset)
    x = np.random.default_rng(1).standard_normal([max(batches)] + shape[1:]).astype(np.float32)
    singles = [tk.inference(inputs=[x[i:i + 1]]) for i in range(x.shape[0])]
    cells, start = [], time.perf_counter()
    for n in batches:
        try:
            tk.build(do_quantization=quantize, dataset=dataset, rknn_batch_size=n)
            outs = tk.inference(inputs=[x[:n]])
            same = all(np.array_equal(o[i:i + 1], singles[i][k]) for i in range(n) for k, o in enumerate(outs))
            cells.append("ok" if same else "DIFF")
        except npuc.NpucError as e:
            cells.append(type(e).__name__)
    return path.stem, cells, time.perf_counter() - start


# --- ResNet in onnx.helper (torchvision's layout: 7x7 stem, 4 stages, global pool, fc 1000) ---

class _Net:
    def __init__(self) -> None:
        self.nodes: list = []
        self.inits: list = []
        self.rng = np.random.default_rng(0)
        self.count = 0

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int, relu: bool) -> str:
        self.count += 1
        w = f"w{self.count}"
        std = np.sqrt(2.0 / (cin * k * k))
        self.inits.append(numpy_helper.from_array((self.rng.standard_normal((cout, cin, k, k)) * std).astype(np.float32), w))
        self.inits.append(numpy_helper.from_array(np.zeros(cout, np.float32), f"b{self.count}"))
        y = f"c{self.count}"
        self.nodes.append(helper.make_node("Conv", [x, w, f"b{self.count}"], [y], kernel_shape=[k, k],
                                           strides=[stride, stride], pads=[k // 2] * 4))
        if relu:
            self.nodes.append(helper.make_node("Relu", [y], [y + "r"]))
            y += "r"
        return y

    def add_relu(self, a: str, b: str) -> str:
        self.count += 1
        y = f"a{self.count}"
        self.nodes += [helper.make_node("Add", [a, b], [y]), helper.make_node("Relu", [y], [y + "r"])]
        return y + "r"


def resnet(depth: int, out: Path) -> Path:
    if out.is_file():
        return out
    blocks = {18: [2, 2, 2, 2], 50: [3, 4, 6, 3]}[depth]
    bottleneck = depth >= 50
    n = _Net()
    x = n.conv("x", 3, 64, 7, 2, True)
    n.nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4))
    x, cin = "pool", 64
    for stage, count in enumerate(blocks):
        width = 64 * 2 ** stage
        cout = width * 4 if bottleneck else width
        for i in range(count):
            stride = 2 if stage > 0 and i == 0 else 1
            if bottleneck:
                y = n.conv(x, cin, width, 1, 1, True)
                y = n.conv(y, width, width, 3, stride, True)
                y = n.conv(y, width, cout, 1, 1, False)
            else:
                y = n.conv(x, cin, width, 3, stride, True)
                y = n.conv(y, width, cout, 3, 1, False)
            short = n.conv(x, cin, cout, 1, stride, False) if stride != 1 or cin != cout else x
            x, cin = n.add_relu(y, short), cout
    n.nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    n.nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
    n.inits.append(numpy_helper.from_array((n.rng.standard_normal((1000, cin)) * 0.01).astype(np.float32), "fcw"))
    n.inits.append(numpy_helper.from_array(np.zeros(1000, np.float32), "fcb"))
    n.nodes.append(helper.make_node("Gemm", ["flat", "fcw", "fcb"], ["y"], transB=1))
    graph = helper.make_graph(n.nodes, f"resnet{depth}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000])], n.inits)
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(out))
    return out


def perf_rows(path: Path, batches: List[int]) -> List[Tuple[int, float, float, float]]:
    rows = []
    shape = None
    for n in batches:
        tk = _toolkit(str(path))
        shape = shape or list(tk._model.inputs[0]["shape"])
        tk.build(dataset=_samples(shape, 1, 0), rknn_batch_size=n)
        s = tk.eval_perf(is_print=False).summary
        rows.append((n, s["total_time_us"] / n, 1e6 * n / s["total_time_us"], s["ddr_bytes_per_frame"] / n / 2**20))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--exact-only", action="store_true")
    ap.add_argument("--perf-only", action="store_true")
    ap.add_argument("--models", default="")
    args = ap.parse_args()
    chosen = [m for m in args.models.split(",") if m]
    shared = shared_models_dir()
    if not args.perf_only:
        batches = list(range(1, 9))
        for quantize, label in ((True, "INT8"), (False, "FP16")):
            print(f"Bit-exactness, {label}: batch-N item outputs == single-image outputs (rk3588)")
            print(f"{'model':<22}" + "".join(f"{'N=' + str(n):>18}" for n in batches) + f"{'time s':>9}")
            for path in sorted(shared.glob("*.onnx")):
                if chosen and path.stem not in chosen:
                    continue
                name, cells, secs = exact_row(path, batches, quantize)
                print(f"{name:<22}" + "".join(f"{c:>18}" for c in cells) + f"{secs:>9.1f}", flush=True)
        print("\nBlob round trip at N=4: the compiled program runtime vs single images")
        print(f"{'model':<22}{'INT8':>18}{'FP16':>18}")
        with tempfile.TemporaryDirectory() as tmp:
            for path in sorted(shared.glob("*.onnx")):
                if chosen and path.stem not in chosen:
                    continue
                cells = [blob_check(path, 4, q, Path(tmp)) for q in (True, False)]
                print(f"{path.stem:<22}" + "".join(f"{c:>18}" for c in cells), flush=True)
    if not args.exact_only:
        models = {"mobilenet_v2": shared / "mobilenet_v2.onnx", "resnet18": resnet(18, CACHE / "resnet18_helper.onnx"),
                  "resnet50": resnet(50, CACHE / "resnet50_helper.onnx"), "ppocrv4_det": shared / "ppocrv4_det.onnx"}
        print("\nPredicted per-image throughput vs batch, rk3588 INT8 (eval_perf, 3 cores as one)")
        print(f"{'model':<14}{'N':>3}{'us/image':>11}{'images/s':>10}{'DDR MB/image':>14}")
        for name, path in models.items():
            if chosen and name not in chosen:
                continue
            for n, us, fps, mb in perf_rows(path, [1, 2, 4, 8]):
                print(f"{name:<14}{n:>3}{us:>11.1f}{fps:>10.1f}{mb:>14.2f}", flush=True)


if __name__ == "__main__":
    main()
