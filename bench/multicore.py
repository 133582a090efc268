"""Multi-core NPU scaling (issue #18): predicted FPS on 1, 2 and 3 cores of RK3588 and 1 and 2 of
RK3576, per model, from the compiled program's core schedules (the ones the blob's CSCH section
stores), with the costs that stop the scaling: the cross-core synchronization (the profile's
``core_sync_cycles``, an assumed figure) and the DDR time lost to other cores' traffic. "Amdahl
bound" is the speedup if every compute-bound row split perfectly and no DDR-bound row gained: the
cores share one DDR port, so DDR-bound time does not shrink.

Each model is built INT8 (calibrated on two seeded noise samples: the cost model reads shapes and
dtypes, not values), then ``init_runtime(core_mask=...)`` picks the cores and ``eval_perf`` costs
the program on them. The simulator's outputs are checked equal under every mask.

Models: mobilenet_v2 and ppocrv4_det (shared/models), resnet50 (torchvision layout, random weights,
bench/export_torchvision.py) and yolov5s (ReLU, v6 layout, random weights, bench/yolo_models.py).

Usage: PYTHONPATH=python /usr/bin/python3 bench/multicore.py [--models a,b] [--socs rk3588,rk3576]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import shared_models_dir  # noqa: E402

import npuc  # noqa: E402

MODELS = ("mobilenet_v2", "resnet50", "yolov5s", "ppocrv4_det")
MASKS = {1: "0", 2: "0_1", 3: "0_1_2"}


def model_path(name: str) -> Path:
    if name in ("mobilenet_v2", "ppocrv4_det"):
        return shared_models_dir() / f"{name}.onnx"
    if name == "resnet50":
        from export_torchvision import export

        return export("resnet50")
    if name == "yolov5s":
        from yolo_models import export_yolo

        return export_yolo("yolov5s_relu")
    raise SystemExit(f"unknown model {name!r}; known: {', '.join(MODELS)}")


def built(path: Path, soc: str, folder: Path) -> npuc.Toolkit:
    tk = npuc.Toolkit()
    with contextlib.redirect_stdout(io.StringIO()):
        tk.config(target_platform=soc)
        tk.load_onnx(model=str(path))
        shape = tuple(tk.model.inputs[0]["shape"])
        rng = np.random.default_rng(0)
        files = []
        for i in range(2):
            f = folder / f"{path.stem}_{i}.npy"
            np.save(f, rng.standard_normal(shape).astype(np.float32))
            files.append(str(f))
        lst = folder / f"{path.stem}.txt"
        lst.write_text("\n".join(files) + "\n")
        tk.build(do_quantization=True, dataset=str(lst))
    return tk


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--socs", default="rk3588,rk3576")
    args = ap.parse_args()
    rows: List[Dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            path = model_path(name)
            for soc in args.socs.split(","):
                t0 = time.perf_counter()
                tk = built(path, soc, Path(tmp))
                cores = int(npuc._npuc.soc_profile(soc)["npu_cores"])
                x = np.random.default_rng(1).standard_normal(tuple(tk.model.inputs[0]["shape"])).astype(np.float32)
                first = None
                same = True
                for n in range(1, cores + 1):
                    tk.init_runtime(core_mask=MASKS[n])
                    r = tk.eval_perf(is_print=False)
                    out = tk.inference(inputs=[x], data_format="nchw")
                    digest = b"".join(o.tobytes() for o in out)
                    first = digest if first is None else first
                    same = same and digest == first
                    s = r.summary
                    # The share of the one-core time in DDR-bound (or CPU) rows: the part a split
                    # cannot shorten, as the cores share one DDR port.
                    total = sum(row["Time(us)"] for row in r.rows)
                    bound = sum(row["Time(us)"] for row in r.rows if row["Bottleneck"] != "NPU") / total
                    rows.append(dict(model=name, soc=soc, cores=n, fps=r.fps, time_us=s["total_time_us"], bound=bound,
                                     sync_us=s.get("sync_time_us", 0.0), contention_us=s.get("contention_time_us", 0.0),
                                     busy=s.get("core_busy_us", []),
                                     splits={k: sum(1 for row in r.rows if row["Split"] == k)
                                             for k in ("oc", "rows", "batch")}))
                print(f"# {name} {soc}: built and costed in {time.perf_counter() - t0:.1f} s; "
                      f"outputs equal under every core mask: {same}", flush=True)
    print()
    print("| model | SoC | cores | FPS | x 1 core | Amdahl bound | time (us) | sync (us) | DDR contention (us) "
          "| split tasks oc/rows |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    base: Dict[tuple, float] = {}
    for r in rows:
        key = (r["model"], r["soc"])
        if r["cores"] == 1:
            base[key] = float(r["fps"])
        sp = r["splits"]
        d = float(r["bound"])  # DDR-/CPU-bound share of the one-core time: 1 / (d + (1 - d) / n) at best
        amdahl = 1.0 / (d + (1.0 - d) / int(r["cores"]))
        print(f"| {r['model']} | {r['soc']} | {r['cores']} | {r['fps']:.1f} | {float(r['fps']) / base[key]:.2f} | "
              f"{amdahl:.2f} ({100 * d:.0f}% bound) | "
              f"{r['time_us']:.0f} | {r['sync_us']:.0f} | {r['contention_us']:.0f} | {sp['oc']}/{sp['rows']} |")
    if "mobilenet_v2" in args.models.split(",") and "rk3588" in args.socs.split(","):
        batch_gain()
    return 0


def batch_gain() -> None:
    """A batch gives the scheduler more to spread (it may split by batch items): mobilenet_v2 FP16
    on rk3588 at batch 1 and 3, images per second on 1 and 3 cores."""
    print()
    print("| mobilenet_v2 FP16 rk3588 batch | 1 core images/s | 3 cores images/s | gain | tasks split by batch |")
    print("|---|---|---|---|---|")
    for batch in (1, 3):
        tk = npuc.Toolkit()
        with contextlib.redirect_stdout(io.StringIO()):
            tk.config(target_platform="rk3588")
            tk.load_onnx(model=str(model_path("mobilenet_v2")))
            tk.build(do_quantization=False, rknn_batch_size=batch)
        fps = {}
        for n in (1, 3):
            tk.init_runtime(core_mask=MASKS[n])
            r = tk.eval_perf(is_print=False)
            fps[n] = r.fps * batch
            by_batch = sum(1 for row in r.rows if row["Split"] == "batch")
        print(f"| {batch} | {fps[1]:.1f} | {fps[3]:.1f} | {fps[3] / fps[1]:.2f}x | {by_batch} of {len(r.rows)} |")


if __name__ == "__main__":
    sys.exit(main())
