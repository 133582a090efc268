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


def test_cycle_plot_of_a_big_model_draws_its_slowest_layers_named(tmp_path):
    """ppocrv4_det has 186 rows (issue #23: a bar per layer was unreadable): the 40 slowest are
    drawn, slowest first, each named under its bar, with their share of the time in the title."""
    folder = shared_models_dir()
    if folder is None:
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    report = npuc.perf.eval_perf(str(folder / "ppocrv4_det.onnx"), "rk3588")
    assert len(report.rows) > 80
    shown = report.plotted_rows()
    cycles = [report.rows[i]["TotalCycles"] for i in shown]
    rest = [r["TotalCycles"] for i, r in enumerate(report.rows) if i not in shown]
    assert len(shown) == 40 and cycles == sorted(cycles, reverse=True) and min(cycles) >= max(rest)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    report._plot_cycles(ax)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    title = ax.get_title()
    plt.close(fig)
    assert len(labels) == 40 and labels[0].startswith(f"{report.rows[shown[0]]['ID']} ")
    assert title.startswith(f"the 40 slowest of {len(report.rows)} layers (")
    assert report.plot(tmp_path / "det.png").read_bytes()[:4] == b"\x89PNG"


def test_tuning_cache_file(conv_relu_path, tmp_path):
    cache = tmp_path / "tiling.cache"
    first = npuc.perf.eval_perf(str(conv_relu_path), "rk3588", tuning_cache=cache)
    # one conv, tiled whole and as each split part the core scheduler may use
    assert first.summary["tiling_cache_misses"] >= 1 and cache.exists()
    second = npuc.perf.eval_perf(str(conv_relu_path), "rk3588", tuning_cache=cache)
    looked_up = first.summary["tiling_cache_misses"] + first.summary["tiling_cache_hits"]
    assert second.summary["tiling_cache_hits"] == looked_up and second.summary["tiling_cache_misses"] == 0
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


def test_overrides_replace_profile_figures_and_cost_constants(model):
    """eval_perf's calibration overrides (bench/perf_fit.py): each moves the prediction the way
    the model says, and a wrong name or value is refused."""
    base = npuc.perf.eval_perf(model, "rk3588", single_core_mode=True)
    faster, slower = (npuc.perf.eval_perf(model, "rk3588", single_core_mode=True,
                                          overrides={"npu.task_overhead_cycles": cycles})
                      for cycles in (10000, 30000))
    # One task: its time grows by exactly the added overhead (20000 cycles at 1 GHz).
    assert slower.summary["total_time_us"] == pytest.approx(faster.summary["total_time_us"] + 20.0)
    assert npuc.perf.eval_perf(model, "rk3588", single_core_mode=True,
                               overrides={"const.move_cycles_per_vector": 2.0}).fps == pytest.approx(base.fps)
    with pytest.raises(npuc.ConfigError, match="unknown override"):
        npuc.perf.eval_perf(model, "rk3588", overrides={"npu.cores": 2})
    with pytest.raises(npuc.ConfigError, match="unknown cost constant"):
        npuc.perf.eval_perf(model, "rk3588", overrides={"const.nope": 2})
    with pytest.raises(npuc.ConfigError, match="positive"):
        npuc.perf.eval_perf(model, "rk3588", overrides={"npu.ddr_bytes_per_cycle": 0})


def test_cost_terms_beyond_convs_rank_as_the_model_says(tmp_path):
    """A Transpose costs more than a Relu of the same tensor; a LUT activation more than a Relu;
    a Softmax over a tensor larger than the on-chip buffer moves more DDR bytes per element."""
    from onnx import TensorProto, helper

    def one_op(op: str, shape: list[int], **attrs) -> npuc.perf.PerfReport:
        out_shape = [shape[0], shape[1], shape[3], shape[2]] if op == "Transpose" else shape
        node = helper.make_node(op, ["x"], ["y"], **attrs)
        graph = helper.make_graph([node], op, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)])
        path = tmp_path / f"{op}_{'x'.join(map(str, shape))}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
        return npuc.perf.eval_perf(str(path), "rk3588", single_core_mode=True)

    shape = [1, 64, 96, 96]
    relu, sigmoid = one_op("Relu", shape), one_op("Sigmoid", shape)
    transpose = one_op("Transpose", shape, perm=[0, 1, 3, 2])
    assert transpose.rows[0]["NPUCycles"] > sigmoid.rows[0]["NPUCycles"] > relu.rows[0]["NPUCycles"]
    assert transpose.summary["total_time_us"] > relu.summary["total_time_us"]
    small, big = one_op("Softmax", [1, 16, 32, 64], axis=-1), one_op("Softmax", [1, 16, 256, 512], axis=-1)
    assert big.rows[0]["RW(KB)"] / (256 * 512) > 1.5 * small.rows[0]["RW(KB)"] / (32 * 64)
