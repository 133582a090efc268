"""Import of already-quantized (QDQ) ONNX models (issue #17, docs/qdq_import.md): two measurements.

* Round trip, every shared model (shared/models): npuc INT8 build (calibrated on the reference
  input and two noisy copies) -> Toolkit.export_onnx (QDQ) -> load_onnx -> build(do_quantization=
  False) without a dataset. Reported: whether the simulator outputs are bit-identical, how many
  given parameters the build kept, how many the optimizer removed, requantized weights.
* Peer: PyTorch FX post-training quantization (bench/quant_accuracy.py's models: torchvision
  resnet18 and mobilenet_v2, seeded, BatchNorm re-estimated on its synthetic images; its FX PTQ
  with the onednn qconfig, 8 calibration images; again with weights observed in [-127, 127]) exported with torch.onnx.export (Debian's torch
  1.13 writes QDQ: uint8 activations through Q -> Cast -> DQ, int8 per-channel weights, int32 biases
  whose zero point is a ConstantOfShape -> Cast chain). npuc's build(do_quantization=False) output
  against PyTorch's quantized model on EVAL images, in LSB of the output's scale, and both against
  ONNX Runtime running the same file (what the QDQ graph itself computes).

Run: ``cd bench && PYTHONPATH=../python /usr/bin/python3 qdq_import.py [--skip-peer] [--models ...]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import npuc  # noqa: E402

SHARED = ["ppocr_cls", "ppocrv4_det", "mobilenet_v2", "shufflenet_v2_x0_5", "tiny_vit", "glu_net", "yolo_focus",
          "conv_transpose_clip"]
PEERS = ["resnet18", "mobilenet_v2"]
CALIB_IMAGES = 8
EVAL_IMAGES = 4


def shared_dir() -> Path:
    import os

    env = os.environ.get("NPUC_SHARED_MODELS")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "shared" / "models").is_dir():
            return parent / "shared" / "models"
    raise SystemExit("shared models not found (set NPUC_SHARED_MODELS)")


def round_trip(name: str, folder: Path, tmp: Path) -> Dict[str, object]:
    ref = np.load(folder / f"{name}.ref.npz")
    x = next(ref[k] for k in ref.files if k.startswith("input:")).astype(np.float32)
    rng = np.random.default_rng(0)
    samples = [[x]] + [[(x + rng.normal(0, 0.1, x.shape)).astype(np.float32)] for _ in range(2)]
    start = time.perf_counter()
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(folder / f"{name}.onnx"))
        tk.build(do_quantization=True, dataset=samples)
        want = tk.inference(inputs=[x], data_format="nchw")
        tk.export_onnx(tmp / f"{name}_qdq.onnx")
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(tmp / f"{name}_qdq.onnx"))
        tk.build(do_quantization=False)
        got = tk.inference(inputs=[x], data_format="nchw")
        report = tk.qdq_report
    differ = sum(int((w != g).sum()) for w, g in zip(want, got))
    total = sum(w.size for w in want)
    return {"model": name, "identical": differ == 0, "differ": differ, "total": total,
            "seconds": time.perf_counter() - start, **{k: report[k] for k in
                                                       ("kept", "dropped_missing", "dropped_changed", "requantized",
                                                        "inexact_biases")}}


def restricted_weight_mapping() -> object:
    """The onednn mapping with weights observed in [-127, 127] (npuc's symmetric range) instead of
    PyTorch's qint8 [-128, 127]: isolates the arithmetic from the -128 clamp."""
    import torch
    from torch.ao.quantization import PerChannelMinMaxObserver, QConfig, get_default_qconfig_mapping

    mapping = get_default_qconfig_mapping("onednn")
    weight = PerChannelMinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_channel_symmetric,
                                                quant_min=-127, quant_max=127)
    mapping.set_global(QConfig(activation=mapping.global_qconfig.activation, weight=weight))
    for key, qconfig in list(mapping.object_type_qconfigs.items()):
        if qconfig is not None:
            mapping.object_type_qconfigs[key] = QConfig(activation=qconfig.activation, weight=weight)
    return mapping


def peer(arch: str, tmp: Path, mapping: str = "onednn") -> Dict[str, object]:
    import onnx
    import torch
    from onnx import numpy_helper

    import quant_accuracy as qa

    bench = qa.BENCHES[arch]
    size = bench.input_size
    bn = qa.synthetic_images(qa.BN_BATCHES * qa.BN_BATCH_SIZE, size, qa.SEED_BN)
    model = bench.build(lambda i: torch.from_numpy(bn[i * qa.BN_BATCH_SIZE:(i + 1) * qa.BN_BATCH_SIZE]))
    calib = qa.synthetic_images(CALIB_IMAGES, size, qa.SEED_CALIB)
    evals = qa.synthetic_images(EVAL_IMAGES, size, qa.SEED_EVAL)
    qa.TORCH_MAPPINGS.setdefault("onednn_w127", ("onednn", restricted_weight_mapping))
    quantized = qa.torch_fx_ptq(model, calib, mapping)
    path = tmp / f"{arch}_{mapping}_fx_qdq.onnx"
    torch.onnx.export(quantized, torch.from_numpy(evals[:1]), str(path), opset_version=13,
                      input_names=["x"], output_names=["y"])
    proto = onnx.load(str(path))
    producer = {o: n for n in proto.graph.node for o in n.output}
    consts = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    for n in proto.graph.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    # The output's LSB: the scale of the DequantizeLinear producing it (through Identity chains).
    scale_name = producer["y"].input[1]
    while scale_name not in consts:
        scale_name = producer[scale_name].input[0]
    lsb = float(consts[scale_name])
    with torch.no_grad():
        want = np.concatenate([quantized(torch.from_numpy(evals[i:i + 1])).numpy() for i in range(len(evals))])
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(path))
        tk.build(do_quantization=False)
        got = np.concatenate([tk.inference(inputs=[evals[i:i + 1]], data_format="nchw")[0]
                              for i in range(len(evals))])
        report = tk.qdq_report
    # ONNX Runtime on the same file: what the QDQ graph itself computes.
    from common import run_ort

    ort = np.concatenate([run_ort(path, {"x": evals[i:i + 1]}, threads=1, warmup=0, iters=1)[1][0]
                          for i in range(len(evals))])

    def agreement(a: np.ndarray, b: np.ndarray) -> Dict[str, float]:
        steps = np.abs(a.astype(np.float64) - b) / lsb
        return {"within": float((steps <= 1.001).mean()), "identical": float((steps < 0.001).mean()),
                "max": float(steps.max())}

    return {"model": arch, "torch": agreement(got, want), "ort": agreement(got, ort),
            "torch_ort": agreement(want, ort),
            "cosine": float(np.dot(got.ravel(), want.ravel()) / (np.linalg.norm(got) * np.linalg.norm(want))),
            "notes": len(report["notes"]), "kept": report["kept"], "dropped": report["dropped_missing"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=SHARED)
    parser.add_argument("--peers", nargs="*", default=PEERS)
    parser.add_argument("--skip-peer", action="store_true")
    args = parser.parse_args()
    folder = shared_dir()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        print("| model | bit-identical | outputs differing | given kept | lost to optimizer | changed | requantized "
              "| inexact biases | seconds |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name in args.models:
            r = round_trip(name, folder, tmp)
            print(f"| {name} | {'yes' if r['identical'] else 'NO'} | {r['differ']}/{r['total']} | {r['kept']} | "
                  f"{r['dropped_missing']} | {r['dropped_changed']} | {r['requantized']} | {r['inexact_biases']} | "
                  f"{r['seconds']:.1f} |", flush=True)
        if args.skip_peer:
            return
        print()
        print("| torch FX PTQ model | weights | npuc vs torch: within 1 LSB / identical / max | npuc vs ORT (same "
              "file) | torch vs ORT | cosine npuc-torch | notes |")
        print("|---|---|---|---|---|---|---|")

        def cell(a: Dict[str, float]) -> str:
            return f"{100 * a['within']:.2f}% / {100 * a['identical']:.2f}% / {a['max']:.0f}"

        for arch in args.peers:
            for mapping, label in (("onednn", "qint8 default (-128 clamped)"), ("onednn_w127", "[-127, 127]")):
                r = peer(arch, tmp, mapping)
                print(f"| {arch} | {label} | {cell(r['torch'])} | {cell(r['ort'])} | {cell(r['torch_ort'])} | "
                      f"{r['cosine']:.6f} | {r['notes']} |", flush=True)


if __name__ == "__main__":
    main()
