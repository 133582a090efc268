"""config(dynamic_input) (issue #18): one blob holding several input-shape sets, weights once.

Two models, INT8 on rk3588:
* ppocrv4_det (real PaddleOCR weights, H and W made dynamic again) at 320x320 / 480x480 / 640x640,
  calibrated at set 0 on the 16 pages of shared/models/ocr_det_calib (resized to it), with
  PaddleOCR's normalization; evaluated on a calibration page resized to each set.
* a small CRNN-style recognizer (tests/python/dynamic_models.py, random weights) at height 48,
  widths 160 / 320 / 640, calibrated on 4 random lines at set 0 (a single-shape build: the same
  seed at its own shape).

Per set: the predicted FPS and activation arena of its program (eval_perf / eval_memory of the
dynamic build), and the cosine of its output against ONNX Runtime FP32 at that shape (node
onnxruntime-node, bench/common.py). Per model: the dynamic blob's size against the sum of three
single-shape blobs (each a full build of its own at that shape, calibrated the same way), and
the reuse line build() prints.

Run: /usr/bin/python3 bench/dynamic_input.py   (needs the shared models and npm for ORT)
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

import numpy as np

from common import REPO, run_ort, shared_models_dir

sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "tests" / "python"))
import npuc  # noqa: E402
from dynamic_models import crnn_model, free_hw  # noqa: E402

SOC = "rk3588"
DET_MEAN, DET_STD = [[123.675, 116.28, 103.53]], [[58.395, 57.12, 57.375]]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.reshape(-1).astype(np.float64), b.reshape(-1).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


def quiet(fn: Any, *args: Any, **kwargs: Any) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args, **kwargs)
    return out.getvalue()


def build(model: Path, sets: List[List[List[int]]], dataset: Any, config: Dict[str, Any]) -> tuple:
    """A toolkit built at `sets` (dynamic_input when more than one), its build output and seconds."""
    tk = npuc.Toolkit()
    tk.config(target_platform=SOC, **({"dynamic_input": sets} if len(sets) > 1 else {}), **config)
    tk.load_onnx(model=str(model), input_size_list=sets[0])
    t = time.time()
    log = quiet(tk.build, do_quantization=True, dataset=dataset)
    return tk, log, time.time() - t


def run_model(name: str, model: Path, sets: List[List[List[int]]], dataset: Any, config: Dict[str, Any],
              inputs: Sequence[np.ndarray], raw_inputs: Sequence[np.ndarray], folder: Path) -> None:
    """`inputs`: what inference takes per set (raw images when config has mean/std); `raw_inputs`:
    the same, normalized, for ONNX Runtime."""
    print(f"\n== {name}: {len(sets)} shape sets, INT8 {SOC}")
    tk, log, build_s = build(model, sets, dataset(sets[0][0]) if callable(dataset) else dataset, config)
    reuse = [line for line in log.splitlines() if line.startswith("dynamic_input: ") and "shared" in line]
    print(f"build {build_s:.1f} s; {reuse[0] if reuse else '(no reuse line)'}")
    blob = folder / f"{name}_dynamic.npub"
    tk.export_blob(str(blob))
    perf = tk.eval_perf(is_print=False)
    memory = tk.eval_memory(is_print=False)
    loaded = npuc.Toolkit()
    loaded.load_blob(str(blob))
    print(f"{'set':<22} {'pred. FPS':>10} {'time us':>10} {'arena':>10} {'cosine vs ORT':>14} {'blob==build':>12}")
    refs = []
    for k, (shapes, x, raw) in enumerate(zip(sets, inputs, raw_inputs)):
        got = tk.inference(inputs=[x])
        again = loaded.inference(inputs=[x])
        _, ref = run_ort(model, {"x": raw}, threads=1, warmup=0, iters=1)
        refs.append(ref[0])
        p = perf.shape_sets[k][1].summary
        arena = memory.shape_sets[k][1]["arena_bytes"]
        same = all(np.array_equal(a, b) for a, b in zip(got, again))
        print(f"{str(shapes[0]):<22} {p['fps']:>10.1f} {p['total_time_us']:>10.1f} {arena / 1e6:>8.2f}MB "
              f"{cosine(got[0], ref[0]):>14.5f} {str(same):>12}")
    print(f"runtime arena (max over sets): {memory['runtime_arena_bytes'] / 1e6:.2f} MB")
    print(f"predicted FPS for {perf.summary['cores']} NPU core(s) ({perf.core_choice})")
    singles = []
    for shapes, x, ref in zip(sets, inputs, refs):
        single, _, _ = build(model, [shapes], dataset(shapes[0]) if callable(dataset) else dataset, config)
        path = folder / f"{name}_{'x'.join(map(str, shapes[0]))}.npub"
        single.export_blob(str(path))
        singles.append(path.stat().st_size)
        print(f"single-shape build at {shapes[0]} (calibrated at its own shape): cosine vs ORT "
              f"{cosine(single.inference(inputs=[x])[0], ref):.5f}")
    dyn = blob.stat().st_size
    print(f"blob: dynamic {dyn / 1e6:.3f} MB vs three single-shape blobs {sum(singles) / 1e6:.3f} MB "
          f"({' + '.join(f'{s / 1e6:.3f}' for s in singles)}): {dyn / sum(singles):.2f}x")


def main() -> None:
    models = shared_models_dir()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        det = free_hw(models / "ppocrv4_det.onnx", folder / "ppocrv4_det_dyn.onnx")
        pages = sorted((models / "ocr_det_calib").glob("*.png"))
        dataset = folder / "det_dataset.txt"
        dataset.write_text("".join(f"{p}\n" for p in pages))
        det_sets = [[[1, 3, s, s]] for s in (320, 480, 640)]
        from PIL import Image

        images, raws = [], []
        for s in (320, 480, 640):
            img = np.asarray(Image.open(pages[0]).convert("RGB").resize((s, s), Image.BILINEAR), np.float32)
            images.append(img.astype(np.uint8)[np.newaxis])  # NHWC uint8, as cv2/PIL give it
            norm = (img - np.array(DET_MEAN[0], np.float32)) / np.array(DET_STD[0], np.float32)
            raws.append(np.ascontiguousarray(norm.transpose(2, 0, 1)[np.newaxis]))
        run_model("ppocrv4_det", det, det_sets, str(dataset), dict(mean_values=DET_MEAN, std_values=DET_STD),
                  images, raws, folder)

        crnn = crnn_model(folder / "crnn.onnx")
        rec_sets = [[[1, 3, 48, w]] for w in (160, 320, 640)]
        rng = np.random.default_rng(0)
        xs = [rng.standard_normal(s[0]).astype(np.float32) for s in rec_sets]

        def calib(shape: List[int]) -> List[List[np.ndarray]]:  # the same 4 random lines' seed at each shape
            lines = np.random.default_rng(0)
            return [[lines.standard_normal(shape).astype(np.float32)] for _ in range(4)]

        run_model("crnn", crnn, rec_sets, calib, {}, xs, xs, folder)


if __name__ == "__main__":
    main()
