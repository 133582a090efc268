"""FP32 host runtime latency: npuc vs ONNX Runtime (CPU, npm onnxruntime-node), 1 and 2 threads.

Prints, per model and thread count, the median latency of both, the ratio npuc/ORT (target
<= 1.0) and the max relative difference of the outputs. Run with `make bench` or
`PYTHONPATH=python /usr/bin/python3 bench/host_fp32.py [--threads 1,2] [--rounds R] [--iters N]
[--models a,b]`.

Threads: npuc's kernels run on oneDNN / OpenMP, whose thread count is fixed when the process
starts (OMP_NUM_THREADS; see opset/ops/dnnl_common.h), so each thread count runs in a worker
subprocess of its own; ORT gets the same count as intra_op_num_threads. Other processes share
the machine, so the two peers are measured in alternating blocks (`--rounds` blocks of `--iters`
runs each, npuc first, then ORT, then npuc again ...) and the medians pool every block: a load
spike then hits both.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

DEFAULT_MODELS = ("mobilenet_v2,shufflenet_v2_x0_5,resnet50,ppocrv4_det,ppocr_cls,tiny_vit,yolo_focus,"
                  "glu_net,conv_transpose_clip")


def model_paths(names: list[str]) -> dict[str, object]:
    from common import shared_models_dir
    from export_torchvision import export

    shared = shared_models_dir()
    paths = {}
    for n in names:
        p = shared / f"{n}.onnx"
        paths[n] = p if p.exists() else export(n)
    return paths


def inputs_for(path):
    import numpy as np
    from common import load_ref

    ref = path.with_suffix(".ref.npz")
    if ref.exists():
        return load_ref(path)[0]
    rng = np.random.default_rng(0)
    return {"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}


def measure(names: list[str], threads: int, rounds: int, iters: int, warmup: int) -> list[dict]:
    """One thread count, in this process (OMP_NUM_THREADS must already be `threads`)."""
    import npuc
    from common import median, rel_err, run_ort, time_calls

    rows = []
    for name, path in model_paths(names).items():
        feeds = inputs_for(path)
        rt = npuc.Runtime(npuc.Model.load(str(path)))
        xs = list(feeds.values())
        ours = rt.run(xs)
        our_lat, ort_lat, ort_out = [], [], None
        for r in range(rounds):
            our_lat += time_calls(lambda: rt.run(xs), warmup if r == 0 else 1, iters)
            lat, ort_out = run_ort(path, feeds, threads=threads, warmup=warmup, iters=iters)
            ort_lat += lat
        err = max(rel_err(a, b) for a, b in zip(ours, ort_out))
        rows.append({"model": name, "threads": threads, "npuc_ms": median(our_lat),
                     "ort_ms": median(ort_lat), "err": err})
        print(f"  {name} @{threads}t: {rows[-1]['npuc_ms']:.2f} / {rows[-1]['ort_ms']:.2f} ms",
              file=sys.stderr, flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--rounds", type=int, default=3, help="alternating npuc/ORT blocks per model")
    ap.add_argument("--iters", type=int, default=10, help="timed runs per block")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = args.models.split(",")

    if args.worker:  # one thread count: prints its rows as JSON
        rows = measure(names, int(args.threads), args.rounds, args.iters, args.warmup)
        print(json.dumps(rows))
        return 0

    rows = []
    for t in (int(x) for x in args.threads.split(",")):
        env = dict(os.environ, OMP_NUM_THREADS=str(t))
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--threads", str(t), "--models",
               args.models, "--rounds", str(args.rounds), "--iters", str(args.iters), "--warmup",
               str(args.warmup)]
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=True)
        rows += json.loads(proc.stdout.strip().splitlines()[-1])

    print(f"{'model':<22}{'threads':>8}{'npuc ms':>10}{'ORT ms':>10}{'npuc/ORT':>10}{'max rel err':>14}")
    for r in sorted(rows, key=lambda r: (names.index(r["model"]), r["threads"])):
        print(f"{r['model']:<22}{r['threads']:>8}{r['npuc_ms']:>10.2f}{r['ort_ms']:>10.2f}"
              f"{r['npuc_ms'] / r['ort_ms']:>10.2f}{r['err']:>14.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
