"""Shared helpers for npuc benchmarks: locating models, the ONNX Runtime peer, timing."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
CACHE = BENCH_DIR / ".cache"


def shared_models_dir() -> Path:
    """shared/models beside the repository (or $NPUC_SHARED_MODELS)."""
    env = os.environ.get("NPUC_SHARED_MODELS")
    if env:
        return Path(env)
    return REPO.parent / "shared" / "models"


def load_ref(model: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Inputs and ONNX Runtime reference outputs stored beside a shared model."""
    ref = np.load(model.with_suffix(".ref.npz"))
    ins = {k.split(":", 1)[1]: ref[k] for k in ref.files if k.startswith("input:")}
    outs = {k.split(":", 1)[1]: ref[k] for k in ref.files if k.startswith("output:")}
    return ins, outs


# numpy dtype name -> ORT tensor type (bench/ort_runner.js), and back.
ORT_DTYPES = {"float32": "float32", "float64": "float64", "int64": "int64", "int32": "int32",
              "int16": "int16", "int8": "int8", "uint8": "uint8", "uint16": "uint16", "bool": "bool"}
NUMPY_OF_ORT = {v: np.dtype(k) for k, v in ORT_DTYPES.items()}


def ensure_ort() -> Path:
    """Installs onnxruntime-node into bench/node_modules (npm, --ignore-scripts) if missing."""
    if not (BENCH_DIR / "node_modules" / "onnxruntime-node").is_dir():
        if shutil.which("npm") is None:
            raise RuntimeError("npm is not installed: run `make bench-deps`")
        subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund"],
                       cwd=BENCH_DIR, check=True, stdout=subprocess.DEVNULL)
    return BENCH_DIR / "ort_runner.js"


def _ort_call(model: Path, inputs: dict[str, np.ndarray], threads: int, warmup: int, iters: int,
              report_status: bool) -> tuple[dict, list[np.ndarray]]:
    """One node process running `model` in ONNX Runtime: its JSON result and the outputs."""
    runner = ensure_ort()
    with tempfile.TemporaryDirectory() as tmp:
        spec_inputs = []
        for i, (name, arr) in enumerate(inputs.items()):
            f = Path(tmp) / f"in_{i}.bin"
            arr = np.asarray(arr)
            dtype = ORT_DTYPES.get(arr.dtype.name)
            if dtype is None:
                raise ValueError(f"input {name}: numpy dtype {arr.dtype} has no ORT counterpart here")
            np.ascontiguousarray(arr).tofile(f)
            spec_inputs.append({"name": name, "dims": list(arr.shape), "dtype": dtype, "file": str(f)})
        spec = {"model": str(model), "inputs": spec_inputs, "threads": threads, "warmup": warmup,
                "iters": iters, "out_dir": tmp, "report_status": report_status}
        spec_file = Path(tmp) / "spec.json"
        spec_file.write_text(json.dumps(spec))
        proc = subprocess.run(["node", str(runner), str(spec_file)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"ONNX Runtime failed on {model}: {proc.stderr.strip()[-800:]}")
        res = json.loads(proc.stdout)
        outs = [np.fromfile(o["file"], dtype=NUMPY_OF_ORT[o.get("dtype", "float32")]).reshape(o["dims"])
                for o in res["outputs"]]
        return res, outs


def run_ort(model: Path, inputs: dict[str, np.ndarray], threads: int, warmup: int,
            iters: int) -> tuple[list[float], list[np.ndarray]]:
    """Times `model` in ONNX Runtime (node); returns per-run latencies (ms) and the outputs.

    Inputs keep their numpy dtype (float32, float64, int64, int32, int8, uint8, bool); outputs come
    back in the dtype ORT produced."""
    res, outs = _ort_call(model, inputs, threads, warmup, iters, report_status=False)
    return res["latencies_ms"], outs


def ort_memory(model: Path, inputs: dict[str, np.ndarray], threads: int, iters: int) -> dict[str, dict[str, int]]:
    """The node process's /proc/self/status memory fields (bytes) around `iters` ONNX Runtime runs:
    {"start": after onnxruntime-node is loaded, before the session; "end": after the runs}."""
    res, _ = _ort_call(model, inputs, threads, 0, iters, report_status=True)
    return res["status"]


def proc_status_fields(text: str) -> dict[str, int]:
    """The memory fields of a /proc/<pid>/status text (VmHWM, VmRSS, RssAnon, RssFile, RssShmem), in bytes."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in PROC_MEMORY_FIELDS:
            out[key] = int(value.split()[0]) * 1024  # the kernel prints kB
    return out


#: The /proc/<pid>/status fields the memory benchmarks read (bench/ort_runner.js reads the same).
PROC_MEMORY_FIELDS = ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem")


def fresh_python(code: str, args: Sequence[str], extra_path: Sequence[str] = ()) -> str:
    """Runs `code` in a fresh interpreter (this one's executable) with `args` as sys.argv[1:] and
    the repository's python/ (after `extra_path`, first on PYTHONPATH) importable; returns its stdout.
    Memory benchmarks need the fresh process: a peak RSS cannot be reset."""
    env = dict(os.environ)
    parts = [*extra_path, env.get("PYTHONPATH", ""), str(REPO / "python")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"measurement subprocess failed: {out.stderr.strip()[-1500:]}")
    return out.stdout


def time_calls(fn: Callable[[], object], warmup: int, iters: int) -> list[float]:
    """Per-call wall time in milliseconds."""
    for _ in range(warmup):
        fn()
    lat = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        lat.append((time.perf_counter() - t0) * 1e3)
    return lat


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    """max|a-b| / max|b| (the metric used for the shared models' references)."""
    return float(np.max(np.abs(a.astype(np.float64) - b)) / max(float(np.max(np.abs(b))), 1e-12))
