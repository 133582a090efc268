"""Tests of the TFLite reference harness (tests/python/tflite_reference.py) itself: the flatbuffer
reader/writer, the FP32-weight copies Arm NN runs, the rewrites of what Arm NN 20.08 cannot run
(checked against a numpy evaluation of the original model's semantics), and the INT8 writer.

Needs python3-pyarmnn, libarmnn-cpuref-backend22, python3-flatbuffers and MediaPipe's models in
bench/node_modules (tools/install_deps.sh test); skipped without them, a failure under
NPUC_STRICT_DEPS=1."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Dict

import numpy as np
import pytest

import tflite_reference as tr

#: op counts, input and output (name, shape, dtype) of the originals, pinned: the TFLite frontend's
#: tests lean on these facts.
EXPECTED = {
    "face_detection_short_range": (
        {"DEQUANTIZE": 74, "CONV_2D": 21, "RELU": 17, "DEPTHWISE_CONV_2D": 16, "ADD": 16, "PAD": 11, "RESHAPE": 4,
         "MAX_POOL_2D": 3, "CONCATENATION": 2},
        [("input", [1, 128, 128, 3], "FLOAT32")],
        [("regressors", [1, 896, 16], "FLOAT32"), ("classificators", [1, 896, 1], "FLOAT32")]),
    "selfie_segmentation": (
        {"DEQUANTIZE": 110, "CONV_2D": 43, "RELU": 22, "ADD": 14, "HARD_SWISH": 11, "DEPTHWISE_CONV_2D": 11,
         "LOGISTIC": 11, "AVERAGE_POOL_2D": 10, "MUL": 10, "RESIZE_BILINEAR": 3,
         "CUSTOM:Convolution2DTransposeBias": 1},
        [("input_1", [1, 256, 256, 3], "FLOAT32")],
        [("activation_10", [1, 256, 256, 1], "FLOAT32")]),
    "hand_landmark_lite": (
        {"DEQUANTIZE": 102, "CONV_2D": 31, "DEPTHWISE_CONV_2D": 16, "ADD": 10, "FULLY_CONNECTED": 4, "LOGISTIC": 2,
         "MAX_POOL_2D": 1, "MEAN": 1},
        [("input_1", [1, 224, 224, 3], "FLOAT32")],
        [("Identity", [1, 63], "FLOAT32"), ("Identity_1", [1, 1], "FLOAT32"), ("Identity_2", [1, 1], "FLOAT32"),
         ("Identity_3", [1, 63], "FLOAT32")]),
}
MODELS = sorted(EXPECTED)

#: Arm NN (float32) vs numpy_run of the original (float64), relative to the output's largest
#: magnitude. Measured: at most 8e-6 (hand_landmark_lite Identity_3), 5e-6 on selfie_segmentation's
#: logits; both sum the same products in different orders and precisions.
MAX_REL_VS_NUMPY = 5e-5

#: INT8 small CNN (Arm NN int8 vs Arm NN FP32, cosine). Measured over model seeds 0-3 x 6 held-out
#: inputs: 0.99906 to 0.99999 (0.99985 at least for seed 0, the one tested). 8 quantized layers of
#: int8 noise (scale ~ range/255) give ~1e-4 of lost cosine; 0.999 still catches a wrong scale, zero
#: point or bias scale, which drop it below 0.99.
MIN_INT8_COSINE = 0.999


def _require(what: str) -> None:
    if os.environ.get("NPUC_STRICT_DEPS"):
        raise AssertionError(f"{what} (tools/install_deps.sh test installs it)")
    pytest.skip(what)


@pytest.fixture(scope="module", autouse=True)
def _deps() -> None:
    missing = tr.deps_missing()
    if missing:
        _require(f"missing {missing}")
    for name in MODELS:
        try:
            tr.mediapipe_model(name)
        except FileNotFoundError as e:
            _require(str(e))


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    folder = tmp_path_factory.mktemp("tflite_fp32")
    out = {}
    for name in MODELS:
        out[name] = folder / f"{name}.fp32.tflite"
        tr.fp32_weight_copy(tr.mediapipe_model(name), out[name])
    return out


def _input(shape: list, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0, 1, shape).astype(np.float32)


@pytest.mark.parametrize("name", MODELS)
def test_describe_pins_the_models(name: str) -> None:
    d = tr.describe(tr.mediapipe_model(name))
    ops, inputs, outputs = EXPECTED[name]
    assert d["ops"] == ops
    assert [tuple(x) for x in d["inputs"]] == inputs
    assert [tuple(x) for x in d["outputs"]] == outputs
    assert d["subgraphs"] == 1
    assert set(d["constant_dtypes"]) == {"FLOAT16", "INT32"}  # fp16 weights behind DEQUANTIZE


@pytest.mark.parametrize("name", MODELS)
def test_copy_runs_in_armnn_and_matches_numpy_of_original(name: str, copies: Dict[str, Path],
                                                          tmp_path: Path) -> None:
    """The copy in Arm NN vs an independent numpy evaluation of the *original* file (float16
    weights, the custom op and half-pixel resize in their own semantics)."""
    _, inputs, outputs = EXPECTED[name]
    path = copies[name]
    extra = []
    if name == "selfie_segmentation":
        # Its output is a sigmoid of logits reaching |2000|: compare the logits, where float32
        # rounding is not amplified by the sigmoid's steep middle.
        extra = ["segment"]
        tr.with_outputs(path, tmp_path / "with_logits.tflite", extra)
        path = tmp_path / "with_logits.tflite"
    if name == "selfie_segmentation":
        # Uniform [0,1] noise segments as all background (max 8e-9); N(0, 2) noise gives a mask with
        # 3% foreground and 6% in the sigmoid's middle, so the whole output range is compared.
        feed = {inputs[0][0]: (np.random.default_rng(1).standard_normal(inputs[0][1]) * 2).astype(np.float32)}
    else:
        feed = {inputs[0][0]: _input(inputs[0][1])}
    got = tr.armnn_run(path, feed)
    want = tr.numpy_run(tr.mediapipe_model(name), feed) if not extra else None
    if extra:
        tr.with_outputs(tr.mediapipe_model(name), tmp_path / "orig_with_logits.tflite", extra)
        want = tr.numpy_run(tmp_path / "orig_with_logits.tflite", feed)
    assert sorted(got) == sorted([o[0] for o in outputs] + extra)
    for out_name, shape, _ in outputs:
        assert list(got[out_name].shape) == shape
        assert got[out_name].dtype == np.float32
        assert np.isfinite(got[out_name]).all()
    for k in got:
        if k == "activation_10":
            # The sigmoid output in absolute terms: logits of |z| ~ 2400 carry ~1e-2 of float32
            # noise, which the sigmoid's slope (<= 1/4) passes on; measured 6.9e-4.
            assert float(np.abs(got[k] - want[k]).max()) <= 2e-3
            assert float(want[k].max()) > 0.99 and float(want[k].min()) < 0.01
            continue
        scale = float(np.abs(want[k]).max())
        assert scale > 0
        assert float(np.abs(got[k] - want[k]).max()) / scale <= MAX_REL_VS_NUMPY, k


@pytest.mark.parametrize("name", MODELS)
def test_copy_weights_are_fp16_to_fp32_bit_exact_and_the_rest_kept(name: str, copies: Dict[str, Path]) -> None:
    orig = tr.read_model(tr.mediapipe_model(name))
    copy = tr.read_model(copies[name])
    sg, sgc = orig["subgraphs"][0], copy["subgraphs"][0]
    by_name = {t["name"]: t for t in sgc["tensors"]}
    folded = 0
    for op in sg["operators"]:
        if tr.op_name(orig, op) != "DEQUANTIZE":
            continue
        src = sg["tensors"][int(op["inputs"][0])]
        dst = sg["tensors"][int(op["outputs"][0])]
        w16 = tr.tensor_value(orig, src)
        assert w16.dtype == np.float16
        w32 = tr.tensor_value(copy, by_name[dst["name"]])
        assert w32.dtype == np.float32 and w32.shape == w16.shape
        assert w32.tobytes() == w16.astype(np.float32).tobytes()
        assert src["name"] not in by_name  # the float16 tensor is gone
        folded += 1
    assert folded == EXPECTED[name][0]["DEQUANTIZE"]
    assert "DEQUANTIZE" not in tr.describe(copies[name])["ops"]
    # Everything else as it was: every tensor the copy shares with the original, every op kept,
    # and the model-level fields (description, metadata buffers).
    orig_by_name = {t["name"]: t for t in sg["tensors"]}
    fp16_names = {t["name"] for t in sg["tensors"] if t.get("type", 0) == tr.FLOAT16}
    assert set(orig_by_name) - fp16_names <= set(by_name)  # only the float16 tensors went
    for t in sgc["tensors"]:
        if t["name"] in orig_by_name and not t.get("buffer"):
            assert tr.tables_equal(t, orig_by_name[t["name"]]), t["name"]
    for key in ("version", "description", "metadata_buffer", "metadata"):
        assert tr.tables_equal(copy.get(key), orig.get(key)), key
    for b in orig.get("metadata_buffer", []):
        assert copy["buffers"][int(b)] == orig["buffers"][int(b)]

    def signature(m, s):  # ops by (name, input names, output names, options)
        out = []
        for op in s["operators"]:
            if tr.op_name(m, op) == "DEQUANTIZE":
                continue
            names = lambda idx: tuple(s["tensors"][int(i)]["name"] for i in idx)  # noqa: E731
            out.append((tr.op_name(m, op), names(op["inputs"]), names(op["outputs"]),
                        repr(op.get("builtin_options")), op.get("custom_options")))
        return out

    kept = signature(copy, sgc)
    original = signature(orig, sg)
    if name == "selfie_segmentation":  # the two documented rewrites, nothing else
        changed = [o for o in original if o[0] == "CUSTOM:Convolution2DTransposeBias" or o[0] == "RESIZE_BILINEAR"]
        assert len(changed) == 4
        original = [o for o in original if o not in changed]
        new = [o for o in kept if any(tag in n for n in o[1] + o[2]
                                      for tag in (b"/transpose_conv", b"/plain_resize", b"/edge"))]
        assert sorted(o[0] for o in new) == sorted(["TRANSPOSE_CONV", "ADD"] + 3 * [
            "RESIZE_BILINEAR", "STRIDED_SLICE", "STRIDED_SLICE", "CONCATENATION", "CONCATENATION", "AVERAGE_POOL_2D"])
        kept = [o for o in kept if o not in new]
    assert kept == original


@pytest.mark.parametrize("name", MODELS)
def test_rewrite_is_semantically_identical_and_deterministic(name: str, copies: Dict[str, Path]) -> None:
    """The originals (written by Google's converter) re-emit semantically identical, not byte-identical;
    the FP32 copies, which have no float16 left and were written by this writer, re-emit byte for byte."""
    data = Path(tr.mediapipe_model(name)).read_bytes()
    model = tr.read_model(data)
    again = tr.model_bytes(model)
    assert tr.tables_equal(tr.read_model(again), model)
    assert tr.model_bytes(tr.read_model(again)) == again
    copy_bytes = copies[name].read_bytes()
    assert tr.model_bytes(tr.read_model(copy_bytes)) == copy_bytes
    # Weights sit on 16-byte boundaries (Buffer.data is force_align 16 in the schema).
    offsets = [o for o in tr.buffer_data_offsets(copy_bytes) if o is not None]
    assert offsets and all(o % 16 == 0 for o in offsets)


def test_reader_refuses_what_it_cannot_keep() -> None:
    # face_detection_full_range_sparse (same npm package) has sparse tensors: outside the subset,
    # so the reader says so instead of dropping the field.
    sparse = Path(tr.mediapipe_model("face_detection_short_range")).with_name("face_detection_full_range_sparse.tflite")
    with pytest.raises(tr.TFLiteFormatError, match="sparsity"):
        tr.read_model(sparse)
    with pytest.raises(tr.TFLiteFormatError, match="TFL3"):
        tr.read_model(b"\0" * 64)
    truncated = Path(tr.mediapipe_model("hand_landmark_lite")).read_bytes()[:4096]
    with pytest.raises(tr.TFLiteFormatError, match="outside the file|malformed"):
        tr.read_model(truncated)


def test_mediapipe_model_names_the_install_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tr, "NODE_MODULES", tmp_path)
    with pytest.raises(FileNotFoundError, match="install_deps.sh test"):
        tr.mediapipe_model("hand_landmark_lite")
    with pytest.raises(KeyError):
        tr.mediapipe_model("pose_landmark")


def test_transpose_conv_bias_rewrite_matches_mediapipe_semantics(tmp_path: Path) -> None:
    """Convolution2DTransposeBias (SAME, stride 2, 2x2 kernel as in selfie_segmentation, 3 output
    channels) rewritten to TRANSPOSE_CONV + ADD, run in Arm NN, vs numpy of MediaPipe's kernel."""
    rng = np.random.default_rng(3)
    g = tr.GraphBuilder()
    x = g.tensor("x", [1, 6, 8, 4])
    w = g.tensor("w", [3, 2, 2, 4], data=rng.standard_normal([3, 2, 2, 4]))
    b = g.tensor("b", [3], data=rng.standard_normal(3))
    y = g.tensor("y", [1, 12, 16, 3])
    g.custom_op("Convolution2DTransposeBias", [x, w, b], [y], struct.pack("<iii", 1, 2, 2))
    model = g.finish([x], [y])
    tr.write_model(model, tmp_path / "custom.tflite")
    assert tr.expand_transpose_conv_bias(model) == 1
    tr.write_model(model, tmp_path / "rewritten.tflite")
    assert tr.describe(tmp_path / "rewritten.tflite")["ops"] == {"TRANSPOSE_CONV": 1, "ADD": 1}
    feed = {"x": rng.standard_normal([1, 6, 8, 4]).astype(np.float32)}
    want = tr.numpy_run(tmp_path / "custom.tflite", feed)["y"]
    # numpy of the rewritten graph equals numpy of the custom op (same float64 sums)...
    assert np.abs(tr.numpy_run(tmp_path / "rewritten.tflite", feed)["y"] - want).max() <= 1e-12
    # ...and Arm NN's run of the rewrite differs by float32 rounding only.
    got = tr.armnn_run(tmp_path / "rewritten.tflite", feed)["y"]
    assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()


def test_half_pixel_resize_rewrite(tmp_path: Path) -> None:
    """Arm NN 20.08 ignores half_pixel_centers (the harness's reason to rewrite); the rewrite is
    exact up to float32 rounding."""
    rng = np.random.default_rng(4)
    g = tr.GraphBuilder()
    x = g.tensor("x", [1, 6, 5, 3])
    size = g.tensor("size", [2], tr.INT32, np.array([12, 10]))
    y = g.tensor("y", [1, 12, 10, 3])
    g.op("RESIZE_BILINEAR", [x, size], [y], "ResizeBilinearOptions", half_pixel_centers=True)
    model = g.finish([x], [y])
    tr.write_model(model, tmp_path / "resize.tflite")
    feed = {"x": rng.standard_normal([1, 6, 5, 3]).astype(np.float32)}
    want = tr.numpy_run(tmp_path / "resize.tflite", feed)["y"]
    assert np.abs(tr.armnn_run(tmp_path / "resize.tflite", feed)["y"] - want).max() > 0.1
    assert tr.expand_half_pixel_resize(model) == 1
    tr.write_model(model, tmp_path / "rewritten.tflite")
    assert np.abs(tr.armnn_run(tmp_path / "rewritten.tflite", feed)["y"] - want).max() <= 1e-6 * np.abs(want).max()


def test_quantized_writer_small_cnn(tmp_path: Path) -> None:
    fp32, int8 = tmp_path / "small.tflite", tmp_path / "small_int8.tflite"
    tr.write_small_float_model(fp32, seed=0)
    calibration = [{"input": _input([1, 32, 32, 3], 100 + s)} for s in range(4)]
    tr.write_quantized_tflite(fp32, int8, calibration)
    d = tr.describe(int8)
    assert d["activation_dtypes"] == {"INT8": 10, "FLOAT32": 2}  # float only at the I/O edges
    assert d["constant_dtypes"] == {"INT8": 5, "INT32": 7}  # 5 weights, 5 biases, 2 shape/axis
    assert d["ops"]["QUANTIZE"] == 1 and d["ops"]["DEQUANTIZE"] == 1
    # The file follows TFLite's scheme: per-channel conv weights (dim 0, depthwise dim 3), per-tensor
    # FC, zero points 0, bias scale = input scale * weight scale.
    m = tr.read_model(int8)
    sg = m["subgraphs"][0]
    T = sg["tensors"]
    for op in sg["operators"]:
        kind = tr.op_name(m, op)
        if kind not in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            continue
        x_t, w_t, b_t = (T[int(i)] for i in op["inputs"])
        wq, bq = w_t["quantization"], b_t["quantization"]
        assert w_t["type"] == tr.INT8 and b_t["type"] == tr.INT32 and not wq["zero_point"].any()
        n_out = w_t["shape"][3] if kind == "DEPTHWISE_CONV_2D" else w_t["shape"][0]
        assert len(wq["scale"]) == (1 if kind == "FULLY_CONNECTED" else n_out)
        if kind != "FULLY_CONNECTED":
            assert wq["quantized_dimension"] == (3 if kind == "DEPTHWISE_CONV_2D" else 0)
        assert np.abs(tr.tensor_value(m, w_t)).max() <= 127
        np.testing.assert_allclose(bq["scale"], x_t["quantization"]["scale"][0] * wq["scale"], rtol=1e-6)
    for s in range(4):
        feed = {"input": _input([1, 32, 32, 3], 200 + s)}
        q = tr.armnn_run(int8, feed)["logits"]
        f = tr.armnn_run(fp32, feed)["logits"]
        assert tr.cosine(q, f) >= MIN_INT8_COSINE
        # Arm NN's int8 kernels and numpy's fake-quant evaluation of the same file agree.
        out_scale = [t for t in T if t["name"] == b"logits/int8"][0]["quantization"]["scale"][0]
        assert np.abs(q - tr.numpy_run(int8, feed)["logits"]).max() <= 1.01 * out_scale


def test_calibration_ranges_numpy_agrees_with_armnn(tmp_path: Path) -> None:
    fp32 = tmp_path / "small.tflite"
    tr.write_small_float_model(fp32, seed=2)
    samples = [{"input": _input([1, 32, 32, 3], 30 + s)} for s in range(2)]
    a = tr.activation_ranges(fp32, samples, "armnn")
    n = tr.activation_ranges(fp32, samples, "numpy")
    assert a.keys() == n.keys() and len(a) == 10
    for k in a:
        span = a[k][1] - a[k][0]
        assert abs(a[k][0] - n[k][0]) <= 1e-5 * span and abs(a[k][1] - n[k][1]) <= 1e-5 * span, k


def test_quantized_writer_int8_io(tmp_path: Path) -> None:
    fp32, int8 = tmp_path / "small.tflite", tmp_path / "small_int8_io.tflite"
    tr.write_small_float_model(fp32, seed=1)
    tr.write_quantized_tflite(fp32, int8, [{"input": _input([1, 32, 32, 3], 7)}], int8_io=True)
    d = tr.describe(int8)
    assert d["inputs"] == [("input", [1, 32, 32, 3], "INT8")] and d["outputs"] == [("logits", [1, 10], "INT8")]
    assert "QUANTIZE" not in d["ops"] and "DEQUANTIZE" not in d["ops"]
    m = tr.read_model(int8)
    T = m["subgraphs"][0]["tensors"]
    qin = T[int(m["subgraphs"][0]["inputs"][0])]["quantization"]
    qout = T[int(m["subgraphs"][0]["outputs"][0])]["quantization"]
    x = _input([1, 32, 32, 3], 7)
    xq = np.clip(np.round(x / qin["scale"][0]) + qin["zero_point"][0], -128, 127).astype(np.int8)
    y = tr.armnn_run(int8, {"input": xq})["logits"]
    assert y.dtype == np.int8
    yf = (y.astype(np.float64) - qout["zero_point"][0]) * qout["scale"][0]
    assert tr.cosine(yf, tr.armnn_run(fp32, {"input": x})["logits"]) >= MIN_INT8_COSINE
