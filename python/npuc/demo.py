"""``npuc demo``: the main job end to end on a bundled example, in under a minute.

It generates a small ShuffleNet-style classifier with onnx.helper (a Focus stem, channel
shuffles, a decomposed LayerNorm head: see :mod:`npuc.demo_model`), converts it for RK3588 with
INT8 quantization on a generated calibration set, prints the optimization report and eval_perf,
writes the ``.npub`` blob and a performance plot, and checks the built model's output against the
FP32 original (cosine similarity).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import List, Optional

import numpy as np

__all__ = ["run_demo"]

TARGET = "rk3588"
CALIBRATION_SAMPLES = 16
CHECK_SAMPLES = 4
#: The demo fails (exit 1) when the built model's cosine similarity to FP32 is below this.
MIN_COSINE = 0.99


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a64 @ b64 / max(np.linalg.norm(a64) * np.linalg.norm(b64), 1e-30))


def _write_dataset(samples: List[np.ndarray], folder: Path) -> Path:
    """RKNN-style dataset.txt with one .npy per line."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, x in enumerate(samples):
        path = folder / f"sample_{i:03d}.npy"
        np.save(path, x)
        lines.append(path.name)
    listing = folder / "dataset.txt"
    listing.write_text("\n".join(lines) + "\n")
    return listing


def _banner(text: str) -> None:
    print(f"\n== {text}", flush=True)


def run_demo(out_dir: Optional[str] = None, quantize: bool = True) -> int:
    """Runs the demo, printing each step; returns 0 when the built model matches FP32."""
    import npuc
    from npuc.demo_model import build_demo_model, calibration_samples

    start = time.perf_counter()
    out = Path(out_dir or "npuc-demo").resolve()
    out.mkdir(parents=True, exist_ok=True)
    model_path = out / "demo_shufflenet.onnx"
    model_path.write_bytes(build_demo_model())
    _banner(f"generated {model_path.name}: Focus stem, 3 ShuffleNetV2 units, LayerNorm head")

    samples = calibration_samples(CALIBRATION_SAMPLES + CHECK_SAMPLES)
    dataset = _write_dataset(samples[:CALIBRATION_SAMPLES], out / "calibration")
    checks = samples[CALIBRATION_SAMPLES:]

    float_model = npuc.Model.load(str(model_path))
    reference = [npuc.Runtime(float_model).run([x])[0] for x in checks]

    with npuc.Toolkit() as tk:
        tk.config(target_platform=TARGET, quantized_algorithm="normal", quantized_method="channel")
        tk.load_onnx(model=str(model_path))
        mode = f"INT8 quantization on {CALIBRATION_SAMPLES} samples" if quantize else "no quantization (fp16)"
        _banner(f"build for {TARGET}: graph passes, {mode}")
        tk.build(do_quantization=quantize, dataset=str(dataset), verify=True)

        _banner(f"eval_perf on {TARGET} (simulated cycles)")
        plot = out / "perf.png"
        report = tk.eval_perf(plot_path=plot)

        blob = out / "demo_shufflenet.npub"
        tk.export_blob(blob)
        outputs = [tk.inference(inputs=[x])[0] for x in checks]

    cosines = [_cosine(o, r) for o, r in zip(outputs, reference)]
    worst = min(cosines)
    _banner("result")
    print(f"blob:        {blob} ({os.path.getsize(blob)} bytes)")
    print(f"perf plot:   {plot}")
    print(f"predicted:   {report.summary['total_time_us']:.1f} us per frame, {report.summary['fps']:.0f} FPS "
          f"on {TARGET}")
    print(f"accuracy:    cosine vs FP32 on {len(checks)} held-out inputs: min {worst:.5f}, "
          f"mean {np.mean(cosines):.5f} (pass mark {MIN_COSINE})")
    print(f"time:        {time.perf_counter() - start:.1f} s")
    return 0 if worst >= MIN_COSINE else 1
