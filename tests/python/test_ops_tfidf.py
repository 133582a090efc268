"""TfIdfVectorizer (#22): the modes and skips the ONNX node tests leave out (they are all mode TF),
checked against ONNX Runtime, plus its CPU placement and its refusals.

The node tests (tests/conformance, 7 cases) cover TF counting with skips 0 and 5, unigrams plus
bigrams and an empty level. Here: IDF and TFIDF with weights, int64 and int32 tokens, 1-D input,
trigrams with skips, several rows, tokens outside the pool.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import ort_outputs

import npuc


# A pool of 4 unigrams, 3 bigrams and 2 trigrams over token ids 0..9.
POOL = [2, 3, 5, 7,  2, 3,  3, 5,  7, 2,  2, 3, 5,  5, 7, 2]
NGRAM_COUNTS = [0, 4, 10]
NGRAM_INDEXES = [0, 1, 2, 3, 4, 5, 6, 7, 8]
WEIGHTS = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5]


def _model(shape: List[int], dtype: int, mode: str, min_n: int, max_n: int, skip: int,
           weights: Optional[List[float]] = None, **extra) -> onnx.ModelProto:
    attrs = dict(mode=mode, min_gram_length=min_n, max_gram_length=max_n, max_skip_count=skip,
                 ngram_counts=NGRAM_COUNTS, ngram_indexes=NGRAM_INDEXES, pool_int64s=POOL)
    if weights is not None:
        attrs["weights"] = weights
    attrs.update(extra)
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf", **attrs)
    out = [max(NGRAM_INDEXES) + 1] if len(shape) == 1 else [shape[0], max(NGRAM_INDEXES) + 1]
    graph = helper.make_graph([node], "tfidf", [helper.make_tensor_value_info("x", dtype, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])


# Two short rows that hold trigrams only at skips 1 and 2: [2, 3, 5] at 0/2/4, [5, 7, 2] at 0/3/6.
PLANTED = np.array([[2, 9, 3, 9, 5, 7, 2], [5, 0, 0, 7, 0, 0, 2]])


def _tokens(shape: List[int], dtype) -> np.ndarray:
    if list(shape) == list(PLANTED.shape):
        return PLANTED.astype(dtype)
    # Ids 0..11: most are in the pool, 0/1/4/6/8..11 are not.
    return np.random.default_rng(7).integers(0, 12, size=shape).astype(dtype)


CASES = [
    # (shape, onnx dtype, numpy dtype, mode, min_n, max_n, skip, weights)
    ([3, 40], TensorProto.INT64, np.int64, "TF", 1, 3, 2, None),
    ([3, 40], TensorProto.INT32, np.int32, "IDF", 1, 3, 1, WEIGHTS),
    ([3, 40], TensorProto.INT64, np.int64, "TFIDF", 2, 3, 3, WEIGHTS),
    ([50], TensorProto.INT64, np.int64, "TFIDF", 1, 2, 0, WEIGHTS),
    ([2, 7], TensorProto.INT32, np.int32, "TF", 3, 3, 4, None),
]


@pytest.mark.parametrize("shape,onnx_dtype,np_dtype,mode,min_n,max_n,skip,weights", CASES)
def test_matches_onnx_runtime(tmp_path: Path, shape, onnx_dtype, np_dtype, mode, min_n, max_n, skip,
                              weights) -> None:
    path = tmp_path / "tfidf.onnx"
    onnx.save(_model(shape, onnx_dtype, mode, min_n, max_n, skip, weights), str(path))
    x = _tokens(shape, np_dtype)
    got = npuc.Runtime(npuc.Model.load(str(path))).run([x])[0]
    (want,) = ort_outputs(path, {"x": x})
    assert got.dtype == np.float32 and got.shape == want.shape
    # Counts and products of a count with a weight are exact in float32.
    np.testing.assert_array_equal(got, want)
    assert got.sum() > 0, "the case counted nothing: it would not test the counting"


def test_runs_on_the_cpu_with_its_reason(tmp_path: Path) -> None:
    path = tmp_path / "tfidf.onnx"
    onnx.save(_model([2, 16], TensorProto.INT64, "TF", 1, 2, 1), str(path))
    tk = npuc.Toolkit()
    with contextlib.redirect_stdout(io.StringIO()):
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=False)
    report = tk.partition_report
    assert [n["node"] for n in report["cpu_nodes"]] == ["tfidf"], report["text"]
    assert "TfIdfVectorizer runs on the CPU on every SoC: looks n-grams" in report["text"]
    x = _tokens([2, 16], np.int64)
    np.testing.assert_array_equal(tk.inference(inputs=[x])[0], npuc.Runtime(npuc.Model.load(str(path))).run([x])[0])
    tk.release()


def _load_error(model: onnx.ModelProto, tmp_path: Path) -> str:
    path = tmp_path / "bad.onnx"
    onnx.save(model, str(path))
    with pytest.raises(npuc.NpucError) as err:
        npuc.Runtime(npuc.Model.load(str(path)))
    return str(err.value)


def test_string_pool_is_refused_by_name(tmp_path: Path) -> None:
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="words", mode="TF", min_gram_length=1,
                            max_gram_length=1, max_skip_count=0, ngram_counts=[0], ngram_indexes=[0],
                            pool_strings=["a"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.STRING, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    message = _load_error(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)]), tmp_path)
    assert "string" in message.lower(), message


@pytest.mark.parametrize("extra,words", [
    (dict(ngram_counts=[0, 4, 9]), "does not split pool_int64s"),
    (dict(ngram_indexes=[0, 1, 2]), "more n-grams than ngram_indexes has entries (3)"),
    (dict(mode="BM25"), "mode 'BM25'"),
    (dict(weights=[1.0, 2.0]), "weights has 2 entries"),
])
def test_inconsistent_attributes_are_refused_by_name(tmp_path: Path, extra: Dict, words: str) -> None:
    mode = extra.pop("mode", "TF")
    message = _load_error(_model([2, 8], TensorProto.INT64, mode, 1, 3, 0, **extra), tmp_path)
    assert "node 'tfidf' (TfIdfVectorizer)" in message and words in message, message
