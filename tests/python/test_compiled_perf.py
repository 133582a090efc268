"""eval_perf reads the compiled model: for a hybrid build (some layers FP16, the rest INT8, one op
forced to the CPU) on real shared-model weights, every eval_perf row carries the dtype and target
of the program task it costs, before export and after load_blob, on SoCs with and without FP16."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import List, Tuple

import numpy as np
import pytest

from conftest import shared_models_dir

import npuc

#: The program's compute type as eval_perf names it; an FP16 task on a SoC without FP16 computes
#: in INT16 (as the lowering does).
_DTYPE = {"int8": "INT8", "float16": "FP16"}


def _model() -> Path:
    folder = shared_models_dir()
    if folder is None or not (folder / "mobilenet_v2.onnx").is_file():
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    return folder / "mobilenet_v2.onnx"


def _program_rows(compiled, fp16_name: str) -> List[Tuple[str, str, str]]:
    rows = []
    for t in compiled.tasks:
        if t["kind"] == "convert":
            continue
        dtype = "FP32" if t["kind"] == "cpu" else _DTYPE[t["compute"]]
        if dtype == "FP16":
            dtype = fp16_name
        rows.append(("+".join(t["nodes"]), dtype, t["kind"].upper()))
    return rows


def _perf_rows(report) -> List[Tuple[str, str, str]]:
    return [(r["FullName"], r["DataType"], r["Target"]) for r in report.rows]


@pytest.mark.parametrize("soc", ["rk3588", "rv1106"])
def test_hybrid_build_perf_rows_are_the_programs_tasks(soc: str, tmp_path: Path) -> None:
    model = _model()
    ref = np.load(model.with_suffix(".ref.npz"))
    x = next(ref[k] for k in ref.files if k.startswith("input:"))
    np.save(tmp_path / "x.npy", x[0])
    (tmp_path / "dataset.txt").write_text(f"{tmp_path / 'x.npy'}\n")
    with npuc.Toolkit() as probe, contextlib.redirect_stdout(io.StringIO()):
        probe.load_onnx(model=str(model))
        probe.build(do_quantization=False)  # the optimized graph's node names
        convs = [n for n in probe.model.nodes if n["op_type"] == "Conv"]
    hybrid, on_cpu = convs[3]["name"], convs[-1]["name"]
    blob = tmp_path / "m.npub"
    with npuc.Toolkit() as tk, contextlib.redirect_stdout(io.StringIO()):
        tk.config(target_platform=soc, hybrid_layers=[hybrid], op_target={on_cpu: "cpu"})
        tk.load_onnx(model=str(model))
        tk.build(do_quantization=True, dataset=str(tmp_path / "dataset.txt"))
        built = _perf_rows(tk.eval_perf(is_print=False))
        tk.export_blob(blob)
    compiled = npuc._npuc.load_compiled(str(blob))
    fp16_name = "FP16" if soc == "rk3588" else "INT16"
    if soc == "rv1106":
        assert "fp16" not in npuc._npuc.soc_profile(soc)["dtypes"], "the test expects a SoC without FP16"
    program = _program_rows(compiled, fp16_name)
    assert built == program
    with npuc.Toolkit() as rt, contextlib.redirect_stdout(io.StringIO()):
        rt.load_blob(blob)
        assert _perf_rows(rt.eval_perf(is_print=False)) == program
    dtypes = {d for _, d, _ in program}
    assert {"INT8", fp16_name, "FP32"} <= dtypes, dtypes  # the hybrid layer, the rest, the CPU op
    assert any(hybrid in name.split("+") and d == fp16_name for name, d, _ in program)
    assert any(on_cpu == name and t == "CPU" for name, _, t in program)


def test_float_build_on_a_soc_without_fp16_is_costed_as_it_runs() -> None:
    """rv1106 has no FP16: a float build's program computes in INT16, and eval_perf says so (it
    used to refuse the build with "does not compute in fp16")."""
    model = _model()
    with npuc.Toolkit() as tk, contextlib.redirect_stdout(io.StringIO()):
        tk.config(target_platform="rv1106")
        tk.load_onnx(model=str(model))
        tk.build(do_quantization=False)
        report = tk.eval_perf(is_print=False)
    assert report.summary["dtype"] == "int16"
    assert {r["DataType"] for r in report.rows if r["Target"] == "NPU"} == {"INT16"}
