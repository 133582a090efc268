"""FP32 host runtime latency: npuc vs ONNX Runtime (CPU, npm onnxruntime-node), 1 thread each.

Prints, per model, the median latency of both, the ratio npuc/ORT (target <= 1.0) and the
max relative difference of the outputs. Run with `make bench` or
`PYTHONPATH=python /usr/bin/python3 bench/host_fp32.py [--iters N] [--models a,b]`.
"""
from __future__ import annotations

import argparse
import os
import sys

# One thread for npuc's kernels (oneDNN/OpenMP); must be set before npuc is imported.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from common import load_ref, median, rel_err, run_ort, shared_models_dir, time_calls  # noqa: E402
from export_torchvision import export  # noqa: E402


def model_paths(names: list[str]) -> dict[str, object]:
    shared = shared_models_dir()
    paths = {}
    for n in names:
        p = shared / f"{n}.onnx"
        paths[n] = p if p.exists() else export(n)
    return paths


def inputs_for(path) -> dict[str, np.ndarray]:
    ref = path.with_suffix(".ref.npz")
    if ref.exists():
        return load_ref(path)[0]
    rng = np.random.default_rng(0)
    return {"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mobilenet_v2,shufflenet_v2_x0_5,resnet50")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()

    import npuc

    rows = []
    for name, path in model_paths(args.models.split(",")).items():
        feeds = inputs_for(path)
        tk = npuc.Toolkit()
        tk.load_onnx(model=str(path))
        xs = list(feeds.values())
        ours = tk.inference(inputs=xs)
        our_lat = time_calls(lambda: tk.inference(inputs=xs), args.warmup, args.iters)
        ort_lat, ort_out = run_ort(path, feeds, threads=1, warmup=args.warmup, iters=args.iters)
        tk.release()
        err = max(rel_err(a, b) for a, b in zip(ours, ort_out))
        rows.append((name, median(our_lat), median(ort_lat), err))

    print(f"{'model':<22}{'npuc ms':>10}{'ORT ms':>10}{'npuc/ORT':>10}{'max rel err':>14}")
    for name, ours_ms, ort_ms, err in rows:
        print(f"{name:<22}{ours_ms:>10.2f}{ort_ms:>10.2f}{ours_ms / ort_ms:>10.2f}{err:>14.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
