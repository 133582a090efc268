"""Bit-exactness check of the INT8 / FP16 simulator across a change: `save` runs every shared model
(and the torchvision models bench/sim_speed.py exported, if cached) through the simulator's fast
path, its reference path, FP16 mode and a loaded blob's program runtime, and writes every output to
an .npz; `check` reruns the same builds on the current .so and fails on the first output that
differs in one bit (or when the fast path differs from the reference path).

    PYTHONPATH=python /usr/bin/python3 tools/sim_bitexact.py save /tmp/before.npz   # on the old build
    PYTHONPATH=python /usr/bin/python3 tools/sim_bitexact.py check /tmp/before.npz  # on the new one
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

import npuc  # noqa: E402
from common import CACHE, load_ref, shared_models_dir  # noqa: E402
from npuc.quantize import fp16, quantize  # noqa: E402

DET_MEAN = np.array([123.675, 116.28, 103.53], np.float32)
DET_STD = np.array([58.395, 57.12, 57.375], np.float32)


def det_pages(count: int) -> List[np.ndarray]:
    from PIL import Image

    pages = sorted((shared_models_dir() / "ocr_det_calib").glob("*.png"))[:count]
    return [((np.asarray(Image.open(p).convert("RGB"), np.float32) - DET_MEAN) / DET_STD)
            .transpose(2, 0, 1)[None].copy() for p in pages]


def model_inputs(path: Path) -> Tuple[List[List[np.ndarray]], List[List[np.ndarray]]]:
    """(calibration samples, run inputs) of one model: its reference input and seeded noise of
    the same shape (the real pages for ppocrv4_det)."""
    ref = path.with_suffix(".ref.npz")
    if ref.exists():
        ins, _ = load_ref(path)
        first = [np.asarray(v) for v in ins.values()]
    else:  # a bench export: 1x3x224x224
        first = [np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)]
    rng = np.random.default_rng(7)
    noisy = [[rng.standard_normal(x.shape).astype(x.dtype) if x.dtype == np.float32 else x for x in first]
             for _ in range(3)]
    if path.stem == "ppocrv4_det":
        pages = [[p] for p in det_pages(4)]
        return pages, [first, pages[0]]
    return [first] + noisy, [first] + noisy[:1]


def models(only: str = "") -> Iterator[Path]:
    for path in [*sorted(shared_models_dir().glob("*.onnx")), *sorted(CACHE.glob("simspeed_*.onnx"))]:
        if not only or path.stem in only.split(","):
            yield path


def blob_outputs(path: Path, calib: List[List[np.ndarray]], runs: List[List[np.ndarray]]) -> List[np.ndarray]:
    """The program runtime's outputs: build on the samples, export, load in a fresh Toolkit."""
    with tempfile.TemporaryDirectory() as tmp:
        lines = []
        for i, sample in enumerate(calib):
            names = []
            for j, x in enumerate(sample):
                np.save(Path(tmp) / f"s{i}_{j}.npy", x[0])
                names.append(str(Path(tmp) / f"s{i}_{j}.npy"))
            lines.append(" ".join(names))
        (Path(tmp) / "ds.txt").write_text("\n".join(lines) + "\n")
        quiet = (contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()))
        with npuc.Toolkit() as tk, quiet[0], quiet[1]:
            tk.config(target_platform="rk3588")
            tk.load_onnx(model=str(path))
            tk.build(do_quantization=True, dataset=str(Path(tmp) / "ds.txt"))
            tk.export_blob(Path(tmp) / "m.npub")
        with npuc.Toolkit() as rt, contextlib.redirect_stdout(io.StringIO()):
            rt.load_blob(Path(tmp) / "m.npub")
            rt.init_runtime()
            raw = [1] * len(runs[0])  # the samples are already normalized
            return [o for x in runs for o in rt.inference(inputs=x, data_format="nchw", inputs_pass_through=raw)]


def outputs(only: str = "") -> Iterator[Tuple[str, np.ndarray]]:
    for path in models(only):
        calib, runs = model_inputs(path)
        model, _ = npuc.optimize(npuc.Model.load(str(path)))
        with contextlib.redirect_stderr(io.StringIO()):
            for method in ("channel", "layer"):
                fast = quantize(model, calib, algorithm="normal", method=method)
                ref = quantize(model, calib, algorithm="normal", method=method, reference=True)
                for r, x in enumerate(runs):
                    for k, (a, b) in enumerate(zip(fast.run(x), ref.run(x))):
                        if not np.array_equal(a, b, equal_nan=True):
                            raise SystemExit(f"{path.stem} {method} run {r} output {k}: fast path != reference path")
                        yield f"{path.stem}/int8-{method}/{r}/{k}", a
            half = fp16(model)
            for r, x in enumerate(runs):
                for k, a in enumerate(half.run(x)):
                    yield f"{path.stem}/fp16/{r}/{k}", a
        for k, a in enumerate(blob_outputs(path, calib, runs)):
            yield f"{path.stem}/blob/{k}", a
        print(f"{path.stem}: done", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("save", "check"))
    ap.add_argument("npz")
    ap.add_argument("--only", default="", help="comma-separated model names (check: a subset of the file)")
    args = ap.parse_args()
    if args.mode == "save":
        got: Dict[str, np.ndarray] = dict(outputs(args.only))
        np.savez_compressed(args.npz, **got)
        print(f"saved {len(got)} outputs to {args.npz}")
        return 0
    before = np.load(args.npz)
    seen = 0
    for key, a in outputs(args.only):
        if key not in before.files:
            raise SystemExit(f"{key}: not in {args.npz}")
        b = before[key]
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            raise SystemExit(f"{key}: differs from {args.npz}")
        seen += 1
    if not args.only and seen != len(before.files):
        raise SystemExit(f"checked {seen} outputs, {args.npz} has {len(before.files)}")
    print(f"all {seen} outputs bit-identical to {args.npz}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
