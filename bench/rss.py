#!/usr/bin/env python3
"""Peak RSS of build() and of load_blob + inferences, against ONNX Runtime (issue #19).

    /usr/bin/python3 bench/rss.py [--repeats 3] [--iters 100] [--baseline DIR] [--soc rk3588]

Each measurement runs in a fresh process (a peak RSS cannot be reset) and reads /proc/self/status
(VmHWM: the peak RSS; RssAnon / RssFile: the anonymous and file-backed parts, read after the step
and also sampled every 2 ms by a thread, which sees them whenever the step releases the GIL):

* ``build``  ppocrv4_det INT8 (shared/models, rk3588, mean/std of its calibration pages) built on
             the 16 pages of shared/models/ocr_det_calib; then, unmeasured, exported as a blob;
* ``run``    Toolkit.load_blob of that blob + init_runtime + --iters inferences of one calibration
             page (a uint8 image: the blob's recorded mean/std normalize it);
* ``ort``    the peer: ONNX Runtime (onnxruntime-node, one node process) loading ppocrv4_det.onnx
             and running the same page (normalized in numpy, as the ONNX model takes it) --iters times.

Each figure is the process's own (VmHWM) and its growth over the process just before the step: a
Python interpreter that has imported numpy, PIL and npuc; a node process that has loaded
onnxruntime-node. With --baseline DIR (a folder holding another build's `npuc` package, e.g. main's),
the build and run steps are measured for both packages, interleaved in the same run.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from common import BENCH_DIR, fresh_python, ort_memory, shared_models_dir

MIB = 1 << 20
SOC = "rk3588"
DET_MEAN, DET_STD = [[123.675, 116.28, 103.53]], [[58.395, 57.12, 57.375]]

# Runs in the fresh interpreter: argv = stage, then the stage's arguments. Prints one JSON line.
MEASURE = r"""
import json, sys, threading, time
import numpy as np
from PIL import Image
import npuc
from common import PROC_MEMORY_FIELDS, proc_status_fields

def status():
    with open("/proc/self/status") as f:
        return proc_status_fields(f.read())

class PeakSampler(threading.Thread):
    # The largest RssAnon and RssFile seen (VmHWM is exact; these two have no kernel peak).
    def __init__(self):
        super().__init__(daemon=True)
        self.peak = {"RssAnon": 0, "RssFile": 0}
        self.stop = threading.Event()
    def run(self):
        while not self.stop.wait(0.002):
            s = status()
            for k in self.peak:
                self.peak[k] = max(self.peak[k], s[k])

stage, args = sys.argv[1], sys.argv[2:]
report = {}
if stage == "build":
    model, dataset, blob, mean, std = args[0], args[1], args[2], json.loads(args[3]), json.loads(args[4])
else:
    blob, page, iters = args[0], args[1], int(args[2])
    image = np.asarray(Image.open(page).convert("RGB"))
tk = npuc.Toolkit(verbose=False)
report["base"] = status()
sampler = PeakSampler()
sampler.start()
if stage == "build":
    tk.config(target_platform="%SOC%", mean_values=mean, std_values=std)
    tk.load_onnx(model=model)
    tk.build(do_quantization=True, dataset=dataset)
else:
    tk.load_blob(blob)
    tk.init_runtime()
    report["loaded"] = status()
    for _ in range(iters):
        tk.inference(inputs=[image])
report["end"] = status()
sampler.stop.set()
sampler.join()
report["sampled_peak"] = sampler.peak
if stage == "build":
    tk.export_blob(blob)
else:
    report["sections"] = {s["kind"]: s["size"] for s in tk.blob_meta["sections"]}
print(json.dumps(report))
""".replace("%SOC%", SOC)


def measure(stage: str, args: Sequence[str], package: Optional[Path]) -> dict:
    path = [str(package)] if package else []
    out = fresh_python(MEASURE, [stage, *args], extra_path=[*path, str(BENCH_DIR)])
    return json.loads(out.strip().splitlines()[-1])


def mib(n: float) -> str:
    return f"{n / MIB:.1f}"


def row(name: str, reports: List[dict], peak_key: str = "end") -> Dict[str, float]:
    """Medians over the repeats: the peak (VmHWM) and its growth, and the anon / file RSS at the end."""
    med = lambda f: statistics.median(f(r) for r in reports)  # noqa: E731
    return {
        "name": name,
        "hwm": med(lambda r: r[peak_key]["VmHWM"]),
        "hwm_growth": med(lambda r: r[peak_key]["VmHWM"] - r["base"]["VmRSS"]),
        "anon": med(lambda r: r[peak_key]["RssAnon"]),
        "anon_growth": med(lambda r: r[peak_key]["RssAnon"] - r["base"]["RssAnon"]),
        "file": med(lambda r: r[peak_key]["RssFile"]),
        "file_growth": med(lambda r: r[peak_key]["RssFile"] - r["base"]["RssFile"]),
        "runs": ", ".join(mib(r[peak_key]["VmHWM"] - r["base"]["VmRSS"]) for r in reports),
    }


def print_table(rows: List[Dict[str, float]]) -> None:
    print("| step | peak RSS (VmHWM) | peak growth over base | RssAnon after | anon growth | RssFile after "
          "| file growth | peak growth per run |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {mib(r['hwm'])} | {mib(r['hwm_growth'])} | {mib(r['anon'])} | "
              f"{mib(r['anon_growth'])} | {mib(r['file'])} | {mib(r['file_growth'])} | {r['runs']} |")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="measurements per step (interleaved); medians")
    parser.add_argument("--iters", type=int, default=100, help="inferences after load_blob (and in ORT)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a folder holding another build's npuc package, measured beside this one")
    parser.add_argument("--ort-threads", type=int, default=1, help="ONNX Runtime intra-op threads")
    args = parser.parse_args(argv)
    models = shared_models_dir()
    onnx_model = models / "ppocrv4_det.onnx"
    pages = sorted((models / "ocr_det_calib").glob("*.png"))
    if len(pages) != 16:
        raise SystemExit(f"expected 16 calibration pages in {models / 'ocr_det_calib'}, found {len(pages)}")
    packages = {"this": None}
    if args.baseline:
        if not (args.baseline / "npuc").is_dir():
            raise SystemExit(f"--baseline {args.baseline}: no npuc package in it")
        packages = {"baseline": args.baseline, "this": None}
    from PIL import Image

    image = np.asarray(Image.open(pages[0]).convert("RGB"), dtype=np.float32)
    ort_input = ((image - np.array(DET_MEAN[0], np.float32)) / np.array(DET_STD[0], np.float32))
    ort_input = np.ascontiguousarray(ort_input.transpose(2, 0, 1)[None])

    reports: Dict[str, List[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        dataset = Path(tmp) / "dataset.txt"
        dataset.write_text("".join(f"{p}\n" for p in pages))
        for _ in range(args.repeats):  # interleaved, so load on the machine hits every step alike
            for name, package in packages.items():
                blob = Path(tmp) / f"{name}.npub"
                reports.setdefault(f"build {name}", []).append(measure(
                    "build", [str(onnx_model), str(dataset), str(blob), json.dumps(DET_MEAN), json.dumps(DET_STD)],
                    package))
            for name, package in packages.items():
                blob = Path(tmp) / f"{name}.npub"
                reports.setdefault(f"run {name}", []).append(
                    measure("run", [str(blob), str(pages[0]), str(args.iters)], package))
            status = ort_memory(onnx_model, {"x": ort_input}, args.ort_threads, args.iters)
            reports.setdefault("ort", []).append({"base": status["start"], "end": status["end"]})
        same_blob = len({(Path(tmp) / f"{n}.npub").read_bytes() for n in packages}) == 1

    rows = []
    for name in packages:
        rows.append(row(f"build() ppocrv4_det INT8, 16 pages ({name})", reports[f"build {name}"]))
    for name in packages:
        rows.append(row(f"load_blob + init_runtime ({name})", reports[f"run {name}"], "loaded"))
        rows.append(row(f"load_blob + init_runtime + {args.iters} inferences ({name})", reports[f"run {name}"]))
    rows.append(row(f"ONNX Runtime (node): session + {args.iters} runs, {args.ort_threads} thread(s)",
                    reports["ort"]))
    sections = reports["run this"][0]["sections"]
    print(f"ppocrv4_det INT8 {SOC}; {args.repeats} fresh processes per step, medians; MiB. Blob "
          f"{mib(sum(sections.values()))} MiB: NWGT {mib(sections.get('NWGT', 0))}, WGHT {mib(sections.get('WGHT', 0))}"
          + (f"; the packages wrote {'identical' if same_blob else 'DIFFERENT'} blobs" if len(packages) > 1 else ""))
    print("base = the process before the step: python + numpy + PIL + npuc imported (npuc), node + "
          "onnxruntime-node loaded (ORT); anon / file = RssAnon / RssFile after the step")
    print_table(rows)
    by_name = {r["name"]: r for r in rows}
    run_this = by_name[f"load_blob + init_runtime + {args.iters} inferences (this)"]
    ort = rows[-1]
    print(f"\nload_blob + {args.iters} runs vs ONNX Runtime: peak {run_this['hwm'] / ort['hwm']:.2f}x, "
          f"peak growth over base {run_this['hwm_growth'] / ort['hwm_growth']:.2f}x")
    if args.baseline:
        for step in ("build() ppocrv4_det INT8, 16 pages", f"load_blob + init_runtime + {args.iters} inferences"):
            a, b = by_name[f"{step} (this)"], by_name[f"{step} (baseline)"]
            print(f"{step}: this / baseline peak growth {a['hwm_growth'] / b['hwm_growth']:.2f}x, "
                  f"anon growth {a['anon_growth'] / max(b['anon_growth'], 1):.2f}x")
        sampled = {n: statistics.median(r["sampled_peak"]["RssAnon"] - r["base"]["RssAnon"]
                                        for r in reports[f"run {n}"]) for n in packages}
        print("sampled peak RssAnon growth during load + runs: " +
              ", ".join(f"{n} {mib(v)} MiB" for n, v in sampled.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
