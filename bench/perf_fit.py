"""Fits the cost model's tuned figures to rknn_model_zoo's FPS table, and shows what the fit does
on rows it did not see.

Fitted (everything else is published, derived or assumed and stays as the profiles say):
  per SoC (physically per SoC): npu.ddr_bytes_per_cycle (the NPU's sustained DDR share; the
    profiles' ddr_efficiency is kept),
  shared by every SoC: npu.task_overhead_cycles, const.deep_cin_efficiency, and one figure for
    DESIGN.md's one class of low-efficiency ops, written to both const.move_cycles_per_vector
    (data movement, size change) and const.lut_cycles_per_vector (non-Relu activations)
    (cpp/perf/cost_constants.h). Tied because DESIGN.md names them as one class and because
    only yolov8n has LUT activations: a separate LUT figure is not identified without it.
The fitted values, rounded, are written by hand into the profiles (status: fitted) and
cpp/perf/cost_constants.cpp; bench/perf_calibration.py then checks the model as built.
Objective: least squares on log(predicted / published FPS). Method: coordinate descent over
multiplicative grids that shrink each round, within physical bounds (BOUNDS), from the values
the profiles held before this fit (START_*); each candidate is costed by the real model (eval_perf
with `overrides`).

Prints the fit on all rows, then "hold-out" fits: yolov8n held out (fit on the other three
models), and leave-one-model-out, each with the errors on the rows left out of that fit.
`--write-doc` writes the held-out table into docs/perf_model.md.

    /usr/bin/python3 bench/perf_fit.py [--write-doc] [--rounds 3] [--quick]
"""
from __future__ import annotations

import argparse
import math
import sys
from typing import Optional

from calibration_set import PUBLISHED, SOCS, rows as calibration_cells
from common import REPO

try:
    import npuc
    import npuc.perf
except ImportError:
    sys.path.insert(0, str(REPO / "python"))
    import npuc
    import npuc.perf

from perf_calibration import write_doc

SHARED = ("npu.task_overhead_cycles", "low_efficiency", "const.deep_cin_efficiency")
#: A fitted name standing for several overrides that share its value.
TIED = {"low_efficiency": ("const.move_cycles_per_vector", "const.lut_cycles_per_vector")}
PER_SOC = ("npu.ddr_bytes_per_cycle",)
#: Physical bounds: overhead 0.3-30 us at 1 GHz; 1-16 cycles per vector; 2-32 B per NPU cycle
#: (32 B/cycle at 1 GHz is the 64-bit LPDDR5 peak of the fastest of these SoCs).
BOUNDS = {"npu.task_overhead_cycles": (300, 30000), "low_efficiency": (1, 32), "const.deep_cin_efficiency": (0.25, 1.0),
          "npu.ddr_bytes_per_cycle": (2, 32)}
#: Starting points: the profile values before this fit (shared: rk3588's) and the constants' old defaults.
START_SHARED = {"npu.task_overhead_cycles": 3000, "low_efficiency": 4.0, "const.deep_cin_efficiency": 1.0}
START_DDR = {"rk3566": 6.0, "rk3562": 8.0, "rk3588": 16.0, "rk3576": 16.0}

Params = dict[str, float]  # "name" for shared, "soc:name" for per-SoC


class Fitter:
    def __init__(self, fixed: Optional[Params] = None) -> None:
        self.fixed = dict(fixed or {})  # held constant (e.g. a structural choice), not fitted
        self.cells = calibration_cells()
        self.models = {path: npuc.Model.load(str(path)) for _, _, path, _ in self.cells}
        self.memo: dict[tuple, float] = {}

    def fps(self, i: int, params: Params) -> float:
        name, soc, path, _ = self.cells[i]
        overrides = dict(self.fixed)
        for k, v in params.items():
            if ":" not in k:
                overrides.update({name: v for name in TIED.get(k, (k,))})
        overrides.update({k.split(":", 1)[1]: v for k, v in params.items() if k.startswith(soc + ":")})
        key = (i, tuple(sorted(overrides.items())))
        if key not in self.memo:
            report = npuc.perf.eval_perf(self.models[path], soc, single_core_mode=True, dtype="int8",
                                         overrides=overrides)
            self.memo[key] = report.fps
        return self.memo[key]

    def log_error(self, i: int, params: Params) -> float:
        return math.log(self.fps(i, params) / self.cells[i][3])

    def loss(self, rows: list[int], params: Params) -> float:
        return sum(self.log_error(i, params) ** 2 for i in rows)

    def fit(self, rows: list[int], rounds: int) -> Params:
        params: Params = dict(START_SHARED)
        socs = sorted({self.cells[i][1] for i in rows})
        for soc in socs:
            params[f"{soc}:npu.ddr_bytes_per_cycle"] = START_DDR[soc]
        step = 2.0
        for _ in range(rounds):
            for key in list(params):
                base = key.split(":", 1)[-1]
                lo, hi = BOUNDS[base]
                # A per-SoC figure only moves that SoC's rows.
                mine = [i for i in rows if ":" not in key or self.cells[i][1] == key.split(":")[0]]
                best, best_loss = params[key], self.loss(mine, params)
                for k in range(-3, 4):
                    v = min(hi, max(lo, params[key] * step ** (k / 3)))
                    if base == "npu.task_overhead_cycles":
                        v = float(round(v / 100) * 100)
                    trial = dict(params, **{key: v})
                    loss = self.loss(mine, trial)
                    if loss < best_loss - 1e-12:
                        best, best_loss = v, loss
                params[key] = best
            step = math.sqrt(step)
        return params


def errors_table(fitter: Fitter, params: Params, rows: list[int], label: str) -> list[str]:
    out = []
    for i in rows:
        name, soc, _, published = fitter.cells[i]
        predicted = fitter.fps(i, params)
        out.append(f"| {label} | {name} | {soc} | {published:.1f} | {predicted:.1f} | "
                   f"{100 * (predicted - published) / published:+.1f}% |")
    return out


def describe(params: Params) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in sorted(params.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="only the all-rows fit and the yolov8n hold-out")
    parser.add_argument("--write-doc", action="store_true", help="write the held-out table into docs/perf_model.md")
    parser.add_argument("--fix", action="append", default=[], metavar="NAME=VALUE",
                        help="hold an override constant instead (e.g. const.pack_small_cin=0)")
    args = parser.parse_args()
    f = Fitter({k: float(v) for k, v in (s.split("=", 1) for s in args.fix)})
    every = list(range(len(f.cells)))
    full = f.fit(every, args.rounds)
    print("fit on all 16 rows:", describe(full))
    print(f"  rms log error {math.sqrt(f.loss(every, full) / len(every)):.3f}")
    for line in errors_table(f, full, every, "none"):
        print(" ", line)
    folds = [("yolov8n",)] if args.quick else [("yolov8n",), ("mobilenetv2-12",), ("resnet50-v2-7",),
                                                ("yolov5s_relu",)]
    lines = ["| held out | model | SoC | published FPS | predicted FPS | error |", "|---|---|---|---|---|---|"]
    held_errors = []
    for held in folds:
        fit_rows = [i for i in every if f.cells[i][0] not in held]
        test_rows = [i for i in every if f.cells[i][0] in held]
        params = f.fit(fit_rows, args.rounds)
        print(f"fit without {', '.join(held)}: {describe(params)}")
        lines += errors_table(f, params, test_rows, f"{', '.join(held)} (fit on the other models)")
        held_errors += [abs(f.fps(i, params) / f.cells[i][3] - 1) * 100 for i in test_rows]
    table = "\n".join(lines)
    print(table)
    print(f"worst held-out error {max(held_errors):.1f}%")
    if args.write_doc:
        write_doc(table, "<!-- holdout-table:begin -->", "<!-- holdout-table:end -->")
    return 0


if __name__ == "__main__":
    sys.exit(main())
