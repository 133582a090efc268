"""RKNN-Toolkit2 2.3.2's quantized dtypes (issue #17) through ``Toolkit.config(quantized_dtype=...,
quantized_method=...)`` -> ``build(do_quantization=True)`` -> ``inference``: each dtype runs on the
real ppocr_cls (shared models) and on a small random CNN, its cosine to FP32 is printed and held to
a floor measured on these inputs; w8a8 is unchanged; inconsistent settings are refused naming both
keys; hybrid_layers keep working at 16-bit activations."""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import shared_models_dir

import npuc
from npuc.quantize import cosine_similarity

CLS_MEAN, CLS_STD = [127.5] * 3, [127.5] * 3
#: (quantized_dtype, quantized_method, floor on ppocr_cls, floor on the random CNN). Floors are the
#: measured cosines (printed by the tests) rounded down with a margin. ppocr_cls's output is a
#: 2-class softmax (cosine 1.0000000 to 7 digits for every 8/16-bit dtype). w4a16 puts every Conv
#: of its ~50-layer MobileNetV3 at 4 bits: each layer alone keeps a cosine of ~0.99 (accuracy
#: analysis), the errors compound, and the 0/180 decision flips on the reference line (softmax
#: cosine 0.57 with group32, 0.10 with group128): a property of 4-bit weights on a small CNN, not of
#: a kernel (the issue's w4a16 target is transformer MatMul/Gemm layers; bench/quant_accuracy.py).
DTYPES: List[Tuple[str, str, float, float]] = [
    ("w8a8", "channel", 0.99999, 0.9999),
    ("w8a16", "channel", 0.99999, 0.9999),
    ("w16a16i", "channel", 0.999999, 0.99999),
    ("w16a16i_dfp", "channel", 0.999999, 0.99999),
    ("w4a16", "group32", 0.5, 0.99),
    ("w4a16", "group128", 0.05, 0.99),
]


def _cnn(path: Path) -> Path:
    """Conv-BN-style CNN with a residual Add, a depthwise Conv, pooling and a Gemm (seeded)."""
    rng = np.random.default_rng(7)

    def const(name: str, shape, scale: float) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        const("w1", (16, 3, 3, 3), 0.3), const("b1", (16,), 0.1),
        const("w2", (16, 1, 3, 3), 0.4), const("b2", (16,), 0.1),
        const("w3", (32, 16, 1, 1), 0.25), const("b3", (32,), 0.1),
        const("w4", (32, 16, 1, 1), 0.25),
        const("fc", (10, 32), 0.2), const("fcb", (10,), 0.1),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=16),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"]),
        helper.make_node("Conv", ["r1", "w4"], ["c4"]),
        helper.make_node("Add", ["c3", "c4"], ["a"]),
        helper.make_node("Relu", ["a"], ["r3"]),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, path)
    return path


def _run(model: Path, dtype: str, method: str, dataset, x: np.ndarray, **config) -> np.ndarray:
    with npuc.Toolkit() as tk:
        tk.config(quantized_dtype=dtype, quantized_method=method, **config)
        tk.load_onnx(model=str(model))
        tk.build(do_quantization=True, dataset=dataset)
        return tk.inference(inputs=[x])[0]


def _fp32(model: Path, x: np.ndarray, **config) -> np.ndarray:
    with npuc.Toolkit() as tk:
        if config:
            tk.config(**config)
        tk.load_onnx(model=str(model))
        return tk.inference(inputs=[x])[0]


@pytest.fixture(scope="module")
def cnn(tmp_path_factory) -> Tuple[Path, List[List[np.ndarray]], np.ndarray]:
    folder = tmp_path_factory.mktemp("cnn")
    rng = np.random.default_rng(1)
    samples = [[rng.standard_normal((1, 3, 32, 32)).astype(np.float32)] for _ in range(8)]
    # Evaluated on a calibration sample: every activation inside its range, so the cosine shows the
    # dtype's rounding, not the clipping of values beyond the calibrated range (the same for all).
    return _cnn(folder / "cnn.onnx"), samples, samples[3][0]


@pytest.mark.parametrize("dtype,method,_cls_floor,floor", DTYPES)
def test_random_cnn_per_dtype(cnn, dtype: str, method: str, _cls_floor: float, floor: float) -> None:
    model, samples, x = cnn
    got = _run(model, dtype, method, samples, x)
    cos = cosine_similarity(_fp32(model, x), got)
    print(f"cnn {dtype} {method}: cosine {cos:.7f}")
    assert cos >= floor


def test_wider_dtypes_are_at_least_as_accurate_as_w8a8(cnn) -> None:
    model, samples, x = cnn
    ref = _fp32(model, x)
    cos = {d: cosine_similarity(ref, _run(model, d, "channel", samples, x)) for d in ("w8a8", "w8a16", "w16a16i")}
    assert cos["w8a8"] <= cos["w8a16"] <= cos["w16a16i"] + 1e-9, cos


def test_w8a8_spellings_are_the_same_model(cnn) -> None:
    model, samples, x = cnn
    a = _run(model, "w8a8", "channel", samples, x)
    b = _run(model, "asymmetric_quantized-8", "channel", samples, x)
    assert np.array_equal(a, b)


def test_hybrid_layers_at_16_bits(cnn) -> None:
    model, samples, x = cnn
    with npuc.Toolkit() as tk:
        tk.config(quantized_dtype="w16a16i", hybrid_layers=["Conv_1"])
        tk.load_onnx(model=str(model))
        tk.build(do_quantization=True, dataset=samples)
        got = tk.inference(inputs=[x])[0]
        precisions = tk._quantized[1].node_precisions
    assert precisions["Conv_1"] == "fp16"
    assert precisions["Conv_0"] == "int8"  # the plan's integer precision (int16 activations here)
    assert precisions["Add_0"] == "int8"  # integer Add on int16 (quant/binary_requant_wide.h)
    assert cosine_similarity(_fp32(model, x), got) >= 0.9999


@pytest.mark.parametrize(
    "dtype,method,words",
    [("w4a16", "channel", ("w4a16", "group")), ("w8a16", "group128", ("group128", "w8a16")),
     ("w16a16i", "group64", ("group64", "w16a16i"))],
)
def test_inconsistent_dtype_and_method_are_refused(cnn, dtype: str, method: str, words) -> None:
    model, samples, x = cnn
    with pytest.raises(npuc.ConfigError) as err:
        _run(model, dtype, method, samples, x)
    for w in words:
        assert w in str(err.value)


def _cls_inputs(folder: Path) -> Tuple[List[List[np.ndarray]], np.ndarray]:
    ref = np.load(folder / "ppocr_cls.ref.npz")
    x = next(ref[k] for k in ref.files if k.startswith("input:")).astype(np.float32)  # normalized NCHW
    rng = np.random.default_rng(0)
    samples = [[(np.roll(x, 4 * i, axis=3) + rng.normal(0, 0.05, x.shape)).astype(np.float32)] for i in range(6)]
    return samples, x


@pytest.mark.parametrize("dtype,method,floor,_cnn_floor", DTYPES)
def test_ppocr_cls_per_dtype(dtype: str, method: str, floor: float, _cnn_floor: float) -> None:
    folder = shared_models_dir()
    if folder is None or not (folder / "ppocr_cls.onnx").is_file():
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    samples, x = _cls_inputs(folder)
    model = folder / "ppocr_cls.onnx"
    ref = _fp32(model, x)
    got = _run(model, dtype, method, samples, x)
    cos = cosine_similarity(ref, got)
    print(f"ppocr_cls {dtype} {method}: cosine {cos:.9f}, decision {int(np.argmax(got))} vs {int(np.argmax(ref))}")
    if dtype != "w4a16":
        assert int(np.argmax(got)) == int(np.argmax(ref))
    assert cos >= floor


@pytest.mark.parametrize("dtype,method", [("w16a16i", "channel"), ("w4a16", "group32")])
def test_accuracy_analysis_at_16_bits(cnn, tmp_path: Path, dtype: str, method: str) -> None:
    model, samples, x = cnn
    with npuc.Toolkit() as tk:
        tk.config(quantized_dtype=dtype, quantized_method=method)
        tk.load_onnx(model=str(model))
        tk.build(do_quantization=True, dataset=samples)
        assert tk.accuracy_analysis(inputs=[x], output_dir=str(tmp_path / "snap")) == 0
        rows = {r["value"]: r for r in tk.accuracy_report.rows}
    # Entire and single both measured; the first Conv's single error is its own weights' rounding:
    # tiny at 16 bits, visible at 4.
    first = rows["c1"] if "c1" in rows else next(r for r in rows.values() if r["op_type"] == "Conv")
    assert 0.9 < first["single_cosine"] <= 1.0 and 0.9 < first["cosine"] <= 1.0
    if dtype == "w16a16i":
        assert first["single_cosine"] > 0.999999
    else:
        assert first["single_cosine"] < 0.99999


def test_kl_and_mmse_run_as_normal_at_16_bits_and_say_so(cnn, capfd) -> None:
    model, samples, x = cnn
    capfd.readouterr()
    got = _run(model, "w8a16", "channel", samples, x, quantized_algorithm="mmse")
    text = "".join(capfd.readouterr())
    assert "quantized_algorithm mmse" in text and "using 'normal'" in text
    assert np.array_equal(got, _run(model, "w8a16", "channel", samples, x))  # the normal ranges
