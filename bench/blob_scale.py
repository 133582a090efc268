"""Blob export/load scale (issue #15, "Scale"): how the time of each stage grows from 10k to 100k
nodes. Generates ONNX models of N nodes (a residual ladder of cheap elementwise ops over small
tensors with a 1x1 Conv every ten nodes, so the NPU path, weights and CPU ops are all real), then
times separately: Toolkit.load_onnx, build (FP16, no quantization), export_blob, Toolkit.load_blob
and _npuc.load_compiled. Prints, per stage, seconds and microseconds per node and the ratio
t(largest)/t(smallest) next to the node ratio (linear growth gives the same number), as process CPU
time (what a loaded, shared machine still measures fairly: time spent waiting for a core is left
out; the stages run on one thread) and as wall time.

Usage: python3 blob_scale.py [--sizes 10000,20000,50000,100000] [--soc rk3588] [--runs 1]
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import io
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from common import median

import npuc  # the installed package, or a build folder's via PYTHONPATH

CHANNELS = 8
SPATIAL = 4
#: One block of ten nodes: a 1x1 Conv, then cheap elementwise ops with a residual Add and a
#: Sigmoid gate (SiLU-like), then an op npuc places on the CPU (Erf), so placement, converts and
#: the program's CPU ops grow with N too.
BLOCK_NODES = 10
STAGES = ("load_onnx", "build", "export_blob", "load_blob", "load_compiled")


def generate_model(nodes: int) -> onnx.ModelProto:
    """x[1,C,S,S] -> nodes // 10 blocks of ten nodes each."""
    rng = np.random.default_rng(0)
    out_nodes, inits = [], []
    prev = "x"
    scale = numpy_helper.from_array(np.full((1, CHANNELS, 1, 1), 0.5, np.float32), "half")
    inits.append(scale)
    for i in range(nodes // BLOCK_NODES):
        w = rng.standard_normal((CHANNELS, CHANNELS, 1, 1)).astype(np.float32) * np.sqrt(1.0 / CHANNELS)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(np.zeros(CHANNELS, np.float32), f"b{i}")]
        p = f"b{i}_"
        out_nodes += [
            helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [p + "conv"], name=p + "conv", kernel_shape=[1, 1]),
            helper.make_node("Relu", [p + "conv"], [p + "relu"], name=p + "relu"),
            helper.make_node("Add", [p + "relu", prev], [p + "res"], name=p + "res"),
            helper.make_node("Sigmoid", [p + "res"], [p + "sig"], name=p + "sig"),
            helper.make_node("Mul", [p + "res", p + "sig"], [p + "silu"], name=p + "silu"),
            helper.make_node("Mul", [p + "silu", "half"], [p + "scaled"], name=p + "scaled"),
            helper.make_node("Abs", [p + "scaled"], [p + "abs"], name=p + "abs"),
            helper.make_node("Erf", [p + "abs"], [p + "erf"], name=p + "erf"),
            helper.make_node("Sub", [p + "erf", p + "scaled"], [p + "sub"], name=p + "sub"),
            helper.make_node("Tanh", [p + "sub"], [p + "out"], name=p + "out"),
        ]
        prev = p + "out"
    shape = [1, CHANNELS, SPATIAL, SPATIAL]
    graph = helper.make_graph(out_nodes, "blob_scale", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, shape)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def timed(fn: Callable[[], object]) -> Tuple[float, float]:
    """(CPU seconds, wall seconds) of fn(); the reports the Toolkit prints (placement of every
    node) are built but not shown."""
    gc.collect()
    with contextlib.redirect_stdout(io.StringIO()):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        return time.process_time() - c0, time.perf_counter() - t0


def measure(nodes: int, soc: str, tmp: Path) -> Dict[str, Tuple[float, float]]:
    """(CPU, wall) seconds of every stage for an N-node model."""
    onnx_path, blob = tmp / f"scale{nodes}.onnx", tmp / f"scale{nodes}.npub"
    onnx.save(generate_model(nodes), str(onnx_path))
    out: Dict[str, Tuple[float, float]] = {}
    with npuc.Toolkit() as tk:
        tk.config(target_platform=soc)
        out["load_onnx"] = timed(lambda: tk.load_onnx(model=str(onnx_path)))
        out["build"] = timed(lambda: tk.build(do_quantization=False))
        out["export_blob"] = timed(lambda: tk.export_blob(blob))
    with npuc.Toolkit() as tk:
        out["load_blob"] = timed(lambda: tk.load_blob(blob))
    out["load_compiled"] = timed(lambda: npuc._npuc.load_compiled(str(blob)))
    size = blob.stat().st_size / 1e6
    out["blob_mb"] = (size, size)
    return out


def print_table(results: Dict[int, Dict[str, Tuple[float, float]]], sizes: List[int], which: int) -> None:
    lo, hi = sizes[0], sizes[-1]
    print(f"{'stage':<14}" + "".join(f"{n:>20}" for n in sizes) + f"{'ratio':>10}")
    for stage in STAGES:
        t = {n: results[n][stage][which] for n in sizes}
        row = "".join(f"{t[n]:>9.2f} ({t[n] / n * 1e6:>6.1f})  " for n in sizes)
        print(f"{stage:<14}{row}{t[hi] / t[lo]:>10.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,20000,50000,100000", help="node counts, comma-separated")
    ap.add_argument("--soc", default="rk3588")
    ap.add_argument("--runs", type=int, default=1, help="runs per size (the median is printed)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    results: Dict[int, Dict[str, Tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            runs = [measure(n, args.soc, Path(tmp)) for _ in range(args.runs)]
            results[n] = {k: (median([r[k][0] for r in runs]), median([r[k][1] for r in runs])) for k in runs[0]}
            print(f"N={n}: CPU " + ", ".join(f"{k} {results[n][k][0]:.2f}" for k in STAGES)
                  + f" s; blob {results[n]['blob_mb'][0]:.1f} MB", flush=True)

    for which, name in ((0, "process CPU"), (1, "wall")):
        print(f"\nSoC {args.soc}, FP16 build, {args.runs} run(s) per size (median); {name} seconds (us per node)")
        print_table(results, sizes, which)
    print(f"node ratio {sizes[-1] / sizes[0]:.1f} (linear growth gives the same ratio)")


if __name__ == "__main__":
    main()
