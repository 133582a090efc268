"""Simulated performance of a model on an NPU SoC (``eval_perf``): per-layer cycles, DDR traffic and
bottlenecks from npuc's cost model (docs/perf_model.md), without a board.

    report = npuc.perf.eval_perf(model, "rk3588", single_core_mode=True)
    print(report)              # RKNN-style table, summary and op-type ranking
    report.rows[0]["Time(us)"]
    report.to_csv("perf.csv"); report.plot("perf.png")
"""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

from npuc import _npuc
from npuc.errors import ConfigError, OutputError
from npuc.output_files import JobInputs, atomic_output, refuse_output, write_text_output

# The report columns, in RKNN eval_perf order, then npuc's extra ones.
COLUMNS = (
    "ID", "OpType", "DataType", "Target", "InputShape", "OutputShape", "DDRCycles", "NPUCycles",
    "TotalCycles", "Time(us)", "MacUsage(%)", "RW(KB)", "TaskNumber", "Bottleneck", "FullName",
    "Tiles", "MACs", "Handovers", "Handover(us)", "Cores", "Split", "Start(us)", "End(us)",
)


class PerfReport:
    """The result of :func:`eval_perf`.

    ``rows``: one dict per NPU task (fusion group or single op) or CPU op, keyed by ``COLUMNS``.
    ``summary``: totals computed from the rows (total_time_us, fps, ddr_bytes_per_frame,
    npu_time_us, cpu_time_us, handover_time_us, ...) plus the SoC's roofs (peak_macs_per_s,
    ddr_bytes_per_s). ``ranking``: op types by time. ``warnings``: placement and tiling notes.
    """

    def __init__(self, raw: Mapping[str, Any], inputs: Optional[JobInputs] = None):
        #: The files the report's job read (its model, ...): to_csv/to_json/plot refuse to
        #: write over them (npuc.output_files).
        self.inputs = inputs if inputs is not None else JobInputs()
        self.rows: list[dict] = [dict(r) for r in raw["rows"]]
        self.summary: dict = dict(raw["summary"])
        self.ranking: list[dict] = [dict(r) for r in raw["ranking"]]
        self.warnings: list[str] = list(raw["warnings"])
        self._text: str = raw["text"]
        #: How many NPU cores the schedule uses and why (set by Toolkit.eval_perf: the
        #: init_runtime core_mask, or all / one core before init_runtime); printed first.
        self.core_choice: str = ""

    def __str__(self) -> str:
        return (f"NPU cores: {self.core_choice}\n" if self.core_choice else "") + self._text

    def __repr__(self) -> str:
        s = self.summary
        return (f"<PerfReport {s['soc']} {s['dtype']} x{s['cores']}: {len(self.rows)} layers, "
                f"{s['total_time_us']:.1f} us, {s['fps']:.1f} FPS>")

    @property
    def fps(self) -> float:
        return float(self.summary["fps"])

    def to_csv(self, path: Optional[Union[str, Path]] = None) -> str:
        """The rows as CSV (shapes written as 1x3x224x224); also written to ``path`` if given."""
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for r in self.rows:
            writer.writerow({k: "x".join(map(str, v)) if isinstance(v, tuple) else v for k, v in r.items()})
        text = buf.getvalue()
        if path is not None:
            write_text_output(path, text, CSV_WHAT, self.inputs)
        return text

    def to_json(self, path: Optional[Union[str, Path]] = None) -> str:
        """rows, summary, ranking and warnings as JSON; also written to ``path`` if given."""
        rows = [{k: list(v) if isinstance(v, tuple) else v for k, v in r.items()} for r in self.rows]
        text = json.dumps({"summary": self.summary, "rows": rows, "ranking": self.ranking,
                           "warnings": self.warnings}, indent=1)
        if path is not None:
            write_text_output(path, text, JSON_WHAT, self.inputs)
        return text

    def plot(self, path: Union[str, Path]) -> Path:
        """Writes the plot (PNG for ``.png``): each layer's time as eval_perf adds it up (a bar of
        TotalCycles: the bounding side's cycles coloured by the bottleneck, then the task overhead and
        any hand-over; a tick at the other side's cycles; the slowest layers named; beyond 80 layers
        only the 40 slowest, each named under its bar: :meth:`plotted_rows`), and a
        roofline of the MAC layers (arithmetic intensity vs achieved MAC/s under the SoC's compute
        and DDR roofs). The format follows the extension, checked before drawing
        (:func:`check_plot_path`: OutputError naming the formats :func:`plot_formats` lists)."""
        fmt = check_plot_path(path, self.inputs)
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (bars, roof) = plt.subplots(2, 1, figsize=(max(8.0, 0.12 * len(self.plotted_rows())), 9))
        self._plot_cycles(bars)
        self._plot_roofline(roof)
        fig.suptitle(f"npuc eval_perf: {self.summary['soc']} {self.summary['dtype']}, "
                     f"{self.summary['cores']} core(s), {self.summary['fps']:.1f} FPS")
        return self._save(fig, path, fmt)

    def plot_timeline(self, path: Union[str, Path]) -> Path:
        """Writes the per-core timeline (PNG for ``.png``): a lane per NPU core and one for the host,
        each task part a bar from its start to its end (split tasks on every core they use, coloured
        by split), with the cores' utilization in the lane names. The format follows the extension,
        checked as for :meth:`plot`."""
        fmt = check_plot_path(path, self.inputs)
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        cores = int(self.summary["cores"])
        util = list(self.summary.get("core_utilization_pct") or [])
        colors = {"whole": "tab:blue", "oc": "tab:green", "rows": "tab:purple", "batch": "tab:olive"}
        fig, ax = plt.subplots(figsize=(12, 1.2 + 0.6 * (cores + 1)))
        for r in self.rows:
            lanes = [cores] if r["Cores"] == "-" else [int(c) for c in str(r["Cores"]).split("_")]
            color = "tab:red" if r["Cores"] == "-" else colors.get(r["Split"], "tab:gray")
            for lane in lanes:
                ax.broken_barh([(r["Start(us)"], max(r["End(us)"] - r["Start(us)"], 1e-3))], (lane - 0.4, 0.8),
                               facecolors=color, edgecolors="white", linewidth=0.3)
        names = [f"core {c} ({util[c]:.0f}%)" if c < len(util) else f"core {c}" for c in range(cores)] + ["host"]
        ax.set_yticks(range(cores + 1), names)
        ax.invert_yaxis()
        ax.set_xlabel("time (us)")
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in list(colors.values()) + ["tab:red"]]
        ax.legend(handles, ["whole", "split by output channels", "split by rows", "split by batch", "CPU"],
                  loc="upper right", fontsize=7)
        s = self.summary
        ax.set_title(f"npuc eval_perf timeline: {s['soc']} {s['dtype']}, {cores} core(s), {s['fps']:.1f} FPS, "
                     f"sync {s.get('sync_time_us', 0):.0f} us, DDR contention {s.get('contention_time_us', 0):.0f} us")
        return self._save(fig, path, fmt)

    def _save(self, fig: Any, path: Union[str, Path], fmt: str) -> Path:
        """Lays out and writes `fig` to `path` in `fmt` (atomically: a failure leaves no partial
        file), then closes it."""
        import matplotlib.pyplot as plt

        fig.tight_layout()
        try:
            with atomic_output(path, PLOT_WHAT, self.inputs) as tmp:
                fig.savefig(tmp, dpi=100, format=fmt)
        finally:
            plt.close(fig)
        return Path(path)

    def cycle_parts(self) -> List[Dict[str, float]]:
        """Each row's TotalCycles split into what eval_perf adds up, for the plot: ``bound`` (NPU
        rows: max(NPU, DDR) cycles, the side named by Bottleneck; CPU rows: their CPU cycles),
        ``overhead`` (the per-task cost on top) and ``handover`` (NPU<->CPU copies of the inputs);
        ``other`` is the side that did not bound the row (drawn as a tick, not added)."""
        parts = []
        for r in self.rows:
            total = float(r["TotalCycles"])
            handover = total * r["Handover(us)"] / r["Time(us)"] if r["Time(us)"] > 0 else 0.0
            if r["Target"] == "NPU":
                bound = min(max(r["NPUCycles"], r["DDRCycles"]), total - handover)
                other = min(r["NPUCycles"], r["DDRCycles"])
            else:
                bound, other = total - handover, 0.0
            parts.append({"bound": bound, "overhead": total - handover - bound, "handover": handover, "other": other})
        return parts

    def plotted_rows(self) -> List[int]:
        """Indices of the rows the cycle plot draws: every row in order for up to
        ``_MAX_PLOTTED_LAYERS`` rows; for a bigger model the ``_SLOWEST_SHOWN`` slowest, slowest
        first, each named under its bar (a bar per layer of a 186-layer model was unreadable)."""
        if len(self.rows) <= _MAX_PLOTTED_LAYERS:
            return list(range(len(self.rows)))
        return sorted(range(len(self.rows)), key=lambda i: -self.rows[i]["TotalCycles"])[:_SLOWEST_SHOWN]

    def _plot_cycles(self, ax) -> None:
        shown = self.plotted_rows()
        every = len(shown) == len(self.rows)
        rows = [self.rows[i] for i in shown]
        all_parts = self.cycle_parts()
        parts = [all_parts[i] for i in shown]
        ids = [r["ID"] for r in rows] if every else list(range(len(rows)))
        colors = {"NPU": "tab:blue", "DDR": "tab:orange", "CPU": "tab:red"}
        bound = [p["bound"] for p in parts]
        overhead = [p["overhead"] for p in parts]
        handover = [p["handover"] for p in parts]
        ax.bar(ids, bound, color=[colors.get(r["Bottleneck"], "tab:gray") for r in rows])
        ax.bar(ids, overhead, bottom=bound, color="lightgray")
        ax.bar(ids, handover, bottom=[b + o for b, o in zip(bound, overhead)], color="tab:purple")
        ax.scatter(ids, [p["other"] for p in parts], marker="_", color="black", s=60, zorder=3)
        handles = [_legend_patch(colors["NPU"], "compute-bound: NPU cycles"),
                   _legend_patch(colors["DDR"], "memory-bound: DDR cycles"),
                   _legend_patch(colors["CPU"], "CPU op"),
                   _legend_patch("lightgray", "per-task overhead"),
                   _legend_patch("tab:purple", "NPU<->CPU hand-over")]
        top = max((r["TotalCycles"] for r in rows), default=1.0)
        ax.set_ylim(0, top * 1.6)  # room above the bars for the legend and the slowest layers' names
        ax.legend(handles=handles, fontsize="small", ncol=3, loc="upper left",
                  title="bar = TotalCycles; tick = the side that did not bound it", title_fontsize="small")
        ax.set_ylabel("cycles (NPU clock)")
        if every:
            slowest = sorted(range(len(rows)), key=lambda i: -rows[i]["TotalCycles"])[:_LABELLED_LAYERS]
            for i in slowest:
                ax.annotate(_short(rows[i]["FullName"]), (ids[i], rows[i]["TotalCycles"]), rotation=45, fontsize=7,
                            ha="left", va="bottom")
            ax.set_xlabel("layer ID")
            ax.set_title("time per layer: max(NPU, DDR) + overhead (+ hand-over); the slowest labelled", fontsize=9)
            return
        share = sum(r["TotalCycles"] for r in rows) / max(1.0, sum(r["TotalCycles"] for r in self.rows))
        ax.set_xticks(ids)
        ax.set_xticklabels([f"{r['ID']} {_short(r['FullName'])}" for r in rows], rotation=90, fontsize=6)
        ax.set_title(f"the {len(rows)} slowest of {len(self.rows)} layers ({100 * share:.1f}% of the time): "
                     "max(NPU, DDR) + overhead (+ hand-over)", fontsize=9)

    def _plot_roofline(self, ax) -> None:
        peak = float(self.summary["peak_macs_per_s"])
        bandwidth = float(self.summary["ddr_bytes_per_s"])
        points = [(r["MACs"] / (r["RW(KB)"] * 1024.0), r["MACs"] / (r["Time(us)"] * 1e-6))
                  for r in self.rows if r["Target"] == "NPU" and r["MACs"] > 0 and r["RW(KB)"] > 0]
        if points:
            xs, ys = zip(*points)
            ax.scatter(xs, ys, s=12, color="tab:green", label="layers")
            lo, hi = min(xs) / 2, max(max(xs) * 2, 2 * peak / bandwidth)
        else:
            lo, hi = 0.1, 10 * peak / bandwidth
        ridge = peak / bandwidth
        ax.plot([lo, ridge, hi], [lo * bandwidth, peak, peak], color="black", label="roof")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (MACs per DDR byte)")
        ax.set_ylabel("achieved MAC/s")
        ax.legend()


#: How many of the slowest layers the cycle plot names.
_LABELLED_LAYERS = 5
#: Up to this many rows the cycle plot draws a bar per layer; beyond, only the slowest.
_MAX_PLOTTED_LAYERS = 80
#: How many of the slowest layers a big model's cycle plot draws.
_SLOWEST_SHOWN = 40


def _short(name: str) -> str:
    """A layer name cut to 28 characters from its end (the distinguishing part of a path name)."""
    return name if len(name) <= 28 else "..." + name[-25:]


def _legend_patch(color: str, label: str):
    """A legend entry (a coloured square)."""
    from matplotlib.patches import Patch

    return Patch(color=color, label=label)


#: What error messages call the report's files.
CSV_WHAT, JSON_WHAT, PLOT_WHAT = "the perf CSV", "the perf JSON", "the perf plot"
#: Formats matplotlib's Agg canvas lists that still need more than matplotlib (pgf runs LaTeX).
_PLOT_FORMATS_NEEDING_MORE = ("pgf",)


def plot_formats() -> List[str]:
    """The image formats :meth:`PerfReport.plot` writes, by extension: those matplotlib's Agg
    canvas writes by itself (png, svg, pdf, jpg, ...). ConfigError when matplotlib is missing."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError as e:
        raise ConfigError(f"writing the perf plot needs matplotlib, which is not importable ({e}); "
                          "pip install matplotlib") from None
    return sorted(f for f in FigureCanvasAgg.get_supported_filetypes() if f not in _PLOT_FORMATS_NEEDING_MORE)


def check_plot_path(path: Union[str, Path], inputs: Optional[JobInputs] = None) -> str:
    """The format of a plot written to `path` (its extension), checked before any work: an
    extension :func:`plot_formats` lacks, a file of `inputs` or a directory is an OutputError."""
    refuse_output(path, PLOT_WHAT, inputs)
    suffix = Path(path).suffix.lower()
    formats = plot_formats()
    if suffix[1:] not in formats:
        named = f"'{suffix}' is not an image format matplotlib writes" if suffix else "it has no image extension"
        raise OutputError(f"cannot write {PLOT_WHAT} to '{path}': {named}; "
                          f"use one of {', '.join('.' + f for f in formats)}")
    return suffix[1:]


def timeline_path(plot_path: Union[str, Path]) -> str:
    """Where eval_perf writes the per-core timeline beside its plot: ``perf.png`` -> ``perf.timeline.png``."""
    root, ext = os.path.splitext(os.fspath(plot_path))
    return f"{root}.timeline{ext}"


def check_output_paths(inputs: JobInputs, csv: Optional[Union[str, Path]] = None,
                       json: Optional[Union[str, Path]] = None, plot: Optional[Union[str, Path]] = None) -> None:
    """Checks the files a report is going to be written to before any work (OutputError)."""
    for path, what in ((csv, CSV_WHAT), (json, JSON_WHAT)):
        if path is not None:
            refuse_output(path, what, inputs)
    if plot is not None:
        check_plot_path(plot, inputs)


def eval_perf(model: Union["_npuc.Model", str, Path], soc: str, op_target: Optional[Mapping[str, str]] = None,
              single_core_mode: bool = False, dtype: str = "int8", optimize: bool = True,
              tuning_cache: Optional[Union[str, Path]] = None,
              overrides: Optional[Mapping[str, float]] = None, cores: int = 0) -> PerfReport:
    """Simulated per-layer performance of ``model`` (an :class:`npuc.Model` or an ONNX path) on SoC
    ``soc``.

    op_target: {node name or op type: "cpu" | "npu"} placement overrides. single_core_mode: one
    NPU core (RKNN's default core mask); otherwise the tasks are placed on ``cores`` NPU cores (0:
    all the SoC's) by the multi-core scheduler (docs/perf_model.md, "Multi-core"). dtype: the NPU compute type ("int8", "fp16", ...).
    optimize: run the graph passes (BatchNorm folding, ...) on a copy first. tuning_cache: a file
    of tiling decisions, read if it exists and rewritten, so later runs skip the tiling search.
    overrides: for calibration only (bench/perf_fit.py): {"npu.ddr_bytes_per_cycle" |
    "npu.ddr_efficiency" | "npu.task_overhead_cycles" | "npu.onchip_buffer_bytes" |
    "const.<cost constant>": value} replaces those profile figures and structural constants.
    """
    inputs = JobInputs()
    if isinstance(model, (str, Path)):
        inputs.add(model, "the loaded model")
        model = _npuc.Model.load(str(model))
    raw = _npuc.eval_perf(model, soc, dict(op_target or {}), single_core_mode, dtype, optimize,
                          str(tuning_cache) if tuning_cache is not None else "",
                          {k: float(v) for k, v in (overrides or {}).items()}, int(cores))
    return PerfReport(raw, inputs)
