"""npuc.perf.eval_perf: the report object, its exports and plot, options, and errors."""
from __future__ import annotations

import csv
import io
import json

import onnx
import pytest

import npuc
import npuc.perf
from conftest import conv_relu_model, shared_models_dir


@pytest.fixture
def model(conv_relu_path):
    return npuc.Model.load(str(conv_relu_path))


def test_rows_and_summary_add_up(model):
    report = npuc.perf.eval_perf(model, "rk3588")
    assert [r["OpType"] for r in report.rows] == ["Conv+Relu"]
    row = report.rows[0]
    assert row["Target"] == "NPU" and row["DataType"] == "INT8"
    assert row["InputShape"] == (1, 3, 8, 8) and row["OutputShape"] == (1, 4, 8, 8)
    assert row["FullName"] == "conv+relu"
    assert row["MACs"] == 8 * 8 * 4 * 3 * 3 * 3
    total = sum(r["Time(us)"] for r in report.rows)
    assert report.summary["total_time_us"] == pytest.approx(total)
    assert report.fps == pytest.approx(1e6 / total)
    assert sum(k["Share(%)"] for k in report.ranking) == pytest.approx(100.0)
    assert "Network Layer Information Table" in str(report)


def test_cpu_fallback_and_options(model):
    on_npu = npuc.perf.eval_perf(model, "rk3588", single_core_mode=True)
    forced = npuc.perf.eval_perf(model, "rk3588", op_target={"relu": "cpu"}, single_core_mode=True)
    assert [r["Target"] for r in forced.rows] == ["NPU", "CPU"]
    assert forced.summary["handovers"] == 1
    assert forced.summary["cpu_time_us"] > 0 and forced.summary["handover_time_us"] > 0
    assert forced.summary["total_time_us"] > on_npu.summary["total_time_us"]
    assert on_npu.summary["cores"] == 1
    fp16 = npuc.perf.eval_perf(model, "rk3588", dtype="fp16")
    assert fp16.rows[0]["DataType"] == "FP16"
    with pytest.raises(npuc.ConfigError, match="dtype"):
        npuc.perf.eval_perf(model, "rk3588", dtype="int4")
    with pytest.raises(npuc.ConfigError, match="rk9999"):
        npuc.perf.eval_perf(model, "rk9999")


def test_csv_json_and_plot(model, tmp_path):
    report = npuc.perf.eval_perf(model, "rk3566")
    rows = list(csv.DictReader(io.StringIO(report.to_csv(tmp_path / "p.csv"))))
    assert rows[0]["InputShape"] == "1x3x8x8" and rows[0]["Target"] == "NPU"
    assert (tmp_path / "p.csv").read_text() == report.to_csv()
    data = json.loads(report.to_json(tmp_path / "p.json"))
    assert data["summary"]["soc"] == "rk3566" and data["rows"][0]["OutputShape"] == [1, 4, 8, 8]
    png = report.plot(tmp_path / "p.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cycle_plot_draws_what_the_total_is(tmp_path):
    # glu_net on rk3588 has NPU rows of both bottlenecks; its Sigmoid put on the CPU adds a CPU row and
    # hand-overs.
    folder = shared_models_dir()
    if folder is None:
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    report = npuc.perf.eval_perf(str(folder / "glu_net.onnx"), "rk3588", op_target={"Sigmoid": "cpu"})
    assert {r["Target"] for r in report.rows} == {"NPU", "CPU"}
    assert any(r["Handover(us)"] > 0 for r in report.rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    report._plot_cycles(ax)
    heights = {}  # layer ID -> sum of its stacked bar segments
    for patch in ax.patches:
        x = round(patch.get_x() + patch.get_width() / 2)
        heights[x] = heights.get(x, 0.0) + patch.get_height()
    plt.close(fig)
    for r, part in zip(report.rows, report.cycle_parts()):
        assert heights[r["ID"]] == pytest.approx(r["TotalCycles"], rel=1e-9), r
        assert min(part["bound"], part["overhead"], part["handover"]) >= 0, (r, part)
        if r["Target"] == "NPU":
            assert part["bound"] == pytest.approx(max(r["NPUCycles"], r["DDRCycles"])), r
    assert report.plot(tmp_path / "glu.png").read_bytes()[:4] == b"\x89PNG"


def test_tuning_cache_file(conv_relu_path, tmp_path):
    cache = tmp_path / "tiling.cache"
    first = npuc.perf.eval_perf(str(conv_relu_path), "rk3588", tuning_cache=cache)
    assert first.summary["tiling_cache_misses"] == 1 and cache.exists()
    second = npuc.perf.eval_perf(str(conv_relu_path), "rk3588", tuning_cache=cache)
    assert second.summary["tiling_cache_hits"] == 1 and second.summary["tiling_cache_misses"] == 0
    assert second.summary["total_time_us"] == first.summary["total_time_us"]
    cache.write_text("not a cache\n")
    with pytest.raises(npuc.ConfigError, match="line 1"):
        npuc.perf.eval_perf(str(conv_relu_path), "rk3588", tuning_cache=cache)


def test_shared_mobilenet_v2_runs_wholly_on_the_npu():
    folder = shared_models_dir()
    if folder is None or not (folder / "mobilenet_v2.onnx").exists():
        pytest.skip("shared models not found")
    report = npuc.perf.eval_perf(str(folder / "mobilenet_v2.onnx"), "rk3588", single_core_mode=True)
    assert all(r["Target"] == "NPU" for r in report.rows)
    assert report.summary["cpu_time_us"] == 0
    # Depthwise convs keep one lane of the dot product busy: their MAC usage is far below the
    # pointwise convs'.
    usage = {r["FullName"]: r["MacUsage(%)"] for r in report.rows if r["OpType"].startswith("Conv")}
    assert min(usage.values()) < 5 < max(usage.values())
    assert 100 < report.fps < 2000
