"""NaN and Inf are refused where they would silently ruin a build (#15 defect 5).

* Calibration (and accuracy-analysis) samples: an all-NaN .npy once built silently (INT8 cosine vs
  FP32 0.40). Every calibration path (build, auto hybrid, hybrid step 1) reads samples through
  npuc.dataset.sample_array, which refuses a sample holding NaN or +/-Inf with an InputError naming
  the dataset line, the file, the count of non-finite values and the first index.
* Float config values: a NaN/Inf mean or std gave all-zero INT8 outputs. config() (and the CLI's
  --mean/--std) refuse them, naming the key and the position."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

import npuc
from test_cli import npuc_cli

SHAPE = (1, 3, 8, 8)


def _dataset(tmp_path: Path, arrays) -> Path:
    lines = []
    for i, a in enumerate(arrays):
        np.save(tmp_path / f"s{i}.npy", a)
        lines.append(f"s{i}.npy")
    path = tmp_path / "dataset.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _good(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)


def _one_inf() -> np.ndarray:
    a = _good(1)
    a[0, 2, 5, 7] = np.inf
    return a


@pytest.fixture
def loaded(conv_relu_path: Path):
    with npuc.Toolkit() as tk, contextlib.redirect_stdout(io.StringIO()):
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(conv_relu_path))
        yield tk


def test_all_nan_npy_is_refused_naming_line_file_count_and_index(loaded, tmp_path: Path) -> None:
    ds = _dataset(tmp_path, [_good(), np.full(SHAPE, np.nan, np.float32)])
    with pytest.raises(npuc.InputError) as info:
        loaded.build(do_quantization=True, dataset=str(ds))
    message = str(info.value)
    assert f"dataset '{ds}' line 2 ('s1.npy')" in message
    assert "192 non-finite value(s) (NaN or +/-Inf)" in message
    assert "the first at index [0, 0, 0, 0] (nan)" in message


def test_one_inf_is_refused_with_its_index(loaded, tmp_path: Path) -> None:
    ds = _dataset(tmp_path, [_one_inf()])
    with pytest.raises(npuc.InputError, match=r"line 1 \('s0.npy'\): 1 non-finite value\(s\) .* index \[0, 2, 5, 7\] \(inf\)"):
        loaded.build(do_quantization=True, dataset=str(ds))


def test_nhwc_file_index_is_in_the_files_layout(loaded, tmp_path: Path) -> None:
    nhwc = _good().transpose(0, 2, 3, 1).copy()
    nhwc[0, 4, 6, 1] = -np.inf
    with pytest.raises(npuc.InputError, match=r"index \[0, 4, 6, 1\] \(-inf\)"):
        loaded.build(do_quantization=True, dataset=str(_dataset(tmp_path, [nhwc])))


def test_python_samples_are_checked_too(loaded) -> None:
    with pytest.raises(npuc.InputError, match=r"dataset sample 1: 1 non-finite value"):
        loaded.build(do_quantization=True, dataset=[_good(), _one_inf()])


@pytest.mark.filterwarnings("error")  # the refusal is the message; no RuntimeWarning above it
def test_overflow_after_normalization_is_refused(conv_relu_path: Path) -> None:
    with npuc.Toolkit() as tk, contextlib.redirect_stdout(io.StringIO()):
        tk.load_onnx(model=str(conv_relu_path))
        with pytest.raises(npuc.InputError, match=r"dataset sample 0: 192 non-finite value\(s\) .*after conversion to float32"):
            tk.build(do_quantization=True, dataset=[np.full(SHAPE, 1e300)])  # float64 beyond float32


def test_auto_hybrid_and_hybrid_step1_refuse_it(loaded, tmp_path: Path) -> None:
    ds = _dataset(tmp_path, [np.full(SHAPE, np.nan, np.float32)])
    with pytest.raises(npuc.InputError, match="non-finite"):
        loaded.build(do_quantization=True, dataset=str(ds), auto_hybrid=True)
    with pytest.raises(npuc.InputError, match="non-finite"):
        loaded.hybrid_quantization_step1(dataset=str(ds), output_prefix=str(tmp_path / "h" / "m"))


def test_accuracy_analysis_inputs_are_checked(loaded, tmp_path: Path) -> None:
    loaded.build(do_quantization=True, dataset=[_good()])
    np.save(tmp_path / "nan.npy", np.full(SHAPE, np.nan, np.float32))
    with pytest.raises(npuc.InputError, match=r"accuracy_analysis input 0 \('.*nan.npy'\): 192 non-finite"):
        loaded.accuracy_analysis(inputs=[str(tmp_path / "nan.npy")], output_dir=str(tmp_path / "snap"))
    with pytest.raises(npuc.InputError, match=r"accuracy_analysis input 0: 1 non-finite"):
        loaded.accuracy_analysis(inputs=[_one_inf()], output_dir=str(tmp_path / "snap"))


def test_finite_samples_still_build(loaded, tmp_path: Path) -> None:
    loaded.build(do_quantization=True, dataset=str(_dataset(tmp_path, [_good(0), _good(1)])))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mean_values": [[float("nan"), 0, 0]]}, r"mean_values\[0\]\[0\]: expected a finite number, got nan"),
        ({"std_values": [[1, float("inf"), 1]]}, r"std_values\[0\]\[1\]: expected a finite number, got inf"),
        ({"std_values": [1, 1, float("-inf")]}, r"std_values\[2\]: expected a finite number, got -inf"),
        ({"mean_values": [[np.float32("nan")] * 3]}, r"mean_values\[0\]\[0\]: expected a finite number"),
        ({"mean_values": [[1e39, 0, 0]]}, r"mean_values\[0\]\[0\]: 1e\+39 is beyond float32's range"),
        ({"mean_values": [["0", 0, 0]]}, r"mean_values\[0\]\[0\]: expected a number, got str '0'"),
        ({"mean_values": [[True, 0, 0]]}, r"mean_values\[0\]\[0\]: expected a number, got bool True"),
        ({"mean_values": 5}, r"mean_values: expected per input a list of per-channel numbers"),
        ({"auto_hybrid_cos_thresh": float("nan")}, r"config\(auto_hybrid_cos_thresh\): expected a finite number"),
        ({"auto_hybrid_euc_thresh": float("inf")}, r"config\(auto_hybrid_euc_thresh\): expected a finite number"),
    ],
)
def test_non_finite_config_values_are_refused(kwargs, message: str) -> None:
    with pytest.raises(npuc.ConfigError, match=message):
        npuc.Toolkit().config(**kwargs)


@pytest.mark.parametrize("flag", ["--mean", "--std"])
@pytest.mark.parametrize("value, position", [("nan,nan,nan", 0), ("0,inf,0", 1), ("1,1,-inf", 2)])
def test_cli_refuses_non_finite_mean_and_std(conv_relu_path: Path, tmp_path: Path, flag: str, value: str,
                                             position: int) -> None:
    r = npuc_cli("convert", str(conv_relu_path), "-t", "rk3588", "-o", str(tmp_path / "m.npub"), f"{flag}={value}")
    assert r.returncode == 1, r.stderr
    assert f"value [{position}]: expected a finite number" in r.stderr
    assert not (tmp_path / "m.npub").exists()


def test_cli_refuses_a_nan_threshold(conv_relu_path: Path, tmp_path: Path) -> None:
    r = npuc_cli("analyze", str(conv_relu_path), "-t", "rk3588", "--fp16", "--inputs", "x.npy", "--cos-thresh", "nan")
    assert r.returncode == 1, r.stderr
    assert "auto_hybrid_cos_thresh" in r.stderr and r.stderr.count("\n") == 1
