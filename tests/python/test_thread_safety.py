"""One loaded Runtime serves inference from several Python threads at once (the C++ side releases
the GIL while the graph runs), and every threaded result equals the serial result bit for bit."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import List

import numpy as np
import pytest

import npuc
from conftest import conv_relu_model, shared_models_dir

THREADS = 8
RUNS_PER_THREAD = 50


def _inputs_for(runtime: npuc.Runtime, seed: int) -> List[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(info["shape"]).astype(info["dtype"]) for info in runtime.inputs]


def _hammer(runtime: npuc.Runtime) -> None:
    """THREADS x RUNS_PER_THREAD runs, each thread with its own inputs, all compared to serial runs."""
    feeds = [_inputs_for(runtime, seed) for seed in range(THREADS)]
    expected = [runtime.run(f) for f in feeds]  # serial reference
    start = threading.Barrier(THREADS)  # maximise overlap: every thread starts at once

    def worker(t: int) -> int:
        start.wait()
        mismatches = 0
        for _ in range(RUNS_PER_THREAD):
            got = runtime.run(feeds[t])
            mismatches += sum(not np.array_equal(g, e) for g, e in zip(got, expected[t]))
        return mismatches

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        mismatches = list(pool.map(worker, range(THREADS)))
    assert mismatches == [0] * THREADS, f"outputs differing from the serial run, per thread: {mismatches}"


@pytest.mark.parametrize("host_fusion", [True, False], ids=["fused", "unfused"])
def test_threads_share_one_runtime(host_fusion: bool) -> None:
    model = npuc.Model.from_bytes(conv_relu_model().SerializeToString())
    _hammer(npuc.Runtime(model, host_fusion=host_fusion))


@pytest.mark.skipif(shared_models_dir() is None, reason="shared models not found (set NPUC_SHARED_MODELS)")
def test_threads_share_one_runtime_on_a_real_model() -> None:
    """glu_net: Conv, Split, Sigmoid, Mul (arena reuse across nodes makes sharing bugs visible)."""
    path: Path = shared_models_dir() / "glu_net.onnx"
    _hammer(npuc.Runtime(npuc.Model.load(str(path))))


def test_inputs_are_not_modified_by_concurrent_runs() -> None:
    runtime = npuc.Runtime(npuc.Model.from_bytes(conv_relu_model().SerializeToString()))
    x = _inputs_for(runtime, 7)
    before = [a.copy() for a in x]
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda _: runtime.run(x), range(16)))
    for a, b in zip(x, before):
        np.testing.assert_array_equal(a, b)
