"""Calibration of npuc's performance model against rknn_model_zoo's published FPS table.

Predicts single-core INT8 FPS with npuc.perf.eval_perf for mobilenetv2, resnet50, yolov5s_relu
and yolov8n (bench/calibration_set.py) on RK3566, RK3562, RK3588 and RK3576, and prints
predicted vs published with the error. `--write-doc` also replaces the table in
docs/perf_model.md. Exits 1 when any prediction is off by more than the tolerance (15%).
The fit of the tuned figures and its held-out errors: bench/perf_fit.py.

    /usr/bin/python3 bench/perf_calibration.py [--write-doc] [--tolerance 15]
"""
from __future__ import annotations

import argparse
import sys

from calibration_set import PUBLISHED, rows as calibration_cells
from common import REPO

try:
    import npuc.perf
except ImportError:
    sys.path.insert(0, str(REPO / "python"))
    import npuc.perf

DOC = REPO / "docs" / "perf_model.md"
BEGIN, END = "<!-- calibration-table:begin -->", "<!-- calibration-table:end -->"


def calibration_rows() -> list[dict]:
    rows = []
    for name, soc, path, published in calibration_cells():
        report = npuc.perf.eval_perf(str(path), soc, single_core_mode=True, dtype="int8")
        rows.append({"model": f"{name} (npuc: {PUBLISHED[name][0]})", "soc": soc, "published": published,
                     "predicted": report.fps, "error": 100.0 * (report.fps - published) / published,
                     "bottleneck_ddr": sum(r["Bottleneck"] == "DDR" for r in report.rows),
                     "layers": len(report.rows)})
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| model | SoC | published FPS | predicted FPS | error | DDR-bound layers |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['soc']} | {r['published']:.1f} | {r['predicted']:.1f} | "
                     f"{r['error']:+.1f}% | {r['bottleneck_ddr']}/{r['layers']} |")
    return "\n".join(lines)


def write_doc(table: str, begin: str = BEGIN, end: str = END) -> None:
    text = DOC.read_text()
    start, stop = text.index(begin) + len(begin), text.index(end)
    DOC.write_text(text[:start] + "\n" + table + "\n" + text[stop:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-doc", action="store_true", help="replace the table in docs/perf_model.md")
    parser.add_argument("--tolerance", type=float, default=15.0, help="allowed |error| in percent")
    args = parser.parse_args()
    rows = calibration_rows()
    table = markdown(rows)
    print(table)
    if args.write_doc:
        write_doc(table)
        print(f"written to {DOC.relative_to(REPO)}")
    worst = max(rows, key=lambda r: abs(r["error"]))
    misses = [r for r in rows if abs(r["error"]) > args.tolerance]
    print(f"worst error {worst['error']:+.1f}% ({worst['model']} on {worst['soc']}; "
          f"tolerance {args.tolerance:.0f}%); {len(misses)} of {len(rows)} rows outside it")
    return 0 if not misses else 1


if __name__ == "__main__":
    sys.exit(main())
