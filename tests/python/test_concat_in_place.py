"""In-place Concat (issue #19, cpp/memory/concat_in_place.h): a yolov8n-like neck (a feature held
while a deeper branch runs, then Concat(deep, held)) and two sole-reader convs joined by a Concat.
Exported and loaded, the blob runs on the program runtime with the Concat's inputs written into its
output's buffer; outputs equal those of a build without in-place Concats bit for bit (INT8 and
FP16), the arena is never larger, eval_memory names the Concat and eval_perf costs it as free
(unless it rescales a slice)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, List

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc


def _model(path: Path, neck: bool) -> Path:
    rng = np.random.default_rng(3)
    inits, nodes = [], []

    def conv_relu(name: str, src: str, cin: int, cout: int, k: int = 3) -> str:
        w = rng.standard_normal((cout, cin, k, k)).astype(np.float32) * 0.3
        inits.append(numpy_helper.from_array(w, name + "_w"))
        nodes.append(helper.make_node("Conv", [src, name + "_w"], [name + "_c"], name=name, kernel_shape=[k, k],
                                      pads=[k // 2] * 4))
        nodes.append(helper.make_node("Relu", [name + "_c"], [name], name=name + "_relu"))
        return name

    if neck:  # P3 is also read by the deeper branch, as yolov8n's backbone P3
        p3 = conv_relu("p3", "x", 8, 16)
        inputs = [conv_relu("deep2", conv_relu("deep1", p3, 16, 32), 32, 32), p3]
    else:  # each input read by the Concat alone: INT8 quantizes both on the Concat's grid
        inputs = [conv_relu("a", "x", 8, 16), conv_relu("b", "x", 8, 32)]
    nodes.append(helper.make_node("Concat", inputs, ["cat"], name="cat", axis=1))
    conv_relu("head", "cat", 48, 8, k=1)
    graph = helper.make_graph(
        nodes, "concat_in_place", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 32, 32])],
        [helper.make_tensor_value_info("head", TensorProto.FLOAT, [1, 8, 32, 32])], inits)
    out = path / ("neck.onnx" if neck else "two_convs.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(out))
    return out


def _loaded(model: Path, quantize: bool, in_place: bool, samples: List[np.ndarray], blob: Path) -> npuc.Toolkit:
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588")
    tk.load_onnx(model=str(model))
    tk.build(do_quantization=quantize, dataset=samples if quantize else None)
    typed: Callable[[], object] = tk._compile_options

    def options():  # type: ignore[no-untyped-def]
        o = typed()
        o.concat_in_place = in_place  # the test-only switch: CompileOptions.concat_in_place
        return o

    tk._compile_options = options  # type: ignore[method-assign]
    tk.export_blob(str(blob))
    loaded = npuc.Toolkit()
    loaded.load_blob(str(blob))
    loaded.init_runtime()
    return loaded


# INT8 neck: P3 (also read by deep1) keeps its own scale, so the Concat rescales it within its slice
# and still runs; everywhere else the Concat copies nothing and is skipped.
@pytest.mark.parametrize("neck,quantize", [(True, False), (False, False), (False, True), (True, True)])
def test_in_place_concat_is_bit_identical_smaller_and_free(neck: bool, quantize: bool, tmp_path: Path) -> None:
    model = _model(tmp_path, neck)
    rng = np.random.default_rng(0)
    samples = [rng.standard_normal((1, 8, 32, 32)).astype(np.float32) for _ in range(2)]
    with_ = _loaded(model, quantize, True, samples, tmp_path / "in_place.npub")
    without = _loaded(model, quantize, False, samples, tmp_path / "copy.npub")
    mw, mo = with_.eval_memory(is_print=False), without.eval_memory(is_print=False)
    assert mw["in_place_concats"] == ["cat"] and mo["in_place_concats"] == []
    slices = {t["name"] for t in mw["tensors"] if t["within"] == "cat"}
    assert slices == ({"deep2", "p3"} if neck else {"a", "b"})
    assert mw["arena_bytes"] <= mo["arena_bytes"]
    assert mw["exporter_order_bound_bytes"] == mo["exporter_order_bound_bytes"]
    if neck:  # the Concat's step held deep2 + P3 + their copy; now only the container
        assert mw["lower_bound_bytes"] < mo["lower_bound_bytes"]
    assert "In-place Concats:             1" in str(mw)
    pw, po = with_.eval_perf(is_print=False), without.eval_perf(is_print=False)
    concat_rows = [r for r in pw.rows if r["OpType"] == "Concat"]
    assert len(concat_rows) == 1
    if neck and quantize:
        assert concat_rows[0]["Time(us)"] > 0 and pw.summary["total_time_us"] <= po.summary["total_time_us"]
    else:
        assert concat_rows[0]["Time(us)"] == 0.0 and concat_rows[0]["TaskNumber"] == 0
        assert pw.summary["total_time_us"] < po.summary["total_time_us"]
    for seed in (1, 2):
        x = np.random.default_rng(seed).standard_normal((1, 8, 32, 32)).astype(np.float32)
        a, b = with_.inference(inputs=[x]), without.inference(inputs=[x])
        for u, v in zip(a, b):
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def test_concat_in_place_is_recorded_only_when_off() -> None:
    from npuc._npuc import CompileOptions

    o = CompileOptions()
    assert o.concat_in_place and "concat_in_place" not in o.recorded()
    o.concat_in_place = False
    assert o.recorded()["concat_in_place"] == "False"
