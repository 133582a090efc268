"""What the target stage of Toolkit.build (config(target_platform)) does to real models.

For every shared model and SoC, builds it (FP16, no calibration needed: placement does not depend on
the dtype here) twice: with the passes of issue #24 disabled (TARGET_PASSES below: the target stage
and the attention / Reshape / Transpose clean-ups), and as Toolkit.build runs by default. Prints, measured in this run: CPU ops,
NPU<->CPU hand-overs, Reshape + Transpose nodes left, Convs, the NPU's share of MACs and eval_perf's
predicted FPS (a simulation: every hardware figure it uses is marked in the SoC profile's
`sources:`). Also the yolov5s_relu and yolov8n exports of bench/yolo_models.py (perf calibration
models, random weights) unless --no-yolo. Usage: bench/target_stage.py [--socs rk3588,rv1106]
[--models a,b] [--no-yolo]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path
from typing import Dict, List

from common import shared_models_dir

# The passes of issue #24: the target stage and the graph clean-ups that keep real models' data
# movement small (attention head split, Reshape propagation, upward Transpose motion, channel
# permutations folded into Conv weights).
TARGET_PASSES = ["legalize_conv_stride", "legalize_pool_window", "reduce_transpose_rank", "attention_cleanup",
                 "propagate_reshapes", "hoist_transposes", "fold_channel_permutations"]


def measure(model: Path, soc: str, disabled: List[str]) -> Dict[str, float]:
    import npuc

    with npuc.Toolkit() as tk, contextlib.redirect_stdout(io.StringIO()):
        tk.config(target_platform=soc, disable_passes=disabled)
        tk.load_onnx(model=str(model))
        tk.build(do_quantization=False)
        perf = tk.eval_perf(is_print=False)
        ops = tk.model.op_histogram
        part = tk.partition_report
        return {"cpu": len(part["cpu_nodes"]), "handovers": part["handovers"],
                "reshape_transpose": ops.get("Reshape", 0) + ops.get("Transpose", 0), "conv": ops.get("Conv", 0),
                "npu_macs": part["npu_mac_share"], "fps": perf.fps}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socs", default="rk3588,rk3576,rk3566,rk3562,rv1106")
    parser.add_argument("--models", default="")
    parser.add_argument("--no-yolo", action="store_true")
    args = parser.parse_args(argv)
    folder = shared_models_dir()
    if folder is None:
        print("shared models not found (set NPUC_SHARED_MODELS)", file=sys.stderr)
        return 1
    models = sorted(folder.glob("*.onnx"))
    if not args.no_yolo:
        from yolo_models import export_yolo

        models += [export_yolo(name) for name in ("yolov5s_relu", "yolov8n")]
    if args.models:
        models = [m for m in models if m.stem in args.models.split(",")]
    print("| model | SoC | CPU ops | hand-overs | Reshape+Transpose | Conv | NPU MAC share | predicted FPS |")
    print("|---|---|---|---|---|---|---|---|")
    for model in models:
        for soc in args.socs.split(","):
            b, a = measure(model, soc, TARGET_PASSES), measure(model, soc, [])
            changed = "" if b == a else " **changed**"
            print(f"| {model.stem}{changed} | {soc} | {b['cpu']} -> {a['cpu']} | {b['handovers']} -> {a['handovers']} | "
                  f"{b['reshape_transpose']} -> {a['reshape_transpose']} | {b['conv']} -> {a['conv']} | {b['npu_macs']:.3f} -> {a['npu_macs']:.3f} | "
                  f"{b['fps']:.1f} -> {a['fps']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
