"""Memory-aware node order and in-place Concat (issue #19): the arena's lower bound in the
exporter's order and in the order the compiler chose, and the arena once Concats are planned in
place, per model.

For every shared model plus yolov5s_relu and yolov8n (bench/yolo_models.py; exported with torch
into bench/.cache on first use), builds INT8 for rk3588 from one random calibration sample (only
the plan's dtypes matter), and FP16, and compiles each twice: with the default memory-aware order and with
``node_order='exporter'`` (the peer, same run), and once more with single_core_mode (there no
multi-core schedule can get slower, which the driver otherwise refuses). Prints per model the exporter-order bound, the
chosen order's bound, their ratio, both arenas, the candidate that won, and the floor no order can
go below: max over steps of the bytes the step reads and writes plus those written by an ancestor
and read by a descendant (live across the step in every topological order). The order columns
are builds with ``concat_in_place=False``; the in-place columns are the default build (order and
in-place Concats), its arena against the exporter-order bound without in-place Concats, and how
many Concats it planned in place. Issue #19's target: <= 0.9x the exporter-order bound on at least
half of the models, never above 1.

    PYTHONPATH=python /usr/bin/python3 bench/memory_order.py [model ...]
"""
from __future__ import annotations

import contextlib
import io
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

from common import CACHE, shared_models_dir

import npuc
from npuc._npuc import compile_model, memory_order

SHARED = ["mobilenet_v2", "shufflenet_v2_x0_5", "tiny_vit", "glu_net", "yolo_focus", "conv_transpose_clip",
          "ppocr_cls", "ppocrv4_det"]
YOLO = ["yolov5s_relu", "yolov8n"]
SOC = "rk3588"
TARGET = 0.9


def model_path(name: str) -> Path:
    if name in YOLO:
        path = CACHE / f"{name}.onnx"
        if not path.exists():
            from yolo_models import export_yolo

            export_yolo(name)
        return path
    return shared_models_dir() / f"{name}.onnx"


def measure(name: str, quantize: bool) -> Dict[str, Any]:
    tk = npuc.Toolkit()
    tk.config(target_platform=SOC)
    with contextlib.redirect_stdout(io.StringIO()):
        tk.load_onnx(model=str(model_path(name)))
        shape = list(tk.model.inputs[0]["shape"])
        sample = [np.random.default_rng(0).standard_normal(shape).astype(np.float32)]
        tk.build(do_quantization=quantize, dataset=sample if quantize else None)
    source = tk._simulator() if quantize else tk._model
    options = tk._compile_options()
    t0 = time.perf_counter()
    in_place = compile_model(source, SOC, options).eval_memory()
    seconds = time.perf_counter() - t0
    options.concat_in_place = False  # the order alone, and its exporter-order peer
    chosen = compile_model(source, SOC, options).eval_memory()
    options.node_order = "exporter"
    t0 = time.perf_counter()
    exporter = compile_model(source, SOC, options).eval_memory()
    exporter_seconds = time.perf_counter() - t0
    options.node_order = "memory_aware"
    choice = memory_order(source, SOC, options)
    options.single_core_mode = True  # one core: no multi-core schedule for an order to slow down
    single = compile_model(source, SOC, options).eval_memory()
    assert exporter["lower_bound_bytes"] == chosen["exporter_order_bound_bytes"], name
    assert in_place["exporter_order_bound_bytes"] == exporter["lower_bound_bytes"], name
    return {
        "model": name,
        "mode": "int8" if quantize else "fp16",
        "exporter_bound": chosen["exporter_order_bound_bytes"],
        "bound": chosen["lower_bound_bytes"],
        "ratio": chosen["order_bound_ratio"],
        "arena": chosen["arena_bytes"],
        "exporter_arena": exporter["arena_bytes"],
        "order": chosen["order"],
        "single_bound": single["lower_bound_bytes"],
        "single_order": single["order"],
        "floor": choice["floor_bytes"],
        "candidates": choice["candidates"],
        "seconds": seconds,
        "exporter_seconds": exporter_seconds,
        "in_place_arena": in_place["arena_bytes"],
        "in_place_bound": in_place["lower_bound_bytes"],
        "in_place_concats": len(in_place["in_place_concats"]),
    }


def kib(x: int) -> str:
    return f"{x / 1024:.1f}"


def main(names: List[str]) -> int:
    rows = []
    for name in names:
        for quantize in (True, False):
            try:
                rows.append(measure(name, quantize))
            except Exception as e:  # a model that cannot be built here is reported, not fatal
                print(f"{name}: skipped ({type(e).__name__}: {e})", file=sys.stderr)
    print(f"{SOC} INT8 (one random calibration sample) and FP16; bounds and arenas in KiB; "
          "floor = no topological order goes below it")
    print("| model | mode | exporter bound | chosen bound | ratio | floor | arena (exporter arena) | order | "
          "single-core build: bound, ratio, order | in place: arena, / exporter bound, Concats | "
          "compile s (exporter s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['mode']} | {kib(r['exporter_bound'])} | {kib(r['bound'])} | {r['ratio']:.3f} | "
              f"{kib(r['floor'])} | {kib(r['arena'])} ({kib(r['exporter_arena'])}) | {r['order']} | "
              f"{kib(r['single_bound'])}, {r['single_bound'] / r['exporter_bound']:.3f}, {r['single_order']} | "
              f"{kib(r['in_place_arena'])}, **{r['in_place_arena'] / r['exporter_bound']:.3f}**, "
              f"{r['in_place_concats']} | {r['seconds']:.2f} ({r['exporter_seconds']:.2f}) |")
    print()
    print("candidates (KiB, device switches, * = rejected for extra switches):")
    for r in rows:
        parts = [f"{c['name']} {kib(c['bound_bytes'])}/{c['device_switches']}{'*' if c['rejected'] else ''}"
                 for c in r["candidates"]]
        print(f"  {r['model']} {r['mode']}: " + ", ".join(parts))
    int8 = [r for r in rows if r["mode"] == "int8"]
    met = sum(r["ratio"] <= TARGET for r in int8)
    worse = [f"{r['model']} {r['mode']}" for r in rows
             if r["bound"] > r["exporter_bound"] or r["in_place_arena"] > r["exporter_arena"]]
    for mode in ("int8", "fp16"):
        of_mode = [r for r in rows if r["mode"] == mode]
        in_place_met = [r["model"] for r in of_mode if r["in_place_arena"] <= TARGET * r["exporter_bound"]]
        print(f"{mode.upper()}: arena with in-place Concats <= {TARGET}x the exporter-order bound: "
              f"{len(in_place_met)} of {len(of_mode)} {in_place_met}")
    at_floor = [f"{r['model']} {r['mode']}" for r in rows if r["exporter_bound"] == r["floor"]]
    print(f"\nINT8: <= {TARGET}x the exporter-order bound: {met} of {len(int8)}; worse on (any mode): "
          f"{worse or 'none'}; exporter order already at the floor (optimal): {at_floor or 'none'}")
    return 0 if not worse else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or SHARED + YOLO))
