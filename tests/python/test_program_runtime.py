"""The compiled runtime after load_blob (issue #6): a blob carrying its lowered program and memory
plan runs its tasks in program order over the planned activation arena (runtime == "program"),
and its outputs equal the in-memory build's simulator bit for bit, for every shared model in INT8
and FP16 on rk3588; the arena is allocated once and serves concurrent runs; a blob without the
program sections keeps the plain simulator; op_target builds run their program too."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import List, Tuple

import numpy as np
import pytest

import npuc
from conftest import conv_relu_model, shared_models_dir

MODELS_DIR = shared_models_dir()
MODEL_PATHS = sorted(MODELS_DIR.glob("*.onnx")) if MODELS_DIR else []
needs_models = pytest.mark.skipif(not MODEL_PATHS, reason="shared models not found (set NPUC_SHARED_MODELS)")


def reference_inputs(model_path: Path) -> List[np.ndarray]:
    """The fixed input stored next to the shared model."""
    ref = np.load(model_path.with_suffix(".ref.npz"))
    return [ref[k] for k in ref.files if k.startswith("input:")]


def build_export(model_path: Path, blob: Path, quantize: bool, feeds: List[List[np.ndarray]]) -> List[List[np.ndarray]]:
    """Builds (INT8 from two calibration samples, or FP16) and exports the model for rk3588;
    returns the in-memory build's outputs for each feed."""
    inputs = reference_inputs(model_path)
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(model_path))
        tk.build(do_quantization=quantize, dataset=[inputs, [0.5 * x for x in inputs]] if quantize else None)
        assert tk._simulator().runtime == "simulator"  # the in-memory build: node by node
        expected = [tk.inference(inputs=f) for f in feeds]
        assert tk.export_blob(blob) == 0
    return expected


def loaded(blob: Path) -> Tuple[npuc.Toolkit, object]:
    """A Toolkit with the blob loaded and its runtime initialized, and the model it runs."""
    tk = npuc.Toolkit()
    assert tk.load_blob(blob) == 0
    assert tk.init_runtime() == 0
    return tk, tk._simulator()


@needs_models
@pytest.mark.parametrize("quantize", [True, False], ids=["int8", "fp16"])
@pytest.mark.parametrize("model_path", MODEL_PATHS, ids=lambda p: getattr(p, "stem", str(p)))
def test_loaded_blob_runs_its_program_bit_equal_to_the_in_memory_build(
    model_path: Path, quantize: bool, tmp_path: Path
) -> None:
    rng = np.random.default_rng(1)
    ref = reference_inputs(model_path)
    feeds = [ref, [rng.standard_normal(x.shape).astype(np.float32) for x in ref]]
    blob = tmp_path / "m.npub"
    expected = build_export(model_path, blob, quantize, feeds)
    tk, model = loaded(blob)
    with tk:
        assert model.runtime == "program", model.runtime_note
        assert model.runtime_note == ""
        assert model.arena_bytes > 0
        for feed, want in zip(feeds, expected):
            got = tk.inference(inputs=feed)
            assert len(got) == len(want)
            for g, e in zip(got, want):
                assert g.dtype == e.dtype and g.shape == e.shape
                np.testing.assert_array_equal(g, e)
        # Several runs, one arena: allocated by the first and reused.
        assert model.arena_allocations == 1


@needs_models
def test_arena_serves_threads_and_stays_allocated_once_per_concurrent_run(tmp_path: Path) -> None:
    """8 threads x 50 runs of the loaded glu_net program, each equal to its serial run."""
    path = MODELS_DIR / "glu_net.onnx"
    threads, runs = 8, 50
    rng = np.random.default_rng(2)
    feeds = [[rng.standard_normal(x.shape).astype(np.float32) for x in reference_inputs(path)] for _ in range(threads)]
    blob = tmp_path / "m.npub"
    expected = build_export(path, blob, True, feeds)
    tk, model = loaded(blob)
    assert model.runtime == "program"
    start = threading.Barrier(threads)

    def worker(t: int) -> int:
        start.wait()
        return sum(
            not np.array_equal(g, e) for _ in range(runs) for g, e in zip(model.run(feeds[t]), expected[t])
        )

    with ThreadPoolExecutor(max_workers=threads) as pool:
        mismatches = list(pool.map(worker, range(threads)))
    assert mismatches == [0] * threads
    assert 1 <= model.arena_allocations <= threads
    before = model.arena_allocations
    for _ in range(5):  # sequential runs take a pooled arena: no new allocation
        model.run(feeds[0])
    assert model.arena_allocations == before
    tk.release()


def test_blob_built_with_op_target_runs_its_program(tmp_path: Path) -> None:
    """The export lowers and plans the partition op_target gives and the loader re-derives it from
    the recorded options, so an op_target blob runs its program too, with the same outputs
    (more in test_op_target_blob.py)."""
    onnx_path = tmp_path / "conv_relu.onnx"
    onnx_path.write_bytes(conv_relu_model().SerializeToString())
    x = np.random.default_rng(3).standard_normal((1, 3, 8, 8)).astype(np.float32)
    blob = tmp_path / "m.npub"
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588", op_target={"relu": "cpu"})
        tk.load_onnx(model=str(onnx_path))
        tk.build(do_quantization=True, dataset=[[x]])
        expected = tk.inference(inputs=[x])
        assert tk.export_blob(blob) == 0
    tk, model = loaded(blob)
    with tk:
        assert model.runtime == "program", model.runtime_note
        assert model.runtime_note == ""
        assert tk.blob_meta["program"]["cpu_op_nodes"] == ["relu"]
        for g, e in zip(tk.inference(inputs=[x]), expected):
            np.testing.assert_array_equal(g, e)
        assert model.arena_allocations == 1
