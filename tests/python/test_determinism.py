"""Same model and options give identical results whatever OMP_NUM_THREADS is.

Each thread count runs in its own interpreter (oneDNN reads the OpenMP setting once, at start-up),
writes its outputs to an .npz, and the outputs are compared bit for bit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import numpy as np
import onnx
import pytest

from conftest import REPO_ROOT, conv_relu_model, shared_models_dir

THREAD_COUNTS = ("1", "2", "3")

# Runs one model on fixed inputs and saves every output; argv: model path, output .npz.
RUNNER = r"""
import sys
import numpy as np
import npuc

runtime = npuc.Runtime(npuc.Model.load(sys.argv[1]))
rng = np.random.default_rng(0)
feeds = [rng.standard_normal(i["shape"]).astype(i["dtype"]) for i in runtime.inputs]
outputs = runtime.run(feeds)
np.savez(sys.argv[2], *outputs)
"""


def _run_with_threads(model: Path, threads: str, out: Path) -> List[np.ndarray]:
    env = dict(os.environ, OMP_NUM_THREADS=threads)
    # An explicit PYTHONPATH (the sanitized build's package) wins over the checkout's.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), str(REPO_ROOT / "python")) if p)
    subprocess.run([sys.executable, "-c", RUNNER, str(model), str(out)], env=env, check=True, timeout=300)
    with np.load(out) as data:
        return [data[k] for k in data.files]


def _models(tmp_path: Path) -> Dict[str, Path]:
    conv = tmp_path / "conv_relu.onnx"
    onnx.save(conv_relu_model(), str(conv))
    models = {"conv_relu": conv}
    shared = shared_models_dir()
    if shared is not None:
        for name in ("glu_net", "tiny_vit"):
            if (shared / f"{name}.onnx").is_file():
                models[name] = shared / f"{name}.onnx"
    return models


def test_outputs_do_not_depend_on_omp_num_threads(tmp_path: Path) -> None:
    for name, model in _models(tmp_path).items():
        results = {t: _run_with_threads(model, t, tmp_path / f"{name}_{t}.npz") for t in THREAD_COUNTS}
        reference = results[THREAD_COUNTS[0]]
        for threads, outputs in results.items():
            assert len(outputs) == len(reference)
            for k, (got, want) in enumerate(zip(outputs, reference)):
                assert np.array_equal(got, want), (
                    f"{name}: output {k} with OMP_NUM_THREADS={threads} differs from OMP_NUM_THREADS=1 "
                    f"(max abs diff {np.max(np.abs(got.astype(np.float64) - want)):.3g})"
                )


@pytest.mark.skipif(shared_models_dir() is None, reason="shared models not found (set NPUC_SHARED_MODELS)")
def test_repeated_loads_give_identical_results() -> None:
    """Loading the same file twice (fresh import, fresh plan) gives the same bits."""
    import npuc

    path = shared_models_dir() / "glu_net.onnx"
    outputs = []
    for _ in range(2):
        runtime = npuc.Runtime(npuc.Model.load(str(path)))
        rng = np.random.default_rng(0)
        outputs.append(runtime.run([rng.standard_normal(i["shape"]).astype(i["dtype"]) for i in runtime.inputs]))
    for a, b in zip(*outputs):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------- blobs and calibration

# Compiles argv[1] for rk3588 (float build, then INT8 on a fixed synthetic calibration set),
# writes both blobs into folder argv[2], and the calibrated (min, max) of every activation for
# each algorithm into argv[2]/ranges.json (floats as hex, so the comparison is bit for bit).
COMPILER = r"""
import contextlib, io, json, sys
from pathlib import Path
import numpy as np
import npuc
from npuc._npuc import Calibrator

model_path, out = sys.argv[1], Path(sys.argv[2])
rng = np.random.default_rng(0)
tk = npuc.Toolkit()
tk.config(target_platform="rk3588")
tk.load_onnx(model_path)
samples = [[rng.standard_normal(i["shape"]).astype(np.float32) for i in tk.model.inputs] for _ in range(4)]
with contextlib.redirect_stdout(io.StringIO()):
    tk.build(do_quantization=False)
    tk.export_blob(str(out / "float.npub"))
    tk.build(do_quantization=True, dataset=samples)
    tk.export_blob(str(out / "int8.npub"))
calibrator = Calibrator(tk.model)
for sample in samples:
    calibrator.add_sample(sample)
ranges = {
    algo: {name: [float(lo).hex(), float(hi).hex()] for name, (lo, hi) in sorted(calibrator.ranges(algo).items())}
    for algo in ("normal", "kl_divergence", "mmse", "percentile")
}
(out / "ranges.json").write_text(json.dumps(ranges, sort_keys=True))
"""

BLOB_THREAD_COUNTS = ("1", "2")


def _compile_with_threads(model: Path, threads: str, out: Path) -> Dict[str, bytes]:
    out.mkdir(parents=True)
    env = dict(os.environ, OMP_NUM_THREADS=threads)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), str(REPO_ROOT / "python")) if p)
    subprocess.run([sys.executable, "-c", COMPILER, str(model), str(out)], env=env, check=True, timeout=600)
    return {name: (out / name).read_bytes() for name in ("float.npub", "int8.npub", "ranges.json")}


def _blob_models(tmp_path: Path) -> Dict[str, Path]:
    conv = tmp_path / "conv_relu.onnx"
    onnx.save(conv_relu_model(), str(conv))
    models = {"conv_relu": conv}
    shared = shared_models_dir()
    if shared is not None and (shared / "shufflenet_v2_x0_5.onnx").is_file():
        models["shufflenet_v2_x0_5"] = shared / "shufflenet_v2_x0_5.onnx"
    return models


def test_blobs_and_calibration_do_not_depend_on_runs_or_omp_num_threads(tmp_path: Path) -> None:
    """Two runs with OMP_NUM_THREADS=1 and one with 2, each in a fresh interpreter: the float and
    INT8 blobs are byte-identical and every algorithm's calibrated ranges are equal to the bit."""
    for name, model in _blob_models(tmp_path).items():
        runs = [(t, _compile_with_threads(model, t, tmp_path / f"{name}_{t}_{k}"))
                for k, t in enumerate(("1",) + BLOB_THREAD_COUNTS)]
        (_, reference), others = runs[0], runs[1:]
        assert reference["int8.npub"] != reference["float.npub"]
        assert len(json.loads(reference["ranges.json"])["normal"]) > 0
        for threads, files in others:
            for file, data in files.items():
                assert data == reference[file], (
                    f"{name}: {file} with OMP_NUM_THREADS={threads} differs from the first OMP_NUM_THREADS=1 run"
                )
