"""Program runtime vs plain simulator latency (issue #6). A shared model is built for a SoC (INT8
from two calibration samples, or FP16), exported and loaded back: the loaded blob runs its
lowered program over the planned activation arena (runtime == "program"), the in-memory build
runs the simulator node by node (the peer, same kernels). Runs are interleaved one by one (the
machine is shared, so medians of interleaved runs are what compare), outputs are checked equal.

Usage: python3 program_runtime.py [--model mobilenet_v2] [--runs 30] [--soc rk3588] [--mode int8|fp16|both]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from common import load_ref, median, shared_models_dir

import npuc  # the installed package, or a build folder's via PYTHONPATH


def build_pair(model: Path, soc: str, quantize: bool, inputs: list[np.ndarray], folder: Path):
    """(in-memory simulator, loaded program runtime) of the same build."""
    with npuc.Toolkit() as tk:
        tk.config(target_platform=soc)
        tk.load_onnx(model=str(model))
        tk.build(do_quantization=quantize, dataset=[inputs, [0.5 * x for x in inputs]] if quantize else None)
        simulator = tk._simulator()
        blob = folder / f"{model.stem}_{'int8' if quantize else 'fp16'}.npub"
        tk.export_blob(blob)
    loaded = npuc.Toolkit()
    loaded.load_blob(blob)
    loaded.init_runtime()
    program = loaded._simulator()
    assert simulator.runtime == "simulator" and program.runtime == "program", program.runtime_note
    return simulator, program


def one_run_ms(model, feed: list[np.ndarray]) -> tuple[float, float]:
    """Wall and process CPU milliseconds of one run (CPU time is steadier on a shared machine:
    it leaves out the time other jobs hold the cores)."""
    wall, cpu = time.perf_counter(), time.process_time()
    model.run(feed)
    return (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenet_v2")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--soc", default="rk3588")
    parser.add_argument("--mode", choices=["int8", "fp16", "both"], default="both")
    args = parser.parse_args()
    model = shared_models_dir() / f"{args.model}.onnx"
    inputs_by_name, _ = load_ref(model)
    inputs = list(inputs_by_name.values())
    modes = ["int8", "fp16"] if args.mode == "both" else [args.mode]
    print(f"{'model':<20} {'mode':<5} {'arena KiB':>9} {'sim ms':>8} {'program ms':>10} {'ratio':>6}"
          f" {'sim cpu ms':>10} {'prog cpu ms':>11} {'cpu ratio':>9}  equal")
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            simulator, program = build_pair(model, args.soc, mode == "int8", inputs, Path(tmp))
            equal = all(np.array_equal(a, b) for a, b in zip(simulator.run(inputs), program.run(inputs)))
            for _ in range(args.warmup):
                simulator.run(inputs)
                program.run(inputs)
            sim_runs, prog_runs = [], []
            for _ in range(args.runs):  # interleaved, one run each
                sim_runs.append(one_run_ms(simulator, inputs))
                prog_runs.append(one_run_ms(program, inputs))
            s, p = median([r[0] for r in sim_runs]), median([r[0] for r in prog_runs])
            sc, pc = median([r[1] for r in sim_runs]), median([r[1] for r in prog_runs])
            print(f"{args.model:<20} {mode:<5} {program.arena_bytes / 1024:>9.1f} {s:>8.2f} {p:>10.2f} "
                  f"{p / s:>6.3f} {sc:>10.2f} {pc:>11.2f} {pc / sc:>9.3f}  {equal} "
                  f"(arenas allocated: {program.arena_allocations})")


if __name__ == "__main__":
    main()
