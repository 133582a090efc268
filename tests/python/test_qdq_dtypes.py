"""QDQ export of issue #17's quantized dtypes: int16 activations, int16 (w16a16i) and grouped int4
(w4a16) weights, int64 biases, on hand-made plans, run by ONNX Runtime and compared with a NumPy
evaluation of the same quantized math.

The plans are made here (the quantizer of the new dtypes is another part of #17): a w8a8 plan
calibrated as usual is rewritten to the scheme through ``QuantizedModel.plan_bytes`` (QUNT codec 3,
docs/blob_format.md) and loaded back with ``_npuc.quantized_from_plan``. Weights follow the agreed
``quantizeNodeWeights`` rule at scales chosen so every quantizer gives the same integers:
int16 at ``max|w_c| / 100``, int4 at ``max|w_c| / 7`` with group multipliers ``1 + (c + g) % 3``
(group 0: 1) on groups whose weights are zeroed in the model (1 elsewhere).

Reference: NumPy in float64 of exactly what the QDQ file states: every activation fake-quantized
(``(clip(round_half_even(x / s) + zp) - zp) * s``, int16), weights ``q * float32(s_c * m)``, biases
``float32(round(b / (s_in s_w)) * s_in s_w)``. Criterion: every output element within
``MAX_LSB`` output steps of ORT. Measured (ORT 1.30, node): max 0 steps for all three dtypes
(float32 against float64 accumulation moves values by ~1e-6 of a step; an int16 near-tie flip
would move an element by one step, hence the tolerance of 1).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Dict, Tuple

import numpy as np
import onnx
from onnx import helper, numpy_helper

from conftest import ort_outputs, require_ort

import npuc
from npuc import _npuc
from npuc.quantize import quantize

MAX_LSB = 1
GROUP = 32
SCHEMES = {"w8a8": 0, "w8a16": 1, "w16a16i": 2, "w16a16i_dfp": 3, "w4a16": 4}
INT8, INT32, INT16, INT4, INT64 = 0, 1, 3, 4, 5
#: TensorProto.INT4 (onnx >= 1.16; Debian's onnx predates it).
ONNX_INT4 = 22


# ---------------------------------------------------------------- QUNT codec 3 (test-local)

def _decode(b: bytes) -> Dict:
    off = 0

    def take(fmt: str):
        nonlocal off
        v = struct.unpack_from("<" + fmt, b, off)
        off += struct.calcsize("<" + fmt)
        return v if len(v) > 1 else v[0]

    def string() -> str:
        nonlocal off
        n = take("I")
        s = b[off:off + n].decode()
        off += n
        return s

    assert take("I") == 3
    plan = {"granularity": take("B"), "scheme": take("B"), "group": take("q"), "tensors": {}, "nodes": {}}
    for _ in range(take("I")):
        name = string()
        t = {"dtype": take("B"), "axis": take("q")}
        t["scales"] = [take("f") for _ in range(take("I"))]
        t["zps"] = [0] * len(t["scales"]) if take("B") == 1 else [take("i") for _ in range(take("I"))]
        t["group_size"], t["mult"] = 0, []
        if take("B") == 1:
            t["group_size"] = take("q")
            t["mult"] = [take("B") for _ in range(take("I"))]
        # The given-values flag (an imported QDQ file's bias integers): count, then i64 each.
        t["given"] = [take("q") for _ in range(take("I"))] if take("B") == 1 else []
        plan["tensors"][name] = t
    for _ in range(take("I")):
        name = string()
        plan["nodes"][name] = take("B")
    assert off == len(b)
    return plan


def _encode(plan: Dict) -> bytes:
    out = [struct.pack("<IBBq", 3, plan["granularity"], plan["scheme"], plan["group"])]

    def string(s: str) -> None:
        out.append(struct.pack("<I", len(s.encode())) + s.encode())

    out.append(struct.pack("<I", len(plan["tensors"])))
    for name in sorted(plan["tensors"]):
        t = plan["tensors"][name]
        string(name)
        out.append(struct.pack("<Bq", t["dtype"], t["axis"]))
        out.append(struct.pack(f"<I{len(t['scales'])}f", len(t["scales"]), *t["scales"]))
        if all(z == 0 for z in t["zps"]):
            out.append(b"\1")  # all-zero zero points: the flag alone
        else:
            out.append(struct.pack("<BI", 0, len(t["zps"])) + struct.pack(f"<{len(t['zps'])}i", *t["zps"]))
        if t["group_size"]:
            out.append(struct.pack("<BqI", 1, t["group_size"], len(t["mult"])) + bytes(t["mult"]))
        else:
            out.append(b"\0")
        given = t.get("given", [])
        out.append(struct.pack(f"<BI{len(given)}q", 1, len(given), *given) if given else b"\0")
    out.append(struct.pack("<I", len(plan["nodes"])))
    for name in sorted(plan["nodes"]):
        string(name)
        out.append(struct.pack("<B", plan["nodes"][name]))
    return b"".join(out)


# ---------------------------------------------------------------- the model and its plans

def _multiplier(c: int, g: int) -> int:
    return 1 if g == 0 else 1 + (c + g) % 3  # group 0 keeps each channel's weights


def _weights(zero_groups: bool) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(17)
    w = {"w1": 0.1 * rng.standard_normal((32, 64, 1, 1)), "b1": 0.1 * rng.standard_normal(32),
         "wfc": 0.2 * rng.standard_normal((32, 10)), "bfc": 0.1 * rng.standard_normal(10)}
    w = {k: v.astype(np.float32) for k, v in w.items()}
    if zero_groups:  # conv: channel c, reduction k = input channel; gemm [K, N]: channel n, k = row
        for c in range(32):
            for k in range(64):
                if _multiplier(c, k // GROUP) > 1:
                    w["w1"][c, k] = 0
        for n in range(10):
            for k in range(32):
                if _multiplier(n, k // GROUP) > 1:
                    w["wfc"][k, n] = 0
    return w


def _onnx(w: Dict[str, np.ndarray]) -> onnx.ModelProto:
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[1, 1]), n("Relu", ["c1"], ["r1"]),
             n("GlobalAveragePool", ["r1"], ["g1"]), n("Flatten", ["g1"], ["f1"]),
             n("Gemm", ["f1", "wfc", "bfc"], ["y"])]
    graph = helper.make_graph(
        nodes, "dtypes", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 64, 3, 3])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(v, k) for k, v in w.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _to_scheme(plan: Dict, scheme: str, w: Dict[str, np.ndarray]) -> Dict:
    plan["scheme"] = SCHEMES[scheme]
    plan["group"] = GROUP if scheme == "w4a16" else 0
    weight_bits = {"w8a16": 8, "w16a16i": 16, "w4a16": 4}[scheme]
    for name, t in plan["tensors"].items():
        if t["dtype"] == INT8 and t["axis"] == -1 and name not in w:  # activations -> int16
            s8, z8 = t["scales"][0], t["zps"][0]
            lo, hi = s8 * (-128 - z8), s8 * (127 - z8)
            s16 = (hi - lo) / 65535
            t["scales"], t["zps"], t["dtype"] = [s16], [int(np.clip(round(-32768 - lo / s16), -32768, 32767))], INT16
    for wname, bname, inp in (("w1", "b1", "x"), ("wfc", "bfc", "f1")):
        t = plan["tensors"][wname]
        per_channel = np.abs(w[wname]).reshape(32, -1).max(1) if wname == "w1" else np.abs(w[wname]).max(0)
        if weight_bits != 8:
            qmax = 100.0 if weight_bits == 16 else 7.0
            t["scales"] = [float(np.float32(max(m, 1e-6) / qmax)) for m in per_channel]
            t["dtype"] = INT16 if weight_bits == 16 else INT4
        if scheme == "w4a16":
            k = 64 if wname == "w1" else 32
            groups = (k + GROUP - 1) // GROUP
            t["group_size"] = GROUP
            t["mult"] = [_multiplier(c, g) for c in range(len(t["scales"])) for g in range(groups)]
        b = plan["tensors"][bname]
        s_in = np.float32(plan["tensors"][inp]["scales"][0])
        b["scales"] = [float(s_in * np.float32(s)) for s in t["scales"]]
        b["dtype"] = INT64
    return plan


# ---------------------------------------------------------------- the NumPy reference

def _fq(x: np.ndarray, t: Dict) -> np.ndarray:
    s, zp = np.float32(t["scales"][0]), t["zps"][0]
    lo, hi = (-32768, 32767) if t["dtype"] == INT16 else (-128, 127)
    q = np.clip(np.round(x.astype(np.float32) / s) + zp, lo, hi)
    return (q - zp) * np.float64(s)


def _dequant_weight(w: np.ndarray, t: Dict, channel_axis: int) -> np.ndarray:
    """q * float32(scale_c * m) along each channel's reduction (rows of the [C, K] view)."""
    view = np.moveaxis(w, channel_axis, 0).reshape(w.shape[channel_axis], -1).astype(np.float64)
    out = np.empty_like(view)
    qmax = {INT8: 127, INT16: 32767, INT4: 7}[t["dtype"]]
    k = view.shape[1]
    groups = (k + t["group_size"] - 1) // t["group_size"] if t["group_size"] else 1
    for c in range(view.shape[0]):
        for g in range(groups):
            sl = slice(g * t["group_size"], (g + 1) * t["group_size"]) if t["group_size"] else slice(None)
            m = t["mult"][c * groups + g] if t["group_size"] else 1
            s = np.float32(np.float32(t["scales"][c]) * np.float32(m))
            q = np.clip(np.sign(view[c, sl]) * np.floor(np.abs(view[c, sl]) / np.float64(s) + 0.5), -qmax, qmax)
            out[c, sl] = q * np.float64(s)
    shape = (w.shape[channel_axis],) + tuple(d for i, d in enumerate(w.shape) if i != channel_axis)
    return np.moveaxis(out.reshape(shape), 0, channel_axis)


def _bias(b: np.ndarray, t: Dict) -> np.ndarray:
    s = np.array(t["scales"], np.float64)
    q = np.sign(b / s) * np.floor(np.abs(b / s) + 0.5)
    return (q * s).astype(np.float32).astype(np.float64)


def _reference(x: np.ndarray, plan: Dict, w: Dict[str, np.ndarray], names: Dict[str, str]) -> np.ndarray:
    t = plan["tensors"]
    a = _fq(x, t[names["x"]])
    w1 = _dequant_weight(w["w1"], t["w1"], 0)[:, :, 0, 0]
    c1 = np.einsum("oi,nihw->nohw", w1, a) + _bias(w["b1"], t["b1"])[None, :, None, None]
    c1 = _fq(c1, t[names["c1"]])
    r1 = _fq(np.maximum(c1, 0), t[names["r1"]])
    g1 = _fq(r1.mean(axis=(2, 3)), t[names["g1"]])
    wfc = _dequant_weight(w["wfc"], t["wfc"], 1)
    return _fq(g1 @ wfc + _bias(w["bfc"], t["bfc"]), t[names["y"]])


# ---------------------------------------------------------------- the test

def _run(scheme: str, tmp_path: Path) -> Tuple[np.ndarray, np.ndarray, float, onnx.ModelProto]:
    w = _weights(zero_groups=scheme == "w4a16")
    model, _ = npuc.optimize(npuc.Model.from_bytes(_onnx(w).SerializeToString()))
    rng = np.random.default_rng(3)
    samples = [rng.standard_normal((1, 64, 3, 3)).astype(np.float32) for _ in range(3)]
    q8 = quantize(model, [[s] for s in samples])
    plan = _to_scheme(_decode(q8.plan_bytes), scheme, w)
    qm = _npuc.quantized_from_plan(model, _encode(plan))
    path = tmp_path / f"{scheme}.onnx"
    qm.export_onnx(str(path))
    exported = onnx.load(str(path))  # (Debian's onnx checker predates IR version 10: ORT checks it)
    ort = ort_outputs(path, {"x": samples[0]})[0]
    # Activation value names as the plan holds them (the ONNX names survive the import).
    names = {k: k for k in ("x", "c1", "r1", "g1", "y")}
    assert set(names.values()) <= set(plan["tensors"]), sorted(plan["tensors"])
    ref = _reference(samples[0], plan, w, names)
    return ort, ref, plan["tensors"]["y"]["scales"][0], exported


def _initializer_types(m: onnx.ModelProto) -> Dict[str, int]:
    return {i.name: i.data_type for i in m.graph.initializer}


def test_w16a16i_exports_int16_qdq_at_opset_21(tmp_path: Path) -> None:
    require_ort()
    ort, ref, s_out, m = _run("w16a16i", tmp_path)
    assert [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] == [21]
    types = _initializer_types(m)
    assert types["w1_quantized"] == onnx.TensorProto.INT16
    assert types["x_zero_point"] == onnx.TensorProto.INT16
    assert "b1_dequantized" in types and types["b1_dequantized"] == onnx.TensorProto.FLOAT  # int64 bias
    assert np.abs(ort - ref).max() / s_out <= MAX_LSB


def test_w4a16_exports_blocked_int4_dequantize(tmp_path: Path) -> None:
    require_ort()
    ort, ref, s_out, m = _run("w4a16", tmp_path)
    types = _initializer_types(m)
    assert types["w1_quantized"] == ONNX_INT4 and types["wfc_quantized"] == ONNX_INT4
    blocks = {n.input[0]: {a.name: helper.get_attribute_value(a) for a in n.attribute}
              for n in m.graph.node if n.op_type == "DequantizeLinear"}
    assert blocks["w1_quantized"] == {"axis": 1, "block_size": GROUP}  # Conv [O, I, 1, 1]: along I
    assert blocks["wfc_quantized"] == {"axis": 0, "block_size": GROUP}  # Gemm [K, N]: along K
    scale = numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == "w1_quantized_scale"))
    assert scale.shape == (32, 2, 1, 1) and len(np.unique(scale[:, 1] / scale[:, 0])) > 1
    assert np.abs(ort - ref).max() / s_out <= MAX_LSB


def test_w8a16_keeps_int8_weights_and_w8a8_stays_opset_13(tmp_path: Path) -> None:
    require_ort()
    ort, ref, s_out, m = _run("w8a16", tmp_path)
    types = _initializer_types(m)
    assert types["w1_quantized"] == onnx.TensorProto.INT8 and types["x_zero_point"] == onnx.TensorProto.INT16
    assert np.abs(ort - ref).max() / s_out <= MAX_LSB
    w = _weights(False)
    model, _ = npuc.optimize(npuc.Model.from_bytes(_onnx(w).SerializeToString()))
    q8 = quantize(model, [[np.ones((1, 64, 3, 3), np.float32)]])
    q8.export_onnx(str(tmp_path / "w8a8.onnx"))
    assert [o.version for o in onnx.load(str(tmp_path / "w8a8.onnx")).opset_import if o.domain == ""] == [13]
    # The codec round trip of a w8a8 plan is exact.
    assert _encode(_decode(q8.plan_bytes)) == q8.plan_bytes
