"""Per-layer accuracy analysis of a quantized (or FP16) model against FP32, RKNN style.

``analyze(qmodel, inputs, output_dir)`` runs the C++ analysis (``QuantizedModel.accuracy_report``)
and writes what RKNN-Toolkit2's ``accuracy_analysis`` writes:

* ``output_dir/golden/<tensor>.npy``: the FP32 value of every float activation;
* ``output_dir/simulator/<tensor>.npy``: the simulator's value, end to end ("entire");
* ``output_dir/single/<tensor>.npy``: the simulator's value of that layer alone on its FP32
  inputs quantized with their own parameters ("single");
* ``output_dir/error_analysis.txt``: the printed table;
* ``output_dir/golden/<output>.txt`` and ``output_dir/simulator/<output>.txt`` for each model
  output: RKNN's text dumps (one value per line, what ``np.genfromtxt`` reads: RKNN's own
  accuracy_analysis example reads them), next to the ``.npy`` files; only for the outputs,
  because text takes about 3x the bytes of ``.npy`` and the intermediate dumps are already large.

Tensor names are sanitized for the filesystem (``/``, ``:`` ... become ``_``). How to read the
table: docs/quantization.md section 10.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from npuc import dataset as _dataset
from npuc.errors import InputError, OutputError
from npuc.messages import shown_path
from npuc.output_files import JobInputs, atomic_output, make_folder, refuse_output, write_text_output

__all__ = ["AccuracyReport", "analyze", "check_output_dir", "format_table", "input_files", "load_inputs", "worst_layers",
           "sanitize_tensor_name", "weight_outlier_report"]

#: Subfolders of output_dir holding the per-tensor dumps, by run.
DUMP_FOLDERS = {"fp32": "golden", "simulated": "simulator", "single": "single"}
#: Longest file name written for a tensor (most filesystems allow 255 bytes; room for ".npy").
_MAX_FILE_STEM = 200


@dataclass
class AccuracyReport:
    """What :func:`analyze` measured and wrote."""

    #: One dict per activation, in graph order (see ``QuantizedModel.accuracy_analysis``).
    rows: List[Dict[str, Any]]
    #: The table as printed and written to ``error_analysis.txt``.
    text: str
    #: Where the dumps and ``error_analysis.txt`` were written (None: nothing was written).
    output_dir: Optional[Path]
    #: Tensor name -> file stem used for its dumps.
    files: Dict[str, str] = field(default_factory=dict)

    def row(self, value: str) -> Dict[str, Any]:
        """The row of one activation, by value name (KeyError when absent)."""
        for r in self.rows:
            if r["value"] == value:
                return r
        raise KeyError(value)


def sanitize_tensor_name(name: str) -> str:
    """A file stem for a tensor name: characters other than letters, digits, ``.``, ``-`` and
    ``_`` become ``_`` (ONNX names often hold ``/`` and ``:``), never empty, never ``.``/``..``."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:_MAX_FILE_STEM]
    return stem if stem.strip(".") else "_" + stem


def _unique_stems(names: Sequence[str]) -> Dict[str, str]:
    """Sanitized stems, made unique with a numeric suffix when two names sanitize alike."""
    stems: Dict[str, str] = {}
    used = set()
    for name in names:
        stem = base = sanitize_tensor_name(name)
        n = 1
        while stem.lower() in used:  # case-insensitive filesystems too
            n += 1
            stem = f"{base}_{n}"
        used.add(stem.lower())
        stems[name] = stem
    return stems


def _fmt(x: float) -> str:
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.5f}" if abs(x) < 1e4 else f"{x:.4g}"


def _label(row: Dict[str, Any]) -> str:
    """RKNN's "[Op] tensor", plus the node name (what hybrid_layers and the cfg use) when it differs."""
    label = f"[{row['op_type'] or 'Input'}] {row['value']}"
    return label + (f" ({row['node']})" if row["node"] and row["node"] != row["value"] else "")


def format_table(rows: Sequence[Dict[str, Any]]) -> str:
    """RKNN's accuracy table: per layer, entire and single cosine / Euclidean distance / SQNR."""
    headers = ["layer_name", "precision", "entire cos", "entire euc", "entire sqnr(dB)",
               "single cos", "single euc", "single sqnr(dB)"]
    body = [
        [
            _label(r), r["precision"],
            _fmt(r["cosine"]), _fmt(r["euclidean"]), _fmt(r["sqnr_db"]),
            _fmt(r["single_cosine"]), _fmt(r["single_euclidean"]), _fmt(r["single_sqnr_db"]),
        ]
        for r in rows
    ]
    widths = [max([len(h)] + [len(b[i]) for b in body]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        # Names left-aligned, numbers right-aligned.
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    rule = "-" * len(line(headers))
    legend = ("entire: the simulator end to end (error accumulated up to the layer); "
              "single: the layer alone on its FP32 inputs quantized (its own error)")
    return "\n".join(["# simulator error analysis", "# " + legend, rule, line(headers), rule]
                     + [line(b) for b in body] + [rule])


def worst_layers(rows: Sequence[Dict[str, Any]], count: int = 10) -> str:
    """The `count` layers with the lowest single cosine (their own error, not what they inherit):
    where hybrid_layers pays off first. Rows without a single cosine (inputs) are skipped."""
    scored = [r for r in rows if r.get("single_cosine") is not None]
    scored.sort(key=lambda r: r["single_cosine"])
    lines = [f"worst {min(count, len(scored))} of {len(scored)} layers by single cosine (own error):"]
    lines += [f"  {_fmt(r['single_cosine'])}  entire {_fmt(r['cosine'])}  {_label(r)} ({r['precision']})"
              for r in scored[:count]]
    return "\n".join(lines)


def load_inputs(
    inputs: Sequence[Union[str, "os.PathLike[str]", np.ndarray]],
    input_infos: Sequence[Dict[str, Any]],
    normalize: _dataset.Normalizer,
    rgb2bgr: bool,
) -> List[np.ndarray]:
    """One array per model input, preprocessed like a calibration sample: files (``.npy`` or an
    image) are read, shaped (NCHW/NHWC, with or without batch) and normalized (mean/std, and
    RGB->BGR for images when configured); arrays are taken as already preprocessed."""
    inputs = _input_items(inputs)
    if len(inputs) != len(input_infos):
        raise InputError(f"accuracy_analysis: the model has {len(input_infos)} input(s), got {len(inputs)}")
    arrays: List[np.ndarray] = []
    for index, (item, info) in enumerate(zip(inputs, input_infos)):
        where = f"accuracy_analysis input {index}"
        if isinstance(item, (str, os.PathLike)):
            array = _dataset._read_file(Path(item), where, rgb2bgr, info)  # noqa: SLF001 (same package)
            arrays.append(_dataset.sample_array(array, info, f"{where} ({shown_path(item)})",
                                                lambda a, i=index, f=info: normalize(i, a, f)))
        else:
            arrays.append(_dataset.sample_array(item, info, where))
    return arrays


def _input_items(inputs: Any) -> List[Any]:
    """accuracy_analysis `inputs` as a list (one path or array alone is a one-input list)."""
    if isinstance(inputs, (str, os.PathLike, np.ndarray)):
        return [inputs]
    if not isinstance(inputs, (list, tuple)):
        raise InputError(f"accuracy_analysis: inputs must be a list of arrays or file paths, got {type(inputs).__name__}")
    return list(inputs)


def input_files(inputs: Sequence[Any]) -> List[Tuple[str, str]]:
    """(path, role) of the files among accuracy_analysis `inputs` (for JobInputs)."""
    inputs = _input_items(inputs)
    return [(os.fspath(item), f"accuracy_analysis input {i}") for i, item in enumerate(inputs)
            if isinstance(item, (str, os.PathLike))]


#: What the files of the analysis are called in error messages.
_DUMP_WHAT = "an accuracy_analysis dump"


def check_output_dir(output_dir: Union[str, "os.PathLike[str]"], inputs: Optional[JobInputs] = None) -> None:
    """Refuses (OutputError) an `output_dir` that is an existing file, and one whose table file
    ``error_analysis.txt`` would replace one of `inputs`, before the analysis runs (each dump file
    is checked again, by name, before the first is written)."""
    out = os.fspath(output_dir)
    if os.path.exists(out) and not os.path.isdir(out):
        raise OutputError(f"cannot write the accuracy_analysis dumps into '{out}': it is a file, not a folder")
    refuse_output(os.path.join(out, "error_analysis.txt"), _DUMP_WHAT, inputs)


def _report_with_progress(qmodel: Any, arrays: Sequence[np.ndarray]) -> Dict[str, Any]:
    """``qmodel.accuracy_report`` with a progress bar on a terminal: on a big model the three runs
    (FP32, simulator end to end, each layer alone) take seconds to minutes."""
    from npuc.dataset import progress_bar

    bar = progress_bar(0, "accuracy analysis", "step")
    if bar is None:
        return qmodel.accuracy_report(list(arrays))

    def advance(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    try:
        return qmodel.accuracy_report(list(arrays), advance)
    finally:
        bar.close()


def analyze(qmodel: Any, arrays: Sequence[np.ndarray], output_dir: Optional[Union[str, "os.PathLike[str]"]],
            inputs: Optional[JobInputs] = None) -> AccuracyReport:
    """Runs the analysis of `qmodel` (a ``QuantizedModel``) on one sample and writes the dumps
    and ``error_analysis.txt`` into `output_dir` (created if needed; None: the table only, no
    file, as RKNN-Toolkit2 does for ``output_dir=None``).

    No file is written when any of them would replace one of `inputs` (OutputError); each is
    written whole or not at all (npuc.output_files.atomic_output).
    """
    if output_dir is None:
        report = _report_with_progress(qmodel, arrays)
        return AccuracyReport(rows=report["rows"], text=format_table(report["rows"]), output_dir=None)
    check_output_dir(output_dir, inputs)
    report = _report_with_progress(qmodel, arrays)
    out = Path(output_dir)
    stems = _unique_stems(sorted(set(report["fp32"]) | set(report["simulated"]) | set(report["single"])))
    dumps = [(out / folder / f"{stems[name]}.npy", tensor)
             for run, folder in DUMP_FOLDERS.items() for name, tensor in report[run].items()]
    for path, _ in dumps:
        refuse_output(path, _DUMP_WHAT, inputs)
    for folder in DUMP_FOLDERS.values():
        make_folder(out / folder, "the accuracy_analysis dumps")
    outputs = {info["name"] for info in qmodel.outputs}
    texts = [(out / folder / f"{stems[name]}.txt", tensor) for run, folder in DUMP_FOLDERS.items() if run != "single"
             for name, tensor in report[run].items() if name in outputs]
    for path, _ in texts:
        refuse_output(path, _DUMP_WHAT, inputs)
    for path, tensor in dumps:
        with atomic_output(path, _DUMP_WHAT, inputs) as tmp:
            np.save(tmp, tensor)
    for path, tensor in texts:
        values = np.asarray(tensor, dtype=np.float64).reshape(-1)
        write_text_output(path, "".join(f"{v:.6f}\n" for v in values), _DUMP_WHAT, inputs)
    text = format_table(report["rows"])
    write_text_output(out / "error_analysis.txt", text + "\n", _DUMP_WHAT, inputs)
    return AccuracyReport(rows=report["rows"], text=text, output_dir=out, files=stems)


def weight_outlier_report(qmodel: Any) -> Optional[str]:
    """The flagged rows of ``qmodel.weight_outlier_table`` with what to do about them, or None
    when no weight tensor has outliers. ``build()`` prints it (RKNN warns about outliers too)."""
    lines = qmodel.weight_outlier_table.splitlines()
    flagged = [line for line in lines[1:] if "<-" in line]
    if not flagged:
        return None
    return "\n".join(
        [f"weight outliers: {len(flagged)} weight tensor(s) have values far beyond their robust range "
         "(an int8 scale set by the outlier rounds the other weights coarsely)", lines[0], *flagged,
         "  try: config(quantized_algorithm='mmse' or 'kl_divergence'), quantized_method='channel', or hybrid "
         "quantization (config(hybrid_layers=[...]), build(auto_hybrid=True), hybrid_quantization_step1/2)"]
    )
