"""RKNN-Toolkit2 users' scripts (issue #23): the ``npuc.rknn.RKNN`` face with RKNN's return codes,
the calls npuc has no counterpart for, and the Toolkit behaviours RKNN scripts rely on (a second
``config()``, NHWC images to ``inference``, ``accuracy_analysis(output_dir=None)``, settings that
are accepted but not acted on)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, List

import numpy as np
import pytest

import npuc
from conftest import conv_relu_model, conv_relu_path  # noqa: F401  (fixture)
from npuc.rknn import FAILURE_VALUES, RKNN

TOOLKIT_METHODS = [name for name in dir(npuc.Toolkit) if not name.startswith("_") and callable(getattr(npuc.Toolkit, name))]


def _samples(count: int = 4) -> List[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal((1, 3, 8, 8)).astype(np.float32) for _ in range(count)]


def test_every_failure_value_names_a_toolkit_call() -> None:
    assert set(FAILURE_VALUES) <= set(TOOLKIT_METHODS)
    for call in ("load_onnx", "build", "export_rknn", "load_rknn", "init_runtime", "inference", "eval_perf",
                 "accuracy_analysis", "hybrid_quantization_step1", "hybrid_quantization_step2", "codegen",
                 "reg_custom_op", "export_encrypted_rknn_model", "load_caffe", "load_tflite", "load_darknet"):
        assert call in FAILURE_VALUES


def test_a_failed_call_returns_minus_one_and_logs_the_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rknn = RKNN()
    ret = rknn.load_onnx(model=str(tmp_path / "missing.onnx"))
    assert ret == -1
    err = capsys.readouterr().err
    assert err.startswith("E load_onnx: ") and "missing.onnx" in err
    assert isinstance(rknn.last_error, npuc.ModelLoadError)


def test_the_script_flow_returns_zero_and_data(conv_relu_path: Path, tmp_path: Path) -> None:  # noqa: F811
    rknn = RKNN()
    assert rknn.config(target_platform="rk3588") == 0
    assert rknn.load_onnx(model=str(conv_relu_path)) == 0
    assert rknn.build(do_quantization=True, dataset=_samples()) == 0
    assert rknn.export_rknn(str(tmp_path / "m.npub")) == 0
    assert rknn.init_runtime() == 0
    outputs = rknn.inference(inputs=[_samples(1)[0]])
    assert outputs is not None and outputs[0].shape == (1, 4, 8, 8)
    assert rknn.last_error is None
    rknn.release()


def test_data_calls_return_none_on_failure(capsys: pytest.CaptureFixture) -> None:
    rknn = RKNN()
    assert rknn.inference(inputs=[np.zeros((1, 3, 8, 8), np.float32)]) is None  # nothing loaded
    assert rknn.eval_perf() is None
    assert capsys.readouterr().err.startswith("E inference() needs")


def test_board_targets_and_missing_frontends_fail_with_minus_one(conv_relu_path: Path,  # noqa: F811
                                                                 capsys: pytest.CaptureFixture) -> None:
    rknn = RKNN()
    rknn.config(target_platform="rk3588")
    assert rknn.load_caffe(model="deploy.prototxt", blobs="m.caffemodel") == -1  # no such file
    assert "E load_caffe: cannot open Caffe prototxt 'deploy.prototxt': no such file" in capsys.readouterr().err
    assert rknn.load_onnx(model=str(conv_relu_path)) == 0
    assert rknn.build(do_quantization=False) == 0
    assert rknn.init_runtime(target="rk3566") == -1
    assert "only the host runtime" in capsys.readouterr().err
    assert rknn.accuracy_analysis(inputs=[np.zeros((1, 3, 8, 8), np.float32)], target="rk3588") == -1
    assert rknn.export_encrypted_rknn_model("m.rknn", None, 3) == -1
    assert "does not encrypt" in capsys.readouterr().err


def test_the_native_toolkit_still_raises(tmp_path: Path) -> None:
    with npuc.Toolkit() as tk:
        with pytest.raises(npuc.NotSupportedError, match="load_keras: Keras models are not supported yet"):
            tk.load_keras(model="m.h5")
        with pytest.raises(npuc.ConfigError, match="reg_custom_op: object needs an 'op_type'"):
            tk.reg_custom_op(object())


def test_sdk_version_and_devices_answer_for_a_host_toolkit(capsys: pytest.CaptureFixture) -> None:
    rknn = RKNN()
    assert rknn.get_sdk_version().startswith(f"npuc {npuc.__version__}")
    assert rknn.list_devices() == ([], [])
    assert "does not connect to boards" in capsys.readouterr().out


def test_a_second_config_replaces_the_first_and_names_what_it_dropped(caplog: pytest.LogCaptureFixture) -> None:
    tk = npuc.Toolkit(verbose=True)
    tk.config(target_platform="rk3588", mean_values=[[0, 0, 0]], quantized_algorithm="mmse")
    with caplog.at_level(logging.WARNING):
        tk.config(std_values=[[255, 255, 255]])
    config = tk.get_config()
    assert config["target_platform"] is None and config.get("quantized_algorithm") is None
    assert config["std_values"] == [[255, 255, 255]]


def test_a_second_config_warns_on_stderr(capsys: pytest.CaptureFixture) -> None:
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588", quantized_algorithm="mmse")
    tk.config(target_platform="rk3588")
    err = capsys.readouterr().err
    assert "config() replaces the previous configuration" in err and "quantized_algorithm" in err
    assert "target_platform" not in err.split("no longer set:")[1]


@pytest.mark.parametrize("key, value", [("compress_weight", True), ("model_pruning", True),
                                        ("inputs_yuv_fmt", ["nv12"]), ("quantized_hybrid_level", 2)])
def test_a_setting_npuc_does_not_act_on_is_named(key: str, value: Any, capsys: pytest.CaptureFixture) -> None:
    npuc.Toolkit().config(**{key: value})
    assert f"config({key}=" in capsys.readouterr().err


def test_dynamic_input_builds_a_program_per_set(tmp_path: Path) -> None:
    import onnx

    model = conv_relu_model()  # its input made dynamic in H and W, as an exporter leaves it
    for k in (2, 3):
        model.graph.input[0].type.tensor_type.shape.dim[k].dim_param = "hw"[k - 2]
    del model.graph.output[0].type.tensor_type.shape.dim[:]
    path = tmp_path / "dyn.onnx"
    onnx.save(model, str(path))
    rknn = RKNN()
    rknn.config(target_platform="rk3588", dynamic_input=[[[1, 3, 8, 8]], [[1, 3, 16, 16]]])
    assert rknn.load_onnx(model=str(path)) == 0
    assert rknn.build(do_quantization=False) == 0
    assert rknn.init_runtime() == 0
    for size in (8, 16):
        assert rknn.inference(inputs=[np.zeros((1, 3, size, size), np.float32)])[0].shape == (1, 4, size, size)
    assert rknn.inference(inputs=[np.zeros((1, 3, 12, 12), np.float32)]) is None
    assert isinstance(rknn.last_error, npuc.InputError)
    assert "set 1: [[1, 3, 16, 16]]" in str(rknn.last_error)


@pytest.mark.parametrize("layout", ["nhwc", "hwc", "nchw", "chw"])
def test_inference_takes_images_in_either_layout_by_default(conv_relu_path: Path, layout: str) -> None:  # noqa: F811
    """RKNN's scripts pass HWC images straight from cv2/PIL (with or without the batch dim)."""
    x = _samples(1)[0]
    arrays = {"nchw": x, "chw": x[0], "nhwc": x.transpose(0, 2, 3, 1), "hwc": x[0].transpose(1, 2, 0)}
    with npuc.Toolkit() as tk:
        tk.config(mean_values=[[1, 2, 3]], std_values=[[2, 2, 2]])
        tk.load_onnx(model=str(conv_relu_path))
        want = tk.inference(inputs=[x], data_format="nchw")[0]
        got = tk.inference(inputs=[np.ascontiguousarray(arrays[layout])])[0]
    np.testing.assert_array_equal(got, want)


def test_explicit_nhwc_takes_a_3d_image(conv_relu_path: Path) -> None:  # noqa: F811
    x = _samples(1)[0]
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        want = tk.inference(inputs=[x])[0]
        got = tk.inference(inputs=[x[0].transpose(1, 2, 0)], data_format="nhwc")[0]
    np.testing.assert_array_equal(got, want)


def test_accuracy_analysis_without_output_dir_writes_nothing(conv_relu_path: Path, tmp_path: Path,  # noqa: F811
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    rknn = RKNN()
    rknn.config(target_platform="rk3588")
    rknn.load_onnx(model=str(conv_relu_path))
    rknn.build(do_quantization=True, dataset=_samples())
    assert rknn.accuracy_analysis(inputs=[_samples(1)[0]], output_dir=None) == 0
    assert rknn.accuracy_report.output_dir is None and rknn.accuracy_report.rows
    assert sorted(tmp_path.iterdir()) == before


def test_verbose_prints_a_report_once(conv_relu_path: Path, capfd: pytest.CaptureFixture) -> None:  # noqa: F811
    with npuc.Toolkit(verbose=True) as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(conv_relu_path))
        tk.build(do_quantization=False)
    out, err = capfd.readouterr()
    line = next(x for x in out.splitlines() if x.startswith("Partition for rk3588"))
    assert (out + err).count(line) == 1


def test_init_runtime_board_options_are_named_not_ignored(conv_relu_path: Path,  # noqa: F811
                                                         capsys: pytest.CaptureFixture) -> None:
    rknn = RKNN()
    rknn.load_onnx(model=str(conv_relu_path))
    assert rknn.init_runtime(core_mask=7) == 0  # RKNN.NPU_CORE_0_1_2
    assert "core_mask=NPU_CORE_0_1_2): no config(target_platform) yet" in capsys.readouterr().err
    assert rknn.init_runtime(perf_debug=False, eval_mem=False) == 0
    assert capsys.readouterr().err == ""
    assert rknn.init_runtime(cores=2) == -1
    assert "unknown argument(s) cores;" in capsys.readouterr().err
