"""Import of already-quantized (QDQ / QAT) ONNX models (issue #17, docs/qdq_import.md).

* Round trip: npuc INT8 build -> export_onnx (QDQ) -> load_onnx -> build(do_quantization=False)
  gives bit-identical simulator outputs, with no dataset. The default run covers the real-weight
  ppocr_cls and the random-weight shared models at their reference input, and ppocrv4_det on a
  160x160 crop (its biases near 2^31 need the file's integers, TensorQuant::given_values);
  bench/qdq_import.py runs every shared model (ppocrv4_det at 480x480 included).
* Mapping: uint8 activations become int8 with the zero point minus 128 (exact); per-tensor weights
  become per-channel all equal (exact); asymmetric weights are requantized symmetric and
  reported with their error, or refused under load_onnx(qdq_strict=True).
* Peer: PyTorch FX post-training quantization of a small residual CNN, exported by
  torch.onnx.export (Debian's torch 1.13 emits QDQ with Cast / Identity chains), against PyTorch's
  quantized model: 100% within 1 LSB with weights in [-127, 127]; 98.1% with PyTorch's default
  weight observer, whose -128 weights npuc clamps to -127 (reported). bench/qdq_import.py runs
  resnet18 and mobilenet_v2.
* Errors: each pattern npuc cannot map names the node and the pattern: an UnsupportedOpError under
  load_onnx(qdq_strict=True), else a warning, the model loading with its Q/DQ nodes as ops.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import ort_outputs, shared_models_dir

import npuc
from npuc import _npuc

#: Shared models of the default round trip (bench/qdq_import.py: all of them).
ROUND_TRIP_MODELS = ["ppocr_cls", "mobilenet_v2", "shufflenet_v2_x0_5", "tiny_vit", "glu_net", "yolo_focus",
                     "conv_transpose_clip"]
#: Peer criterion: outputs within 1 LSB of PyTorch's quantized model (the issue's).
MIN_PEER_WITHIN_ONE_LSB = 0.99
#: The same with PyTorch's default weight observer, whose symmetric qint8 weights reach -128: npuc's
#: symmetric weights stop at -127, so those (reported) cost 1 LSB each. Measured 0.981.
MIN_PEER_WITHIN_ONE_LSB_DEFAULT = 0.97
#: Inputs of the fast PyTorch peer test (10 outputs each), and how many also go through ONNX Runtime.
PEER_INPUTS = 32
PEER_ORT_INPUTS = 4


def _shared(name: str) -> Tuple[Path, np.ndarray]:
    folder = shared_models_dir()
    if folder is None or not (folder / f"{name}.onnx").is_file():
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    ref = np.load(folder / f"{name}.ref.npz")
    x = next(ref[k] for k in ref.files if k.startswith("input:")).astype(np.float32)
    return folder / f"{name}.onnx", x


def _samples(x: np.ndarray, n: int = 2) -> List[List[np.ndarray]]:
    rng = np.random.default_rng(0)
    return [[x]] + [[(x + rng.normal(0, 0.1, x.shape)).astype(np.float32)] for _ in range(n)]


@pytest.mark.parametrize("name", ROUND_TRIP_MODELS)
def test_round_trip_through_qdq_export_is_bit_identical(name: str, tmp_path: Path) -> None:
    path, x = _shared(name)
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=True, dataset=_samples(x))
        want = tk.inference(inputs=[x], data_format="nchw")
        tk.export_onnx(tmp_path / "qdq.onnx")
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(tmp_path / "qdq.onnx"))
        tk.build(do_quantization=False)  # no dataset: the file's scales
        got = tk.inference(inputs=[x], data_format="nchw")
        report = tk.qdq_report
    print(f"{name}: {report['kept']} given parameters kept, {report['dropped_missing']} lost to the optimizer, "
          f"{report['requantized']} requantized, {report['inexact_biases']} inexact biases")
    assert report["requantized"] == 0 and report["inexact_biases"] == 0, report["notes"]
    for w, g in zip(want, got):
        assert w.shape == g.shape
        assert np.array_equal(w, g), f"{name}: {int((w != g).sum())}/{w.size} outputs differ"


#: ppocrv4_det's round trip runs on a crop of its reference page (the net is fully convolutional,
#: its Resizes take scales): 480x480 takes about a minute on CI's cores.
PPOCR_DET_CROP = 160


def _ppocr_det_at(size: int, tmp_path: Path) -> Tuple[Path, np.ndarray]:
    """ppocrv4_det with its input fixed at size x size, and the top-left crop of its reference page."""
    path, x = _shared("ppocrv4_det")
    model = onnx.load(str(path))
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[2].dim_value = size
    dims[3].dim_value = size
    del model.graph.value_info[:]
    for out in model.graph.output:
        out.type.tensor_type.shape.ClearField("dim")
    return _save(model, tmp_path, "ppocrv4_det_crop.onnx"), np.ascontiguousarray(x[:, :, :size, :size])


def test_ppocrv4_det_round_trip_keeps_the_files_bias_integers(tmp_path: Path) -> None:
    """ppocrv4_det has dead channels whose int32 biases npuc puts near 2^31 (the bias floor): a
    float32 constant cannot hold them, so the import carries the file's integers (given_values),
    through the plan, the blob and a second QDQ export."""
    path, x = _ppocr_det_at(PPOCR_DET_CROP, tmp_path)
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=True, dataset=_samples(x))
        want = tk.inference(inputs=[x], data_format="nchw")[0]
        tk.export_onnx(tmp_path / "qdq.onnx")
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(tmp_path / "qdq.onnx"))
        tk.build(do_quantization=False)
        got = tk.inference(inputs=[x], data_format="nchw")[0]
        report = tk.qdq_report
        tk.export_onnx(tmp_path / "qdq_again.onnx")
        assert tk.export_rknn(str(tmp_path / "m.npub")) == 0
    print(f"ppocrv4_det {PPOCR_DET_CROP}x{PPOCR_DET_CROP}: {report['bias_integers_needed']} biases exact only "
          f"through the file's integers, {report['inexact_biases']} inexact")
    # The integers matter here (the float constants alone would miss them), and all are kept.
    assert report["bias_integers_needed"] >= 1 and report["inexact_biases"] == 0, report["notes"]
    assert np.array_equal(want, got), f"{int((want != got).sum())}/{want.size} outputs differ"
    with npuc.Toolkit() as tk:
        tk.load_rknn(str(tmp_path / "m.npub"))
        tk.init_runtime()
        assert np.array_equal(tk.inference(inputs=[x], data_format="nchw")[0], want)
    b_first = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(tmp_path / "qdq.onnx")).graph.initializer
               if t.data_type == TensorProto.INT32}
    b_again = {t.name: numpy_helper.to_array(t) for t in
               onnx.load(str(tmp_path / "qdq_again.onnx")).graph.initializer if t.data_type == TensorProto.INT32}
    assert sorted(map(np.ndarray.tolist, b_first.values())) == sorted(map(np.ndarray.tolist, b_again.values()))


# ---------------------------------------------------------------------- small hand-made QDQ models


def _q(x: str, s: str, z: str, out: str, name: str) -> onnx.NodeProto:
    return helper.make_node("QuantizeLinear", [x, s, z], [out], name=name)


def _dq(x: str, s: str, z: str, out: str, name: str, axis: int = 1) -> onnx.NodeProto:
    return helper.make_node("DequantizeLinear", [x, s, z], [out], name=name, axis=axis)


def _conv_qdq_model(w_zero: int = 0, act_type: int = TensorProto.UINT8, per_tensor_weight: bool = False,
                    scale_as_input: bool = False, activation: str = "Relu") -> onnx.ModelProto:
    """x -> Q/DQ -> Conv(DQ(w), DQ(b)) -> Relu -> Q/DQ -> y, in ONNX Runtime's static-quantization layout."""
    rng = np.random.default_rng(1)
    cout, cin = 4, 3
    act_np = np.uint8 if act_type == TensorProto.UINT8 else np.int8
    zx = 128 if act_type == TensorProto.UINT8 else 0
    w_q = rng.integers(-100, 100, (cout, cin, 3, 3)).astype(np.int8)
    if w_zero:  # asymmetric uint8 weights
        w_q = (w_q.astype(np.int32) + 128).clip(0, 255).astype(np.uint8)
    s_w = np.full([], 0.01, np.float32) if per_tensor_weight else np.linspace(0.005, 0.02, cout).astype(np.float32)
    s_x = np.float32(0.02)
    b_q = rng.integers(-500, 500, cout).astype(np.int32)
    inits = [
        numpy_helper.from_array(np.array(s_x), "s_x"),
        numpy_helper.from_array(np.array(zx, act_np), "z_x"),
        numpy_helper.from_array(w_q, "w_q"),
        numpy_helper.from_array(s_w, "s_w"),
        numpy_helper.from_array(np.full(s_w.shape, w_zero + (128 if w_zero else 0), np.uint8) if w_zero
                                else np.zeros(s_w.shape, np.int8), "z_w"),
        numpy_helper.from_array(b_q, "b_q"),
        numpy_helper.from_array((s_x * s_w * np.ones(cout)).astype(np.float32), "s_b"),
        numpy_helper.from_array(np.zeros(cout, np.int32), "z_b"),
        numpy_helper.from_array(np.array(0.03, np.float32), "s_y"),
        numpy_helper.from_array(np.array(zx - 128 if act_type == TensorProto.INT8 else 0, act_np), "z_y"),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, 8, 8])]
    if scale_as_input:
        inits = [i for i in inits if i.name != "s_x"]
        inputs.append(helper.make_tensor_value_info("s_x", TensorProto.FLOAT, []))
    nodes = [
        _q("x", "s_x", "z_x", "x_q", "quant_x"),
        _dq("x_q", "s_x", "z_x", "x_dq", "dequant_x"),
        _dq("w_q", "s_w", "z_w", "w_dq", "dequant_w", axis=0),
        _dq("b_q", "s_b", "z_b", "b_dq", "dequant_b", axis=0),
        helper.make_node("Conv", ["x_dq", "w_dq", "b_dq"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node(activation, ["conv"], ["relu"], name="relu"),
        _q("relu", "s_y", "z_y", "y_q", "quant_y"),
        _dq("y_q", "s_y", "z_y", "y", "dequant_y"),
    ]
    graph = helper.make_graph(nodes, "conv_qdq", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _save(model: onnx.ModelProto, tmp_path: Path, name: str = "m.onnx") -> Path:
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


def _x(seed: int = 2) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, (1, 3, 8, 8)).astype(np.float32)


def _assert_near_ties_only(got: np.ndarray, reference: np.ndarray, lsb: float) -> None:
    """The integer kernels against the float QDQ graph: equal but for near-ties of the float sums
    (at most 1 output step, on a few elements)."""
    steps = np.abs(got.astype(np.float64) - reference) / lsb
    identical = float((steps < 1e-3).mean())
    print(f"{identical:.4f} of outputs identical to the QDQ graph, max {steps.max():.3f} steps")
    assert steps.max() <= 1.001 and identical >= 0.95


def test_uint8_activations_map_to_int8_and_match_the_qdq_graph(tmp_path: Path) -> None:
    """uint8 zero points become int8 ones minus 128; the build needs no dataset and equals the
    file's own QDQ computation (npuc's FP32 runtime running the Q/DQ ops) to the bit."""
    path = _save(_conv_qdq_model(), tmp_path)
    imported, not_imported = _npuc.load_onnx(str(path))
    assert not_imported == ""
    params = _npuc.qdq_params(imported)
    # The Relu output takes the graph output's name "y" (the model's API).
    assert params["x"]["zero_points"] == [0] and params["y"]["zero_points"] == [-128]
    assert params["b_q"]["dtype"] == "int32" and params["w_q"]["axis"] == 0 and len(params["w_q"]["scales"]) == 4
    assert _npuc.qdq_counts(imported) == {"activations": 2, "constants": 2, "uint8_shifted": 2}
    assert "QuantizeLinear" not in imported.op_histogram and "DequantizeLinear" not in imported.op_histogram
    x = _x()
    reference = npuc.Runtime(npuc.Model.load(str(path))).run([x])[0]
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=False)
        got = tk.inference(inputs=[x], data_format="nchw")[0]
        assert tk.qdq_report["requantized"] == 0
    _assert_near_ties_only(got, reference, 0.03)


def test_per_tensor_weights_become_equal_per_channel_scales(tmp_path: Path) -> None:
    path = _save(_conv_qdq_model(per_tensor_weight=True, act_type=TensorProto.INT8), tmp_path)
    x = _x(3)
    reference = npuc.Runtime(npuc.Model.load(str(path))).run([x])[0]
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=False)
        got = tk.inference(inputs=[x], data_format="nchw")[0]
        assert tk.qdq_report["requantized"] == 0
    _assert_near_ties_only(got, reference, 0.03)


def test_asymmetric_weights_are_requantized_and_reported_or_refused_when_strict(tmp_path: Path) -> None:
    path = _save(_conv_qdq_model(w_zero=3), tmp_path)
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=False)
        report = tk.qdq_report
    assert report["requantized"] == 1
    assert "weight 'w_q'" in report["notes"][0] and "asymmetric (zero point 3)" in report["notes"][0]
    assert "LSB of the given scale" in report["notes"][0]
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(path), qdq_strict=True)
        with pytest.raises(npuc.ConfigError, match=r"qdq_strict.*weight 'w_q' of node 'conv' \(Conv\): asymmetric"):
            tk.build(do_quantization=False)


def test_an_activation_without_parameters_is_refused_by_name_or_calibrated_from_a_dataset(tmp_path: Path) -> None:
    """Conv -> Sigmoid with no Q/DQ between: the Conv output has no given parameters and no rule
    derives them (a Sigmoid table needs its input's). build(False) names it; a dataset calibrates
    only that value, the file's parameters stay."""
    path = _save(_conv_qdq_model(activation="Sigmoid"), tmp_path)
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(path))
        with pytest.raises(npuc.ConfigError, match=r"'conv'.*the file has no Q/DQ pair there"):
            tk.build(do_quantization=False)
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=True, dataset=[[_x(s)] for s in range(3)])
        params = tk._simulator().activation_params
        assert tk.qdq_report["kept"] == 4
    assert params["x"] == pytest.approx((0.02, 0)) and params["y"] == pytest.approx((0.03, -128))
    assert "conv" in params  # calibrated


def test_do_quantization_true_without_a_dataset_keeps_the_files_parameters(tmp_path: Path) -> None:
    path = _save(_conv_qdq_model(), tmp_path)
    x = _x(4)
    outs = []
    for quantize in (False, True):
        with npuc.Toolkit() as tk:
            tk.load_onnx(model=str(path))
            tk.build(do_quantization=quantize)
            outs.append(tk.inference(inputs=[x], data_format="nchw")[0])
    assert np.array_equal(outs[0], outs[1])


def test_the_qdq_build_exports_a_blob_that_runs_like_it(tmp_path: Path) -> None:
    path = _save(_conv_qdq_model(), tmp_path)
    x = _x(6)
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=False)
        built = tk.inference(inputs=[x], data_format="nchw")[0]
        assert tk.export_rknn(str(tmp_path / "m.npub")) == 0
    with npuc.Toolkit() as tk:
        tk.load_rknn(str(tmp_path / "m.npub"))
        tk.init_runtime()
        assert np.array_equal(tk.inference(inputs=[x], data_format="nchw")[0], built)


def test_weight_only_dequantization_is_a_float_model(tmp_path: Path) -> None:
    """DQ on constant weights and no activation pairs: the weights are dequantized and build(False)
    is the FP16 build of a float model, as before the import existed."""
    model = _conv_qdq_model()
    graph = model.graph
    keep = [n for n in graph.node if n.name in ("dequant_w", "dequant_b", "conv", "relu")]
    for n in keep:
        n.input[:] = ["x" if i == "x_dq" else i for i in n.input]
        n.output[:] = ["y" if o == "relu" else o for o in n.output]
    del graph.node[:]
    graph.node.extend(keep)
    path = _save(model, tmp_path)
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=False)
        assert tk._simulator().mode == "fp16" and tk.qdq_report is None


# ---------------------------------------------------------------------- patterns npuc cannot map


def _expect_refused(model: onnx.ModelProto, tmp_path: Path, node: str, pattern: str) -> None:
    """Refused under qdq_strict; by default loaded with its Q/DQ nodes as ops and a warning that
    names the same node and pattern."""
    path = _save(model, tmp_path)
    with npuc.Toolkit() as tk:
        with pytest.raises(npuc.UnsupportedOpError) as info:
            tk.load_onnx(model=str(path), qdq_strict=True)
    message = str(info.value)
    assert f"node '{node}'" in message and f"pattern: {pattern}" in message, message
    assert message.startswith(str(path)), message  # named with its file, like any load error
    loaded, not_imported = _npuc.load_onnx(str(path))
    assert f"node '{node}'" in not_imported and f"pattern: {pattern}" in not_imported
    assert not _npuc.qdq_counts(loaded) and _npuc.is_qdq_model(loaded)  # Q/DQ kept as ops


def test_a_computed_scale_is_refused_naming_the_node(tmp_path: Path) -> None:
    _expect_refused(_conv_qdq_model(scale_as_input=True), tmp_path, "quant_x", "Q/DQ with a computed scale")


def test_dq_on_an_activation_without_q_is_refused(tmp_path: Path) -> None:
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "z")]
    graph = helper.make_graph(
        [_dq("xi", "s", "z", "xf", "dq_input"), helper.make_node("Relu", ["xf"], ["y"], name="relu")], "g",
        [helper.make_tensor_value_info("xi", TensorProto.INT8, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    _expect_refused(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path, "dq_input",
                    "DQ on an activation without a Q")


def test_an_op_between_q_and_dq_is_refused(tmp_path: Path) -> None:
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "z"),
             numpy_helper.from_array(np.array([1, 4], np.int64), "shape")]
    graph = helper.make_graph(
        [_q("x", "s", "z", "xq", "q_x"), helper.make_node("Reshape", ["xq", "shape"], ["xr"], name="reshape_int8"),
         _dq("xr", "s", "z", "y", "dq_y")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    _expect_refused(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path, "q_x",
                    "an op between Q and DQ: Q -> Reshape")


def test_q_and_dq_with_different_parameters_is_refused(tmp_path: Path) -> None:
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "s"), numpy_helper.from_array(np.array(0.2, np.float32), "s2"),
             numpy_helper.from_array(np.array(0, np.int8), "z")]
    graph = helper.make_graph([_q("x", "s", "z", "xq", "q_x"), _dq("xq", "s2", "z", "y", "dq_y")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], inits)
    _expect_refused(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path, "dq_y",
                    "Q -> DQ with different parameters")


def test_int16_qdq_is_refused_naming_the_node(tmp_path: Path) -> None:
    """int16 QDQ (opset 21) is not imported yet: refused by the importer or by the QDQ import, by node."""
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int16), "z")]
    graph = helper.make_graph([_q("x", "s", "z", "xq", "q16"), _dq("xq", "s", "z", "y", "dq16")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], inits)
    path = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), tmp_path)
    with npuc.Toolkit() as tk:
        with pytest.raises(npuc.NpucError) as info:
            tk.load_onnx(model=str(path), qdq_strict=True)
    message = str(info.value)
    assert "q16" in message or "dq16" in message, message
    assert "int16" in message.lower(), message


# ---------------------------------------------------------------------- PyTorch FX PTQ peer


def _torch_fx_qdq(tmp_path: Path, restricted: bool) -> Tuple[Path, np.ndarray, np.ndarray, float]:
    """A small residual CNN quantized by PyTorch FX PTQ (onednn qconfig: uint8 per-tensor
    activations, int8 per-channel symmetric weights), exported by torch.onnx.export."""
    torch = pytest.importorskip("torch")
    import torch.nn as nn
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
            self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                       nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16))
            self.relu = nn.ReLU()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(16, 10)

        def forward(self, x):  # type: ignore[no-untyped-def]
            y = self.stem(x)
            y = self.relu(self.block(y) + y)
            return self.fc(torch.flatten(self.pool(y), 1))

    torch.manual_seed(0)
    net = Net()
    net.train()
    with torch.no_grad():  # realistic BatchNorm statistics, then eval
        for _ in range(4):
            net(torch.randn(8, 3, 16, 16))
    net.eval()
    engines = torch.backends.quantized.supported_engines
    torch.backends.quantized.engine = "onednn" if "onednn" in engines else engines[-1]
    rng = np.random.default_rng(5)
    calib = rng.normal(0, 1, (8, 1, 3, 16, 16)).astype(np.float32)
    mapping = get_default_qconfig_mapping("onednn")
    if restricted:  # weights in [-127, 127] (TFLite / ONNX Runtime style), which npuc holds exactly
        from torch.ao.quantization import PerChannelMinMaxObserver, QConfig

        weight = PerChannelMinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_channel_symmetric,
                                                    quant_min=-127, quant_max=127)
        mapping.set_global(QConfig(activation=mapping.global_qconfig.activation, weight=weight))
        for key, qconfig in list(mapping.object_type_qconfigs.items()):
            if qconfig is not None:
                mapping.object_type_qconfigs[key] = QConfig(activation=qconfig.activation, weight=weight)
    prepared = prepare_fx(net, mapping, (torch.from_numpy(calib[0]),))
    with torch.no_grad():
        for c in calib:
            prepared(torch.from_numpy(c))
    quantized = convert_fx(prepared)
    path = tmp_path / "fx_qdq.onnx"
    x = rng.normal(0, 1, (PEER_INPUTS, 1, 3, 16, 16)).astype(np.float32)
    torch.onnx.export(quantized, torch.from_numpy(x[0]), str(path), opset_version=13, input_names=["x"],
                      output_names=["y"])
    with torch.no_grad():
        want = np.stack([quantized(torch.from_numpy(xi)).numpy() for xi in x])
    scale = next(s for s in _npuc.qdq_params(_npuc.load_onnx(str(path))[0]).items() if s[0] == "y")[1]["scales"][0]
    return path, want, x, scale


@pytest.mark.parametrize("restricted", [False, True], ids=["default_qconfig", "weights_127"])
def test_pytorch_fx_ptq_export_matches_pytorch_within_one_lsb(restricted: bool, tmp_path: Path) -> None:
    path, want, x, lsb = _torch_fx_qdq(tmp_path, restricted)
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=False)
        got = np.stack([tk.inference(inputs=[xi], data_format="nchw")[0] for xi in x])
        report = tk.qdq_report
    steps = np.abs(got.astype(np.float64) - want) / lsb
    within = float((steps <= 1.001).mean())
    print(f"torch FX PTQ CNN: {within:.4f} within 1 LSB, {float((steps < 1e-3).mean()):.4f} identical, "
          f"max {steps.max():.2f} LSB; notes: {report['notes']}")
    assert report["kept"] >= 10  # every conv weight, bias and activation pair
    # ONNX Runtime on the same file: npuc executes the QDQ graph as it is written.
    ort = np.stack([ort_outputs(path, {"x": xi})[0] for xi in x[:PEER_ORT_INPUTS]])
    ort_steps = np.abs(got[:PEER_ORT_INPUTS].astype(np.float64) - ort) / lsb
    print(f"  vs ONNX Runtime on the file: {float((ort_steps <= 1.001).mean()):.4f} within 1 LSB")
    if restricted:
        assert float((ort_steps <= 1.001).mean()) == 1.0
    if restricted:
        assert not report["notes"]
        assert within >= MIN_PEER_WITHIN_ONE_LSB
    else:  # PyTorch's qint8 weights reach -128, clamped to -127 and reported per tensor
        assert any("at -128 clamped to -127" in n for n in report["notes"])
        assert within >= MIN_PEER_WITHIN_ONE_LSB_DEFAULT
