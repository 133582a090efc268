"""INT8 simulator latency: npuc's bit-exact INT8 simulator vs PyTorch's quantized model, 1 thread.

Both sides get the same torchvision module (seeded random weights, BatchNorm re-estimated, see
export_torchvision.py) and the same calibration samples: npuc quantizes the exported ONNX
(per-channel weights, `normal` algorithm); PyTorch runs FX post-training quantization
(`quantize_fx.prepare_fx/convert_fx`, per-channel weights) on the engine named by --engine
(fbgemm when this torch build has it, otherwise onednn; Debian's torch has no fbgemm).
Runs are interleaved (one npuc run, one torch run, ...) so machine load hits both alike; the
table gives medians, the ratio npuc/torch (issue #5 target: <= 1.0, issue #19: <= 0.5), the same
ratio of the calling thread's CPU time (steady when other jobs load the machine) and each side's
output cosine against the FP32 module.

A second table times the real trained ppocrv4_det (shared/models, 1x3x480x480) on the INT8
simulator against npuc's own FP32 host runtime: one Toolkit built with do_quantization=True on a
dataset of one real page (shared/models/ocr_det_calib/page00.png), the other only load_onnx'ed
(inference before build runs the FP32 host runtime); both infer that page, interleaved.

Run with `make bench` or
`PYTHONPATH=python /usr/bin/python3 bench/sim_speed.py [--iters N] [--models a,b]`.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, List, Tuple

# One thread for npuc and PyTorch (OpenMP); must be set before either is imported.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from common import CACHE, median, shared_models_dir  # noqa: E402
from export_torchvision import build_torchvision, export_module  # noqa: E402

INPUT_SHAPE = (1, 3, 224, 224)
DEFAULT_MODELS = "mobilenet_v2,shufflenet_v2_x0_5,resnet18"


def calibration_samples(count: int, seed: int = 1) -> List[np.ndarray]:
    """`count` standard-normal inputs: the distribution BatchNorm statistics were estimated on."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(INPUT_SHAPE).astype(np.float32) for _ in range(count)]


def pick_engine(requested: str) -> str:
    """`requested`, or for "auto" the first of fbgemm / x86 / onednn this torch build supports."""
    import torch

    engines = torch.backends.quantized.supported_engines
    if requested != "auto":
        if requested not in engines:
            raise SystemExit(f"quantized engine {requested} not in this torch build ({engines})")
        return requested
    for name in ("fbgemm", "x86", "onednn"):
        if name in engines:
            return name
    raise SystemExit(f"no x86 quantized engine in this torch build ({engines})")


def traceable_channel_shuffle(x: Any, groups: int) -> Any:
    """torchvision's ShuffleNetV2 channel shuffle without unpacking `x.size()`, which FX
    symbolic tracing cannot do; the same permutation of channels."""
    return x.unflatten(1, (groups, -1)).transpose(1, 2).flatten(1, 2)


def traceable_shuffle_block(block: Any, x: Any) -> Any:
    """torchvision's ShuffleNetV2 InvertedResidual.forward with the split written as slices
    (FX cannot unpack `x.chunk(2)`); the same computation."""
    import torch

    if block.stride == 1:
        half = block.branch2[0].in_channels  # branch2 reads the second half of the channels
        out = torch.cat((x[:, :half], block.branch2(x[:, half:])), dim=1)
    else:
        out = torch.cat((block.branch1(x), block.branch2(x)), dim=1)
    return traceable_channel_shuffle(out, 2)


def torch_quantized(arch: str, samples: List[np.ndarray], engine: str) -> Tuple[Any, Any]:
    """(FP32 module, FX post-training quantized module) of `arch`, calibrated on `samples`."""
    import torch
    import torchvision.models.shufflenetv2 as shufflenet
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    torch.backends.quantized.engine = engine
    fp32 = build_torchvision(arch, INPUT_SHAPE)
    example = (torch.from_numpy(samples[0]),)
    original_forward = shufflenet.InvertedResidual.forward
    shufflenet.InvertedResidual.forward = traceable_shuffle_block  # FX-traceable, same math
    try:
        prepared = prepare_fx(build_torchvision(arch, INPUT_SHAPE), get_default_qconfig_mapping(engine), example)
    finally:  # the ONNX export of the next model must see torchvision's own code
        shufflenet.InvertedResidual.forward = original_forward
    with torch.no_grad():
        for s in samples:
            prepared(torch.from_numpy(s))
    return fp32, convert_fx(prepared)


def exported(arch: str, module: Any) -> Any:
    """`module` (the FP32 module PyTorch quantizes) as ONNX, cached under this bench's own name
    so the two sides always run the very same weights."""
    out = CACHE / f"simspeed_{arch}.onnx"
    return out if out.exists() else export_module(module, out, INPUT_SHAPE)


def npuc_quantized(onnx_path: Any, samples: List[np.ndarray]) -> Any:
    """npuc's INT8 simulator of the exported model (optimized graph, per-channel weights)."""
    import npuc
    from npuc.quantize import quantize

    model = npuc.Model.load(str(onnx_path))
    optimized, _ = npuc.optimize(model)
    return quantize(optimized, samples, algorithm="normal", method="channel")


def interleaved_times(fns: List[Callable[[], object]], warmup: int,
                      iters: int) -> Tuple[List[List[float]], List[List[float]]]:
    """Per-call wall times and CPU times of the calling thread (ms) of each function, calls
    interleaved round-robin. Both sides compute in the calling thread (1 thread), so the CPU time
    is what each needs whatever else the machine runs; the wall time is what a user waits."""
    for _ in range(warmup):
        for f in fns:
            f()
    wall: List[List[float]] = [[] for _ in fns]
    cpu: List[List[float]] = [[] for _ in fns]
    for _ in range(iters):
        for f, w, c in zip(fns, wall, cpu):
            w0, c0 = time.perf_counter(), time.thread_time()
            f()
            c.append((time.thread_time() - c0) * 1e3)
            w.append((time.perf_counter() - w0) * 1e3)
    return wall, cpu


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a64 @ b64 / max(np.linalg.norm(a64) * np.linalg.norm(b64), 1e-300))


DET_MEAN, DET_STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]  # shared/models/README.md


def det_row(iters: int, warmup: int) -> Any:
    """(INT8 ms, FP32 ms, cosine INT8 vs FP32) of ppocrv4_det on one real page, or None without
    the shared models."""
    import contextlib
    import io
    import tempfile
    from pathlib import Path

    import npuc
    from PIL import Image

    folder = shared_models_dir()
    model, page = folder / "ppocrv4_det.onnx", folder / "ocr_det_calib" / "page00.png"
    if not model.is_file() or not page.is_file():
        return None
    image = np.asarray(Image.open(page).convert("RGB"))  # 480x480x3 uint8, as a user feeds it
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        dataset = Path(tmp) / "dataset.txt"
        dataset.write_text(f"{page}\n")
        int8 = stack.enter_context(npuc.Toolkit())
        fp32 = stack.enter_context(npuc.Toolkit())
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            for tk in (int8, fp32):
                tk.config(target_platform="rk3588", mean_values=[DET_MEAN], std_values=[DET_STD])
                tk.load_onnx(model=str(model))
            int8.build(do_quantization=True, dataset=str(dataset))

        def run_int8() -> Any:
            return int8.inference(inputs=[image], data_format="nhwc")[0]

        def run_fp32() -> Any:
            return fp32.inference(inputs=[image], data_format="nhwc")[0]

        cos = cosine(run_int8(), run_fp32())
        (ours, theirs), (ours_cpu, theirs_cpu) = interleaved_times([run_int8, run_fp32], warmup, iters)
    return median(ours), median(theirs), median(ours_cpu) / median(theirs_cpu), cos


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--iters", type=int, default=20, help="timed runs per side (median reported)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--samples", type=int, default=16, help="calibration samples")
    ap.add_argument("--engine", default="auto", help="PyTorch quantized engine (auto, fbgemm, x86, onednn)")
    ap.add_argument("--no-det", action="store_true", help="skip the ppocrv4_det INT8 vs FP32 host table")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    engine = pick_engine(args.engine)
    samples = calibration_samples(args.samples)
    x = calibration_samples(1, seed=2)[0]
    tx = torch.from_numpy(x)

    rows = []
    for arch in args.models.split(","):
        fp32, qtorch = torch_quantized(arch, samples, engine)
        qnpuc = npuc_quantized(exported(arch, fp32), samples)
        with torch.no_grad():
            ref = fp32(tx).numpy()
            ours_cos = cosine(qnpuc.run([x])[0], ref)
            torch_cos = cosine(qtorch(tx).numpy(), ref)

            def run_torch() -> object:
                return qtorch(tx)

            (ours, theirs), (ours_cpu, theirs_cpu) = interleaved_times([lambda: qnpuc.run([x]), run_torch],
                                                                       args.warmup, args.iters)
        rows.append((arch, median(ours), median(theirs), median(ours_cpu) / median(theirs_cpu), ours_cos, torch_cos))

    print(f"INT8 simulator vs PyTorch quantized ({engine}), 1 thread, median of {args.iters} interleaved runs")
    print(f"{'model':<22}{'npuc ms':>10}{'torch ms':>10}{'npuc/torch':>12}{'cpu ratio':>11}{'cos npuc':>10}"
          f"{'cos torch':>10}")
    for arch, ours_ms, torch_ms, cpu_ratio, c_ours, c_torch in rows:
        print(f"{arch:<22}{ours_ms:>10.2f}{torch_ms:>10.2f}{ours_ms / torch_ms:>12.2f}{cpu_ratio:>11.2f}"
              f"{c_ours:>10.4f}{c_torch:>10.4f}")
    det = None if args.no_det else det_row(args.iters, args.warmup)
    if det is not None:
        int8_ms, fp32_ms, cpu_ratio, cos = det
        print(f"\nppocrv4_det INT8 simulator vs npuc FP32 host runtime, 1 thread, "
              f"median of {args.iters} interleaved runs")
        print(f"{'model':<22}{'int8 ms':>10}{'fp32 ms':>10}{'int8/fp32':>12}{'cpu ratio':>11}{'cos':>10}")
        print(f"{'ppocrv4_det':<22}{int8_ms:>10.2f}{fp32_ms:>10.2f}{int8_ms / fp32_ms:>12.2f}{cpu_ratio:>11.2f}"
              f"{cos:>10.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
