"""Shared fixtures: the npuc package (from the checkout unless PYTHONPATH provides one), the shared
real-model folder, and small ONNX models built with onnx.helper."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# The CLI cuts wide tables to $COLUMNS: tests read whole lines, whatever terminal runs them (the
# test of the cutting sets it for its own subprocess).
os.environ.pop("COLUMNS", None)

try:
    import npuc  # noqa: F401
except ImportError:
    sys.path.insert(0, str(REPO_ROOT / "python"))

import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def shared_models_dir() -> Optional[Path]:
    """NPUC_SHARED_MODELS, else a `shared/models` folder next to the repository (or above it)."""
    env = os.environ.get("NPUC_SHARED_MODELS")
    if env:
        return Path(env) if Path(env).is_dir() else None
    for parent in REPO_ROOT.parents:
        candidate = parent / "shared" / "models"
        if candidate.is_dir():
            return candidate
    return None


def conv_relu_model(opset: int = 13) -> onnx.ModelProto:
    """x[1,3,8,8] -> Conv(4 filters, 3x3, pad 1, bias) -> Relu -> y[1,4,8,8]."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "conv_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        initializer=[w, b],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def conv_relu_reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """Direct numpy evaluation of conv_relu_model (float64 accumulation)."""
    inits = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    w, b = inits["w"], inits["b"]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, 4, 8, 8))
    for i in range(8):
        for j in range(8):
            patch = xp[:, :, i : i + 3, j : j + 3]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3])) + b
    return np.maximum(out, 0).astype(np.float32)


@pytest.fixture
def conv_relu_path(tmp_path: Path) -> Path:
    path = tmp_path / "conv_relu.onnx"
    onnx.save(conv_relu_model(), str(path))
    return path


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """The accuracy metric of these tests: max|got - want| / max(max|want|, 1e-6).

    Relative to the output's largest magnitude rather than per element, so near-zero elements
    (where FP32 summation order dominates) do not make a correct result look wrong."""
    return float(np.max(np.abs(got.astype(np.float64) - want)) / max(float(np.max(np.abs(want))), 1e-6))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int) -> None:
    """Under `make test` (NPUC_STRICT_DEPS=1), which installs every test dependency, a skipped
    test means an install step is missing: list the reasons and fail the run. Every skip in this
    suite is for a missing dependency (a module, node/onnxruntime-node, the shared models)."""
    if os.environ.get("NPUC_STRICT_DEPS") != "1":
        return
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    terminalreporter.write_line(f"NPUC_STRICT_DEPS=1: {len(skipped)} test(s) skipped for a missing dependency:",
                                red=True)
    for report in skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        terminalreporter.write_line(f"  {report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The failing exit status that goes with pytest_terminal_summary's list."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if os.environ.get("NPUC_STRICT_DEPS") == "1" and reporter and reporter.stats.get("skipped"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# ---------------------------------------------------------------------- ONNX Runtime reference

BENCH_DIR = REPO_ROOT / "bench"


def require_ort() -> None:
    """Skips the test when ONNX Runtime (node + npm onnxruntime-node in bench/) is missing; under
    NPUC_STRICT_DEPS (make test) such a skip fails the run."""
    import shutil

    if shutil.which("node") is None:
        pytest.skip("node is not installed (tools/install_deps.sh test)")
    if not (BENCH_DIR / "node_modules" / "onnxruntime-node").is_dir():
        pytest.skip("onnxruntime-node is not installed in bench/ (tools/install_deps.sh test)")


def ort_outputs(model, feeds):
    """ONNX Runtime's outputs for `feeds` ({name: ndarray}, dtypes kept) on the model file `model`:
    onnxruntime-node through bench/common.py, CPU, one thread, all graph optimizations."""
    require_ort()
    if str(BENCH_DIR) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR))
    from common import run_ort  # bench/common.py

    return run_ort(Path(model), feeds, threads=1, warmup=0, iters=1)[1]
