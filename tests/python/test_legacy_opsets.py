"""ONNX opsets 1 to 21 on import (cpp/frontend/legacy_upgrade.cpp): each upgrade rule is checked by
running a small model written in the old opset's form and the same model in the newer form through
npuc, which must give identical outputs; forms npuc cannot upgrade are refused with a typed error
naming the node, the op and the opset."""

from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc

F = TensorProto.FLOAT
RNG = np.random.default_rng(16)


def _model(nodes, inputs: Sequence[tuple], outputs: Sequence[tuple], opset: int, initializers=()) -> bytes:
    """A model of `nodes`; inputs/outputs are (name, elem_type, shape) with shape None for unknown."""
    graph = helper.make_graph(
        nodes, "legacy",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), name) for name, v in initializers],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7 if opset <= 12 else 8
    return model.SerializeToString()


def _run(model: bytes, feeds: Dict[str, np.ndarray]) -> List[np.ndarray]:
    runtime = npuc.Runtime(npuc.Model.from_bytes(model))
    return runtime.run([np.ascontiguousarray(feeds[i["name"]]) for i in runtime.inputs])


def _same(old: bytes, new: bytes, feeds: Dict[str, np.ndarray]) -> List[np.ndarray]:
    got_old, got_new = _run(old, feeds), _run(new, feeds)
    assert len(got_old) == len(got_new)
    for a, b in zip(got_old, got_new):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    return got_old


def _floats(*shape) -> np.ndarray:
    return RNG.uniform(0.5, 2.0, size=shape).astype(np.float32)


# ---------------------------------------------------------------- broadcast/axis (< 7)

BINARY = [("Add", F, F), ("Sub", F, F), ("Mul", F, F), ("Div", F, F), ("Pow", F, F),
          ("Equal", TensorProto.INT32, TensorProto.BOOL), ("Greater", F, TensorProto.BOOL),
          ("Less", F, TensorProto.BOOL), ("And", TensorProto.BOOL, TensorProto.BOOL),
          ("Or", TensorProto.BOOL, TensorProto.BOOL), ("Xor", TensorProto.BOOL, TensorProto.BOOL)]


def _data(elem_type, shape) -> np.ndarray:
    if elem_type == TensorProto.BOOL:
        return RNG.integers(0, 2, size=shape).astype(bool)
    if elem_type == TensorProto.INT32:
        return RNG.integers(0, 3, size=shape).astype(np.int32)
    return _floats(*shape)


@pytest.mark.parametrize("op,in_type,out_type", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("known_ranks", [True, False], ids=["known_ranks", "unknown_ranks"])
def test_broadcast_axis_becomes_numpy_broadcasting(op, in_type, out_type, known_ranks):
    # Opset 6: B [3] lines up with A [2,3,4] at axis 1; opset 7+: B must be [3,1].
    feeds = {"a": _data(in_type, (2, 3, 4)), "b": _data(in_type, (3,))}
    if known_ranks:
        old_nodes = [helper.make_node(op, ["a", "b"], ["y"], broadcast=1, axis=1)]
    else:  # Identity outputs have no declared shape: ranks are unknown when the upgrade runs
        old_nodes = [helper.make_node("Identity", ["a"], ["ai"]), helper.make_node("Identity", ["b"], ["bi"]),
                     helper.make_node(op, ["ai", "bi"], ["y"], broadcast=1, axis=1)]
    io = dict(inputs=[("a", in_type, [2, 3, 4]), ("b", in_type, [3])], outputs=[("y", out_type, None)])
    old = _model(old_nodes, opset=6, **io)
    new = _model([helper.make_node("Unsqueeze", ["b", "axes"], ["b2"]), helper.make_node(op, ["a", "b2"], ["y"])],
                 opset=13, initializers=[("axes", np.array([1], np.int64))], **io)
    (y,) = _same(old, new, feeds)
    assert y.shape == (2, 3, 4)


def test_broadcast_negative_axis_and_tail_alignment():
    feeds = {"a": _floats(2, 3, 4), "b": _floats(3, 4), "c": _floats(4)}
    io = dict(inputs=[("a", F, [2, 3, 4]), ("b", F, [3, 4]), ("c", F, [4])], outputs=[("y", F, None)])
    old = _model([helper.make_node("Identity", ["a"], ["ai"]),
                  helper.make_node("Mul", ["ai", "b"], ["t"], broadcast=1, axis=-2),  # = axis 1 of rank 3
                  helper.make_node("Add", ["t", "c"], ["y"], broadcast=1)], opset=5, **io)  # no axis: tail
    new = _model([helper.make_node("Mul", ["a", "b"], ["t"]), helper.make_node("Add", ["t", "c"], ["y"])],
                 opset=13, **io)
    _same(old, new, feeds)


def test_broadcast_axis_that_cannot_fit_is_refused():
    old = _model([helper.make_node("Add", ["a", "b"], ["y"], name="add_bad", broadcast=1, axis=2)], opset=6,
                 inputs=[("a", F, [2, 3]), ("b", F, [3])], outputs=[("y", F, None)])
    with pytest.raises(npuc.UnsupportedOpError, match=r"node 'add_bad' \(Add, opset 6\): broadcast axis 2"):
        npuc.Model.from_bytes(old)


# ---------------------------------------------------------------- other opset < 7 forms

def test_gemm_broadcast_attribute_dropped():
    feeds = {"a": _floats(2, 3)}
    inits = [("w", _floats(3, 4)), ("c", _floats(4))]
    io = dict(inputs=[("a", F, [2, 3])], outputs=[("y", F, None)], initializers=inits)
    old = _model([helper.make_node("Gemm", ["a", "w", "c"], ["y"], broadcast=1, beta=0.5)], opset=6, **io)
    new = _model([helper.make_node("Gemm", ["a", "w", "c"], ["y"], beta=0.5)], opset=13, **io)
    _same(old, new, feeds)


@pytest.mark.parametrize("slope_shape", [(3,), (1,)])
@pytest.mark.parametrize("known_rank", [True, False], ids=["known_rank", "unknown_rank"])
def test_prelu_slope_is_per_channel(slope_shape, known_rank):
    feeds = {"x": RNG.uniform(-1, 1, size=(2, 3, 4, 5)).astype(np.float32)}
    slope = RNG.uniform(0.1, 0.5, size=slope_shape).astype(np.float32)
    x = "x" if known_rank else "xi"
    old = _model([helper.make_node("Identity", ["x"], ["xi"]), helper.make_node("PRelu", [x, "s"], ["y"])],
                 opset=6, inputs=[("x", F, [2, 3, 4, 5])], outputs=[("y", F, None)], initializers=[("s", slope)])
    new = _model([helper.make_node("PRelu", ["x", "s"], ["y"])], opset=9, inputs=[("x", F, [2, 3, 4, 5])],
                 outputs=[("y", F, None)], initializers=[("s", slope.reshape(slope_shape + (1, 1)))])
    (y,) = _same(old, new, feeds)
    c = slope.reshape(slope_shape + (1, 1))
    np.testing.assert_allclose(y, np.where(feeds["x"] < 0, feeds["x"] * c, feeds["x"]), rtol=1e-6)


def test_prelu_on_1d_input_keeps_its_single_slope():
    feeds = {"x": np.linspace(-1, 1, 6, dtype=np.float32)}
    io = dict(inputs=[("x", F, [6])], outputs=[("y", F, None)], initializers=[("s", np.array([0.25], np.float32))])
    old = _model([helper.make_node("PRelu", ["x", "s"], ["y"])], opset=6, **io)
    new = _model([helper.make_node("PRelu", ["x", "s"], ["y"])], opset=9, **io)
    _same(old, new, feeds)


def test_concat_default_axis_is_1():
    feeds = {"a": _floats(2, 3), "b": _floats(2, 2)}
    io = dict(inputs=[("a", F, [2, 3]), ("b", F, [2, 2])], outputs=[("y", F, None)])
    old = _model([helper.make_node("Concat", ["a", "b"], ["y"])], opset=3, **io)
    new = _model([helper.make_node("Concat", ["a", "b"], ["y"], axis=1)], opset=13, **io)
    (y,) = _same(old, new, feeds)
    assert y.shape == (2, 5)


def test_reshape_shape_attribute_becomes_input():
    feeds = {"x": _floats(2, 3, 4)}
    io = dict(inputs=[("x", F, [2, 3, 4])], outputs=[("y", F, None)])
    old = _model([helper.make_node("Reshape", ["x"], ["y"], shape=[4, -1], consumed_inputs=[0])], opset=4, **io)
    new = _model([helper.make_node("Reshape", ["x", "s"], ["y"])], opset=13,
                 initializers=[("s", np.array([4, -1], np.int64))], **io)
    (y,) = _same(old, new, feeds)
    assert y.shape == (4, 6)


def test_reshape_without_shape_is_refused():
    old = _model([helper.make_node("Reshape", ["x"], ["y"], name="rs")], opset=4,
                 inputs=[("x", F, [2, 3])], outputs=[("y", F, None)])
    with pytest.raises(npuc.UnsupportedOpError, match=r"node 'rs' \(Reshape, opset 4\)"):
        npuc.Model.from_bytes(old)


def test_cast_type_name_becomes_number():
    feeds = {"x": (_floats(2, 3) * 10).astype(np.float32)}
    io = dict(inputs=[("x", F, [2, 3])], outputs=[("y", TensorProto.INT32, None)])
    old = _model([helper.make_node("Cast", ["x"], ["y"], to="INT32")], opset=5, **io)
    new = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT32)], opset=13, **io)
    (y,) = _same(old, new, feeds)
    assert y.dtype == np.int32


def test_cast_unknown_type_name_is_refused():
    old = _model([helper.make_node("Cast", ["x"], ["y"], name="cast_bad", to="QUATERNION")], opset=5,
                 inputs=[("x", F, [2])], outputs=[("y", F, None)])
    with pytest.raises(npuc.UnsupportedOpError, match=r"node 'cast_bad' \(Cast, opset 5\).*QUATERNION"):
        npuc.Model.from_bytes(old)


def test_tile_along_one_axis_becomes_repeats():
    feeds = {"x": _floats(2, 3, 4)}
    io = dict(inputs=[("x", F, [2, 3, 4])], outputs=[("y", F, None)])
    old = _model([helper.make_node("Tile", ["x", "tiles", "axis"], ["y"])], opset=5,
                 initializers=[("tiles", np.array([3], np.int64)), ("axis", np.array([1], np.int64))], **io)
    new = _model([helper.make_node("Tile", ["x", "r"], ["y"])], opset=13,
                 initializers=[("r", np.array([1, 3, 1], np.int64))], **io)
    (y,) = _same(old, new, feeds)
    assert y.shape == (2, 9, 4)


def test_tile_with_runtime_tiles_is_refused():
    old = _model([helper.make_node("Tile", ["x", "tiles", "axis"], ["y"], name="tile1")], opset=5,
                 inputs=[("x", F, [2, 3]), ("tiles", TensorProto.INT64, [1])], outputs=[("y", F, None)],
                 initializers=[("axis", np.array([1], np.int64))])
    with pytest.raises(npuc.UnsupportedOpError, match=r"node 'tile1' \(Tile, opset 5\): Tile-1"):
        npuc.Model.from_bytes(old)


def test_pad_paddings_renamed():
    feeds = {"x": _floats(1, 2, 3, 3)}
    pads = [0, 0, 1, 2, 0, 0, 2, 1]
    io = dict(inputs=[("x", F, [1, 2, 3, 3])], outputs=[("y", F, None)])
    old = _model([helper.make_node("Pad", ["x"], ["y"], paddings=pads, value=1.5)], opset=1, **io)
    new = _model([helper.make_node("Pad", ["x", "p", "v"], ["y"])], opset=13,
                 initializers=[("p", np.array(pads, np.int64)), ("v", np.array(1.5, np.float32))], **io)
    (y,) = _same(old, new, feeds)
    assert y.shape == (1, 2, 6, 6)


def test_upsample_height_width_scales():
    feeds = {"x": _floats(1, 2, 2, 3)}
    io = dict(inputs=[("x", F, [1, 2, 2, 3])], outputs=[("y", F, None)])
    old = _model([helper.make_node("Upsample", ["x"], ["y"], height_scale=2.0, width_scale=3.0)], opset=6, **io)
    new = _model([helper.make_node("Upsample", ["x", "s"], ["y"], mode="nearest")], opset=9,
                 initializers=[("s", np.array([1, 1, 2, 3], np.float32))], **io)
    (y,) = _same(old, new, feeds)
    np.testing.assert_array_equal(y, feeds["x"].repeat(2, axis=2).repeat(3, axis=3))


def test_opset1_bookkeeping_attributes_removed():
    # consumed_inputs (< 6), is_test and spatial (< 9) carry no meaning for inference.
    feeds = {"x": _floats(1, 2, 3, 3)}
    stats = [(n, _floats(2)) for n in ("scale", "bias", "mean", "var")]
    io = dict(inputs=[("x", F, [1, 2, 3, 3])], outputs=[("y", F, None)], initializers=stats)
    old = _model([helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["b"],
                                   consumed_inputs=[0, 0, 0, 1, 1], is_test=1, spatial=1),
                  helper.make_node("Dropout", ["b"], ["d"], is_test=1, ratio=0.3),
                  helper.make_node("Relu", ["d"], ["y"], consumed_inputs=[0])], opset=1, **io)
    new = _model([helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["b"]),
                  helper.make_node("Relu", ["b"], ["y"])], opset=15, **io)
    _same(old, new, feeds)


def test_batchnorm_spatial_0_is_refused_with_opset():
    stats = [(n, _floats(2)) for n in ("scale", "bias", "mean", "var")]
    old = _model([helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"],
                                   name="bn0", spatial=0)], opset=7,
                 inputs=[("x", F, [1, 2, 3, 3])], outputs=[("y", F, None)], initializers=stats)
    with pytest.raises(npuc.UnsupportedOpError, match=r"node 'bn0' \(BatchNormalization, opset 7\): spatial=0"):
        npuc.Model.from_bytes(old)


# ---------------------------------------------------------------- opsets 20 and 21

@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_20_runs_as_npuc_gelu(approximate):
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4)
    model = _model([helper.make_node("Gelu", ["x"], ["y"], approximate=approximate)], opset=20,
                   inputs=[("x", F, [2, 3, 4])], outputs=[("y", F, None)])
    (y,) = _run(model, {"x": x})
    xd = x.astype(np.float64)
    if approximate == "tanh":
        want = 0.5 * xd * (1 + np.tanh(np.sqrt(2 / np.pi) * (xd + 0.044715 * xd**3)))
    else:
        from math import erf
        want = 0.5 * xd * (1 + np.vectorize(erf)(xd / np.sqrt(2)))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset", [20, 21])
def test_opsets_20_and_21_import_like_13(opset):
    # Opset 21 widened the types of Flatten, Transpose, Squeeze, Reshape, Pad, ...; the float
    # forms are unchanged.
    feeds = {"x": _floats(2, 1, 3, 4)}
    nodes = [helper.make_node("Squeeze", ["x", "ax"], ["s"]), helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 1]),
             helper.make_node("Pad", ["t", "p"], ["q"]), helper.make_node("Flatten", ["q"], ["y"], axis=1)]
    io = dict(inputs=[("x", F, [2, 1, 3, 4])], outputs=[("y", F, None)],
              initializers=[("ax", np.array([1], np.int64)), ("p", np.array([0, 1, 0, 0, 0, 1], np.int64))])
    _same(_model(nodes, opset=opset, **io), _model(nodes, opset=13, **io), feeds)


@pytest.mark.parametrize("opset", [0, 22])
def test_opset_outside_1_to_21_is_refused(opset):
    model = _model([helper.make_node("Relu", ["x"], ["y"])], opset=opset,
                   inputs=[("x", F, [2])], outputs=[("y", F, None)])
    with pytest.raises(npuc.ModelLoadError, match="no default-domain" if opset == 0 else "opsets 1 to 21"):
        npuc.Model.from_bytes(model)
    assert (npuc._npuc.MIN_IMPORT_OPSET, npuc._npuc.MAX_IMPORT_OPSET) == (1, 21)


def test_resize_19_half_pixel_symmetric():
    # Opset 19's new coordinate mode keeps a truncated output centred: 4 -> 2.4 -> 2 pixels.
    model = _model([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear",
                                     coordinate_transformation_mode="half_pixel_symmetric")], opset=19,
                   inputs=[("x", F, [1, 1, 1, 4])], outputs=[("y", F, None)],
                   initializers=[("s", np.array([1, 1, 1, 0.6], np.float32))])
    (y,) = _run(model, {"x": np.array([[[[1, 2, 3, 4]]]], np.float32)})
    # x_in = 2 * (1 - 2 / 2.4) + (x_out + 0.5) / 0.6 - 0.5 = 2/3, 7/3
    np.testing.assert_allclose(y, [[[[1 + 2 / 3, 1 + 7 / 3]]]], rtol=1e-6)
