"""``Toolkit.codegen`` (issue #23): the generated C++ program builds against this npuc build's
library and, run on the same image, prints and writes what ``Toolkit.inference`` returns, bit
for bit (INT8 build, image given as uint8 HWC: the program preprocesses as inference does)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import npuc
from conftest import conv_relu_path  # noqa: F401  (fixture)


def _cmake() -> str:
    tool = shutil.which("cmake")
    if tool is None:
        pytest.skip("cmake is not installed")
    return tool


def test_generated_program_builds_and_matches_inference(conv_relu_path: Path, tmp_path: Path) -> None:  # noqa: F811
    from PIL import Image

    cmake = _cmake()
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
    Image.fromarray(image).save(tmp_path / "image.png")
    for i in range(4):  # images go through a dataset.txt, which applies mean/std as inference does
        Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(tmp_path / f"calib{i}.png")
    (tmp_path / "dataset.txt").write_text("".join(f"calib{i}.png\n" for i in range(4)))
    app = tmp_path / "app"
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588", mean_values=[[120, 110, 100]], std_values=[[60, 58, 57]])
        tk.load_onnx(model=str(conv_relu_path))
        tk.build(do_quantization=True, dataset=str(tmp_path / "dataset.txt"))
        assert tk.codegen(str(app), inputs=[str(tmp_path / "image.png")]) == 0
        want = tk.inference(inputs=[image])[0]
    assert sorted(p.name for p in app.iterdir()) == ["CMakeLists.txt", "README.md", "inputs", "main.cpp", "model.npub"]
    np.testing.assert_array_equal(np.load(app / "inputs" / "input_0.npy"), image)
    build = app / "build"
    for cmd in ([cmake, "-S", str(app), "-B", str(build), "-G", "Ninja"], [cmake, "--build", str(build)]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = subprocess.run([str(build / "npuc_app"), str(app / "model.npub"), str(app / "inputs" / "input_0.npy")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "on rk3588 (program)" in run.stdout and "output 0 'y' [1,4,8,8]" in run.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "output_0.npy"), want)


def test_codegen_refuses_a_non_empty_folder_and_counts_inputs(conv_relu_path: Path, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "keep.txt").write_text("mine")
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(conv_relu_path))
        tk.build(do_quantization=False)
        with pytest.raises(npuc.OutputError, match="is not empty; pass overwrite=True"):
            tk.codegen(str(tmp_path / "app"))
        with pytest.raises(npuc.OutputError, match="lists 2 file\\(s\\) for a model with 1 input"):
            tk.codegen(str(tmp_path / "other"), inputs=["a.npy", "b.npy"])
    assert (tmp_path / "app" / "keep.txt").read_text() == "mine"
