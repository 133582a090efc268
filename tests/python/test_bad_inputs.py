"""Broken models and wrong inputs raise the npuc error subclass for the problem, with a message
naming it, and leave the interpreter (and npuc) working."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import npuc
from conftest import conv_relu_model, conv_relu_reference


def save(model: onnx.ModelProto, path: Path) -> Path:
    # Serialize directly: onnx.save would refuse nothing, but keep the checker out of the way.
    path.write_bytes(model.SerializeToString())
    return path


def relu_chain(nodes, inputs=("x",), outputs=("y",), initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "bad",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in outputs],
        initializer=list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture(autouse=True)
def npuc_still_works(conv_relu_path: Path):
    """After each test, a good model still loads and runs correctly."""
    yield
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        (y,) = tk.inference(inputs=[x])
    np.testing.assert_allclose(y, conv_relu_reference(conv_relu_model(), x), rtol=1e-4, atol=1e-5)


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.onnx"
    with pytest.raises(npuc.ModelLoadError, match="nope.onnx"):
        npuc.Toolkit().load_onnx(model=str(missing))
    with pytest.raises(npuc.ModelLoadError, match="nope.onnx"):
        npuc.Model.load(str(missing))


def test_file_that_is_not_onnx(tmp_path: Path) -> None:
    path = tmp_path / "notes.onnx"
    path.write_text("this is a text file, not a protobuf\n" * 20)
    with pytest.raises(npuc.ModelLoadError, match="notes.onnx"):
        npuc.Toolkit().load_onnx(model=str(path))


def test_truncated_model(tmp_path: Path) -> None:
    data = conv_relu_model().SerializeToString()
    path = tmp_path / "truncated.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(npuc.ModelLoadError, match="truncated.onnx"):
        npuc.Toolkit().load_onnx(model=str(path))


def test_graph_with_a_cycle(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], name="add_a"),
        helper.make_node("Relu", ["a"], ["b"], name="relu_b"),
        helper.make_node("Relu", ["b"], ["y"], name="relu_y"),
    ]
    path = save(relu_chain(nodes), tmp_path / "cycle.onnx")
    with pytest.raises(npuc.GraphError, match="cycle"):
        npuc.Toolkit().load_onnx(model=str(path))


def test_dangling_input(tmp_path: Path) -> None:
    nodes = [helper.make_node("Add", ["x", "ghost"], ["y"], name="add")]
    path = save(relu_chain(nodes), tmp_path / "dangling.onnx")
    with pytest.raises(npuc.GraphError, match="ghost"):
        npuc.Toolkit().load_onnx(model=str(path))


def test_initializer_of_the_wrong_size(tmp_path: Path) -> None:
    bad = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4], raw_data=b"\x00" * 8)  # 2 floats, not 4
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    path = save(relu_chain(nodes, initializers=[bad]), tmp_path / "short_init.onnx")
    with pytest.raises(npuc.ModelLoadError, match="'w'"):
        npuc.Toolkit().load_onnx(model=str(path))


def test_input_of_the_wrong_shape(conv_relu_path: Path) -> None:
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        with pytest.raises(npuc.InputError, match=r"input 'x' expects float32\[1,3,8,8\], got float32\[1,3,8\]"):
            tk.inference(inputs=[np.zeros((1, 3, 8), np.float32)])


def test_input_of_the_wrong_dtype(conv_relu_path: Path) -> None:
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        with pytest.raises(npuc.InputError, match=r"input 'x' expects float32\[1,3,8,8\], got float64\[1,3,8,8\]"):
            tk.inference(inputs=[np.zeros((1, 3, 8, 8), np.float64)])
        with pytest.raises(npuc.InputError, match="complex"):
            tk.inference(inputs=[np.zeros((1, 3, 8, 8), np.complex64)])


def test_wrong_number_of_inputs(conv_relu_path: Path) -> None:
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        x = np.zeros((1, 3, 8, 8), np.float32)
        with pytest.raises(npuc.InputError, match="1 input"):
            tk.inference(inputs=[x, x])
    runtime = npuc.Runtime(npuc.Model.load(str(conv_relu_path)))
    with pytest.raises(npuc.InputError, match="1 input"):
        runtime.run([])


def test_errors_share_one_base() -> None:
    for cls in (npuc.ModelLoadError, npuc.UnsupportedOpError, npuc.ShapeError, npuc.GraphError,
                npuc.InputError, npuc.ConfigError, npuc.BlobError, npuc.ResourceError):
        assert issubclass(cls, npuc.NpucError)
    assert npuc.errors.NpucError is npuc.NpucError
