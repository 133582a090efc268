"""A loaded blob's weights stay in its file mapping (issue #19, docs/performance.md "Memory: peak
RSS"): loading a blob whose weights are big grows the process's file-backed RSS by them, not its
anonymous RSS (measured in a fresh subprocess from /proc/self/status); and the file can be removed,
or replaced by renaming another file over it, after load_blob without the loaded model changing.
(tests/cpp/test_blob_mapping.cc checks that the weight pointers lie inside the mapped file.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc

PACKAGE_PARENT = str(Path(os.path.abspath(npuc.__file__)).parent.parent)
WEIGHT_MB = 48

# Loads the blob argv[1] with _npuc.load_compiled and prints the growth of RssAnon and RssFile.
PROBE = r"""
import json, sys
from npuc import _npuc
def status():
    with open("/proc/self/status") as f:
        return {k: int(v.split()[0]) * 1024 for k, v in (l.split(":", 1) for l in f) if k in ("RssAnon", "RssFile")}
before = status()
compiled = _npuc.load_compiled(sys.argv[1])
after = status()
print(json.dumps({k: after[k] - before[k] for k in before}))
"""


def add_model(path: Path, elements: int, seed: int) -> Path:
    """y = x + w with w a float32 constant of `elements` values (kept as such in the blob's WGHT)."""
    w = np.random.default_rng(seed).standard_normal((1, elements // 1024, 32, 32)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(w.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(w.shape))],
        initializer=[numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def export_blob(onnx_path: Path, blob: Path, quantize: bool = False) -> Path:
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(onnx_path))
        if quantize:
            x = np.random.default_rng(0).standard_normal(tk.model.inputs[0]["shape"]).astype(np.float32)
            ds = blob.with_suffix(".npy")
            np.save(ds, x)
            (blob.parent / "ds.txt").write_text(f"{ds}\n")
            tk.build(do_quantization=True, dataset=str(blob.parent / "ds.txt"))
        else:
            tk.build(do_quantization=False)
        tk.export_blob(str(blob))
    return blob


def test_big_weights_are_file_backed_after_load(tmp_path: Path) -> None:
    weight_bytes = WEIGHT_MB << 20
    blob = export_blob(add_model(tmp_path / "add.onnx", weight_bytes // 4, 0), tmp_path / "add.npub")
    assert blob.stat().st_size > weight_bytes
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PACKAGE_PARENT, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", PROBE, str(blob)], env=env, check=True, capture_output=True,
                         text=True)
    growth = json.loads(out.stdout.strip().splitlines()[-1])
    # The checksum reads every page of the file, so the weights become resident, as file pages.
    assert growth["RssFile"] > 0.9 * weight_bytes, growth
    assert growth["RssAnon"] < 0.1 * weight_bytes, growth


@pytest.mark.parametrize("replace", ["rename", "remove"])
def test_the_file_can_go_after_load_blob(tmp_path: Path, conv_relu_path: Path, replace: str) -> None:
    blob = export_blob(conv_relu_path, tmp_path / "m.npub", quantize=True)
    other = export_blob(add_model(tmp_path / "other.onnx", 4096, 1), tmp_path / "other.npub")
    with npuc.Toolkit() as tk:
        tk.load_blob(str(blob))
        tk.init_runtime()
        x = np.random.default_rng(2).standard_normal(tk.model.inputs[0]["shape"]).astype(np.float32)
        before = tk.inference(inputs=[x])
        if replace == "rename":  # atomic replacement: the loaded model keeps the old file's pages
            os.replace(other, blob)
        else:
            blob.unlink()
        after = tk.inference(inputs=[x])
        assert len(after) == len(before)
        for a, b in zip(after, before):
            np.testing.assert_array_equal(a, b)
        assert tk.eval_perf(is_print=False) is not None  # reads the program, its packed weights included
