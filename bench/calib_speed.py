"""Calibration throughput (issue #19, part 3): build(do_quantization=True) of ppocrv4_det on 64 pages,
per quantized_algorithm, in samples per second, with where the time went.

Pages: the 16 real pages of shared/models/ocr_det_calib plus 48 rendered by bench/ocr_pages.py
(seeds 2000..2047: neither the calibration pages' renderer nor quant_real.py's evaluation seeds),
all 480x480, written as PNG files listed in one dataset.txt (what a user gives build()).

Each (peer, algorithm) build runs in a fresh interpreter with the peer's ``npuc`` package first on
PYTHONPATH, so one run can compare two builds of npuc: ``--peer NAME=DIR`` (repeatable; default: this
worktree's python/). Peers are interleaved per algorithm and repeat (the machine is shared and
noisy), and the ratio to the first peer is printed from the same run. After each build the blob
is exported for rk3588 ("compile" column: lowering, memory plan, blob) and its SHA-256 printed: the
quantization must not change, so every peer's blob must be the same bytes.

Columns (seconds, from Toolkit.calibration_timings; summed over the 64 samples where per sample):
read = reading + preprocessing pages in Python, inputs = numpy -> tensors, collect = wall time of
running the samples and folding their activations, inside which forward = FP32 executor and
statistics = histogram / min-max collection (thread-seconds, summed over the sample workers when
they run in parallel), search = clip range per activation (KL / MMSE / ...),
plan = weight quantization and parameters, simulator = integer kernels prepared, other = the rest of
build() (graph optimization, partition report).

Usage: /usr/bin/python3 bench/calib_speed.py [--peer base=/path/to/python] [--peer new=python]
       [--algorithms normal,kl_divergence,mmse,percentile] [--repeat 1]

Baseline (main at 29ecd65 with only the timers added; 2 cores, load average 7-10 from other jobs;
one run; the columns were then read, inputs, forward, statistics, search, plan, simulator, other,
compile s, blob). The interleaved before/after tables are in docs/performance.md, "Calibration
throughput".

| algorithm | peer | build s | samples/s | read | inputs | forward | statistics | search | plan | simulator | other | compile s | blob |
| normal | base | 140.8 | 0.45 | 3.75 | 0.27 | 92.39 | 43.97 | 0.00 | 0.14 | 0.18 | 0.11 | 0.22 | 74a211ebb17a |
| kl_divergence | base | 135.3 | 0.47 | 2.70 | 0.13 | 83.34 | 31.26 | 16.97 | 0.37 | 0.39 | 0.14 | 0.46 | ba6bc5b35b68 |
| mmse | base | 328.9 | 0.19 | 8.38 | 0.39 | 184.39 | 94.04 | 40.34 | 0.39 | 0.58 | 0.40 | 0.67 | 692a6e5c14c6 |
| percentile | base | 260.6 | 0.25 | 8.02 | 0.47 | 159.03 | 91.80 | 0.01 | 0.32 | 0.43 | 0.47 | 0.53 | 794714daea6c |
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from common import shared_models_dir  # noqa: E402

ALGORITHMS = ("normal", "kl_divergence", "mmse", "percentile")
PAGES = 64
RENDER_SEED = 2000
DET_MEAN, DET_STD = [[123.675, 116.28, 103.53]], [[58.395, 57.12, 57.375]]
STAGES = ("read", "inputs", "collect", "forward", "statistics", "search", "plan", "simulator")
#: The stages that add up to the wall time (forward and statistics are inside collect).
WALL_STAGES = ("read", "inputs", "collect", "search", "plan", "simulator")


def write_dataset(folder: Path) -> Path:
    """The 16 real pages plus rendered ones up to PAGES, as a dataset.txt in `folder`."""
    import ocr_pages
    from PIL import Image

    real = sorted((shared_models_dir() / "ocr_det_calib").glob("*.png"))
    if not real:
        raise SystemExit(f"no calibration pages in {shared_models_dir() / 'ocr_det_calib'}")
    paths = [str(p) for p in real[:PAGES]]
    for i in range(PAGES - len(paths)):
        path = folder / f"rendered{i:02d}.png"
        Image.fromarray(ocr_pages.render_page(RENDER_SEED + i).image).save(path)
        paths.append(str(path))
    dataset = folder / "dataset.txt"
    dataset.write_text("".join(p + "\n" for p in paths))
    return dataset


def one_build(algorithm: str, dataset: str, blob: str) -> Dict:
    """Child mode: one build + export with the npuc first on sys.path; returns the measurements."""
    import contextlib
    import io

    import npuc

    model = shared_models_dir() / "ppocrv4_det.onnx"
    with npuc.Toolkit() as tk, contextlib.redirect_stdout(io.StringIO()):
        tk.config(target_platform="rk3588", mean_values=DET_MEAN, std_values=DET_STD,
                  quantized_algorithm=algorithm)
        tk.load_onnx(model=str(model))
        t0 = time.perf_counter()
        tk.build(do_quantization=True, dataset=dataset)
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        tk.export_blob(blob)
        compile_s = time.perf_counter() - t0
        timings = dict(getattr(tk, "calibration_timings", None) or {})  # an npuc from before the timers: none
    digest = hashlib.sha256(Path(blob).read_bytes()).hexdigest()
    Path(blob).unlink()
    return {"build": build_s, "compile": compile_s, "timings": timings, "sha256": digest,
            "npuc": str(Path(npuc.__file__).parent)}


def run_peer(peer_dir: str, algorithm: str, dataset: Path, folder: Path) -> Dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([peer_dir, str(BENCH)]))
    out = subprocess.run([sys.executable, __file__, "--child", algorithm, str(dataset), str(folder / "b.npub")],
                         env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def row(peer: str, algorithm: str, r: Dict) -> str:
    t = dict(r["timings"])
    # A peer from before the parallel collection ran forward and statistics back to back.
    t.setdefault("collect", t.get("forward", 0.0) + t.get("statistics", 0.0))
    other = r["build"] - sum(t.get(k, 0.0) for k in WALL_STAGES)
    cells = [f"{t.get(k, float('nan')):.2f}" for k in STAGES]
    return (f"| {algorithm} | {peer} | {r['build']:.1f} | {PAGES / r['build']:.2f} | " + " | ".join(cells)
            + f" | {other:.2f} | {r['compile']:.2f} | {r['sha256'][:12]} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer", action="append", default=[], metavar="NAME=DIR",
                    help="an npuc python/ folder to measure (repeatable; the first is the ratio's base)")
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one_build(*args.child)))
        return 0
    peers = [p.split("=", 1) for p in args.peer] or [["this", str(BENCH.parent / "python")]]
    algorithms = [a for a in args.algorithms.split(",") if a]
    header = ("| algorithm | peer | build s | samples/s | " + " | ".join(STAGES) + " | other | compile s | blob |\n"
              "|---|---|---|---|" + "---|" * len(STAGES) + "---|---|---|")
    results: Dict[str, Dict[str, List[Dict]]] = {a: {p: [] for p, _ in peers} for a in algorithms}
    with tempfile.TemporaryDirectory() as tmp:
        dataset = write_dataset(Path(tmp))
        print(f"ppocrv4_det, {PAGES} pages, peers: " + ", ".join(f"{p}={d}" for p, d in peers), flush=True)
        print(header, flush=True)
        for rep in range(args.repeat):
            for algorithm in algorithms:
                # Alternate which peer goes first, so a slow stretch of the machine hits both.
                order = peers if rep % 2 == 0 else peers[::-1]
                for name, folder in order:
                    r = run_peer(folder, algorithm, dataset, Path(tmp))
                    results[algorithm][name].append(r)
                    print(row(name, algorithm, r), flush=True)
    print("\nsummary (best of repeats; ratio = samples/s over the first peer's, same run):")
    print("| algorithm | " + " | ".join(f"{p} samples/s" for p, _ in peers) + " | ratio | same blob |")
    print("|---|" + "---|" * len(peers) + "---|---|")
    for algorithm in algorithms:
        best = [min(r["build"] for r in results[algorithm][p]) for p, _ in peers]
        shas = {r["sha256"] for p, _ in peers for r in results[algorithm][p]}
        ratio = best[0] / best[-1]
        print(f"| {algorithm} | " + " | ".join(f"{PAGES / b:.2f}" for b in best)
              + f" | {ratio:.2f}x | {'yes' if len(shas) == 1 else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
