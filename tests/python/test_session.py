"""The Toolkit's session state machine (npuc.session): every call out of order raises one NpucError
that names what the session holds and what to call first; the stages follow the RKNN workflow."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

import npuc
from npuc.session import ACCEPTS, Stage


def _quiet(call, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()):
        return call(*args, **kwargs)


def test_every_listed_call_is_a_toolkit_method() -> None:
    for name in ACCEPTS:
        assert callable(getattr(npuc.Toolkit, name, None)), name


def test_calls_before_anything_is_loaded_say_to_load_first(tmp_path: Path) -> None:
    tk = npuc.Toolkit()
    assert tk._stage == Stage.EMPTY
    with pytest.raises(npuc.NpucError, match=r"inference\(\) needs .*holds no model: call load_onnx\(\)"):
        tk.inference(inputs=[np.zeros((1, 3, 8, 8), np.float32)])
    with pytest.raises(npuc.NpucError, match=r"build\(\) needs .*holds no model: call load_onnx"):
        tk.build(do_quantization=False)
    with pytest.raises(npuc.NpucError, match=r"export_blob\(\) needs a built model or a model loaded from a blob"):
        tk.export_blob(tmp_path / "m.npub")
    assert not (tmp_path / "m.npub").exists()


def test_a_loaded_model_runs_but_is_not_compiled_until_built(conv_relu_path: Path, tmp_path: Path) -> None:
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588")
    tk.load_onnx(model=str(conv_relu_path))
    assert tk._stage == Stage.LOADED
    assert tk.inference(inputs=[np.ones((1, 3, 8, 8), np.float32)])[0].shape == (1, 4, 8, 8)
    for call, args in (("export_blob", (tmp_path / "m.npub",)), ("eval_memory", ()), ("accuracy_analysis", ([],))):
        with pytest.raises(npuc.NpucError, match=rf"{call}\(\) needs .*holds a loaded model that is not built: "
                                                 r"call build\(\) or load_blob\(\) first"):
            _quiet(getattr(tk, call), *args)
    _quiet(tk.build, do_quantization=False)
    assert tk._stage == Stage.BUILT
    assert _quiet(tk.export_blob, tmp_path / "m.npub") == 0
    tk.release()
    assert tk._stage == Stage.EMPTY


def test_a_loaded_blob_is_not_built_again(conv_relu_path: Path, tmp_path: Path) -> None:
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(conv_relu_path))
        _quiet(tk.build, do_quantization=False)
        tk.export_blob(tmp_path / "m.npub")
    rt = npuc.Toolkit()
    rt.load_blob(tmp_path / "m.npub")
    assert rt._stage == Stage.BLOB_LOADED
    with pytest.raises(npuc.NpucError, match=r"build\(\) needs .*holds a model loaded from a blob"):
        rt.build(do_quantization=False)
    assert _quiet(rt.eval_memory)["total_bytes"] > 0  # compiled calls are accepted


def test_each_toolkit_logs_only_to_its_own_file_and_leaves_no_logger_behind(tmp_path: Path) -> None:
    import logging

    for i in range(3):
        with npuc.Toolkit(verbose_file=str(tmp_path / f"log{i}.txt")) as tk:
            tk.config(target_platform="rk3588")
    for i in range(3):
        assert (tmp_path / f"log{i}.txt").read_text().count("config:") == 1, i
    assert not [name for name in logging.root.manager.loggerDict if name.startswith("npuc.toolkit.")]
