"""Blob load time (issue #6): a generated ~1000-layer CNN (repeated Conv+Relu blocks over a few
distinct shapes) is built, quantized on a few samples and exported for a SoC; then load_blob
(container verification, program decode and verification against the graph, simulator
preparation) and init_runtime are timed, interleaved with ONNX Runtime session creation on the
same model (the peer: load + optimize + prepare kernels). Prints medians, the ratio, and how many
unique pipelines the program needed (reuse rate = 1 - unique / NPU tasks).

Usage: python3 load_time.py [--blocks 500] [--runs 5] [--soc rk3588]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from common import BENCH_DIR, ensure_ort, median

import npuc  # the installed package, or a build folder's via PYTHONPATH

# Stages of (channels, blocks-per-stage share); the first conv of a stage changes the channel
# count, so the model has a handful of distinct conv shapes and many repeats of each.
STAGE_CHANNELS = (16, 32, 16, 48, 32)
SPATIAL = 16  # input H = W: small, so building and calibrating 1000 layers stays quick


def generate_model(blocks: int) -> onnx.ModelProto:
    """x[1,16,S,S] -> blocks x (Conv3x3 + Relu), channels changing per stage."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    prev, c_in = "x", STAGE_CHANNELS[0]
    per_stage = max(1, blocks // len(STAGE_CHANNELS))
    for i in range(blocks):
        c_out = STAGE_CHANNELS[min(i // per_stage, len(STAGE_CHANNELS) - 1)]
        # He-scaled weights keep the activations in range along the ReLU chain.
        w = rng.standard_normal((c_out, c_in, 3, 3)).astype(np.float32) * np.sqrt(2.0 / (9 * c_in))
        inits += [numpy_helper.from_array(w, f"w{i}"),
                  numpy_helper.from_array(np.zeros(c_out, np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}",
                                   kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        prev, c_in = f"r{i}", c_out
    graph = helper.make_graph(
        nodes, "load_time",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, STAGE_CHANNELS[0], SPATIAL, SPATIAL])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, c_in, SPATIAL, SPATIAL])],
        initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def ort_create_ms(model: Path, iters: int) -> list[float]:
    ensure_ort()
    proc = subprocess.run(["node", str(BENCH_DIR / "ort_session_time.js"), str(model), str(iters)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"ONNX Runtime failed: {proc.stderr.strip()[-800:]}")
    return json.loads(proc.stdout)["create_ms"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=500, help="Conv+Relu blocks (2 layers each)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--soc", default="rk3588")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        onnx_path, blob = Path(tmp) / "deep.onnx", Path(tmp) / "deep.npub"
        model = generate_model(args.blocks)
        onnx.save(model, str(onnx_path))
        x = np.random.default_rng(1).standard_normal((1, STAGE_CHANNELS[0], SPATIAL, SPATIAL)).astype(np.float32)
        t0 = time.perf_counter()
        with npuc.Toolkit() as tk:
            tk.config(target_platform=args.soc)
            tk.load_onnx(model=str(onnx_path))
            tk.build(do_quantization=True, dataset=[[x], [0.5 * x]])
            expected = tk.inference(inputs=[x])
            tk.export_blob(blob)
        build_s = time.perf_counter() - t0
        print(f"model: {len(model.graph.node)} layers ({args.blocks} Conv+Relu blocks), input 1x"
              f"{STAGE_CHANNELS[0]}x{SPATIAL}x{SPATIAL}; build+quantize+export {build_s:.1f} s, "
              f"blob {blob.stat().st_size / 1e6:.2f} MB, SoC {args.soc}")

        load_ms, init_ms, ort_ms, verify_ms = [], [], [], []
        program = None
        for _ in range(args.runs):  # interleaved: npuc, then the peer, per run
            tk = npuc.Toolkit()
            t0 = time.perf_counter()
            tk.load_blob(blob)
            t1 = time.perf_counter()
            tk.init_runtime()
            t2 = time.perf_counter()
            got = tk.inference(inputs=[x])
            assert all(np.array_equal(g, e) for g, e in zip(got, expected)), "blob run differs from the build"
            program = tk.blob_meta["program"]
            tk.release()
            load_ms.append((t1 - t0) * 1e3)
            init_ms.append((t2 - t1) * 1e3)
            ort_ms += ort_create_ms(onnx_path, 1)
            t0 = time.perf_counter()  # the part of load_blob that is container + program checks
            npuc._npuc.load_blob(str(blob))
            verify_ms.append((time.perf_counter() - t0) * 1e3)

    assert program is not None
    ours = median(load_ms) + median(init_ms)
    print(f"program: {program['tasks']} tasks ({program['npu_tasks']} NPU, {program['cpu_ops']} CPU, "
          f"{program['converts']} converts), {program['pipelines']} unique pipelines, "
          f"reuse rate {program['reuse_rate']:.3f}, {program['total_tiles']} tiles, "
          f"packed weights {program['packed_weight_bytes'] / 1e6:.2f} MB")
    print(f"npuc load_blob (verify + decode program + simulator prep): median {median(load_ms):.1f} ms "
          f"over {args.runs} runs")
    print(f"  of which container checksum + graph decode + program decode/verify (_npuc.load_blob): "
          f"median {median(verify_ms):.1f} ms")
    print(f"npuc init_runtime: median {median(init_ms):.1f} ms")
    print(f"ONNX Runtime session create (peer, same model): median {median(ort_ms):.1f} ms")
    print(f"ratio npuc load+init / ORT create: {ours / median(ort_ms):.2f}x")


if __name__ == "__main__":
    main()
