"""Multi-core NPU schedule (issue #18): init_runtime(core_mask=...) with RKNN's values, eval_perf
per core count read from the compiled schedules (and the blob's CSCH section), the per-core
timeline plot, the CLI flags, and simulator outputs that do not depend on the mask."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_models_dir

import npuc
from npuc.errors import ConfigError
from npuc.rknn import RKNN

MASKS = ["AUTO", "0", "1", "2", "0_1", "0_1_2", "ALL"]


def _mobilenet() -> Path:
    folder = shared_models_dir()
    if folder is None or not (folder / "mobilenet_v2.onnx").is_file():
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    return folder / "mobilenet_v2.onnx"


def _built(model: Path, soc: str = "rk3588", **config) -> npuc.Toolkit:
    tk = npuc.Toolkit()
    with contextlib.redirect_stdout(io.StringIO()):
        tk.config(target_platform=soc, **config)
        tk.load_onnx(model=str(model))
        tk.build(do_quantization=False)
    return tk


def test_rknn_core_mask_constants() -> None:
    assert (RKNN.NPU_CORE_AUTO, RKNN.NPU_CORE_0, RKNN.NPU_CORE_1, RKNN.NPU_CORE_2) == (0, 1, 2, 4)
    assert (RKNN.NPU_CORE_0_1, RKNN.NPU_CORE_0_1_2, RKNN.NPU_CORE_ALL) == (3, 7, 0xFFFF)
    assert npuc.Toolkit.NPU_CORE_0_1_2 == 7


def test_core_mask_errors_name_the_socs_cores(conv_relu_path: Path) -> None:
    tk = _built(conv_relu_path, "rk3576")
    with pytest.raises(ConfigError, match=r"rk3576 has 2 NPU core\(s\) \(0_1\)"):
        tk.init_runtime(core_mask=npuc.Toolkit.NPU_CORE_0_1_2)
    with pytest.raises(ConfigError, match=r"rk3576 has 2 NPU core\(s\) \(0_1\)"):
        tk.init_runtime(core_mask=npuc.Toolkit.NPU_CORE_2)
    with pytest.raises(ConfigError, match="not one of RKNN's core masks"):
        tk.init_runtime(core_mask=5)
    single = _built(conv_relu_path, "rk3588", single_core_mode=True)
    with pytest.raises(ConfigError, match="single_core_mode=True.*rk3588's 3 \\(0_1_2\\)"):
        single.init_runtime(core_mask=npuc.Toolkit.NPU_CORE_0_1)
    assert single.init_runtime(core_mask=npuc.Toolkit.NPU_CORE_ALL) == 0  # ALL = its one core
    assert single.eval_perf(is_print=False).summary["cores"] == 1
    assert RKNN().init_runtime(core_mask=99) == -1  # RKNN's face: the failure code


def test_outputs_do_not_depend_on_the_core_mask(conv_relu_path: Path) -> None:
    tk = _built(conv_relu_path)
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    outputs = []
    for mask in MASKS:
        tk.init_runtime(core_mask=mask)
        outputs.append(tk.inference(inputs=[x], data_format="nchw")[0])
    for mask, out in zip(MASKS, outputs):
        assert out.tobytes() == outputs[0].tobytes(), mask


def test_eval_perf_per_core_count_and_blob_round_trip(tmp_path: Path) -> None:
    tk = _built(_mobilenet())
    compiled = tk._compiled("test")
    assert [s["cores"] for s in compiled.core_schedules] == [1, 2, 3]
    before = tk.eval_perf(is_print=False)
    assert before.summary["cores"] == 3 and "before init_runtime: all" in str(before).splitlines()[0]
    fps = {}
    for mask, cores in [("AUTO", 1), ("0", 1), ("0_1", 2), ("0_1_2", 3), ("ALL", 3)]:
        tk.init_runtime(core_mask=mask)
        r = tk.eval_perf(is_print=False)
        assert r.summary["cores"] == cores, mask
        fps[cores] = r.fps
        # invariants of the rows: on the cores in use, each after the rows it follows on its core
        for row in r.rows:
            assert row["End(us)"] >= row["Start(us)"]
            assert row["Cores"] == "-" or max(int(c) for c in row["Cores"].split("_")) < cores
        assert len(r.summary["core_busy_us"]) == cores
        assert r.summary["total_time_us"] == pytest.approx(max(row["End(us)"] for row in r.rows))
    # one core: the single-core cost, rows back to back
    tk.init_runtime(core_mask="AUTO")
    one = tk.eval_perf(is_print=False)
    assert one.summary["total_time_us"] == pytest.approx(sum(r["Time(us)"] for r in one.rows), rel=1e-9)
    assert fps[1] <= fps[2] <= fps[3] and fps[3] > 1.2 * fps[1]
    # the schedules travel in the blob (CSCH) and eval_perf of the loaded blob reads them
    blob = tmp_path / "m.npub"
    with contextlib.redirect_stdout(io.StringIO()):
        tk.export_blob(str(blob))
    loaded = npuc._npuc.load_compiled(str(blob))
    assert loaded.core_schedules == compiled.core_schedules
    raw = loaded.eval_perf("", 2)
    assert "from the blob" in raw["summary"]["schedule_source"]
    assert raw["summary"]["fps"] == pytest.approx(fps[2])
    # the timeline plot beside eval_perf's plot
    tk.init_runtime(core_mask="0_1_2")
    with contextlib.redirect_stdout(io.StringIO()):
        tk.eval_perf(is_print=False, plot_path=str(tmp_path / "perf.png"))
    assert (tmp_path / "perf.timeline.png").stat().st_size > 1000


def test_cli_core_mask_flags(conv_relu_path: Path, tmp_path: Path) -> None:
    def npuc_cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "npuc", *args], capture_output=True, text=True)

    bad = npuc_cli("perf", str(conv_relu_path), "--soc", "rk3576", "--core-mask", "0_1_2")
    assert bad.returncode == 1 and "rk3576 has 2 NPU core(s) (0_1)" in bad.stderr
    ok = npuc_cli("perf", str(conv_relu_path), "--soc", "rk3588", "--core-mask", "0_1", "--wide")
    assert ok.returncode == 0 and "2 NPU cores" in ok.stdout and "Cores" in ok.stdout
    single = npuc_cli("convert", str(conv_relu_path), "-t", "rk3588", "-o", str(tmp_path / "s.npub"), "--single-core")
    assert single.returncode == 0, single.stderr
    assert npuc._npuc.load_compiled(str(tmp_path / "s.npub")).options.single_core_mode
    assert [s["cores"] for s in npuc._npuc.load_compiled(str(tmp_path / "s.npub")).core_schedules] == [1]
    yml = tmp_path / "c.yml"
    yml.write_text(f"models:\n  name: m\n  model_file_path: {conv_relu_path}\n  core_mask: '0_1'\n"
                   "  configs:\n    single_core_mode: true\n")
    refused = npuc_cli("convert", "-i", str(yml), "-t", "rk3588", "-o", str(tmp_path))
    assert refused.returncode == 1 and "single_core_mode=True" in refused.stderr
