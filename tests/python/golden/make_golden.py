"""Writes the golden files of test_blob_size.py with an npuc that predates blob format 2.0 (run it
with PYTHONPATH pointing at such a build; it refuses a 2.x writer):

- conv_relu_int8_format_1_2.npub: conftest.conv_relu_model() built INT8 for rk3588 on two fixed
  samples, as the 1.2 writer stored it (FP32 weights in WGHT beside the int8 NWGT copy);
- mobilenet_v2_int8_format_1_2.npz: `output`, what Toolkit.load_blob + inference of the 1.2
  mobilenet_v2 INT8 blob (calibrated on the shared reference input and half of it) returned for
  the reference input. The 17.8 MB blob itself is not kept; its outputs are what 2.0 must repeat.

Usage: PYTHONPATH=<old build>/python python3 make_golden.py <shared models dir>
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import npuc  # noqa: E402
from conftest import conv_relu_model  # noqa: E402


def conv_relu_samples():
    rng = np.random.default_rng(23)
    return [[rng.standard_normal((1, 3, 8, 8)).astype(np.float32)] for _ in range(2)]


def main() -> None:
    assert npuc._npuc.BLOB_FORMAT_VERSION.startswith("1."), "run with an npuc older than blob format 2.0"
    models = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = Path(tmp) / "conv_relu.onnx"
        onnx.save(conv_relu_model(), str(onnx_path))
        with npuc.Toolkit() as tk:
            tk.config(target_platform="rk3588")
            tk.load_onnx(model=str(onnx_path))
            tk.build(do_quantization=True, dataset=conv_relu_samples())
            tk.export_blob(HERE / "conv_relu_int8_format_1_2.npub")
        mobilenet = models / "mobilenet_v2.onnx"
        ref = np.load(mobilenet.with_suffix(".ref.npz"))
        inputs = [ref[k] for k in ref.files if k.startswith("input:")]
        blob = Path(tmp) / "m.npub"
        with npuc.Toolkit() as tk:
            tk.config(target_platform="rk3588")
            tk.load_onnx(model=str(mobilenet))
            tk.build(do_quantization=True, dataset=[inputs, [0.5 * x for x in inputs]])
            tk.export_blob(blob)
        with npuc.Toolkit() as tk:
            tk.load_blob(blob)
            tk.init_runtime()
            (out,) = tk.inference(inputs=inputs)
        np.savez(HERE / "mobilenet_v2_int8_format_1_2.npz", output=out)


if __name__ == "__main__":
    main()
