"""``npuc analyze``: prints the entire/single table and writes the dumps; user errors exit 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from outlier_model import BAD_LAYER, samples, save_outlier_chain, write_dataset

from npuc.cli import EXIT_OK, EXIT_USER_ERROR, main


def test_analyze_prints_table_and_writes_files(tmp_path: Path, capsys: Any) -> None:
    model, dataset = save_outlier_chain(tmp_path), write_dataset(tmp_path, 6)
    np.save(tmp_path / "in.npy", samples(1, seed=9)[0])
    out = tmp_path / "snap"
    code = main(["analyze", str(model), "-t", "rk3588", "--dataset", str(dataset), "--inputs",
                 str(tmp_path / "in.npy"), "--output-dir", str(out), "--method", "layer", "--auto-hybrid"])
    printed = capsys.readouterr().out
    assert code == EXIT_OK
    assert "single cos" in printed and "auto hybrid" in printed and BAD_LAYER in printed
    assert "graph optimization" not in printed, "build reports only with -v"
    assert (out / "error_analysis.txt").is_file() and (out / "golden" / "y.npy").is_file()


def test_analyze_fp16_needs_no_dataset(tmp_path: Path, capsys: Any) -> None:
    model = save_outlier_chain(tmp_path)
    np.save(tmp_path / "in.npy", samples(1)[0])
    code = main(["analyze", str(model), "-t", "rk3588", "--fp16", "--inputs", str(tmp_path / "in.npy"),
                 "--output-dir", str(tmp_path / "s")])
    assert code == EXIT_OK and "fp16" in capsys.readouterr().out


def test_analyze_user_errors_exit_1(tmp_path: Path, capsys: Any) -> None:
    model, dataset = save_outlier_chain(tmp_path), write_dataset(tmp_path, 2)
    base = ["analyze", str(model), "-t", "rk3588"]
    assert main(base + ["--inputs", "x.npy"]) == EXIT_USER_ERROR  # no dataset
    assert "--dataset" in capsys.readouterr().err
    assert main(base + ["--dataset", str(dataset), "--inputs", str(tmp_path / "missing.npy")]) == EXIT_USER_ERROR
    assert "missing.npy" in capsys.readouterr().err
    assert main(["analyze", str(tmp_path / "nope.onnx"), "-t", "rk3588", "--fp16", "--inputs", "a.npy"]) == EXIT_USER_ERROR
    assert main(base + ["--dataset", str(dataset), "--inputs", "a.npy", "--cos-thresh", "2"]) == EXIT_USER_ERROR
