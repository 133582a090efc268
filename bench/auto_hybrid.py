"""Auto hybrid quantization and accuracy analysis cost (issue #5).

Per model and weight method (channel / layer):

* the worst output cosine vs FP32 on EVAL_SAMPLES held-out inputs, all-INT8 build (the peer)
  vs ``build(auto_hybrid=True)``, and how many layers auto hybrid moved to FP16;
* build wall time, auto hybrid vs plain, median of REPEATS interleaved runs (the machine is shared,
  so the two are alternated and medians reported);
* ``Toolkit.accuracy_analysis`` wall time (FP32 run + simulator end to end + isolated, plus the
  dumps) against one simulator inference (the peer), medians of interleaved runs.

Models: tests/python/outlier_model.py (one conv with an outlier weight channel: the case auto
hybrid exists for) and the shared CNNs/ViT. Calibration: CALIB_SAMPLES inputs, the reference input
plus Gaussian noise (as tests/python/test_quantize.py does).

Run: ``cd bench && PYTHONPATH=../build/pyroot /usr/bin/python3 auto_hybrid.py [--models ...]``.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import numpy as np

from common import REPO, median, shared_models_dir

sys.path.insert(0, str(REPO / "tests" / "python"))
import outlier_model  # noqa: E402

import npuc  # noqa: E402
from npuc.quantize import cosine_similarity  # noqa: E402

CALIB_SAMPLES = 8
EVAL_SAMPLES = 3
REPEATS = 3
SHARED = ["shufflenet_v2_x0_5", "mobilenet_v2", "tiny_vit", "yolo_focus"]


def model_and_data(name: str, folder: Path) -> Tuple[Path, List[np.ndarray], List[np.ndarray]]:
    """(model path, calibration samples, evaluation samples)."""
    if name == "outlier_chain":
        return outlier_model.save_outlier_chain(folder), outlier_model.samples(CALIB_SAMPLES), \
            outlier_model.samples(EVAL_SAMPLES, seed=99)
    path = shared_models_dir() / f"{name}.onnx"
    ref = np.load(path.with_suffix(".ref.npz"))
    x = next(ref[k] for k in ref.files if k.startswith("input:")).astype(np.float32)
    rng = np.random.default_rng(1)
    noisy = [(x + 0.3 * rng.standard_normal(x.shape)).astype(np.float32) for _ in range(CALIB_SAMPLES + EVAL_SAMPLES)]
    return path, noisy[:CALIB_SAMPLES], noisy[CALIB_SAMPLES:]


def timed(fn: Callable[[], object]) -> float:
    with contextlib.redirect_stdout(io.StringIO()):
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start


def run(name: str, method: str, folder: Path) -> Dict[str, object]:
    path, calib, evals = model_and_data(name, folder)
    tks = {}
    for variant in ("plain", "auto"):
        tk = npuc.Toolkit()
        tk.config(target_platform="rk3588", quantized_method=method)
        tk.load_onnx(str(path))
        tks[variant] = tk
    fp32 = [npuc.Runtime(npuc.Model.load(str(path))).run([x])[0] for x in evals]
    build_s: Dict[str, List[float]] = {"plain": [], "auto": []}
    for _ in range(REPEATS):  # interleaved
        build_s["plain"].append(timed(lambda: tks["plain"].build(dataset=calib)))
        build_s["auto"].append(timed(lambda: tks["auto"].build(dataset=calib, auto_hybrid=True)))
    cos = {v: min(cosine_similarity(r, tk.inference([x])[0]) for r, x in zip(fp32, evals)) for v, tk in tks.items()}
    tk = tks["plain"]
    analysis_s, infer_s = [], []
    for _ in range(REPEATS):
        infer_s.append(timed(lambda: tk.inference([evals[0]])))
        analysis_s.append(timed(lambda: tk.accuracy_analysis([evals[0]], output_dir=str(folder / "snap"))))
    return {
        "moved": len(tks["auto"].auto_hybrid_report.chosen),
        "cos_plain": cos["plain"], "cos_auto": cos["auto"],
        "build_plain": median(build_s["plain"]), "build_auto": median(build_s["auto"]),
        "infer": median(infer_s), "analysis": median(analysis_s),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["outlier_chain"] + SHARED)
    args = parser.parse_args()
    print(f"{'model':<20}{'method':<8}{'moved':>6}{'cos int8':>10}{'cos auto':>10}"
          f"{'build s':>9}{'auto s':>8}{'ratio':>7}{'infer s':>9}{'analysis s':>11}{'ratio':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            for method in ("channel", "layer"):
                r = run(name, method, Path(tmp))
                print(f"{name:<20}{method:<8}{r['moved']:>6}{r['cos_plain']:>10.5f}{r['cos_auto']:>10.5f}"
                      f"{r['build_plain']:>9.3f}{r['build_auto']:>8.3f}{r['build_auto'] / r['build_plain']:>7.2f}"
                      f"{r['infer']:>9.3f}{r['analysis']:>11.3f}{r['analysis'] / r['infer']:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
