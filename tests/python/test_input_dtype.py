"""One array-type rule for every place an array meets a model input (npuc.input_dtype, #15 defect 9).

Before, the FP32 host runtime (before build) refused every dtype but the model's own while the NPU
simulator (after build) cast anything, dropping a complex array's imaginary part. Now both paths,
accuracy_analysis and ``npuc run`` go through ``coerce_input``: the same array is accepted (with
the same result) or refused (with the same message) everywhere."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc
from test_cli import npuc_cli

STAGES = ["loaded", "fp16", "int8"]


def _toolkit(model_path: Path, stage: str) -> npuc.Toolkit:
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588")
    tk.load_onnx(model=str(model_path))
    with contextlib.redirect_stdout(io.StringIO()):
        if stage == "fp16":
            tk.build(do_quantization=False)
        elif stage == "int8":
            rng = np.random.default_rng(0)
            shape = tuple(tk.model.inputs[0]["shape"])
            tk.build(do_quantization=True, dataset=[rng.standard_normal(shape).astype(np.float32) for _ in range(2)])
    return tk


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return np.random.default_rng(4).integers(0, 256, (1, 3, 8, 8)).astype(np.float32)


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("dtype", ["float64", "float16", "uint8", "int8", "int16", "int32", "uint16", "int64", "uint64"])
def test_numeric_arrays_convert_the_same_before_and_after_build(
    conv_relu_path: Path, image: np.ndarray, stage: str, dtype: str
) -> None:
    values = image if dtype not in ("int8",) else image - 128  # values every type holds exactly
    with _toolkit(conv_relu_path, stage) as tk:
        want = tk.inference(inputs=[values.astype(np.float32)])[0]
        got = tk.inference(inputs=[values.astype(dtype)])[0]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize(
    "array",
    [
        np.zeros((1, 3, 8, 8), bool),
        np.zeros((1, 3, 8, 8), np.complex64) + 1j,
        np.zeros((1, 3, 8, 8), object),
        np.zeros((1, 3, 8, 8), "U3"),
        np.zeros((1, 3, 8, 8), "S3"),
        np.zeros((1, 3, 8, 8), "M8[s]"),
        np.zeros((1, 3, 8, 8), "m8[s]"),
        np.zeros((1, 3, 8, 8), "V4"),
    ],
    ids=lambda a: str(a.dtype),
)
def test_non_numeric_arrays_are_refused_before_and_after_build(
    conv_relu_path: Path, stage: str, array: np.ndarray
) -> None:
    with _toolkit(conv_relu_path, stage) as tk:
        with pytest.raises(npuc.InputError) as info:
            tk.inference(inputs=[array])
    message = str(info.value)
    assert f"inference input 0: an array of dtype {array.dtype} is not accepted for input 'x' (float32)" in message
    assert "it takes float16/32/64 or 8/16/32-bit integer arrays" in message


@pytest.mark.parametrize("stage", STAGES)
def test_int64_needs_exactly_representable_values(conv_relu_path: Path, stage: str) -> None:
    ok = np.full((1, 3, 8, 8), 2**24, np.int64)
    inexact = ok + 1  # 2**24 + 1 has no float32
    with _toolkit(conv_relu_path, stage) as tk:
        tk.inference(inputs=[ok])
        tk.inference(inputs=[np.zeros((1, 3, 8, 8), np.int64).tolist()])  # a Python list of ints is int64
        with pytest.raises(npuc.InputError, match=r"dtype int64 holds values float32 cannot represent exactly"):
            tk.inference(inputs=[inexact])


def test_pass_through_inputs_follow_the_same_rule(conv_relu_path: Path, image: np.ndarray) -> None:
    with _toolkit(conv_relu_path, "loaded") as tk:
        tk.config(mean_values=[[1, 2, 3]], std_values=[[4, 5, 6]])
        raw = tk.inference(inputs=[image.astype(np.uint8)], inputs_pass_through=[1])[0]
        np.testing.assert_array_equal(raw, tk.inference(inputs=[image], inputs_pass_through=[1])[0])
        with pytest.raises(npuc.InputError, match="complex64"):
            tk.inference(inputs=[image.astype(np.complex64)], inputs_pass_through=[1])


def test_ragged_list_is_an_input_error(conv_relu_path: Path) -> None:
    with _toolkit(conv_relu_path, "loaded") as tk:
        with pytest.raises(npuc.InputError, match="inference input 0: cannot be read as an array for input 'x'"):
            tk.inference(inputs=[[[1, 2], [3]]])


def _token_model(path: Path, dtype: int = TensorProto.INT64) -> Path:
    """ids int64[1,4] -> Gather(table[10,3]) -> y float32[1,4,3]: an integer model input."""
    table = numpy_helper.from_array(np.arange(30, dtype=np.float32).reshape(10, 3), "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["y"], name="embed", axis=0)],
        "tokens",
        [helper.make_tensor_value_info("ids", dtype, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 3])],
        initializer=[table],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.mark.parametrize("stage", ["loaded", "fp16"])
def test_integer_model_inputs_take_integer_arrays_in_range(tmp_path: Path, stage: str) -> None:
    want = np.arange(30, dtype=np.float32).reshape(10, 3)[[1, 2, 3, 9]][np.newaxis]
    with _toolkit(_token_model(tmp_path / "tokens.onnx"), stage) as tk:
        for ids in (np.array([[1, 2, 3, 9]], np.int64), np.array([[1, 2, 3, 9]], np.int32),
                    np.array([[1, 2, 3, 9]], np.uint8), [[1, 2, 3, 9]]):
            np.testing.assert_array_equal(tk.inference(inputs=[ids])[0], want)
        with pytest.raises(npuc.InputError, match=r"dtype float32 is not accepted for input 'ids' \(int64\); "
                           r"it takes integer arrays whose values are within the input's range"):
            tk.inference(inputs=[np.array([[1, 2, 3, 9]], np.float32)])
        with pytest.raises(npuc.InputError, match="dtype bool is not accepted for input 'ids'"):
            tk.inference(inputs=[np.ones((1, 4), bool)])


def test_int32_model_input_refuses_values_out_of_its_range(tmp_path: Path) -> None:
    with _toolkit(_token_model(tmp_path / "tokens32.onnx", TensorProto.INT32), "loaded") as tk:
        tk.inference(inputs=[np.array([[1, 2, 3, 4]], np.int64)])
        with pytest.raises(npuc.InputError, match=r"dtype int64 holds values outside the range of int32"):
            tk.inference(inputs=[np.array([[1, 2, 3, 2**40]], np.int64)])


def test_accuracy_analysis_arrays_follow_the_rule(conv_relu_path: Path, tmp_path: Path, image: np.ndarray) -> None:
    with _toolkit(conv_relu_path, "int8") as tk, contextlib.redirect_stdout(io.StringIO()):
        tk.accuracy_analysis(inputs=[image.astype(np.uint8)], output_dir=str(tmp_path / "a"))
        with pytest.raises(npuc.InputError, match=r"accuracy_analysis input 0: an array of dtype complex64"):
            tk.accuracy_analysis(inputs=[image.astype(np.complex64)], output_dir=str(tmp_path / "b"))


def test_npuc_run_follows_the_rule(conv_relu_path: Path, tmp_path: Path, image: np.ndarray) -> None:
    np.save(tmp_path / "u8.npy", image.astype(np.uint8))
    np.save(tmp_path / "c.npy", image.astype(np.complex64))
    ok = npuc_cli("run", str(conv_relu_path), "--input", str(tmp_path / "u8.npy"))
    assert ok.returncode == 0, ok.stderr
    bad = npuc_cli("run", str(conv_relu_path), "--input", str(tmp_path / "c.npy"))
    assert bad.returncode == 1
    assert bad.stderr.count("\n") == 1 and "an array of dtype complex64 is not accepted for input 'x'" in bad.stderr
