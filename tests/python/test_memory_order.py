"""The memory-aware node order (issue #19, cpp/memory/memory_aware_order.h): a blob built in the
chosen order gives the same outputs (INT8 and FP16), bit for bit, as one built in the exporter's order, its
arena bound is never above the exporter order's, and eval_memory reports both bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc
from conftest import shared_models_dir


def _interleaved_branches(path: Path) -> Path:
    """Two branches widening 16 -> 256 channels and back, written interleaved, joined by a Concat:
    the exporter's order keeps both wide tensors live at once."""
    rng = np.random.default_rng(1)
    inits, nodes = [], []

    def conv(name: str, src: str, cin: int, cout: int) -> str:
        w = rng.standard_normal((cout, cin, 1, 1)).astype(np.float32) * 0.2
        inits.append(numpy_helper.from_array(w, name + "_w"))
        nodes.append(helper.make_node("Conv", [src, name + "_w"], [name], name=name, kernel_shape=[1, 1]))
        return name

    wa = conv("a_wide", "x", 16, 256)
    wb = conv("b_wide", "x", 16, 256)
    na = conv("a_narrow", wa, 256, 16)
    nb = conv("b_narrow", wb, 256, 16)
    nodes.append(helper.make_node("Concat", [na, nb], ["cat"], name="join", axis=1))
    conv("head", "cat", 32, 8)
    graph = helper.make_graph(
        nodes, "interleaved", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32, 32])],
        [helper.make_tensor_value_info("head", TensorProto.FLOAT, [1, 8, 32, 32])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    out = path / "interleaved.onnx"
    onnx.save(model, str(out))
    return out


def _build(model: Path, node_order: str, samples: List[np.ndarray], op_target: Dict[str, str],
           quantize: bool, single_core: bool) -> npuc.Toolkit:
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588", op_target=op_target or None, single_core_mode=single_core)
    tk.load_onnx(model=str(model))
    tk.build(do_quantization=quantize, dataset=samples if quantize else None)
    # The test-only switches: CompileOptions.node_order, and no in-place Concats (their bound is
    # compared with the exporter order's without them; test_concat_in_place.py covers them).
    typed = tk._compile_options

    def with_order():  # type: ignore[no-untyped-def]
        o = typed()
        o.node_order = node_order
        o.concat_in_place = False
        return o

    tk._compile_options = with_order  # type: ignore[method-assign]
    return tk


def _exported_and_loaded(tk: npuc.Toolkit, path: Path) -> npuc.Toolkit:
    tk.export_blob(str(path))
    loaded = npuc.Toolkit()
    loaded.load_blob(str(path))
    loaded.init_runtime()
    return loaded


def _compare(model: Path, tmp_path: Path, must_reorder: bool, op_target: Dict[str, str] = {},
             quantize: bool = True, single_core: bool = False) -> Dict[str, int]:
    probe = npuc.Toolkit()
    probe.load_onnx(model=str(model))
    shape = list(probe.model.inputs[0]["shape"])
    rng = np.random.default_rng(0)
    samples = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
    chosen = _exported_and_loaded(_build(model, "memory_aware", samples, op_target, quantize, single_core),
                                  tmp_path / "chosen.npub")
    exporter = _exported_and_loaded(_build(model, "exporter", samples, op_target, quantize, single_core),
                                    tmp_path / "exporter.npub")
    mc, me = chosen.eval_memory(is_print=False), exporter.eval_memory(is_print=False)
    assert me["order"] == "exporter"
    assert me["exporter_order_bound_bytes"] == me["lower_bound_bytes"]
    assert mc["exporter_order_bound_bytes"] == me["lower_bound_bytes"]  # the prediction is the real bound
    assert mc["lower_bound_bytes"] <= me["lower_bound_bytes"]
    assert mc["order_bound_ratio"] == pytest.approx(mc["lower_bound_bytes"] / me["lower_bound_bytes"])
    if must_reorder:
        assert mc["order"] != "exporter" and mc["lower_bound_bytes"] < me["lower_bound_bytes"]
    assert "Node order:" in str(mc)
    x = rng.standard_normal(shape).astype(np.float32)
    out_c, out_e = chosen.inference(inputs=[x]), exporter.inference(inputs=[x])
    assert len(out_c) == len(out_e)
    for a, b in zip(out_c, out_e):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    return {"chosen": mc["lower_bound_bytes"], "exporter": me["lower_bound_bytes"]}


def test_interleaved_branches_get_a_lower_bound_and_the_same_outputs(tmp_path: Path) -> None:
    # One core: on three, the exporter's interleaving runs the branches side by side and the
    # driver keeps it (a branch-at-a-time order would be slower there).
    bounds = _compare(_interleaved_branches(tmp_path), tmp_path, must_reorder=True, single_core=True)
    assert bounds["chosen"] < bounds["exporter"]
    multi = _compare(_interleaved_branches(tmp_path), tmp_path, must_reorder=False)
    assert multi["chosen"] <= multi["exporter"]


def test_a_cpu_branch_is_not_interleaved_with_the_npu_and_outputs_match(tmp_path: Path) -> None:
    # b's branch on the CPU: the exporter's order switches NPU/CPU four times; any order chosen
    # switches no more often, and the outputs still match bit for bit.
    bounds = _compare(_interleaved_branches(tmp_path), tmp_path, must_reorder=False,
                      op_target={"b_wide": "cpu", "b_narrow": "cpu"})
    assert bounds["chosen"] <= bounds["exporter"]


def test_node_order_is_recorded_only_when_not_the_default() -> None:
    from npuc._npuc import CompileOptions

    o = CompileOptions()
    assert o.node_order == "memory_aware" and "node_order" not in o.recorded()
    o.node_order = "exporter"
    assert o.recorded()["node_order"] == "'exporter'"
    with pytest.raises(npuc.NpucError):
        o.node_order = "random"


# tiny_vit is reordered (INT8: greedy, no core count slower; FP16 on one core: greedy; INT8 on one
# core: the exact search); shufflenet_v2_x0_5 keeps the exporter's order (already at the floor no
# order goes below), so it checks nothing changes there.
@pytest.mark.parametrize("name,must_reorder,quantize,single_core",
                         [("tiny_vit", True, True, False), ("tiny_vit", True, True, True),
                          ("tiny_vit", True, False, True), ("shufflenet_v2_x0_5", False, True, False)])
def test_shared_models_bit_identical_to_exporter_order(name: str, must_reorder: bool, quantize: bool,
                                                       single_core: bool, tmp_path: Path) -> None:
    models = shared_models_dir()
    if models is None or not (models / f"{name}.onnx").exists():
        pytest.skip("shared models not available")
    _compare(models / f"{name}.onnx", tmp_path, must_reorder, quantize=quantize, single_core=single_core)
