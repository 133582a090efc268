"""Broken models and wrong inputs raise the npuc error subclass for the problem, with a message
naming it, and leave the interpreter (and npuc) working.

The broken models come from tests/bad_inputs/make_corpus.py, which generates them into a
temporary folder (each case there names its error class and message fragment); the cases below
the corpus test are the ones that need more than "load this file"."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import onnx
from onnx import numpy_helper

import npuc
from conftest import REPO_ROOT, conv_relu_model, conv_relu_reference


def _load_corpus_module():
    spec = importlib.util.spec_from_file_location("make_corpus", REPO_ROOT / "tests" / "bad_inputs" / "make_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_corpus"] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module


corpus = _load_corpus_module()


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


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bad_inputs")
    corpus.write_corpus(out)
    return out


@pytest.mark.parametrize("case", corpus.CASES, ids=lambda c: c.name)
def test_corpus_case_is_refused_with_its_message(case, corpus_dir: Path) -> None:
    path = corpus_dir / f"{case.name}.onnx"
    error = getattr(npuc, case.error)
    with pytest.raises(npuc.NpucError) as info:
        if case.stage == "bytes":
            npuc.Model.from_bytes(path.read_bytes())
        else:
            npuc.Model.load(str(path))
    # The exact subclass, not merely a subclass of it: callers catch precisely one kind.
    assert type(info.value) is error, f"{case.name}: {type(info.value).__name__}: {info.value}"
    assert re.search(case.message, str(info.value)), f"{case.name}: {info.value}"
    if case.stage == "load":
        assert str(path) in str(info.value), "a file's errors name the file"


def test_corpus_names_are_unique() -> None:
    names = [c.name for c in corpus.CASES]
    assert len(names) == len(set(names))


def test_corpus_cases_also_fail_through_the_toolkit(corpus_dir: Path) -> None:
    """Toolkit.load_onnx surfaces the same typed errors (spot check: one case per error class)."""
    seen = set()
    for case in corpus.CASES:
        if case.stage != "load" or case.error in seen:
            continue
        seen.add(case.error)
        with pytest.raises(getattr(npuc, case.error), match=case.message):
            npuc.Toolkit().load_onnx(model=str(corpus_dir / f"{case.name}.onnx"))
    assert {"ModelLoadError", "GraphError", "ShapeError", "UnsupportedOpError", "ResourceError"} <= seen


def test_every_truncation_of_a_model_is_refused(tmp_path: Path) -> None:
    """Any prefix of a valid model is refused cleanly (a sweep, not only the corpus' three cuts)."""
    data = corpus.conv_model()
    step = max(1, len(data) // 97)  # ~100 cut points spread over the whole file
    for cut in range(0, len(data) - 1, step):
        with pytest.raises(npuc.ModelLoadError):
            npuc.Model.from_bytes(data[:cut])


def _add_weight_model(weight: np.ndarray) -> bytes:
    w = numpy_helper.from_array(weight.astype(np.float32), "w")
    return corpus.add_model(w, shape=weight.shape)


def test_inf_weights_load_and_follow_ieee() -> None:
    """-inf/+inf constants are legitimate (attention masks), so they load and propagate exactly."""
    weight = np.array([[0.0, -np.inf, np.inf, 1.0]], np.float32)
    runtime = npuc.Runtime(npuc.Model.from_bytes(_add_weight_model(weight)))
    x = np.array([[1.0, 2.0, 3.0, np.inf]], np.float32)
    (y,) = runtime.run([x])
    np.testing.assert_array_equal(y, x + weight)


def test_nan_weight_is_refused_naming_the_tensor() -> None:
    weight = np.array([[0.0, np.nan, 1.0, 2.0]], np.float32)
    with pytest.raises(npuc.ModelLoadError, match=r"tensor 'w'.*NaN at index 1"):
        npuc.Model.from_bytes(_add_weight_model(weight))


def test_nan_weight_is_refused_in_float16_and_float64() -> None:
    for dtype in (np.float16, np.float64):
        w = numpy_helper.from_array(np.array([[0.0, 1.0, 2.0, np.nan]], dtype), "w")
        cast = onnx.helper.make_node("Cast", ["w"], ["wf"], name="cast", to=onnx.TensorProto.FLOAT)
        model = corpus.model_bytes(
            [cast, onnx.helper.make_node("Add", ["x", "wf"], ["y"], name="add")],
            [corpus.float_info("x", [1, 4])],
            [corpus.float_info("y", [1, 4])],
            [w],
        )
        with pytest.raises(npuc.ModelLoadError, match=r"tensor 'w' \((float16|float64)\[1,4\]\) holds NaN at index 3"):
            npuc.Model.from_bytes(model)


def test_inf_in_a_matmul_weight_is_refused_but_not_in_a_mask() -> None:
    """-inf feeding Add (an attention mask) loads; the same constant as a MatMul operand does not."""
    mask = numpy_helper.from_array(np.array([[0.0, -np.inf], [0.0, 0.0]], np.float32), "m")
    for op, ok in (("Add", True), ("MatMul", False)):
        model = corpus.model_bytes(
            [onnx.helper.make_node(op, ["x", "m"], ["y"], name="use_m")],
            [corpus.float_info("x", [2, 2])],
            [corpus.float_info("y", [2, 2])],
            [mask],
        )
        if ok:
            npuc.Model.from_bytes(model)
        else:
            with pytest.raises(npuc.ModelLoadError, match=r"tensor 'm'.*-Inf at index 1, and it is an operand of MatMul 'use_m'"):
                npuc.Model.from_bytes(model)


def test_input_of_the_wrong_shape(conv_relu_path: Path) -> None:
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        with pytest.raises(npuc.InputError, match=r"input 'x' expects float32\[1,3,8,8\], got float32\[1,3,8\]"):
            tk.inference(inputs=[np.zeros((1, 3, 8), np.float32)])


def test_input_of_the_wrong_dtype(conv_relu_path: Path) -> None:
    # The array-type rule (npuc.input_dtype; test_input_dtype.py): float64 is converted, bool and
    # complex are refused, naming the input.
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(conv_relu_path))
        tk.inference(inputs=[np.zeros((1, 3, 8, 8), np.float64)])
        with pytest.raises(npuc.InputError, match=r"dtype bool is not accepted for input 'x' \(float32\)"):
            tk.inference(inputs=[np.zeros((1, 3, 8, 8), bool)])
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


# ---------------------------------------------------------------------- calibration inputs (.npy, dataset.txt)


def _npy_bytes(array: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _npy_with_header(header: str, data: bytes = b"", version: int = 1) -> bytes:
    text = header.encode("latin1")
    length = len(text).to_bytes(2 if version == 1 else 4, "little")
    return b"\x93NUMPY" + bytes([version, 0]) + length + text + data


@pytest.mark.parametrize(
    "array",
    [
        np.arange(24, dtype=np.float32).reshape(2, 3, 4),
        np.asfortranarray(np.arange(24, dtype=np.float64).reshape(2, 3, 4)),
        np.arange(6, dtype=">i4").reshape(2, 3),
        np.array([True, False, True]),
        np.arange(5, dtype=np.float16),
        np.zeros((0, 3), np.uint8),
        np.array(2.5, np.float32),
    ],
    ids=["f4", "fortran_f8", "big_endian_i4", "bool", "f2", "empty", "scalar"],
)
def test_read_npy_matches_numpy(tmp_path: Path, array: np.ndarray) -> None:
    from npuc._npuc import read_npy

    path = tmp_path / "a.npy"
    path.write_bytes(_npy_bytes(array))
    got = read_npy(str(path))
    assert got.shape == array.shape and got.dtype == array.dtype.newbyteorder("=")
    assert got.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(got, array)


def test_read_npy_version_2_and_3_headers(tmp_path: Path) -> None:
    from npuc._npuc import read_npy

    data = np.arange(4, dtype="<f4").tobytes()
    for version in (2, 3):
        path = tmp_path / f"v{version}.npy"
        path.write_bytes(_npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", data, version))
        np.testing.assert_array_equal(read_npy(str(path)), np.arange(4, dtype=np.float32))


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", r"does not start with the .npy magic"),
        (b"\x93NUMPY\x04\x00\x10\x00", r"format version 4.0 is not 1.0, 2.0 or 3.0"),
        (b"\x93NUMPY\x01\x00\xff\xff{", r"header of 65535 bytes is longer than the 10000 allowed"),
        (b"\x93NUMPY\x01\x00\x40\x00{'descr'", r"truncated: the header declares 64 bytes, 8 follow"),
        (_npy_with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }"), r"dtype '<c8' is not supported"),
        (_npy_with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"), r"expected a quoted 'descr'"),
        (_npy_with_header("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"), r"dtype '\|O' is not a simple"),
        (_npy_with_header("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }"), r"'fortran_order' is not True or False"),
        (_npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"), r"'shape' holds something other than non-negative"),
        (_npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"), r"overflows int64"),
        (_npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576, 1048576), }"), r"holds more than 17179869184 elements"),
        (_npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65537), }"), r"needs 17180131328 bytes, more than the 17179869184 a tensor may hold"),
        (_npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", b"\0" * 8), r"truncated: the header declares 16 data bytes"),
        (_npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", b"\0" * 8), r"trailing bytes: the header declares 4"),
        (_npy_with_header("{'descr': '<f4', 'shape': (1,), }", b"\0" * 4), r"header lacks the key 'fortran_order'"),
        (_npy_with_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }"), r"key 'descr' appears twice"),
        (_npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}"), r"unexpected key 'x'"),
        (_npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } junk", b"\0" * 4), r"text after the closing"),
    ],
    ids=lambda v: None if isinstance(v, bytes) else v[:40],
)
def test_read_npy_refuses_broken_files(tmp_path: Path, content: bytes, message: str) -> None:
    from npuc._npuc import read_npy

    path = tmp_path / "bad.npy"
    path.write_bytes(content)
    with pytest.raises(npuc.InputError, match=message):
        read_npy(str(path))


def test_dataset_list_parsing(tmp_path: Path) -> None:
    from npuc._npuc import parse_dataset_list

    path = tmp_path / "sub" / "dataset.txt"
    path.parent.mkdir()
    path.write_bytes(b"# header\r\n\r\n  a.npy\tb.npy  \r\n/abs/c.npy d.png\rlast.npy e.npy")
    entries = parse_dataset_list(str(path), 2)
    assert [(line, names) for line, _, names, _ in entries] == [
        (3, ["a.npy", "b.npy"]), (4, ["/abs/c.npy", "d.png"]), (5, ["last.npy", "e.npy"])
    ]
    assert entries[0][3] == [str(path.parent / "a.npy"), str(path.parent / "b.npy")]
    assert entries[1][3][0] == "/abs/c.npy"


@pytest.mark.parametrize(
    "content, message",
    [
        (b"# only a comment\n\n   \n", r"lists no sample"),
        (b"a.npy\nb\x00.npy\n", r"line 2: contains a NUL byte"),
        (b"a.npy\nb.npy c.npy\n", r"line 2: expected 1 file\(s\) \(one per model input\), got 2: 'b.npy c.npy'"),
    ],
)
def test_dataset_list_errors_name_the_line(tmp_path: Path, content: bytes, message: str) -> None:
    from npuc._npuc import parse_dataset_list

    path = tmp_path / "dataset.txt"
    path.write_bytes(content)
    with pytest.raises(npuc.InputError, match=message):
        parse_dataset_list(str(path), 1)


def test_dataset_list_that_is_a_directory_or_missing(tmp_path: Path) -> None:
    from npuc._npuc import parse_dataset_list

    with pytest.raises(npuc.InputError, match=r"cannot be read \(it is a directory\)"):
        parse_dataset_list(str(tmp_path))
    with pytest.raises(npuc.InputError, match=r"cannot be read"):
        parse_dataset_list(str(tmp_path / "missing.txt"))


def test_broken_npy_in_a_dataset_names_the_line(tmp_path: Path) -> None:
    from npuc.dataset import iterate_samples

    np.save(tmp_path / "good.npy", np.zeros((1, 4), np.float32))
    (tmp_path / "cut.npy").write_bytes(_npy_bytes(np.zeros((1, 4), np.float32))[:-3])
    (tmp_path / "dataset.txt").write_text("good.npy\ncut.npy\n")
    infos = [{"name": "x", "dtype": "float32", "shape": (1, 4)}]
    samples = iterate_samples(str(tmp_path / "dataset.txt"), infos)
    assert next(samples)[0].shape == (1, 4)
    with pytest.raises(npuc.InputError, match=r"dataset '.*' line 2: '.*cut.npy' is not a readable .npy array: truncated"):
        next(samples)
