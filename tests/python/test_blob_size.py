"""Blob size (issue #23): a blob stores each weight the NPU packs once, in its NPU form (int8 for
an INT8 build, half for FP16) in NWGT, instead of FP32 in WGHT beside the packed copy. INT8 blobs
of mobilenet_v2 were 1.27x their FP32 ONNX file (format 1.2), FP16 ones 1.50x; the loaded model's
outputs stay bit-identical to what the format 1.2 blob gave (golden/), and `npuc info` shows where
the bytes go."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import pytest

import npuc
from conftest import conv_relu_model, shared_models_dir

MODELS_DIR = shared_models_dir()
MOBILENET = MODELS_DIR / "mobilenet_v2.onnx" if MODELS_DIR else None
needs_mobilenet = pytest.mark.skipif(MOBILENET is None or not MOBILENET.is_file(),
                                     reason="shared models not found (set NPUC_SHARED_MODELS)")
GOLDEN = Path(__file__).resolve().parent / "golden"

# Measured on rk3588 (docs/blob_format.md, "Section sizes"): INT8 3784888 bytes = 0.270x of the
# 13992262-byte ONNX (1.2: 1.273x), FP16 7106148 = 0.508x (1.2: 1.500x). Thresholds with margin.
INT8_MAX_FRACTION = 0.35
FP16_MAX_FRACTION = 0.60


def reference_inputs() -> List[np.ndarray]:
    ref = np.load(MOBILENET.with_suffix(".ref.npz"))
    return [ref[k] for k in ref.files if k.startswith("input:")]


def build_and_export(blob: Path, quantize: bool) -> List[np.ndarray]:
    """mobilenet_v2 for rk3588 (INT8 calibrated on the reference input and half of it, as
    golden/make_golden.py did, or FP16), exported to `blob`; returns the in-memory outputs."""
    inputs = reference_inputs()
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(MOBILENET))
        tk.build(do_quantization=quantize, dataset=[inputs, [0.5 * x for x in inputs]] if quantize else None)
        expected = tk.inference(inputs=inputs)
        assert tk.export_blob(blob) == 0
    return expected


def loaded_outputs(blob: Path, inputs: List[np.ndarray]) -> Tuple[List[np.ndarray], Dict[str, Dict]]:
    with npuc.Toolkit() as tk:
        assert tk.load_blob(blob) == 0
        assert tk.init_runtime() == 0
        sections = {s["kind"]: s for s in tk.blob_meta["sections"]}
        return tk.inference(inputs=inputs), sections


@pytest.fixture(scope="module")
def int8_blob(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, List[np.ndarray]]:
    blob = tmp_path_factory.mktemp("int8") / "mobilenet_v2.npub"
    return blob, build_and_export(blob, quantize=True)


@needs_mobilenet
def test_int8_mobilenet_v2_blob_is_a_fraction_of_its_onnx_and_holds_the_weights_once(int8_blob) -> None:
    blob, _ = int8_blob
    onnx_bytes, blob_bytes = MOBILENET.stat().st_size, blob.stat().st_size
    assert blob_bytes <= INT8_MAX_FRACTION * onnx_bytes, (blob_bytes, onnx_bytes)
    _, sections = loaded_outputs(blob, reference_inputs())
    # The int8 NWGT entries are the bulk; WGHT keeps only what the NPU does not pack (biases).
    assert sections["NWGT"]["required"] and sections["TASK"]["required"]
    assert sections["NWGT"]["size"] >= 0.8 * blob_bytes
    assert sections["WGHT"]["size"] <= 0.01 * onnx_bytes
    assert sections["NWGT"]["size"] <= 0.27 * onnx_bytes  # int8 + channel padding, not float


@needs_mobilenet
def test_int8_loaded_blob_gives_the_format_1_2_outputs_bit_for_bit(int8_blob) -> None:
    blob, in_memory = int8_blob
    inputs = reference_inputs()
    got, _ = loaded_outputs(blob, inputs)
    want = np.load(GOLDEN / "mobilenet_v2_int8_format_1_2.npz")["output"]
    assert got[0].dtype == want.dtype and got[0].shape == want.shape
    np.testing.assert_array_equal(got[0].view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(in_memory[0].view(np.uint32), want.view(np.uint32))


@needs_mobilenet
def test_fp16_mobilenet_v2_blob_is_a_fraction_of_its_onnx_and_runs_as_built(tmp_path: Path) -> None:
    blob = tmp_path / "mobilenet_v2_fp16.npub"
    in_memory = build_and_export(blob, quantize=False)
    onnx_bytes, blob_bytes = MOBILENET.stat().st_size, blob.stat().st_size
    assert blob_bytes <= FP16_MAX_FRACTION * onnx_bytes, (blob_bytes, onnx_bytes)
    got, sections = loaded_outputs(blob, reference_inputs())
    assert sections["WGHT"]["size"] <= 0.01 * onnx_bytes
    # The FP16 simulator computes with the half weights the blob stores, in memory and loaded.
    np.testing.assert_array_equal(got[0].view(np.uint32), in_memory[0].view(np.uint32))


def test_a_format_1_2_blob_still_loads_and_runs_as_a_2_0_export_of_the_same_build(tmp_path: Path) -> None:
    old = GOLDEN / "conv_relu_int8_format_1_2.npub"
    onnx_path = tmp_path / "conv_relu.onnx"
    import onnx

    onnx.save(conv_relu_model(), str(onnx_path))
    rng = np.random.default_rng(23)  # golden/make_golden.py's calibration samples
    samples = [[rng.standard_normal((1, 3, 8, 8)).astype(np.float32)] for _ in range(2)]
    new = tmp_path / "conv_relu.npub"
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(onnx_path))
        tk.build(do_quantization=True, dataset=samples)
        tk.export_blob(new)
    x = np.random.default_rng(4).standard_normal((1, 3, 8, 8)).astype(np.float32)
    runs = {}
    for path in (old, new):
        with npuc.Toolkit() as tk:
            tk.load_blob(path)
            tk.init_runtime()
            runs[path.name] = (tk.blob_meta["format_version"], {s["kind"]: s["size"] for s in tk.blob_meta["sections"]},
                               tk.inference(inputs=[x])[0])
    (old_version, old_sizes, old_out), (new_version, new_sizes, new_out) = runs[old.name], runs[new.name]
    assert (old_version, new_version) == ("1.2", npuc._npuc.BLOB_FORMAT_VERSION)
    np.testing.assert_array_equal(new_out.view(np.uint32), old_out.view(np.uint32))
    # 1.2 kept the conv's FP32 weight (4x3x3x3 floats, 432 bytes) and its bias in WGHT; 2.0 the bias only.
    assert old_sizes["WGHT"] == 512 and new_sizes["WGHT"] == 64


@needs_mobilenet
def test_npuc_info_shows_each_sections_size_share_and_contents(int8_blob, capsys: pytest.CaptureFixture) -> None:
    from npuc.cli import main

    blob, _ = int8_blob
    assert main(["info", str(blob)]) == 0
    out = capsys.readouterr().out
    lines = out.split("sections:\n")[1].split("inputs:")[0].splitlines()
    rows = {}
    for line in lines[:-1]:
        m = re.fullmatch(r"  (\w{4}) +(required|optional) +(\d+) bytes \( *([\d.]+)%\) at offset (\d+)  (.+)", line)
        assert m, line
        rows[m.group(1)] = (int(m.group(3)), float(m.group(4)), m.group(6))
    overhead = int(re.fullmatch(r"  header, section table and padding: (\d+) bytes", lines[-1]).group(1))
    size = blob.stat().st_size
    assert sum(r[0] for r in rows.values()) + overhead == size
    nwgt_bytes, nwgt_share, nwgt_contents = rows["NWGT"]
    assert nwgt_share == pytest.approx(100 * nwgt_bytes / size, abs=0.05)
    assert "packed NPU weights" in nwgt_contents
    assert "biases" in rows["WGHT"][2]
