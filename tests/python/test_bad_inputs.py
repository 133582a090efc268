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


@pytest.mark.xfail(
    strict=True,
    reason="frontend owner: tensorFromProto (cpp/frontend/onnx_tensor.cpp) does not refuse NaN weights yet",
)
def test_nan_weight_is_refused_naming_the_tensor() -> None:
    weight = np.array([[0.0, np.nan, 1.0, 2.0]], np.float32)
    with pytest.raises(npuc.ModelLoadError, match=r"tensor 'w'.*NaN"):
        npuc.Model.from_bytes(_add_weight_model(weight))


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
