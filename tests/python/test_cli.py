"""The npuc command line: info and run output, .npy files, --help everywhere, exit codes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List

import numpy as np
import pytest

import npuc
from conftest import conv_relu_model, conv_relu_reference

# Not resolve(): a build folder's package is symlinks into python/npuc, and the subprocess must load
# that build's extension module, not the one next to the real files.
PACKAGE_PARENT = str(Path(os.path.abspath(npuc.__file__)).parent.parent)


def npuc_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PACKAGE_PARENT, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "npuc", *args], capture_output=True, text=True, env=env, timeout=120)


def test_info(conv_relu_path: Path) -> None:
    r = npuc_cli("info", str(conv_relu_path), "--input-size", "1,3,8,8")
    assert r.returncode == 0, r.stderr
    assert "x: float32[1,3,8,8]" in r.stdout
    assert "y: float32[1,4,8,8]" in r.stdout
    assert "Conv" in r.stdout and "Relu" in r.stdout
    assert f"MACs: {4 * 8 * 8 * 27}" in r.stdout
    assert f"params: {4 * 27 + 4}" in r.stdout


def test_run_writes_npy(conv_relu_path: Path, tmp_path: Path) -> None:
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out_dir = tmp_path / "out"
    r = npuc_cli("run", str(conv_relu_path), "--input", str(tmp_path / "x.npy"), "--output-dir", str(out_dir))
    assert r.returncode == 0, r.stderr
    assert "y: float32[1,4,8,8]" in r.stdout
    y = np.load(out_dir / "y.npy")
    np.testing.assert_allclose(y, conv_relu_reference(conv_relu_model(), x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("command", [[], ["info"], ["run"], ["ops"], ["demo"], ["convert"], ["perf"], ["socs"]])
def test_help_everywhere(command: List[str]) -> None:
    r = npuc_cli(*command, "--help")
    assert r.returncode == 0
    assert "usage: npuc" in r.stdout


def test_ops_lists_registry() -> None:
    r = npuc_cli("ops")
    assert r.returncode == 0
    assert r.stdout.split() == npuc.supported_ops()


def user_error(r: subprocess.CompletedProcess, needle: str) -> None:
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert needle in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_model_is_a_user_error(tmp_path: Path) -> None:
    r = npuc_cli("info", str(tmp_path / "absent.onnx"))
    user_error(r, "absent.onnx")
    assert len(r.stderr.strip().splitlines()) == 1


def test_not_onnx_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\xff\x00junk" * 50)
    r = npuc_cli("info", str(path))
    user_error(r, "junk.onnx")
    assert len(r.stderr.strip().splitlines()) == 1


def test_bad_arguments_are_user_errors(conv_relu_path: Path, tmp_path: Path) -> None:
    user_error(npuc_cli("info", str(conv_relu_path), "--input-size", "1,three"), "invalid shape")
    user_error(npuc_cli("frobnicate"), "invalid choice")
    user_error(npuc_cli("run", str(conv_relu_path)), "--input")
    user_error(npuc_cli("run", str(conv_relu_path), "--input", str(tmp_path / "none.npy")), "none.npy")


def test_wrong_input_shape_is_a_user_error(conv_relu_path: Path, tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 4, 4), np.float32))
    r = npuc_cli("run", str(conv_relu_path), "--input", str(tmp_path / "x.npy"))
    user_error(r, "input 'x' expects float32[1,3,8,8], got float32[1,3,4,4]")


def test_demo_runs_the_main_job(tmp_path: Path) -> None:
    r = npuc_cli("demo", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    for text in ("graph optimization (level 3)", "INT8 quantization", "Operator Time Consuming Ranking Table",
                 "cosine vs FP32"):
        assert text in r.stdout
    for name in ("demo_shufflenet.onnx", "demo_shufflenet.npub", "perf.png", "calibration/dataset.txt"):
        assert (tmp_path / name).is_file(), name


def _quantized_blob(model_path: Path, blob: Path) -> None:
    rng = np.random.default_rng(5)
    samples = [rng.standard_normal((1, 3, 8, 8)).astype(np.float32) for _ in range(4)]
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3576")
        tk.load_onnx(model=str(model_path))
        tk.build(do_quantization=True, dataset=samples)
        tk.export_blob(str(blob))


def test_info_on_a_quantized_blob(conv_relu_path: Path, tmp_path: Path) -> None:
    blob = tmp_path / "q.npub"
    _quantized_blob(conv_relu_path, blob)
    r = npuc_cli("info", str(blob))
    assert r.returncode == 0, r.stderr
    _, meta = npuc._npuc.load_blob(str(blob))
    assert f"blob: {blob} ({blob.stat().st_size} bytes)" in r.stdout
    assert f"format: {npuc._npuc.BLOB_FORMAT_VERSION} (written by npuc {npuc.__version__})" in r.stdout
    assert "soc: rk3576" in r.stdout
    assert "quantized: yes (int8: " in r.stdout
    assert f"model digest: {meta['model_digest']}" in r.stdout
    assert "quantized_method = 'channel'" in r.stdout
    sections = {line.split()[0]: line for line in r.stdout.split("sections:\n")[1].split("inputs:")[0].splitlines()}
    assert {"META", "GRPH", "WGHT", "QUNT"} <= set(sections)
    assert all("required" in sections[kind] for kind in ("META", "GRPH", "WGHT", "QUNT"))
    # The lowered program: required, since the conv's weight is stored only as its NWGT entry
    # (format 2.0), which TASK locates.
    assert all("required" in sections[kind] for kind in ("TASK", "PIPE", "CPUO", "NWGT"))
    program = meta["program"]
    assert f"program: {program['tasks']} tasks ({program['npu_tasks']} NPU" in r.stdout
    assert "x: float32[1,3,8,8]" in r.stdout and "y: float32[1,4,8,8]" in r.stdout


def test_info_on_a_float_blob_lists_section_sizes_that_add_up(conv_relu_path: Path, tmp_path: Path) -> None:
    blob = tmp_path / "f.npub"
    assert npuc_cli("convert", str(conv_relu_path), "-t", "rk3588", "-o", str(blob)).returncode == 0
    r = npuc_cli("info", str(blob))
    assert r.returncode == 0, r.stderr
    assert "quantized: no" in r.stdout and "quantized = False" in r.stdout
    # The last section ends the file (docs/blob_format.md), so its offset + size is the file size;
    # the sizes plus the header/table/padding line add up to it.
    after = r.stdout.split("sections:\n")[1].splitlines()
    lines = after[: next(i for i, line in enumerate(after) if not line.startswith("  "))]
    rows = [re.match(r"  (\w{4}) +(?:required|optional) +(\d+) bytes \( *([\d.]+)%\) at offset (\d+)  \S", line)
            for line in lines[:-1]]
    assert all(rows), lines
    last = max(rows, key=lambda m: int(m.group(4)))
    assert int(last.group(4)) + int(last.group(2)) == blob.stat().st_size
    overhead = int(re.fullmatch(r"  header, section table and padding: (\d+) bytes", lines[-1]).group(1))
    assert sum(int(m.group(2)) for m in rows) + overhead == blob.stat().st_size


def test_info_on_bad_blobs_is_a_user_error(conv_relu_path: Path, tmp_path: Path) -> None:
    blob = tmp_path / "f.npub"
    assert npuc_cli("convert", str(conv_relu_path), "-t", "rk3588", "-o", str(blob)).returncode == 0
    user_error(npuc_cli("info", str(blob), "--input-size", "1,3,8,8"), "blob is fixed")
    data = bytearray(blob.read_bytes())
    data[-1] ^= 0xFF
    (tmp_path / "bad.npub").write_bytes(bytes(data))
    user_error(npuc_cli("info", str(tmp_path / "bad.npub")), "checksum")
    (tmp_path / "short.npub").write_bytes(bytes(data[:100]))
    user_error(npuc_cli("info", str(tmp_path / "short.npub")), "short.npub")


def test_demo_into_a_file_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("")
    user_error(npuc_cli("demo", "--out", str(tmp_path / "taken")), "taken")


def test_output_path_that_is_a_folder_is_a_user_error(conv_relu_path: Path, tmp_path: Path) -> None:
    user_error(npuc_cli("convert", str(conv_relu_path), "-t", "rk3588", "-o", str(tmp_path)), str(tmp_path))


def test_internal_errors_exit_2_with_a_one_line_message(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture) -> None:
    from npuc import cli

    def broken(args: object) -> int:
        raise KeyError("a bug")

    monkeypatch.setattr(cli, "cmd_ops", broken)
    assert cli.main(["ops"]) == cli.EXIT_INTERNAL_ERROR
    err = capsys.readouterr().err
    assert "internal error: KeyError" in err and "NPUC_DEBUG" in err and "Traceback" not in err
    monkeypatch.setenv("NPUC_DEBUG", "1")
    assert cli.main(["ops"]) == cli.EXIT_INTERNAL_ERROR
    assert "Traceback" in capsys.readouterr().err


def test_python_m_npuc_is_the_same_program(capsys: pytest.CaptureFixture) -> None:
    from npuc import cli

    assert cli.main(["socs"]) == 0
    assert npuc_cli("socs").stdout == capsys.readouterr().out


def test_progress_bar_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from npuc.dataset import progress

    items = [1, 2, 3]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert progress(items, 3, "calibrating") is items  # logs and CI get no bar (and no \r noise)
    tqdm = pytest.importorskip("tqdm")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    bar = progress(items, 3, "calibrating")
    assert isinstance(bar, tqdm.tqdm) and list(bar) == items


def test_convert_prints_no_progress_bar_when_piped(conv_relu_path: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    for i in range(3):
        np.save(tmp_path / f"s{i}.npy", rng.standard_normal((1, 3, 8, 8)).astype(np.float32))
    (tmp_path / "ds.txt").write_text("s0.npy\ns1.npy\ns2.npy\n")
    r = npuc_cli("convert", str(conv_relu_path), "-t", "rk3588", "-o", str(tmp_path / "q.npub"), "--quantize",
                 "--dataset", str(tmp_path / "ds.txt"))
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr and "calibrating" not in r.stderr


def test_every_option_of_every_command_has_help_text() -> None:
    """Issue #23: convert --algorithm, perf --csv, ... printed no explanation in --help."""
    import argparse

    from npuc.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    missing = [f"{name} {'/'.join(action.option_strings) or action.dest}"
               for name, sub in commands.items() for action in sub._actions
               if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip()]
    assert missing == []


def test_perf_takes_input_sizes_for_a_dynamic_onnx_model(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    model = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3, "h", "w"])]),
        opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "dyn.onnx"
    onnx.save(model, str(path))
    done = npuc_cli("perf", str(path), "--input-size", "1,3,32,32")
    assert done.returncode == 0, done.stderr
    assert "(1,3,32,32)" in done.stdout


def test_wide_tables_fit_columns_unless_wide(conv_relu_path: Path) -> None:
    env = {"COLUMNS": "90"}
    narrow = subprocess.run([sys.executable, "-m", "npuc", "perf", str(conv_relu_path)], capture_output=True,
                            text=True, env=dict(os.environ, **env, PYTHONPATH=PACKAGE_PARENT))
    assert narrow.returncode == 0, narrow.stderr
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 90
    assert any(line.endswith("…") for line in narrow.stdout.splitlines())
    wide = subprocess.run([sys.executable, "-m", "npuc", "perf", str(conv_relu_path), "--wide"], capture_output=True,
                          text=True, env=dict(os.environ, **env, PYTHONPATH=PACKAGE_PARENT))
    assert max(len(line) for line in wide.stdout.splitlines()) > 90
