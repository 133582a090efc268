"""INT8 on real trained models, measured on a real task (issue #26).

Models: shared/models/ppocrv4_det.onnx and ppocr_cls.onnx (PaddleOCR, real weights), and the digits
CNN trained by quant_digits.py. Every build goes the way a user's does: Toolkit.config (SoC,
mean/std, algorithm, method) -> load_onnx -> build(dataset=dataset.txt) -> export_blob, then a
fresh Toolkit load_blob -> inference on raw RGB images.

* ppocrv4_det: calibrated on the 16 pages of shared/models/ocr_det_calib (a dataset.txt of PNG
  files, mean/std from the models README); evaluated on EVAL_PAGES other pages rendered by
  ocr_pages.py (other seeds, other words). Metrics of INT8 against FP32 (npuc's FP32 host run,
  which matches ONNX Runtime): pixel F1 of the text map binarized at 0.3, and box recall /
  precision at IoU 0.5 after the DB-style post-process of ocr_metrics.py. Also each build's box
  recall against the rendered text lines (the "metric" columns: FP32 and INT8 alike).
  Targets: F1 >= 0.97 and box recall >= 0.97 with the best algorithm.
* ppocr_cls: calibrated on CLS_CALIB rendered lines, evaluated on CLS_LINES other lines, half of
  them rotated 180 degrees. Target: INT8's 0/180 decision equals FP32's on 100 % of them. The
  "metric" columns give the accuracy against the rendered truth.
* accuracy_analysis of the best ppocrv4_det build on one evaluation page: the worst layers; then
  build(auto_hybrid=True): what it moved to FP16 and the metrics it recovered.

* ``--dtypes``: only the table of RKNN 2.3.2's quantized dtypes (issue #17): each dtype on a SoC
  that has it, algorithm normal, built and run through the Toolkit's simulator (no blob): ppocrv4_det
  F1 / box recall / cosine against FP32, ppocr_cls decision agreement and cosine.

Run: ``cd bench && PYTHONPATH=../python /usr/bin/python3 quant_real.py [--socs rk3588 ...]
[--quick] [--dtypes]`` (--quick: rk3588 only, algorithms normal and mmse).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

import ocr_metrics
import ocr_pages
from common import shared_models_dir

import npuc  # noqa: E402
from npuc._npuc import optimize  # noqa: E402
from npuc.preprocess import InputPreprocessor  # noqa: E402
from npuc.quantize import calibrate  # noqa: E402

SOCS = ("rk3588", "rk3566", "rv1106")
ALGORITHMS = ("normal", "kl_divergence", "mmse", "percentile")
METHODS = ("channel", "layer")
EVAL_PAGES = 16
EVAL_PAGE_SEED = 1000  # ocr_det_calib was rendered elsewhere, with other words; these seeds are ours
CLS_LINES = 64
CLS_CALIB = 32
CLS_EVAL_SEED, CLS_CALIB_SEED = 5000, 9000
DET_MEAN, DET_STD = [[123.675, 116.28, 103.53]], [[58.395, 57.12, 57.375]]
CLS_MEAN, CLS_STD = [[127.5, 127.5, 127.5]], [[127.5, 127.5, 127.5]]
TARGET_F1 = 0.97
TARGET_RECALL = 0.97
#: (quantized_dtype, quantized_method, a SoC that has it) for the --dtypes table.
DTYPE_BUILDS = (("w8a8", "channel", "rk3588"), ("w8a16", "channel", "rk3562"), ("w16a16i", "channel", "rv1106"),
                ("w16a16i_dfp", "channel", "rv1106"), ("w4a16", "group32", "rk3576"),
                ("w4a16", "group128", "rk3576"), ("w4a16", "group256", "rk3576"))
#: auto_hybrid_cos_thresh values tried on the best ppocrv4_det build (RKNN's default is 0.98).
HYBRID_THRESHOLDS = (0.98, 0.995)


@contextlib.contextmanager
def quiet():
    """Silences the Toolkit's build reports and quantization warnings (stdout and stderr)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def fp32_outputs(model: Path, mean, std, images: Sequence[np.ndarray]) -> List[np.ndarray]:
    with npuc.Toolkit() as tk:
        tk.config(mean_values=mean, std_values=std)
        tk.load_onnx(model=str(model))
        return [tk.inference(inputs=[im[None]], data_format="nhwc")[0] for im in images]


def int8_flow(model: Path, soc: str, algorithm: str, method: str, mean, std, dataset: str,
              images: Sequence[np.ndarray], folder: Path,
              hybrid_thresh: Optional[float] = None) -> Tuple[List[np.ndarray], float, object]:
    """Build (with auto_hybrid at `hybrid_thresh` when given), export, load the blob in a fresh
    Toolkit, infer. Returns (outputs, build s, auto hybrid report or None)."""
    blob = folder / f"{model.stem}-{soc}-{algorithm}-{method}{'-hybrid' if hybrid_thresh else ''}.npub"
    extra = {} if hybrid_thresh is None else {"auto_hybrid_cos_thresh": hybrid_thresh}
    with npuc.Toolkit() as tk, quiet():
        tk.config(target_platform=soc, mean_values=mean, std_values=std, quantized_algorithm=algorithm,
                  quantized_method=method, **extra)
        tk.load_onnx(model=str(model))
        t0 = time.perf_counter()
        tk.build(do_quantization=True, dataset=dataset, auto_hybrid=hybrid_thresh is not None)
        build_s = time.perf_counter() - t0
        tk.export_blob(blob)
        report = tk.auto_hybrid_report
    with npuc.Toolkit() as rt:
        rt.load_blob(blob)
        rt.init_runtime()
        outs = [rt.inference(inputs=[im[None]], data_format="nhwc")[0] for im in images]
    blob.unlink()
    return outs, build_s, report


def dtype_flow(model: Path, soc: str, dtype: str, method: str, mean, std, dataset: str,
               images: Sequence[np.ndarray]) -> Tuple[List[np.ndarray], float]:
    """Build with `dtype` on the simulator and infer every image (no blob: the outputs are the
    built model's). Returns (outputs, build s)."""
    with npuc.Toolkit() as tk, quiet():
        tk.config(target_platform=soc, mean_values=mean, std_values=std, quantized_dtype=dtype,
                  quantized_method=method)
        tk.load_onnx(model=str(model))
        t0 = time.perf_counter()
        tk.build(do_quantization=True, dataset=dataset)
        build_s = time.perf_counter() - t0
        outs = [tk.inference(inputs=[im[None]], data_format="nhwc")[0] for im in images]
    return outs, build_s


def dtype_table(folder: Path) -> List[str]:
    """The --dtypes table: one row per (model, dtype)."""
    rows = ["| model | dtype | SoC | metric vs FP32 | cosine | build s |", "|---|---|---|---|---|---|"]
    det, cls = Det(folder), Cls(folder)
    for task in (det, cls):
        for dtype, method, soc in DTYPE_BUILDS:
            outs, build_s = dtype_flow(task.model, soc, dtype, method, task.mean, task.std, task.dataset,
                                       task.images)
            if task is det:
                s, cos, _ = det.score(outs)
                metric = f"F1 {s.pixel_f1:.4f}, box R {s.box_recall:.4f} / P {s.box_precision:.4f}"
            else:
                agree, _, cos, _ = cls.score(outs)
                metric = f"decision = FP32 on {agree * 100:.1f} %"
            rows.append(f"| {task.model.stem} | {dtype} {method if dtype == 'w4a16' else ''} | {soc} | {metric} | "
                        f"{cos:.6f} | {build_s:.1f} |")
            print(rows[-1], flush=True)
    return rows


def write_dataset(paths: Sequence[str], folder: Path, name: str) -> str:
    ds = folder / name
    ds.write_text("".join(p + "\n" for p in paths))
    return str(ds)


# ---------------------------------------------------------------- ppocrv4_det

class Det:
    mean, std = DET_MEAN, DET_STD

    def __init__(self, folder: Path) -> None:
        self.model = shared_models_dir() / "ppocrv4_det.onnx"
        calib = sorted((shared_models_dir() / "ocr_det_calib").glob("*.png"))
        if len(calib) != 16:
            raise SystemExit(f"expected 16 calibration pages in {calib[0].parent if calib else 'ocr_det_calib'}")
        self.dataset = write_dataset([str(p) for p in calib], folder, "det_dataset.txt")
        self.pages = [ocr_pages.render_page(EVAL_PAGE_SEED + i) for i in range(EVAL_PAGES)]
        self.images = [p.image for p in self.pages]
        t0 = time.perf_counter()
        self.fp32 = [ocr_metrics.text_map(o) for o in fp32_outputs(self.model, DET_MEAN, DET_STD, self.images)]
        self.fp32_s = (time.perf_counter() - t0) / len(self.images)
        self.fp32_metric = self.truth_recall(self.fp32)

    def row(self, outputs: Sequence[np.ndarray], _build: str) -> Tuple[Tuple[float, float, float], str]:
        s, cos, truth = self.score(outputs)
        return (s.pixel_f1, s.box_recall, s.box_precision), (
            f"{truth:.4f} | F1 {s.pixel_f1:.4f}, box R {s.box_recall:.4f} / P {s.box_precision:.4f} | {cos:.5f}")

    def truth_recall(self, maps: Sequence[np.ndarray]) -> float:
        score = ocr_metrics.DetScore()
        for page, m in zip(self.pages, maps):
            score.add_boxes(page.boxes, ocr_metrics.boxes_of(m))
        return score.box_recall

    def score(self, outputs: Sequence[np.ndarray]) -> Tuple[ocr_metrics.DetScore, float, float]:
        maps = [ocr_metrics.text_map(o) for o in outputs]
        score = ocr_metrics.DetScore()
        for ref, got in zip(self.fp32, maps):
            score.add(ref, got)
        cos = float(np.mean([ocr_metrics.cosine(r, g) for r, g in zip(self.fp32, maps)]))
        return score, cos, self.truth_recall(maps)

    def calibration_time(self) -> Tuple[float, int]:
        """Seconds to stream the 16 pages through the optimized model's calibrator (as build does)."""
        optimized, _ = optimize(npuc.Model.load(str(self.model)), 3, [], "")
        pre = InputPreprocessor(DET_MEAN, DET_STD)
        t0 = time.perf_counter()
        calibrator, _ = calibrate(optimized, self.dataset, pre.apply)
        return time.perf_counter() - t0, calibrator.num_samples


# ---------------------------------------------------------------- ppocr_cls

class Cls:
    mean, std = CLS_MEAN, CLS_STD

    def __init__(self, folder: Path) -> None:
        from PIL import Image

        self.model = shared_models_dir() / "ppocr_cls.onnx"
        calib = []
        for i in range(CLS_CALIB):
            path = folder / f"cls_calib{i:02d}.png"
            Image.fromarray(ocr_pages.render_line(CLS_CALIB_SEED + i, rotated=i % 2 == 1).image).save(path)
            calib.append(str(path))
        self.dataset = write_dataset(calib, folder, "cls_dataset.txt")
        self.lines = [ocr_pages.render_line(CLS_EVAL_SEED + i, rotated=i % 2 == 1) for i in range(CLS_LINES)]
        self.images = [ln.image for ln in self.lines]
        self.truth = np.array([int(ln.rotated) for ln in self.lines])
        self.fp32 = np.concatenate(fp32_outputs(self.model, CLS_MEAN, CLS_STD, self.images))
        self.fp32_metric = float((self.fp32.argmax(1) == self.truth).mean())

    def row(self, outputs: Sequence[np.ndarray], build: str) -> Tuple[float, str]:
        agree, acc, cos, flips = self.score(outputs)
        if flips:
            print(f"ppocr_cls {build} decides otherwise than FP32 on {flips}")
        return agree, f"{acc:.4f} | decision = FP32 on {agree * 100:.1f} % | {cos:.5f}"

    def score(self, outputs: Sequence[np.ndarray]) -> Tuple[float, float, float, str]:
        """(agreement with FP32's decision, accuracy vs the truth, mean cosine, the FP32
        probabilities of the lines where INT8 decides otherwise)."""
        got = np.concatenate(outputs)
        differ = got.argmax(1) != self.fp32.argmax(1)
        agree = float(1.0 - differ.mean())
        cos = float(np.mean([ocr_metrics.cosine(a, b) for a, b in zip(self.fp32, got)]))
        flips = ", ".join(f"line {i}: FP32 p(180) {self.fp32[i, 1]:.3f}, INT8 {got[i, 1]:.3f}"
                          for i in np.flatnonzero(differ))
        return agree, float((got.argmax(1) == self.truth).mean()), cos, flips


# ---------------------------------------------------------------- the run

def sweep(task, socs: Sequence[str], algorithms: Sequence[str], folder: Path, rows: List[str]) -> Dict:
    """Every (SoC, algorithm, method) of one model through int8_flow; a table row each. `task` is
    a Det or a Cls: model, mean, std, dataset, images, name, fp32_metric, and row(outputs) ->
    (result kept per build, the row's metric cells)."""
    results = {}
    for soc in socs:
        for algorithm in algorithms:
            for method in METHODS:
                outs, build_s, _ = int8_flow(task.model, soc, algorithm, method, task.mean, task.std,
                                             task.dataset, task.images, folder)
                result, cells = task.row(outs, f"{soc}/{algorithm}/{method}")
                results[(soc, algorithm, method)] = result
                rows.append(f"| {task.model.stem} | {soc} | {algorithm} | {method} | {task.fp32_metric:.4f} | "
                            f"{cells} | {build_s:.1f} |")
                print(rows[-1], flush=True)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--socs", nargs="+", default=list(SOCS))
    ap.add_argument("--quick", action="store_true", help="rk3588 only, algorithms normal and mmse")
    ap.add_argument("--skip-digits", action="store_true")
    ap.add_argument("--dtypes", action="store_true", help="only the quantized_dtype table (issue #17)")
    args = ap.parse_args()
    if args.dtypes:
        with tempfile.TemporaryDirectory() as tmp:
            print("\n".join(dtype_table(Path(tmp))))
        return 0
    socs = ["rk3588"] if args.quick else args.socs
    algorithms = ("normal", "mmse") if args.quick else ALGORITHMS

    rows: List[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        det = Det(folder)
        cal_s, cal_n = det.calibration_time()
        print(f"ppocrv4_det: {len(det.pages)} evaluation pages ({sum(len(p.boxes) for p in det.pages)} rendered "
              f"text lines), FP32 {det.fp32_s:.2f} s/page; calibration of {cal_n} pages: {cal_s:.2f} s")
        det_results = sweep(det, socs, algorithms, folder, rows)

        cls = Cls(folder)
        print(f"\nppocr_cls: {CLS_LINES} lines ({int(cls.truth.sum())} rotated), FP32 accuracy vs truth "
              f"{cls.fp32_metric:.4f}")
        cls_results = sweep(cls, socs, algorithms, folder, rows)

        best = max(det_results, key=lambda k: (min(det_results[k][0], det_results[k][1]), det_results[k]))
        hybrid_lines = analysis_and_hybrid(det, best, folder)
        print("\n".join(hybrid_lines), flush=True)  # now, so a later failure cannot lose it

    if not args.skip_digits:
        import quant_digits

        fp32_top1, digit_rows, header = quant_digits.evaluate()
        print("\n" + header)
        for r in digit_rows:
            rows.append(f"| digits CNN | (simulator) | {r['algorithm']} | {r['method']} | top-1 {fp32_top1:.2f} % | "
                        f"top-1 {r['int8']:.2f} % | = FP32 on {r['agree']:.2f} % | {r['cosine']:.5f} | "
                        f"{r['build_s']:.2f} |")

    print("\n| model | SoC | algorithm | method | metric FP32 | metric INT8 | INT8 vs FP32 | cosine | build s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(r)
    print("\nmetric: ppocrv4_det box recall vs the rendered text lines (IoU 0.5); ppocr_cls accuracy vs the "
          "rendered orientation; digits top-1 on the test split")
    print("\n".join(hybrid_lines))  # again, beside the table

    f1, recall, precision = det_results[best]
    print(f"\ntargets: ppocrv4_det best ({'/'.join(best)}): F1 {f1:.4f} (>= {TARGET_F1}: "
          f"{'met' if f1 >= TARGET_F1 else 'MISSED'}), box recall {recall:.4f} (>= {TARGET_RECALL}: "
          f"{'met' if recall >= TARGET_RECALL else 'MISSED'}), precision {precision:.4f}")
    cls_misses = [f"{'/'.join(k)} {v * 100:.1f} %" for k, v in cls_results.items() if v < 1.0]
    print("ppocr_cls: INT8 decision = FP32 on 100 % of lines: " +
          ("met by every build" if not cls_misses else "MISSED by " + ", ".join(cls_misses)))
    return 0


def analysis_and_hybrid(det: Det, best: Tuple[str, str, str], folder: Path) -> List[str]:
    """accuracy_analysis of the best build on the first evaluation page, then auto_hybrid."""
    from PIL import Image

    soc, algorithm, method = best
    lines = [f"\naccuracy_analysis of ppocrv4_det {soc}/{algorithm}/{method} on evaluation page 0 "
             "(worst 'single' cosines: the layer alone on FP32 inputs):"]
    with npuc.Toolkit() as tk, quiet():
        tk.config(target_platform=soc, mean_values=DET_MEAN, std_values=DET_STD, quantized_algorithm=algorithm,
                  quantized_method=method)
        tk.load_onnx(model=str(det.model))
        tk.build(do_quantization=True, dataset=det.dataset)
        page = folder / "eval_page0.png"  # a path is preprocessed as a calibration sample is
        Image.fromarray(det.images[0]).save(page)
        tk.accuracy_analysis(inputs=[str(page)], output_dir=str(folder / "snapshot"))
        report = tk.accuracy_report
    scored = [r for r in report.rows if r.get("single_cosine") is not None]
    for r in sorted(scored, key=lambda r: r["single_cosine"])[:5]:
        lines.append(f"  {r['value']} ({r['node']}, {r['precision']}): single cosine {r['single_cosine']:.5f}, "
                     f"entire {r['cosine']:.5f}")
    for thresh in HYBRID_THRESHOLDS:
        lines.append(hybrid_line(det, best, folder, thresh))
    return lines


def hybrid_line(det: Det, best: Tuple[str, str, str], folder: Path, thresh: float) -> str:
    soc, algorithm, method = best
    outs, build_s, hybrid = int8_flow(det.model, soc, algorithm, method, DET_MEAN, DET_STD, det.dataset,
                                      det.images, folder, hybrid_thresh=thresh)
    s, cos, truth = det.score(outs)
    moved = [f"{c.node} ({c.op_type}, single cosine {c.single_cosine:.4f})" for c in hybrid.chosen]
    return (f"auto_hybrid ({soc}/{algorithm}/{method}): moved {len(moved)} layer(s) to FP16"
            f"{': ' + ', '.join(moved[:10]) if moved else ''}; F1 {s.pixel_f1:.4f}, box recall "
            f"{s.box_recall:.4f}, precision {s.box_precision:.4f}, cosine {cos:.5f}, build {build_s:.1f} s "
            f"(threshold {hybrid.cos_thresh}; worst output cosine on its samples "
            f"{hybrid.output_cosine_before:.5f} -> {hybrid.output_cosine_after:.5f})")


if __name__ == "__main__":
    sys.exit(main())
