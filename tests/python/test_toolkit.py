"""Toolkit: RKNN-Toolkit2 workflow names and conventions, config validation, preprocessing
(mean/std, NHWC, pass-through) and the lower-level Model/Runtime objects it uses."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import npuc
from conftest import conv_relu_model, conv_relu_reference


@pytest.fixture
def x() -> np.ndarray:
    return np.random.default_rng(3).standard_normal((1, 3, 8, 8)).astype(np.float32)


def test_workflow_returns_zero(conv_relu_path: Path, x: np.ndarray) -> None:
    tk = npuc.Toolkit()
    assert tk.config(target_platform="RK3588", optimization_level=3) == 0
    assert tk.get_config()["target_platform"] == "rk3588"
    assert tk.load_onnx(model=str(conv_relu_path), inputs=["x"], input_size_list=[[1, 3, 8, 8]]) == 0
    assert tk.init_runtime() == 0
    (y,) = tk.inference(inputs=[x])
    np.testing.assert_allclose(y, conv_relu_reference(conv_relu_model(), x), rtol=1e-4, atol=1e-5)
    tk.release()
    with pytest.raises(npuc.NpucError, match="load_onnx"):
        tk.inference(inputs=[x])


def test_load_from_bytes(x: np.ndarray) -> None:
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=conv_relu_model().SerializeToString())
        assert tk.model is not None and tk.model.num_nodes == 2
        assert tk.inference(inputs=x)[0].shape == (1, 4, 8, 8)


def test_unknown_config_key_lists_valid_ones() -> None:
    with pytest.raises(npuc.ConfigError, match="quantized_dtype") as info:
        npuc.Toolkit().config(mean_value=[[0, 0, 0]])
    assert "mean_value" in str(info.value) and "mean_values" in str(info.value)


def test_bad_config_values() -> None:
    tk = npuc.Toolkit()
    with pytest.raises(npuc.ConfigError, match="rk9999"):
        tk.config(target_platform="rk9999")
    with pytest.raises(npuc.ConfigError, match="std_values"):
        tk.config(std_values=[[1, 0, 1]])
    with pytest.raises(npuc.ConfigError, match="same number"):
        tk.config(mean_values=[[0, 0, 0]], std_values=[[1, 1]])
    # A rejected config leaves the previous one in place.
    assert tk.get_config().get("std_values") is None


def test_mean_std_applied_per_channel(conv_relu_path: Path) -> None:
    image = np.random.default_rng(5).integers(0, 256, (1, 3, 8, 8), dtype=np.uint8)
    mean, std = [10.0, 128.0, 200.0], [2.0, 64.0, 50.0]
    with npuc.Toolkit() as tk:
        tk.config(mean_values=[mean], std_values=[std])
        tk.load_onnx(model=str(conv_relu_path))
        (y,) = tk.inference(inputs=[image])
    normalized = (image.astype(np.float32) - np.array(mean, np.float32).reshape(1, 3, 1, 1)) / np.array(
        std, np.float32
    ).reshape(1, 3, 1, 1)
    np.testing.assert_allclose(y, conv_relu_reference(conv_relu_model(), normalized), rtol=1e-4, atol=1e-4)


def test_mean_std_channel_count_must_match(conv_relu_path: Path) -> None:
    with npuc.Toolkit() as tk:
        tk.config(mean_values=[[0, 0]], std_values=[[1, 1]])
        tk.load_onnx(model=str(conv_relu_path))
        with pytest.raises(npuc.ConfigError, match="3 channel"):
            tk.inference(inputs=[np.zeros((1, 3, 8, 8), np.float32)])


def test_nhwc_inputs_are_transposed(conv_relu_path: Path, x: np.ndarray) -> None:
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        (nchw,) = tk.inference(inputs=[x])
        (nhwc,) = tk.inference(inputs=[x.transpose(0, 2, 3, 1)], data_format="nhwc")
        (per_input,) = tk.inference(inputs=[x.transpose(0, 2, 3, 1)], data_format=["nhwc"])
    np.testing.assert_array_equal(nchw, nhwc)
    np.testing.assert_array_equal(nchw, per_input)


def test_pass_through_skips_preprocessing(conv_relu_path: Path, x: np.ndarray) -> None:
    with npuc.Toolkit() as tk:
        tk.config(mean_values=[[1, 2, 3]], std_values=[[4, 5, 6]])
        tk.load_onnx(model=str(conv_relu_path))
        (y,) = tk.inference(inputs=[x], inputs_pass_through=[1])
    np.testing.assert_allclose(y, conv_relu_reference(conv_relu_model(), x), rtol=1e-4, atol=1e-5)


def test_bad_data_format(conv_relu_path: Path, x: np.ndarray) -> None:
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        with pytest.raises(npuc.InputError, match="data_format"):
            tk.inference(inputs=[x], data_format="nwch")


def test_export_needs_a_build_and_a_target(conv_relu_path: Path, tmp_path: Path) -> None:
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        with pytest.raises(npuc.NpucError, match="build"):
            tk.export_blob(tmp_path / "m.npub")
        tk.build(do_quantization=False)
        with pytest.raises(npuc.ConfigError, match="target_platform"):
            tk.export_blob(tmp_path / "m.npub")
        with pytest.raises(npuc.ConfigError, match="host runtime"):
            tk.init_runtime(target="rk3588")


def test_blob_round_trip_through_the_toolkit(conv_relu_path: Path, tmp_path: Path) -> None:
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(conv_relu_path))
        tk.build(do_quantization=False)
        x = np.random.default_rng(1).standard_normal(tuple(tk.model.inputs[0]["shape"])).astype(np.float32)
        expected = tk.inference(inputs=[x])[0]
        assert tk.export_blob(tmp_path / "a.npub") == 0
        tk.export_rknn(tmp_path / "b.npub")
        assert (tmp_path / "a.npub").read_bytes() == (tmp_path / "b.npub").read_bytes()
    with npuc.Toolkit() as tk:
        assert tk.load_blob(tmp_path / "a.npub") == 0
        assert tk.blob_meta["soc"] == "rk3588"
        np.testing.assert_array_equal(tk.inference(inputs=[x])[0], expected)
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3566")
        with pytest.raises(npuc.BlobError, match="rk3588"):
            tk.load_blob(tmp_path / "a.npub")


def test_build_optimizes_and_reports(conv_relu_path: Path, capsys: pytest.CaptureFixture) -> None:
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        x = np.random.default_rng(0).standard_normal(tuple(tk.model.inputs[0]["shape"])).astype(np.float32)
        before = tk.inference(inputs=[x])[0]
        assert tk.build(do_quantization=False, verify=True) == 0
        printed = capsys.readouterr().out
        assert "graph optimization (level 3)" in printed
        assert "verify: original vs optimized graph" in printed
        report = tk.optimization_report
        assert report is not None and report["nodes_after"] <= report["nodes_before"]
        after = tk.inference(inputs=[x])[0]  # the FP16 simulator: every op output rounded to half
        np.testing.assert_allclose(after, before, rtol=1e-2, atol=1e-2)
        assert np.array_equal(after, after.astype(np.float16).astype(np.float32))


def test_build_rejects_bad_options(conv_relu_path: Path) -> None:
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        with pytest.raises(npuc.ConfigError, match="optimization_level"):  # refused by config() already
            tk.config(optimization_level=7)
        with pytest.raises(npuc.ConfigError, match="no_such_pass"):
            tk.config(optimization_level=3, disable_passes=["no_such_pass"])
        tk._config["disable_passes"] = ["no_such_pass"]  # build() checks again (the config is a plain dict)
        with pytest.raises(npuc.ConfigError, match="no_such_pass"):
            tk.build(do_quantization=False)
    with pytest.raises(npuc.NpucError, match="load_onnx"):
        npuc.Toolkit().build(do_quantization=False)


def test_build_dumps_stages_and_exports_onnx(conv_relu_path: Path, tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        tk.build(do_quantization=False, dump_dir=str(tmp_path / "dumps"))
        dumps = sorted(p.name for p in (tmp_path / "dumps").iterdir())
        assert dumps and dumps[0].startswith("check0_"), dumps
        tk.export_onnx(tmp_path / "optimized.onnx")
        onnx.checker.check_model(onnx.load(str(tmp_path / "optimized.onnx")), full_check=True)


def test_verification_error_names_the_output(conv_relu_path: Path) -> None:
    from npuc.verify import compare_outputs

    errors = compare_outputs([np.ones(4, np.float32)], [np.ones(4, np.float32) * 1.5])
    assert errors == [(0.5, 0.5)]
    assert issubclass(npuc.VerificationError, npuc.NpucError)


def test_verbose_file_logs_steps(conv_relu_path: Path, tmp_path: Path) -> None:
    log = tmp_path / "npuc.log"
    with npuc.Toolkit(verbose_file=str(log)) as tk:
        tk.load_onnx(model=str(conv_relu_path))
    assert "load_onnx" in log.read_text()


# ---------------------------------------------------------------------- Model / Runtime


def test_model_info(conv_relu_path: Path) -> None:
    model = npuc.Model.load(str(conv_relu_path))
    assert model.inputs == [{"name": "x", "dtype": "float32", "shape": (1, 3, 8, 8)}]
    assert model.outputs == [{"name": "y", "dtype": "float32", "shape": (1, 4, 8, 8)}]
    assert model.op_histogram == {"Conv": 1, "Relu": 1}
    assert model.macs == 1 * 4 * 8 * 8 * 3 * 3 * 3
    assert model.params == 4 * 3 * 3 * 3 + 4
    assert "Conv" in model.dump()
    assert "Relu" in npuc.supported_ops()


def test_export_round_trip(conv_relu_path: Path, tmp_path: Path, x: np.ndarray) -> None:
    model = npuc.Model.load(str(conv_relu_path))
    out = tmp_path / "exported.onnx"
    model.export_onnx(str(out))
    again = npuc.Model.load(str(out))
    from_bytes = npuc.Model.from_bytes(model.to_onnx_bytes())
    want = npuc.Runtime(model).run([x])[0]
    np.testing.assert_array_equal(npuc.Runtime(again).run([x])[0], want)
    np.testing.assert_array_equal(npuc.Runtime(from_bytes).run([x])[0], want)


def test_runtime_accepts_non_contiguous_and_read_only_inputs(conv_relu_path: Path, x: np.ndarray) -> None:
    runtime = npuc.Runtime(npuc.Model.load(str(conv_relu_path)))
    want = runtime.run([x])[0]
    strided = np.zeros((1, 3, 8, 16), np.float32)
    strided[..., ::2] = x
    np.testing.assert_array_equal(runtime.run([strided[..., ::2]])[0], want)
    frozen = x.copy()
    frozen.setflags(write=False)
    np.testing.assert_array_equal(runtime.run([frozen])[0], want)
    big_endian = x.astype(">f4")
    np.testing.assert_array_equal(runtime.run([big_endian])[0], want)
    np.testing.assert_array_equal(x, frozen)  # inputs are never written


def test_runtime_memory_stats(conv_relu_path: Path) -> None:
    stats = npuc.Runtime(npuc.Model.load(str(conv_relu_path))).memory_stats
    assert stats["arena_bytes"] >= stats["lower_bound_bytes"]
    assert stats["constant_bytes"] >= (4 * 3 * 3 * 3 + 4) * 4


def test_runtime_threads_agree(conv_relu_path: Path) -> None:
    runtime = npuc.Runtime(npuc.Model.load(str(conv_relu_path)))
    rng = np.random.default_rng(9)
    xs = [rng.standard_normal((1, 3, 8, 8)).astype(np.float32) for _ in range(4)]
    serial = [runtime.run([x])[0] for x in xs]
    errors = []

    def worker(k: int) -> None:
        for r in range(25):
            i = (k + r) % len(xs)
            if not np.array_equal(runtime.run([xs[i]])[0], serial[i]):
                errors.append((k, r))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_quantized_blob_runs_bit_identically_after_loading(conv_relu_path: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(conv_relu_path))
        shape = tuple(tk.model.inputs[0]["shape"])
        samples = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
        tk.build(do_quantization=True, dataset=samples)
        x = rng.standard_normal(shape).astype(np.float32)
        expected = tk.inference(inputs=[x])[0]
        float_out = npuc.Runtime(tk.model).run([x])[0]
        assert not np.array_equal(expected, float_out), "the INT8 simulator should differ from FP32"
        tk.export_blob(tmp_path / "q.npub")
    with npuc.Toolkit() as tk:
        tk.load_blob(tmp_path / "q.npub")
        assert "QUNT" in tk.blob_meta["extra_sections"]
        np.testing.assert_array_equal(tk.inference(inputs=[x])[0], expected)


def test_build_reports_cpu_fallbacks_with_reasons(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="wide_stride", strides=[8, 8]),
         helper.make_node("Relu", ["y"], ["z"], name="relu")],
        # 33x33: no SpaceToDepth block divides it, so legalize_conv_stride cannot keep it on the NPU
        "fallback", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 33, 33])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 4, 4])], [w])
    path = tmp_path / "fallback.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588", op_target={"relu": "cpu"})
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=False)
        report = tk.partition_report
        reasons = {n["node"]: n["detail"] for n in report["cpu_nodes"]}
        assert "stride 8x8 exceeds 7x7" in reasons["wide_stride"]
        assert "relu" in reasons and report["npu_mac_share"] == 0.0
        printed = capsys.readouterr().out
        assert "stride 8x8 exceeds 7x7" in printed
        assert "not legalized for rk3588: block 2: input dim 2 (33) is not a multiple of block 2" in printed


def test_a_raw_uint8_image_in_an_in_memory_dataset_is_refused_when_mean_std_apply(conv_relu_path: Path) -> None:
    """In-memory samples skip mean/std (a dataset.txt's images get them): a uint8 image there would
    calibrate silently wrong, so build() names it. Without mean/std a uint8 array is the input as is."""
    rng = np.random.default_rng(5)
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588", mean_values=[[127.5] * 3], std_values=[[127.5] * 3])
        tk.load_onnx(model=str(conv_relu_path))
        shape = tuple(tk.model.inputs[0]["shape"])
        image = rng.integers(0, 256, shape, dtype=np.uint8)
        with pytest.raises(npuc.InputError, match="sample 1, input .* is a uint8 array.*dataset.txt"):
            tk.build(do_quantization=True, dataset=[rng.standard_normal(shape).astype(np.float32), image])
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(conv_relu_path))
        assert tk.build(do_quantization=True, dataset=[image]) == 0
