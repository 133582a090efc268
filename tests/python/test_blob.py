"""The .npub container from Python: compile_model(...).write / load_blob round trip, determinism,
and refusals (corrupt file, wrong SoC), each a BlobError."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import npuc
from npuc import _npuc


def _write_float(model: npuc.Model, path: Path, soc: str, custom_string: str = "") -> None:
    """A float build of `model` written as the Toolkit's export_blob writes it."""
    options = _npuc.CompileOptions()
    options.quantized = False
    options.custom_string = custom_string
    _npuc.compile_model(model, soc, options).write(str(path))


def test_round_trip_runs_identically(conv_relu_path: Path, tmp_path: Path) -> None:
    model = npuc.Model.load(str(conv_relu_path))
    blob = tmp_path / "m.npub"
    _write_float(model, blob, "rk3588")
    loaded, meta = _npuc.load_blob(str(blob), expected_soc="RK3588")
    assert meta["soc"] == "rk3588"
    assert meta["options"] == {"optimization_level": "3", "quantized": "False", "single_core_mode": "False"}
    assert meta["compile_options"].quantized is False
    assert meta["format_version"] == _npuc.BLOB_FORMAT_VERSION
    assert len(meta["model_digest"]) == 32
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    # A float build runs in FP16 on the NPU, so its conv weight is stored once, as half (format
    # 2.0): the loaded graph computes in FP32 exactly as the model with that weight rounded to half.
    onnx_model = onnx.load(str(conv_relu_path))
    for init in onnx_model.graph.initializer:
        if init.name == "w":
            init.CopyFrom(numpy_helper.from_array(
                numpy_helper.to_array(init).astype(np.float16).astype(np.float32), "w"))
    half_path = tmp_path / "half_w.onnx"
    onnx.save(onnx_model, str(half_path))
    want = npuc.Runtime(npuc.Model.load(str(half_path))).run([x])
    got = npuc.Runtime(loaded).run([x])
    for w, g in zip(want, got):
        assert np.array_equal(w, g)
    # ... which is not the FP32 model's output (this weight is not exactly representable in half).
    assert not np.array_equal(npuc.Runtime(model).run([x])[0], got[0])


def test_identical_inputs_give_identical_bytes(conv_relu_path: Path, tmp_path: Path) -> None:
    model = npuc.Model.load(str(conv_relu_path))
    a, b = tmp_path / "a.npub", tmp_path / "b.npub"
    _write_float(model, a, "rk3566", "v")
    _write_float(npuc.Model.load(str(conv_relu_path)), b, "rk3566", "v")
    assert a.read_bytes() == b.read_bytes()


def test_corrupt_and_foreign_blobs_are_refused(conv_relu_path: Path, tmp_path: Path) -> None:
    model = npuc.Model.load(str(conv_relu_path))
    blob = tmp_path / "m.npub"
    _write_float(model, blob, "rk3566")
    with pytest.raises(npuc.BlobError, match="compiled for SoC 'rk3566', not for 'rk3588'"):
        _npuc.load_blob(str(blob), expected_soc="rk3588")
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x40
    blob.write_bytes(bytes(data))
    with pytest.raises(npuc.BlobError, match="checksum mismatch"):
        _npuc.load_blob(str(blob))
    blob.write_bytes(bytes(data[:100]))
    with pytest.raises(npuc.BlobError, match="truncated"):
        _npuc.load_blob(str(blob))


def test_loaded_blob_applies_the_normalization_it_was_built_with(conv_relu_path: Path, tmp_path: Path) -> None:
    """RKNN's models carry mean/std: a blob loaded in a fresh Toolkit takes the same raw input."""
    rng = np.random.default_rng(3)
    raw = [rng.uniform(0, 255, (1, 3, 8, 8)).astype(np.float32) for _ in range(4)]
    with npuc.Toolkit() as built:
        built.config(target_platform="rk3588", mean_values=[[120, 110, 100]], std_values=[[60, 55, 50]])
        built.load_onnx(model=str(conv_relu_path))
        built.build(do_quantization=True, dataset=raw)
        want = built.inference(inputs=[raw[0]])[0]
        built.export_blob(tmp_path / "m.npub")
    with npuc.Toolkit() as loaded:
        loaded.load_blob(tmp_path / "m.npub")
        got = loaded.inference(inputs=[raw[0]])[0]
        assert loaded.get_config()["mean_values"] == [[120.0, 110.0, 100.0]]
    assert np.array_equal(want, got)
    # A config() of its own wins over the recorded one.
    with npuc.Toolkit() as other:
        other.config(mean_values=[[0, 0, 0]], std_values=[[1, 1, 1]])
        other.load_blob(tmp_path / "m.npub")
        assert not np.array_equal(other.inference(inputs=[raw[0]])[0], want)
