"""Already-quantized ONNX models (issue #22, quantized op family) against ONNX Runtime.

One small CNN (3 convs + Relu, global average pool, Gemm) is built in float with onnx.helper, its
activation ranges calibrated with npuc's FP32 runtime, and then written by hand in the two forms
ONNX Runtime's static quantizer writes:

* QDQ: QuantizeLinear -> DequantizeLinear around every activation (uint8, zero point from the
  range), int8 per-output-channel weights and int32 biases behind DequantizeLinear;
* operator form: QuantizeLinear, QLinearConv (Relu folded into the uint8 saturation, zero point 0),
  DequantizeLinear -> GlobalAveragePool -> QuantizeLinear, QLinearMatMul, DequantizeLinear + bias.

Each form runs on npuc's FP32 runtime and on ONNX Runtime; the integer tensors (every
QuantizeLinear / QLinear output, exposed as graph outputs) are compared in steps (LSB). ONNX Runtime
fuses QDQ groups into integer kernels, npuc computes DQ -> float Conv -> Q, so the QDQ form may
differ by 1 LSB where a value lies within float rounding of a half-way point; the operator form
runs npuc's integer kernels, which round as ONNX Runtime does, and must match exactly. fold_qlinear
(the pass that turns the operator form into the QDQ form) is measured the same way. The INT8 build
of each form prints its cosine to the FP32 output and the rk3588 NPU/CPU split.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import ort_outputs as _ort

import npuc
from npuc.quantize import cosine_similarity, quantize

SHAPE = (1, 3, 32, 32)
NUM_CLASSES = 10
NUM_CALIBRATION = 8
#: Integer outputs of the QDQ form that may differ from ONNX Runtime by 1 LSB (near-ties, see the
#: module docstring); measured: see the printed counts. Never more than 1 LSB.
MAX_QDQ_LSB = 1
MAX_QDQ_DIFF_FRACTION = 0.01
#: INT8 builds of the already-quantized forms: cosine of the final output to the FP32 runtime's.
#: The INT8 build re-quantizes float tensors the model already rounds to uint8 steps, and keeps
#: Q/DQ in FP16; measured >= 0.999 on this model, the floor leaves room for other seeds.
MIN_INT8_COSINE = 0.99
#: FP16 builds (do_quantization=False): the FP16 simulator rounds every float tensor to half, the
#: inputs and scales of QuantizeLinear included, so uint8 tensors move by up to 2 LSB (measured:
#: 0.5% of the input's, 16% of conv3's elements); the output cosine measured 0.99998.
MIN_FP16_COSINE = 0.999
#: Dynamic quantization form's float output vs ONNX Runtime (relative to the output's magnitude).
MAX_DYNAMIC_REL_ERROR = 1e-6

rng = np.random.default_rng(22)


def _npuc(path: Path, x: np.ndarray, optimize: bool = False) -> List[np.ndarray]:
    model = npuc.Model.load(str(path))
    if optimize:
        model, _ = npuc.optimize(model, 3)
    return npuc.Runtime(model).run([x])


# ---------------------------------------------------------------------- the float CNN

CONVS = [  # (name, in, out, stride)
    ("conv1", 3, 8, 1),
    ("conv2", 8, 16, 2),
    ("conv3", 16, 16, 1),
]


def _float_weights() -> Dict[str, np.ndarray]:
    w: Dict[str, np.ndarray] = {}
    for name, cin, cout, _ in CONVS:
        w[name + "_w"] = (rng.standard_normal((cout, cin, 3, 3)) / np.sqrt(cin * 9)).astype(np.float32)
        w[name + "_b"] = (0.1 * rng.standard_normal(cout)).astype(np.float32)
    w["fc_w"] = (rng.standard_normal((NUM_CLASSES, 16)) / 4).astype(np.float32)
    w["fc_b"] = (0.1 * rng.standard_normal(NUM_CLASSES)).astype(np.float32)
    return w


def _save(nodes, inits, outputs: List[str], path: Path, name: str) -> Path:
    """Saves the graph with `outputs` (names) typed by ONNX's shape inference."""
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))], [], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    model.graph.output.extend([inferred[o] for o in outputs])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


def _float_model(w: Dict[str, np.ndarray], path: Path) -> Path:
    """The float CNN; every activation is a graph output so calibration sees it."""
    nodes, prev = [], "x"
    for name, _, _, stride in CONVS:
        nodes.append(helper.make_node("Conv", [prev, name + "_w", name + "_b"], [name], pads=[1] * 4, strides=[stride] * 2))
        nodes.append(helper.make_node("Relu", [name], [name + "_relu"]))
        prev = name + "_relu"
    nodes += [
        helper.make_node("GlobalAveragePool", [prev], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in w.items()]
    act = ["conv1_relu", "conv2_relu", "conv3_relu", "gap", "logits"]
    return _save(nodes, inits, act, path, "float_cnn")


def _uint8_params(lo: float, hi: float) -> Tuple[float, int]:
    """Asymmetric uint8 scale / zero point of a range widened to hold 0 (ONNX Runtime's MinMax)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = np.float32((hi - lo) / 255.0) if hi > lo else np.float32(1.0)
    zp = int(np.clip(np.rint(-lo / scale), 0, 255))
    return float(scale), zp


def _calibrate(path: Path, samples: List[np.ndarray]) -> Dict[str, Tuple[float, int]]:
    runtime = npuc.Runtime(npuc.Model.load(str(path)))
    names = ["x"] + [o["name"] for o in runtime.outputs]
    lo = {n: np.inf for n in names}
    hi = {n: -np.inf for n in names}
    for s in samples:
        values = [s] + runtime.run([s])
        for n, v in zip(names, values):
            lo[n], hi[n] = min(lo[n], float(v.min())), max(hi[n], float(v.max()))
    return {n: _uint8_params(lo[n], hi[n]) for n in names}


def _per_channel_int8(w: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 weights, one scale per output channel (axis 0)."""
    amax = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
    scale = (amax / 127.0).astype(np.float32)
    q = np.clip(np.rint(w / scale.reshape((-1,) + (1,) * (w.ndim - 1))), -127, 127).astype(np.int8)
    return q, scale


class _Builder:
    """Nodes and initializers of a quantized graph."""

    def __init__(self) -> None:
        self.nodes: List[onnx.NodeProto] = []
        self.inits: List[onnx.TensorProto] = []

    def const(self, name: str, value) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def qparams(self, name: str, p: Tuple[float, int]) -> Tuple[str, str]:
        return self.const(name + "_scale", np.float32(p[0])), self.const(name + "_zp", np.uint8(p[1]))

    def node(self, op: str, ins: List[str], out: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out


def _qdq_model(w, params, path: Path) -> Tuple[Path, List[str]]:
    b = _Builder()
    q_outputs: List[str] = []

    def qdq(value: str, p) -> str:
        s, z = b.qparams(value, p)
        q = b.node("QuantizeLinear", [value, s, z], value + "_q")
        q_outputs.append(q)
        return b.node("DequantizeLinear", [q, s, z], value + "_dq")

    def weights(name: str, w_float: np.ndarray, bias: np.ndarray, in_scale: float) -> Tuple[str, str]:
        q, scale = _per_channel_int8(w_float)
        wq = b.node("DequantizeLinear", [b.const(name + "_wq", q), b.const(name + "_ws", scale),
                                         b.const(name + "_wz", np.zeros(len(scale), np.int8))], name + "_wdq", axis=0)
        bias_scale = (np.float32(in_scale) * scale).astype(np.float32)
        bq = np.rint(bias / bias_scale).astype(np.int32)
        bdq = b.node("DequantizeLinear", [b.const(name + "_bq", bq), b.const(name + "_bs", bias_scale),
                                          b.const(name + "_bz", np.zeros(len(scale), np.int32))], name + "_bdq", axis=0)
        return wq, bdq

    prev, prev_key = qdq("x", params["x"]), "x"
    for name, _, _, stride in CONVS:
        wq, bq = weights(name, w[name + "_w"], w[name + "_b"], params[prev_key][0])
        conv = b.node("Conv", [prev, wq, bq], name, pads=[1] * 4, strides=[stride] * 2)
        relu = b.node("Relu", [conv], name + "_relu")
        prev, prev_key = qdq(relu, params[name + "_relu"]), name + "_relu"
    gap = qdq(b.node("GlobalAveragePool", [prev], "gap"), params["gap"])
    flat = b.node("Flatten", [gap], "flat")
    wq, bq = weights("fc", w["fc_w"], w["fc_b"], params["gap"][0])
    logits = b.node("Gemm", [flat, wq, bq], "logits", transB=1)
    out = qdq(logits, params["logits"])
    return _save(b.nodes, b.inits, [out] + q_outputs, path, "qdq_cnn"), q_outputs


def _qlinear_model(w, params, path: Path) -> Tuple[Path, List[str]]:
    b = _Builder()
    xs, xz = b.qparams("x", params["x"])
    prev, prev_key = b.node("QuantizeLinear", ["x", xs, xz], "x_q"), "x"
    q_outputs = [prev]
    for name, _, _, stride in CONVS:
        q, scale = _per_channel_int8(w[name + "_w"])
        in_scale = params[prev_key][0]
        bq = np.rint(w[name + "_b"] / (np.float32(in_scale) * scale)).astype(np.int32)
        ins = [prev, prev_key + "_scale", prev_key + "_zp", b.const(name + "_wq", q), b.const(name + "_ws", scale),
               b.const(name + "_wz", np.zeros(len(scale), np.int8))]
        key = name + "_relu"
        ys, yz = b.qparams(key, params[key])  # zero point 0: the uint8 saturation is the Relu
        prev = b.node("QLinearConv", ins + [ys, yz, b.const(name + "_bq", bq)], name + "_q",
                      pads=[1] * 4, strides=[stride] * 2)
        prev_key = key
        q_outputs.append(prev)
    deq = b.node("DequantizeLinear", [prev, prev_key + "_scale", prev_key + "_zp"], "conv3_dq")
    gap = b.node("GlobalAveragePool", [deq], "gap")
    flat = b.node("Flatten", [gap], "flat")
    gs, gz = b.qparams("gap", params["gap"])
    flat_q = b.node("QuantizeLinear", [flat, gs, gz], "flat_q")
    q_outputs.append(flat_q)
    q, scale = _per_channel_int8(w["fc_w"])  # [N, K]: per column of B = q.T
    ls, lz = b.qparams("logits_mm", params["logits"])
    mm = b.node("QLinearMatMul", [flat_q, gs, gz, b.const("fc_wq", q.T.copy()), b.const("fc_ws", scale),
                                  b.const("fc_wz", np.zeros(len(scale), np.int8)), ls, lz], "fc_q")
    q_outputs.append(mm)
    logits = b.node("Add", [b.node("DequantizeLinear", [mm, ls, lz], "fc_dq"), b.const("fc_b", w["fc_b"])], "logits")
    return _save(b.nodes, b.inits, [logits] + q_outputs, path, "qlinear_cnn"), q_outputs


def _dynamic_model(w, path: Path) -> Path:
    """ONNX Runtime's dynamic quantization form: DynamicQuantizeLinear -> ConvInteger /
    MatMulInteger -> Cast -> Mul(x_scale * w_scale), uint8 activations and uint8 weights with
    zero points, per tensor (ONNX Runtime's ConvInteger refuses per-channel weight zero points;
    npuc's per-channel path is in tests/cpp/test_ops_qops.cc)."""
    b = _Builder()

    def rescale(acc: str, x_scale: str, w_scale: str, name: str) -> str:
        f = b.node("Cast", [acc], name + "_f", to=TensorProto.FLOAT)
        return b.node("Mul", [f, b.node("Mul", [x_scale, w_scale], name + "_s")], name + "_y")

    def uint8_weights(v: np.ndarray, per_channel: bool) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        flat = v.reshape(v.shape[0], -1) if per_channel else v.reshape(1, -1)
        lo, hi = np.minimum(flat.min(axis=1), 0), np.maximum(flat.max(axis=1), 0)
        scale = ((hi - lo) / 255).astype(np.float32)
        zp = np.clip(np.rint(-lo / scale), 0, 255).astype(np.uint8)
        shape = (-1,) + (1,) * (v.ndim - 1) if per_channel else ()
        q = np.clip(np.rint(v / scale.reshape(shape)) + zp.reshape(shape), 0, 255).astype(np.uint8)
        return q, (scale if per_channel else scale[0]), (zp if per_channel else zp[0])

    b.nodes.append(helper.make_node("DynamicQuantizeLinear", ["x"], ["x_q", "x_s", "x_z"], name="x_dql"))
    q, scale, zp = uint8_weights(w["conv1_w"], per_channel=False)
    acc = b.node("ConvInteger", ["x_q", b.const("c_wq", q), "x_z", b.const("c_wz", zp)], "conv_acc", pads=[1] * 4)
    y = rescale(acc, "x_s", b.const("c_ws", np.float32(scale)), "conv")
    y = b.node("Add", [y, b.const("c_b", w["conv1_b"].reshape(1, -1, 1, 1))], "conv_b")
    gap = b.node("Flatten", [b.node("GlobalAveragePool", [b.node("Relu", [y], "relu")], "gap")], "flat")
    b.nodes.append(helper.make_node("DynamicQuantizeLinear", [gap], ["g_q", "g_s", "g_z"], name="g_dql"))
    fc = (rng.standard_normal((8, NUM_CLASSES)) / 3).astype(np.float32)
    q, scale, zp = uint8_weights(fc, per_channel=False)
    acc = b.node("MatMulInteger", ["g_q", b.const("f_wq", q), "g_z", b.const("f_wz", zp)], "fc_acc")
    out = rescale(acc, "g_s", b.const("f_ws", np.float32(scale)), "fc")
    return _save(b.nodes, b.inits, [out, "conv_acc", "fc_acc"], path, "dynamic_cnn")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("qops")
    w = _float_weights()
    float_path = _float_model(w, tmp / "float.onnx")
    samples = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(NUM_CALIBRATION)]
    params = _calibrate(float_path, samples)
    qdq_path, qdq_q = _qdq_model(w, params, tmp / "qdq.onnx")
    qlinear_path, qlinear_q = _qlinear_model(w, params, tmp / "qlinear.onnx")
    dynamic_path = _dynamic_model(w, tmp / "dynamic.onnx")
    x = rng.standard_normal(SHAPE).astype(np.float32)
    return {"float": float_path, "qdq": (qdq_path, qdq_q), "qlinear": (qlinear_path, qlinear_q),
            "dynamic": (dynamic_path, []),
            "x": x, "samples": samples}


def _compare_integers(got: List[np.ndarray], want: List[np.ndarray], names: List[str], label: str) -> Tuple[int, int, int]:
    """(differing elements, total elements, max |diff| in LSB) over the uint8 outputs, printed per tensor."""
    differ = total = worst = 0
    for name, g, r in zip(names, got[1:], want[1:]):
        assert g.dtype == np.uint8 and r.dtype == np.uint8, (name, g.dtype, r.dtype)
        d = np.abs(g.astype(np.int32) - r.astype(np.int32))
        print(f"  {label} {name}: {int((d > 0).sum())}/{d.size} elements differ, max {int(d.max())} LSB")
        differ, total, worst = differ + int((d > 0).sum()), total + d.size, max(worst, int(d.max()))
    return differ, total, worst


def _float_error(got: np.ndarray, want: np.ndarray) -> Tuple[float, float]:
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    return float(err.max()), float(err.max() / max(np.abs(want).max(), 1e-30))


def test_qdq_cnn_matches_onnx_runtime_within_one_lsb(models) -> None:
    path, names = models["qdq"]
    x = models["x"]
    ours, ort = _npuc(path, x), _ort(path, {"x": x})
    differ, total, worst = _compare_integers(ours, ort, names, "QDQ npuc vs ORT")
    abs_err, rel_err = _float_error(ours[0], ort[0])
    print(f"QDQ CNN: {differ}/{total} integer elements differ (max {worst} LSB); output max abs {abs_err:.3g}, rel {rel_err:.3g}")
    assert worst <= MAX_QDQ_LSB
    assert differ <= MAX_QDQ_DIFF_FRACTION * total


def test_qlinear_cnn_matches_onnx_runtime_exactly(models) -> None:
    path, names = models["qlinear"]
    x = models["x"]
    ours, ort = _npuc(path, x), _ort(path, {"x": x})
    differ, total, worst = _compare_integers(ours, ort, names, "QLinear npuc vs ORT")
    abs_err, rel_err = _float_error(ours[0], ort[0])
    print(f"QLinear CNN: {differ}/{total} integer elements differ; output max abs {abs_err:.3g}, rel {rel_err:.3g}")
    assert differ == 0
    assert abs_err == 0.0


def test_fold_qlinear_keeps_the_qlinear_cnn_within_one_lsb(models) -> None:
    """After optimize() (fold_qlinear: float Conv/MatMul between DQ and Q) against the integer kernels."""
    path, names = models["qlinear"]
    x = models["x"]
    optimized, report = npuc.optimize(npuc.Model.load(str(path)), 3)
    ops = optimized.op_histogram
    assert "QLinearConv" not in ops and "QLinearMatMul" not in ops, ops
    assert ops.get("Conv", 0) == 3 and ops.get("MatMul", 0) + ops.get("Gemm", 0) == 1, ops
    folded, exact = npuc.Runtime(optimized).run([x]), _npuc(path, x)
    differ, total, worst = _compare_integers(folded, exact, names, "fold_qlinear vs integer kernels")
    print(f"fold_qlinear: {differ}/{total} integer elements differ (max {worst} LSB)")
    assert worst <= MAX_QDQ_LSB and differ <= MAX_QDQ_DIFF_FRACTION * total


def test_npucs_own_qdq_export_loads_back_and_matches_onnx_runtime(models, tmp_path: Path) -> None:
    """The QDQ file npuc writes for its INT8 model (int8 activations and zero points, per-channel
    weights with `axis`, int32 biases, Cast-to-float16 pairs around FP16 nodes) runs on npuc's own
    FP32 runtime like in ONNX Runtime: every output within 1 step of its DequantizeLinear scale."""
    qmodel = quantize(npuc.Model.load(str(models["float"])), models["samples"])
    path = tmp_path / "npuc_qdq.onnx"
    qmodel.export_onnx(str(path))
    proto = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    producer = {o: n for n in proto.graph.node for o in n.output}
    x = models["x"]
    ours, ort = _npuc(path, x), _ort(path, {"x": x})
    differ = total = 0
    for out, g, r in zip(proto.graph.output, ours, ort):
        dq = producer[out.name]
        assert dq.op_type == "DequantizeLinear", dq.op_type
        steps = np.abs(g.astype(np.float64) - r.astype(np.float64)) / float(inits[dq.input[1]])
        print(f"  npuc QDQ export {out.name}: {int((steps > 0.5).sum())}/{steps.size} differ, max {steps.max():.3f} steps")
        assert steps.max() <= 1.001
        differ, total = differ + int((steps > 0.5).sum()), total + steps.size
    assert differ <= MAX_QDQ_DIFF_FRACTION * total


def test_dynamic_quantization_matches_onnx_runtime(models) -> None:
    """DynamicQuantizeLinear + ConvInteger / MatMulInteger: the int32 accumulators exactly, the
    rescaled float output to float rounding (ONNX Runtime fuses the Cast/Mul chain into its own
    DynamicQuantizeMatMul kernel, which multiplies the scales in another order)."""
    path, _ = models["dynamic"]
    x = models["x"]
    ours, ort = _npuc(path, x), _ort(path, {"x": x})
    for name, g, r in zip(["conv_acc", "fc_acc"], ours[1:], ort[1:]):
        assert g.dtype == np.int32 and r.dtype == np.int32, name
        assert np.array_equal(g, r), f"{name}: {int((g != r).sum())} int32 accumulators differ"
    abs_err, rel_err = _float_error(ours[0], ort[0])
    print(f"dynamic CNN: int32 accumulators identical; output max abs {abs_err:.3g}, rel {rel_err:.3g}")
    assert rel_err <= MAX_DYNAMIC_REL_ERROR


@pytest.mark.parametrize("form", ["qdq", "qlinear", "dynamic"])
def test_int8_simulator_reference_and_fast_paths_agree(models, form: str) -> None:
    """The INT8 simulator on the unoptimized graph (every quantized op of the family is in it)."""
    path, _ = models[form]
    model = npuc.Model.load(str(path))
    ops = set(model.op_histogram)
    family = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
              "ConvInteger", "MatMulInteger"}
    print(f"{form}: simulator runs {sorted(ops & family)}")
    fast = quantize(model, models["samples"][:2])
    ref = quantize(model, models["samples"][:2], reference=True)
    for a, b in zip(fast.run([models["x"]]), ref.run([models["x"]])):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("form", ["qdq", "qlinear", "dynamic"])
def test_int8_and_fp16_builds_and_rk3588_split(models, form: str, capsys, tmp_path: Path) -> None:
    """Each build's output, and the same from its exported blob loaded back (CPU segments hold the
    family's ops), against the FP32 runtime."""
    path, _ = models[form]
    x = models["x"]
    reference = _npuc(path, x)[0]
    outputs: Dict[bool, np.ndarray] = {}
    for quantized in (True, False):
        blob = tmp_path / f"{form}_{quantized}.npub"
        with npuc.Toolkit() as tk:
            tk.config(target_platform="rk3588")
            tk.load_onnx(model=str(path))
            assert tk.build(do_quantization=quantized, dataset=models["samples"] if quantized else None) == 0
            report = tk.partition_report
            tk.init_runtime()
            outputs[quantized] = tk.inference(inputs=[x])[0]
            assert tk.export_rknn(str(blob)) == 0
        with npuc.Toolkit() as tk:
            tk.load_rknn(str(blob))
            tk.init_runtime()
            assert np.array_equal(tk.inference(inputs=[x])[0], outputs[quantized]), "the blob runs like the build"
    cos_int8, cos_fp16 = cosine_similarity(reference, outputs[True]), cosine_similarity(reference, outputs[False])
    cpu_ops: Dict[str, int] = {}
    for n in report["cpu_nodes"]:
        cpu_ops[n["op_type"]] = cpu_ops.get(n["op_type"], 0) + 1
    with capsys.disabled():
        print(f"\n{form} CNN: INT8 build cosine to FP32 {cos_int8:.6f}, FP16 build {cos_fp16:.6f}")
        print(f"  rk3588: CPU ops {cpu_ops}, {report['handovers']} hand-overs, NPU MAC share {report['npu_mac_share']:.3f}")
        print("  " + report["text"].splitlines()[0])
    assert cos_int8 >= MIN_INT8_COSINE
    assert cos_fp16 >= MIN_FP16_COSINE
    assert report["npu_mac_share"] == 1.0, "every Conv/MatMul MAC runs on the NPU"
