"""The two real trained PaddleOCR models (shared/models: ppocrv4_det, ppocr_cls) build in INT8 on
every SoC profile through the user's flow: config -> load_onnx -> build on a dataset.txt ->
export_blob -> load_blob in a fresh Toolkit -> inference on raw RGB pixels. The loaded blob runs
exactly as the built model, and stays close to FP32 on the reference input (the full accuracy
figures are bench/quant_real.py's)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

from conftest import shared_models_dir

import npuc
from npuc.quantize import cosine_similarity

SOCS = ["rk3588", "rk3576", "rk3566", "rk3562", "rv1106"]
DET_MEAN, DET_STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]
CLS_MEAN, CLS_STD = [127.5] * 3, [127.5] * 3
#: Loose floors that catch a broken build; bench/quant_real.py measures the task metrics.
MIN_DET_COSINE = 0.9
CALIBRATION_PAGES = 4


def _models() -> Path:
    folder = shared_models_dir()
    if folder is None or not (folder / "ppocrv4_det.onnx").is_file():
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    return folder


def _raw_reference(folder: Path, name: str, mean: List[float], std: List[float]) -> np.ndarray:
    """The reference input as raw 0-255 NHWC pixels (the .ref.npz holds it normalized)."""
    ref = np.load(folder / f"{name}.ref.npz")
    x = next(ref[k] for k in ref.files if k.startswith("input:"))
    return x.transpose(0, 2, 3, 1) * np.array(std, np.float32) + np.array(mean, np.float32)


def _build_and_reload(model: Path, soc: str, mean, std, dataset: str, x: np.ndarray, tmp: Path) -> Dict[str, object]:
    with npuc.Toolkit() as tk:
        tk.config(target_platform=soc, mean_values=[mean], std_values=[std])
        tk.load_onnx(model=str(model))
        tk.build(do_quantization=True, dataset=dataset)
        built = tk.inference(inputs=[x], data_format="nhwc")[0]
        tk.export_blob(tmp / f"{model.stem}-{soc}.npub")
    with npuc.Toolkit() as rt:
        rt.load_blob(tmp / f"{model.stem}-{soc}.npub")
        loaded = rt.inference(inputs=[x], data_format="nhwc")[0]
    with npuc.Toolkit() as fp:
        fp.config(mean_values=[mean], std_values=[std])
        fp.load_onnx(model=str(model))
        fp32 = fp.inference(inputs=[x], data_format="nhwc")[0]
    return {"built": built, "loaded": loaded, "fp32": fp32}


@pytest.mark.parametrize("soc", SOCS)
def test_ppocrv4_det_builds_in_int8_and_its_blob_runs(soc: str, tmp_path: Path) -> None:
    folder = _models()
    pages = sorted((folder / "ocr_det_calib").glob("*.png"))[:CALIBRATION_PAGES]
    dataset = tmp_path / "dataset.txt"
    dataset.write_text("".join(f"{p}\n" for p in pages))
    x = _raw_reference(folder, "ppocrv4_det", DET_MEAN, DET_STD)
    r = _build_and_reload(folder / "ppocrv4_det.onnx", soc, DET_MEAN, DET_STD, str(dataset), x, tmp_path)
    assert np.array_equal(r["built"], r["loaded"]), "the loaded blob runs differently from the built model"
    assert cosine_similarity(r["fp32"], r["built"]) >= MIN_DET_COSINE


@pytest.mark.parametrize("soc", SOCS)
def test_ppocr_cls_builds_in_int8_and_agrees_with_fp32(soc: str, tmp_path: Path) -> None:
    folder = _models()
    x = _raw_reference(folder, "ppocr_cls", CLS_MEAN, CLS_STD)
    rng = np.random.default_rng(0)
    samples = []
    for i in range(8):  # the reference line, shifted and noised (the calibration set of the test)
        s = np.clip(np.roll(x, 4 * i, axis=2) + rng.normal(0, 6, x.shape), 0, 255).astype(np.float32)
        np.save(tmp_path / f"s{i}.npy", s.transpose(0, 3, 1, 2)[0])
        samples.append(tmp_path / f"s{i}.npy")
    dataset = tmp_path / "dataset.txt"
    dataset.write_text("".join(f"{p}\n" for p in samples))
    r = _build_and_reload(folder / "ppocr_cls.onnx", soc, CLS_MEAN, CLS_STD, str(dataset), x, tmp_path)
    assert np.array_equal(r["built"], r["loaded"])
    assert int(np.argmax(r["built"])) == int(np.argmax(r["fp32"]))
