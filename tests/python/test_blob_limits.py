"""The blob's limits are decided once (cpp/blob/blob_limits.h, issue #15 defect 6): what the writer
can produce the reader accepts, and anything beyond is refused on the way in with the same number:
by ``Toolkit.config`` for custom_string, by the writer (``export_blob``) for names in the graph."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

import npuc
from npuc import _npuc

LIMITS = _npuc.BLOB_LIMITS


def test_the_limits_are_exposed() -> None:
    assert LIMITS == {"name_bytes": 1 << 16, "text_bytes": 1 << 24, "rank": 32, "sections": 64}


def relu_model(path: Path, node_name: str = "relu") -> Path:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name=node_name)], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def export(tmp_path: Path, custom_string: str = "", node_name: str = "relu") -> Path:
    blob = tmp_path / "m.npub"
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588", custom_string=custom_string or None)
        tk.load_onnx(model=str(relu_model(tmp_path / "m.onnx", node_name)))
        tk.build(do_quantization=False)
        tk.export_blob(blob)
    return blob


def export_and_load(tmp_path: Path, custom_string: str = "", node_name: str = "relu") -> dict:
    blob = export(tmp_path, custom_string, node_name)
    with npuc.Toolkit() as tk:
        tk.load_blob(blob)
        return tk.blob_meta


def test_the_reported_custom_string_round_trips(tmp_path: Path) -> None:
    """The issue's case: 70000 characters were written, then called corrupt by the reader."""
    meta = export_and_load(tmp_path, "A" * 70000)
    assert meta["compile_options"].custom_string == "A" * 70000


def test_custom_string_at_the_limit_round_trips_and_one_past_is_refused_by_config(tmp_path: Path) -> None:
    at_limit = "A" * (LIMITS["text_bytes"] - 2)  # recorded as its Python literal: two quotes more
    meta = export_and_load(tmp_path, at_limit)
    assert meta["compile_options"].custom_string == at_limit
    with npuc.Toolkit() as tk:
        with pytest.raises(npuc.ConfigError, match=f"custom_string is {LIMITS['text_bytes'] + 1} bytes .* limit of "
                                                   f"{LIMITS['text_bytes']} bytes"):
            tk.config(custom_string=at_limit + "A")


def test_a_node_name_at_the_limit_round_trips_and_one_past_is_refused_by_the_writer(tmp_path: Path) -> None:
    at_limit = "n" * LIMITS["name_bytes"]
    meta = export_and_load(tmp_path, node_name=at_limit)
    assert meta["program"]["npu_tasks"] == 1
    (tmp_path / "past").mkdir()
    with pytest.raises(npuc.BlobError, match=f"node name 'n+...' is {LIMITS['name_bytes'] + 1} bytes long, more than "
                                             f"the .npub limit of {LIMITS['name_bytes']}"):
        export(tmp_path / "past", node_name=at_limit + "n")  # refused writing, not reading
    assert not (tmp_path / "past" / "m.npub").exists()
