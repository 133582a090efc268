"""Calibration of npuc's performance model against DESIGN.md's published FPS table.

Exports torchvision's mobilenet_v2 and resnet50 (bench/export_torchvision.py; BatchNorm is folded
by the export), predicts single-core INT8 FPS with npuc.perf.eval_perf on RK3566, RK3562 and
RK3588, and prints predicted vs published with the error. `--write-doc` also replaces the table in
docs/perf_model.md. Exits 1 when any prediction is off by more than the tolerance (25%).

    /usr/bin/python3 bench/perf_calibration.py [--write-doc] [--tolerance 25]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common import REPO
from export_torchvision import export

try:
    import npuc.perf
except ImportError:
    sys.path.insert(0, str(REPO / "python"))
    import npuc.perf

# DESIGN.md, "Published end-to-end figures": INT8, single core, max NPU clock, FPS.
PUBLISHED = {
    ("mobilenet_v2", "mobilenetv2-12"): {"rk3566": 197.4, "rk3562": 266.8, "rk3588": 433.0},
    ("resnet50", "resnet50-v2-7"): {"rk3566": 40.6, "rk3562": 54.5, "rk3588": 108.6},
}
DOC = REPO / "docs" / "perf_model.md"
BEGIN, END = "<!-- calibration-table:begin -->", "<!-- calibration-table:end -->"


def calibration_rows() -> list[dict]:
    rows = []
    for (arch, published_name), by_soc in PUBLISHED.items():
        path = export(arch)
        for soc, published in by_soc.items():
            report = npuc.perf.eval_perf(str(path), soc, single_core_mode=True, dtype="int8")
            rows.append({"model": f"{arch} (torchvision; published: {published_name})", "soc": soc,
                         "published": published, "predicted": report.fps,
                         "error": 100.0 * (report.fps - published) / published,
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


def write_doc(table: str) -> None:
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + table + "\n" + text[end:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-doc", action="store_true", help="replace the table in docs/perf_model.md")
    parser.add_argument("--tolerance", type=float, default=25.0, help="allowed |error| in percent")
    args = parser.parse_args()
    rows = calibration_rows()
    table = markdown(rows)
    print(table)
    if args.write_doc:
        write_doc(table)
        print(f"written to {DOC.relative_to(REPO)}")
    worst = max(abs(r["error"]) for r in rows)
    print(f"worst error {worst:.1f}% (tolerance {args.tolerance:.0f}%)")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
