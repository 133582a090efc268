"""op_target reaches the compiled blob (issue #5/#6 integration): a build with
``config(op_target=...)`` exports a program whose CPU ops include the forced node and a memory plan
for that same partition; ``load_blob`` re-derives the partition from the recorded build options,
verifies both against it and runs the program runtime, bit-equal to the in-memory build; and
``eval_memory`` reports the same numbers after ``build`` and after ``load_blob``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc
from conftest import shared_models_dir

MODELS_DIR = shared_models_dir()
MOBILENET = MODELS_DIR / "mobilenet_v2.onnx" if MODELS_DIR else None


def chain_model() -> onnx.ModelProto:
    """x[1,8,8,8] -> conv1 -> relu1 -> conv2 -> relu2 -> conv3 -> y: every Conv+Relu fuses on the NPU
    unless op_target moves a Relu, so forcing relu1 splits the chain with two hand-overs."""
    rng = np.random.default_rng(0)
    inits, nodes, prev = [], [], "x"
    for i in (1, 2, 3):
        w = numpy_helper.from_array((0.2 * rng.standard_normal((8, 8, 3, 3))).astype(np.float32), f"w{i}")
        inits.append(w)
        nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], name=f"conv{i}",
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        prev = f"c{i}"
        if i < 3:
            nodes.append(helper.make_node("Relu", [prev], [f"r{i}"], name=f"relu{i}"))
            prev = f"r{i}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def build_export(path: Path, blob: Path, quantize: bool, op_target: Dict[str, str],
                 feeds: List[np.ndarray]) -> tuple:
    """Builds with op_target for rk3588, exports; returns (outputs per feed, eval_memory, partition)."""
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588", op_target=op_target)
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=quantize, dataset=[[f] for f in feeds[:2]] if quantize else None)
        expected = [tk.inference(inputs=[f]) for f in feeds]
        memory = tk.eval_memory(is_print=False)
        cpu = [n["node"] for n in tk.partition_report["cpu_nodes"]]
        assert tk.export_blob(blob) == 0
    return expected, memory, cpu


def check_loaded(blob: Path, forced: str, quantize: bool, feeds: List[np.ndarray], expected: list,
                 memory: dict) -> None:
    """The loaded op_target blob: program with `forced` on the CPU, program runtime, same bits,
    same eval_memory."""
    with npuc.Toolkit() as tk:
        assert tk.load_blob(blob) == 0 and tk.init_runtime() == 0
        model = tk._simulator()
        assert model.runtime == "program", model.runtime_note
        assert model.runtime_note == ""
        assert forced in tk.blob_meta["program"]["cpu_op_nodes"], tk.blob_meta["program"]
        for f, want in zip(feeds, expected):
            got = tk.inference(inputs=[f])
            for g, e in zip(got, want):
                np.testing.assert_array_equal(g, e)
        loaded = tk.eval_memory(is_print=False)
        assert loaded["plan_from_blob"] is True
        assert loaded.summary() == dict(memory.summary(), plan_from_blob=True)
        assert loaded["tensors"] == memory["tensors"]
        assert model.arena_bytes == loaded["arena_bytes"]
        # The forced node's output is planned in host format (FP32 on the CPU side).
        assert any(t["format"] == "host" and t["home"] == "arena" for t in loaded["tensors"])
        assert model.mode == ("int8" if quantize else "fp16")


@pytest.mark.parametrize("quantize", [True, False], ids=["int8", "fp16"])
def test_op_target_blob_runs_its_partition_on_the_program(tmp_path: Path, quantize: bool) -> None:
    path = tmp_path / "chain.onnx"
    onnx.save(chain_model(), str(path))
    rng = np.random.default_rng(5)
    feeds = [rng.standard_normal((1, 8, 8, 8)).astype(np.float32) for _ in range(3)]
    blob = tmp_path / "m.npub"
    expected, memory, cpu = build_export(path, blob, quantize, {"relu1": "cpu"}, feeds)
    assert cpu == ["relu1"]
    check_loaded(blob, "relu1", quantize, feeds, expected, memory)

    # The same model without op_target plans no host buffer in the arena: the option changed the plan.
    plain = tmp_path / "plain.npub"
    _, plain_memory, plain_cpu = build_export(path, plain, quantize, {}, feeds[:2])
    assert plain_cpu == []
    assert not any(t["format"] == "host" and t["home"] == "arena" for t in plain_memory["tensors"])
    assert plain_memory["tensors"] != memory["tensors"]


@pytest.mark.skipif(MOBILENET is None or not MOBILENET.exists(), reason="shared models not found")
@pytest.mark.parametrize("quantize", [True, False], ids=["int8", "fp16"])
def test_op_target_on_a_shared_model(tmp_path: Path, quantize: bool) -> None:
    """mobilenet_v2 with every Add (the residual joins) forced to the CPU by op type."""
    ref = np.load(MOBILENET.with_suffix(".ref.npz"))
    x = [ref[k] for k in ref.files if k.startswith("input:")][0]
    feeds = [x, 0.5 * x]
    blob = tmp_path / "m.npub"
    expected, memory, cpu = build_export(MOBILENET, blob, quantize, {"Add": "cpu"}, feeds)
    assert len(cpu) >= 1
    check_loaded(blob, cpu[0], quantize, feeds, expected, memory)


def test_cli_convert_op_target_blob_runs_on_the_program(tmp_path: Path) -> None:
    """``npuc convert --op-target`` records op_target; the blob it writes loads on the program runtime."""
    path = tmp_path / "chain.onnx"
    onnx.save(chain_model(), str(path))
    blob = tmp_path / "cli.npub"
    subprocess.run([sys.executable, "-m", "npuc", "convert", str(path), "-t", "rk3588", "-o", str(blob),
                    "--op-target", "relu2=cpu"], check=True, capture_output=True)
    with npuc.Toolkit() as tk:
        assert tk.load_blob(blob) == 0
        model = tk._simulator()
        assert tk.blob_meta["options"]["op_target"] == "{'relu2': 'cpu'}"
        assert model.runtime == "program", model.runtime_note
        assert tk.blob_meta["program"]["cpu_op_nodes"] == ["relu2"]


def test_eval_perf_after_load_blob_costs_the_recorded_partition(tmp_path: Path) -> None:
    """load_blob restores the recorded op_target, so eval_perf (and ``npuc perf blob.npub``) cost the
    partition the blob runs, as after build()."""
    path = tmp_path / "chain.onnx"
    onnx.save(chain_model(), str(path))
    blob = tmp_path / "m.npub"
    x = np.random.default_rng(2).standard_normal((1, 8, 8, 8)).astype(np.float32)
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588", op_target={"relu1": "cpu"})
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=True, dataset=[[x]])
        built = tk.eval_perf(is_print=False).summary
        tk.export_blob(blob)
    assert built["cpu_ops"] == 1
    with npuc.Toolkit() as tk:
        tk.load_blob(blob)
        loaded = tk.eval_perf(is_print=False).summary
    assert loaded["cpu_ops"] == built["cpu_ops"]
    assert loaded["total_time_us"] == built["total_time_us"]
    r = subprocess.run([sys.executable, "-m", "npuc", "perf", str(blob)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "in 1 ops" in r.stdout and "CPU    (1,8,8,8)" in r.stdout, r.stdout  # relu1's own CPU row


def test_compile_options_cross_typed_and_come_back_from_the_blob() -> None:
    """CompileOptions crosses pybind11 typed; its META text is the one codec's (sorted, repr floats)."""
    options = npuc._npuc.CompileOptions()
    options.quantized = False
    options.op_target = {"b": "npu", "a": "cpu"}
    options.single_core_mode = True
    options.mean_values = [[0.5, 1e-05, 3.0]]
    assert options.recorded()["op_target"] == "{'a': 'cpu', 'b': 'npu'}"  # sorted: one spelling
    assert options.recorded()["mean_values"] == "[[0.5, 1e-05, 3.0]]"  # as Python's repr writes it
    with pytest.raises(npuc.ConfigError, match="quantized_method"):
        options.quantized_method = "diagonal"
    options.quantized_dtype = "asymmetric_quantized-8"  # RKNN's spelling of w8a8
    assert options.quantized_dtype == "w8a8"


def test_an_op_target_key_that_names_nothing_is_refused_with_the_closest_names(tmp_path: Path) -> None:
    """A typo in op_target would leave the node where it was; build() (and `npuc convert
    --op-target`) refuse it instead. An op type the model lacks is fine (a config serves several
    models)."""
    path = tmp_path / "chain.onnx"
    onnx.save(chain_model(), str(path))
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588", op_target={"relu_2": "cpu"})
        tk.load_onnx(model=str(path))
        with pytest.raises(npuc.ConfigError, match="'relu_2' is neither a node of the model nor an op type; "
                                                   "did you mean 'relu2'"):
            tk.build(do_quantization=False)
        tk.config(target_platform="rk3588", op_target={"Softmax": "cpu", "relu2": "cpu"})
        assert tk.build(do_quantization=False) == 0
    done = subprocess.run([sys.executable, "-m", "npuc", "convert", str(path), "-t", "rk3588", "-o",
                           str(tmp_path / "x.npub"), "--op-target", "Nope=cpu"], capture_output=True, text=True)
    assert done.returncode == 1 and "'Nope' is neither a node of the model nor an op type" in done.stderr
    assert not (tmp_path / "x.npub").exists()
