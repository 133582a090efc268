"""Batch > 1 (issue #18): ``build(rknn_batch_size=N)`` and a batch in ``load_onnx(input_size_list)``.

Each item of a batch equals the single-image output bit for bit (INT8 and FP16), through the
blob round trip too; eval_perf costs exactly N times the MACs at a per-image time that does not
grow with N; bad batch sizes and fixed-shape loaders are refused naming the problem. The full
matrix (every shared model, N = 1..8) is bench/batch.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import List

import numpy as np
import pytest

import npuc
from conftest import conv_relu_model, shared_models_dir

MODELS_DIR = shared_models_dir()
needs_models = pytest.mark.skipif(MODELS_DIR is None, reason="shared models not found (set NPUC_SHARED_MODELS)")


def _toolkit(model: str, **load: object) -> npuc.Toolkit:
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588")
    tk.load_onnx(model=model, **load)
    return tk


def _samples(shape: List[int], count: int, seed: int) -> List[List[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(shape).astype(np.float32)] for _ in range(count)]


def _singles(tk: npuc.Toolkit, x: np.ndarray) -> List[List[np.ndarray]]:
    return [tk.inference(inputs=[x[i:i + 1]]) for i in range(x.shape[0])]


def _assert_items_equal(batched: List[np.ndarray], singles: List[List[np.ndarray]]) -> None:
    for i, single in enumerate(singles):
        for k, (b, s) in enumerate(zip(batched, single)):
            assert b.shape[0] == len(singles) and b.shape[1:] == s.shape[1:]
            assert np.array_equal(b[i:i + 1], s), f"item {i}, output {k}: max diff {np.abs(b[i:i + 1] - s).max()}"


@needs_models
@pytest.mark.parametrize("name", ["ppocr_cls", "shufflenet_v2_x0_5", "yolo_focus"])
@pytest.mark.parametrize("quantize", [True, False], ids=["int8", "fp16"])
def test_batch_items_equal_single_images_bit_for_bit(name: str, quantize: bool, tmp_path: Path) -> None:
    # shufflenet_v2's channel shuffle has Reshape targets frozen at batch 1 by the exporter.
    path = str(MODELS_DIR / f"{name}.onnx")
    tk = _toolkit(path)
    shape = list(tk._model.inputs[0]["shape"])
    dataset = _samples(shape, 2, 0)
    tk.build(do_quantization=quantize, dataset=dataset)
    x = np.random.default_rng(1).standard_normal([3] + shape[1:]).astype(np.float32)
    singles = _singles(tk, x)
    for n in (2, 3):
        tk.build(do_quantization=quantize, dataset=dataset, rknn_batch_size=n)
        assert [i["shape"][0] for i in tk._model.inputs] == [n]
        _assert_items_equal(tk.inference(inputs=[x[:n]]), singles[:n])
    blob = tmp_path / "b3.npub"  # the blob records batch 3 through its shapes
    tk.export_blob(str(blob))
    loaded = npuc.Toolkit()
    loaded.load_blob(str(blob))
    loaded.init_runtime()
    _assert_items_equal(loaded.inference(inputs=[x]), singles)


@needs_models
def test_sequence_first_attention_rebatches_in_fp16_and_int8_is_refused_naming_why() -> None:
    # tiny_vit's exporter froze its attention Reshapes at batch 1 with the batch merged into the
    # heads axis ([64, 4, 16] at batch 1 is [64, 4N, 16] at batch N, then [64N, 64] for the
    # output projection): the re-batching search finds both placements.
    path = str(MODELS_DIR / "tiny_vit.onnx")
    tk = _toolkit(path)
    shape = list(tk._model.inputs[0]["shape"])
    tk.build(do_quantization=False)
    x = np.random.default_rng(3).standard_normal([3] + shape[1:]).astype(np.float32)
    singles = _singles(tk, x)
    tk.build(do_quantization=False, rknn_batch_size=3)
    _assert_items_equal(tk.inference(inputs=[x]), singles)
    with pytest.raises(npuc.NotSupportedError, match="optimizer shapes this model's graph differently"):
        tk.build(dataset=_samples(shape, 1, 0), rknn_batch_size=3)


@needs_models
def test_batch_in_input_size_list_calibrates_at_batch_1() -> None:
    # The same scales whatever N: a model loaded at batch 2 gives the batch-1 build's outputs.
    path = str(MODELS_DIR / "ppocr_cls.onnx")
    single = _toolkit(path)
    shape = list(single._model.inputs[0]["shape"])
    dataset = _samples(shape, 2, 0)
    single.build(dataset=dataset)
    x = np.random.default_rng(2).standard_normal([2] + shape[1:]).astype(np.float32)
    batched = _toolkit(path, input_size_list=[[2] + shape[1:]])
    batched.build(dataset=dataset)
    _assert_items_equal(batched.inference(inputs=[x]), _singles(single, x))


@needs_models
def test_eval_perf_scales_with_the_batch() -> None:
    # ppocr_cls ends in weight-heavy layers at small spatial size: fetching their weights once
    # per batch makes each image cheaper as N grows; the MACs are exactly N times.
    path = str(MODELS_DIR / "ppocr_cls.onnx")
    per_image, macs = [], []
    for n in (1, 2, 4, 8):
        tk = _toolkit(path)
        tk.build(do_quantization=False, rknn_batch_size=n)
        s = tk.eval_perf(is_print=False).summary
        per_image.append(s["total_time_us"] / n)
        macs.append(s["total_macs"])
    assert macs == [macs[0] * n for n in (1, 2, 4, 8)]
    assert all(b <= a for a, b in zip(per_image, per_image[1:])), per_image
    assert per_image[-1] < per_image[0]


@needs_models
def test_eval_memory_scales_with_the_batch() -> None:
    # I/O buffers grow N times up to padding (the [N, 2] output pads to one aligned row at any
    # N <= 32); the arena grows with N but never past N times, and stays above the plan's lower
    # bound (the live bytes of its busiest step).
    path = str(MODELS_DIR / "ppocr_cls.onnx")
    reports = []
    for n in (1, 4):
        tk = _toolkit(path)
        tk.build(do_quantization=False, rknn_batch_size=n)
        reports.append(tk.eval_memory(is_print=False))
    one, four = reports
    assert 3.9 * one["io_bytes"] < four["io_bytes"] <= 4 * one["io_bytes"]
    assert one["arena_bytes"] < four["arena_bytes"] <= 4 * one["arena_bytes"]
    assert 3.9 * one["lower_bound_bytes"] < four["lower_bound_bytes"] <= four["arena_bytes"]


@pytest.mark.parametrize("value, message", [
    (0, "an integer from 1 to 32"), (-2, "an integer from 1 to 32"), (2.0, "an integer from 1 to 32"),
    ("4", "an integer from 1 to 32"), (True, "an integer from 1 to 32"), (33, "an integer from 1 to 32"),
])
def test_bad_batch_sizes_are_refused(value: object, message: str, tmp_path: Path) -> None:
    import onnx

    path = tmp_path / "m.onnx"
    onnx.save(conv_relu_model(), str(path))
    tk = _toolkit(str(path))
    with pytest.raises(npuc.ConfigError, match=f"rknn_batch_size.*{message}"):
        tk.build(do_quantization=False, rknn_batch_size=value)


def test_batch_conflicting_with_input_size_list_is_refused(tmp_path: Path) -> None:
    import onnx

    path = tmp_path / "m.onnx"
    onnx.save(conv_relu_model(), str(path))
    tk = _toolkit(str(path), input_size_list=[[2, 3, 8, 8]])
    with pytest.raises(npuc.ConfigError, match="rknn_batch_size=4 but the model was loaded at batch 2"):
        tk.build(do_quantization=False, rknn_batch_size=4)


def test_a_fixed_shape_loader_is_refused(tmp_path: Path) -> None:
    # Darknet, like TFLite and Caffe, fixes its shapes at load: there is no re-import at batch N.
    from darknet_ref import write_tiny

    cfg, weights = write_tiny(tmp_path)
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588")
    tk.load_darknet(model=str(cfg), weight=str(weights))
    with pytest.raises(npuc.NotSupportedError, match="batch 2 needs a model loaded with load_onnx or load_pytorch"):
        tk.build(do_quantization=False, rknn_batch_size=2)


def test_cli_batch_flag_and_yaml_key_give_identical_blobs(conv_relu_path: Path, tmp_path: Path) -> None:
    from test_cli import npuc_cli, user_error
    from test_cli_compile import write_yaml

    flag_blob = tmp_path / "flags.npub"
    r = npuc_cli("convert", str(conv_relu_path), "-t", "rk3588", "-o", str(flag_blob), "--batch", "4")
    assert r.returncode == 0, r.stderr
    assert "us per batch of 4" in r.stdout and "images/s on rk3588" in r.stdout
    config = write_yaml(tmp_path / "model_config.yml", conv_relu_path, extra_model_keys="  rknn_batch_size: 4\n")
    r = npuc_cli("convert", "-i", str(config), "-t", "rk3588", "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "conv_relu.npub").read_bytes() == flag_blob.read_bytes()
    loaded = npuc.Toolkit()
    loaded.load_blob(str(flag_blob))
    loaded.init_runtime()
    assert loaded.inference(inputs=[np.zeros((4, 3, 8, 8), np.float32)])[0].shape[0] == 4
    user_error(npuc_cli("convert", str(conv_relu_path), "-t", "rk3588", "-o", str(tmp_path / "x.npub"), "--batch", "0"),
               "rknn_batch_size")
    bad = write_yaml(tmp_path / "bad.yml", conv_relu_path, extra_model_keys="  rknn_batch_size: four\n")
    user_error(npuc_cli("convert", "-i", str(bad), "-t", "rk3588", "-o", str(tmp_path / "o2")),
               "rknn_batch_size: expected an integer")


def test_hybrid_step1_refuses_a_model_loaded_at_batch_n(tmp_path: Path) -> None:
    import onnx

    path = tmp_path / "m.onnx"
    onnx.save(conv_relu_model(), str(path))
    tk = _toolkit(str(path), input_size_list=[[2, 3, 8, 8]])
    with pytest.raises(npuc.NotSupportedError, match="loaded at batch 2; hybrid quantization works on a batch-1"):
        tk.hybrid_quantization_step1(dataset=_samples([1, 3, 8, 8], 1, 0), output_prefix=str(tmp_path / "h"))


@needs_models
def test_cli_info_rebatches_a_frozen_reshape_model() -> None:
    from test_cli import npuc_cli

    r = npuc_cli("info", str(MODELS_DIR / "shufflenet_v2_x0_5.onnx"), "--input-size", "4,3,224,224")
    assert r.returncode == 0, r.stderr
    assert "output: float32[4,1000]" in r.stdout
