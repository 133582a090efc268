"""Toolkit.accuracy_analysis: the entire/single table, the per-tensor dumps and
error_analysis.txt; single == entire on the first layer; single points at the layer that
quantizes badly; inputs from .npy paths are preprocessed like calibration samples."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Tuple

import numpy as np
import pytest

from outlier_model import BAD_LAYER, samples, save_outlier_chain, write_dataset

import npuc
from npuc.accuracy import sanitize_tensor_name
from npuc.errors import ConfigError, InputError, NpucError


@pytest.fixture
def built(tmp_path: Path) -> Tuple[npuc.Toolkit, Path]:
    model, dataset = save_outlier_chain(tmp_path), write_dataset(tmp_path, 8)
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588", quantized_method="layer")
    tk.load_onnx(model=str(model))
    tk.build(dataset=str(dataset))
    return tk, tmp_path


def test_writes_table_and_dumps(built: Tuple[npuc.Toolkit, Path], capsys: Any) -> None:
    tk, tmp = built
    out = tmp / "snap"
    assert tk.accuracy_analysis(inputs=[samples(1, seed=9)[0]], output_dir=str(out)) == 0
    report = tk.accuracy_report
    text = (out / "error_analysis.txt").read_text()
    assert "entire cos" in text and "single cos" in text and "sqnr" in text
    assert text.strip() == report.text.strip()
    assert report.text in capsys.readouterr().out
    assert [r["value"] for r in report.rows][0] == "x"
    for r in report.rows:
        stem = report.files[r["value"]]
        golden = np.load(out / "golden" / f"{stem}.npy")
        simulated = np.load(out / "simulator" / f"{stem}.npy")
        assert golden.shape == simulated.shape
        if r["node"]:
            assert (out / "single" / f"{stem}.npy").is_file()
    # The dumped tensors are the ones the table measured.
    y = report.row("y")
    g, s = np.load(out / "golden" / "y.npy").ravel(), np.load(out / "simulator" / "y.npy").ravel()
    assert float(np.dot(g, s) / (np.linalg.norm(g) * np.linalg.norm(s))) == pytest.approx(y["cosine"], abs=1e-6)


def test_single_equals_entire_on_the_first_layer_and_isolates_the_bad_one(built: Tuple[npuc.Toolkit, Path]) -> None:
    tk, tmp = built
    tk.accuracy_analysis(inputs=[samples(1, seed=9)[0]], output_dir=str(tmp / "snap"))
    rows = {r["node"]: r for r in tk.accuracy_report.rows if r["node"]}
    first = rows["c1"]
    for metric in ("cosine", "euclidean", "sqnr_db"):
        assert first[f"single_{metric}"] == first[metric]
    assert rows[BAD_LAYER]["single_cosine"] < 0.9
    assert rows["c3"]["single_cosine"] > 0.99 > rows["c3"]["cosine"], "c3 only inherits c2's error"


def test_npy_path_input_is_preprocessed_like_a_dataset_sample(tmp_path: Path) -> None:
    model, dataset = save_outlier_chain(tmp_path), write_dataset(tmp_path, 4)
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588", mean_values=[[1, 1, 1]], std_values=[[2, 2, 2]])
    tk.load_onnx(model=str(model))
    tk.build(dataset=str(dataset))
    raw = samples(1, seed=9)[0]
    np.save(tmp_path / "in.npy", raw)
    tk.accuracy_analysis(inputs=[str(tmp_path / "in.npy")], output_dir=str(tmp_path / "a"))
    np.testing.assert_allclose(np.load(tmp_path / "a" / "golden" / "x.npy"), (raw - 1) / 2, rtol=1e-6)
    tk.accuracy_analysis(inputs=[raw], output_dir=str(tmp_path / "b"))  # arrays: already preprocessed
    np.testing.assert_array_equal(np.load(tmp_path / "b" / "golden" / "x.npy"), raw)


def test_errors(built: Tuple[npuc.Toolkit, Path], tmp_path: Path) -> None:
    tk, _ = built
    with pytest.raises(ConfigError, match="target"):
        tk.accuracy_analysis(inputs=[samples(1)[0]], target="rk3588")
    with pytest.raises(InputError, match="does not exist"):
        tk.accuracy_analysis(inputs=[str(tmp_path / "missing.npy")])
    with pytest.raises(InputError, match="1 input"):
        tk.accuracy_analysis(inputs=[samples(1)[0], samples(1)[0]])
    fresh = npuc.Toolkit()
    with pytest.raises(NpucError, match="build"):
        fresh.accuracy_analysis(inputs=[samples(1)[0]])


def test_fp16_build_is_analysed_too(tmp_path: Path) -> None:
    tk = npuc.Toolkit()
    tk.load_onnx(model=str(save_outlier_chain(tmp_path)))
    tk.build(do_quantization=False)
    tk.accuracy_analysis(inputs=[samples(1)[0]], output_dir=str(tmp_path / "s"))
    rows = tk.accuracy_report.rows
    assert all(r["precision"] in ("input", "fp16") for r in rows)
    assert all(r["cosine"] > 0.999 and r["single_cosine"] > 0.999 for r in rows)


@pytest.mark.parametrize(
    "name, stem",
    [("conv/out:0", "conv_out_0"), ("a b", "a_b"), ("..", "_.."), ("x.y-z_1", "x.y-z_1")],
)
def test_tensor_names_are_sanitized(name: str, stem: str) -> None:
    assert sanitize_tensor_name(name) == stem


@pytest.mark.parametrize("name", ["glu_net", "yolo_focus", "tiny_vit", "shufflenet_v2_x0_5"])
def test_single_mode_on_shared_models(name: str, tmp_path: Path) -> None:
    """Every op kind of the real exports (Concat, Split, LUTs, Softmax, LayerNorm, shared-scale
    data movement) runs in the isolated mode; no layer of these models quantizes badly alone."""
    from conftest import shared_models_dir

    folder = shared_models_dir()
    if folder is None or not (folder / f"{name}.onnx").is_file():
        pytest.skip(f"shared model {name} not found (set NPUC_SHARED_MODELS)")
    ref = np.load(folder / f"{name}.ref.npz")
    x = next(ref[k] for k in ref.files if k.startswith("input:")).astype(np.float32)
    rng = np.random.default_rng(1)
    calibration = [(x + 0.3 * rng.standard_normal(x.shape)).astype(np.float32) for _ in range(4)]
    tk = npuc.Toolkit()
    tk.load_onnx(model=str(folder / f"{name}.onnx"))
    tk.build(dataset=calibration)
    tk.accuracy_analysis(inputs=[x], output_dir=str(tmp_path))
    rows = [r for r in tk.accuracy_report.rows if r["node"]]
    assert rows[0]["single_cosine"] == rows[0]["cosine"]
    assert min(r["single_cosine"] for r in rows) > 0.99
    # Single never sees more error than entire by much: upstream error is what it removes.
    assert np.median([r["single_sqnr_db"] - r["sqnr_db"] for r in rows]) >= 0


def test_progress_is_reported_as_the_three_runs_advance(built: Tuple[npuc.Toolkit, Path], monkeypatch: Any) -> None:
    """accuracy_report(progress=...) reports after the FP32 run, the end-to-end run and every
    layer's isolated run; Toolkit.accuracy_analysis draws it as a bar on a terminal."""
    tk, _ = built
    quantized = tk._quantized[1]
    calls = []
    quantized.accuracy_report([samples(1, seed=9)[0]], lambda done, total: calls.append((done, total)))
    steps = calls[0][1] // 3
    assert calls[0] == (steps, 3 * steps) and calls[1] == (2 * steps, 3 * steps) and calls[-1] == (3 * steps,) * 2
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and len(calls) == 2 + steps

    import npuc.dataset

    bars = []

    class Bar:
        def __init__(self, total: int, desc: str, unit: str) -> None:
            self.total, self.n, self.closed = total, 0, False
            bars.append(self)

        def update(self, k: int) -> None:
            self.n += k

        def close(self) -> None:
            self.closed = True

    monkeypatch.setattr(npuc.dataset, "progress_bar", Bar)
    tk.accuracy_analysis(inputs=[samples(1, seed=9)[0]], output_dir=None)
    assert len(bars) == 1 and bars[0].n == bars[0].total == 3 * steps and bars[0].closed
