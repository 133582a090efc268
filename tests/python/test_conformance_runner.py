"""tests/conformance/run_conformance.py's accounting of cases it does not run (#22): out-of-scope
ops (training, string, sequence, optional) are counted by reason; a case not run for any other op
fails the run, so an op dropped from the registry or a new test set's op cannot pass unnoticed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from conftest import REPO_ROOT

RUNNER = REPO_ROOT / "tests" / "conformance" / "run_conformance.py"
sys.path.insert(0, str(RUNNER.parent))
import run_conformance  # noqa: E402


@pytest.mark.parametrize("ops,reason", [
    (["SoftmaxCrossEntropyLoss"], "training"),
    (["ai.onnx.preview.training.Adam"], "training"),
    (["StringNormalizer"], "string"),
    (["Loop", "SequenceInsert"], "sequence"),
    (["OptionalHasElement"], "optional"),
    (["FancyNewOp"], "missing op"),
])
def test_reasons(ops, reason) -> None:
    assert run_conformance.not_run_reason(ops) == reason


def _case(root: Path, name: str, op: str, domain: str = "") -> None:
    node = helper.make_node(op, ["x"], ["y"], domain=domain)
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    case = root / "node" / name
    case.mkdir(parents=True)
    onnx.save(helper.make_model(graph, opset_imports=opsets), str(case / "model.onnx"))


def _run(data: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(REPO_ROOT / "python")}
    return subprocess.run([sys.executable, str(RUNNER), "--data-dir", str(data), "--set", "node", "--jobs", "1"],
                          capture_output=True, text=True, env=env, check=False)


def test_out_of_scope_ops_are_counted_by_reason_and_pass(tmp_path: Path) -> None:
    _case(tmp_path, "test_seq", "SequenceEmpty")
    _case(tmp_path, "test_adam", "Adam", domain="ai.onnx.preview.training")
    result = _run(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not run, by reason: sequence 1, training 1" in result.stdout
    assert "node: 0 passed, 0 failed, 0 skipped, 2 not run" in result.stdout


def test_a_case_not_run_for_an_inference_op_fails_the_run(tmp_path: Path) -> None:
    _case(tmp_path, "test_seq", "SequenceEmpty")
    _case(tmp_path, "test_fancy", "FancyNewOp")
    result = _run(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL: in-scope ops missing" in result.stdout and "FancyNewOp" in result.stdout
