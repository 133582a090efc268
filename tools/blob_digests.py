#!/usr/bin/env python3
"""Digests of the blobs npuc writes for the shared models under a matrix of build options.

A guard rail for refactors of the compile path: run it before and after, and compare. Per
(model, SoC, option set) it prints the digest of every blob section's payload and of the whole
file, so a change that moves, re-encodes or re-orders a section is named, not just detected.

    PYTHONPATH=python /usr/bin/python3 tools/blob_digests.py > before.txt
    ... change ...
    PYTHONPATH=python /usr/bin/python3 tools/blob_digests.py > after.txt
    PYTHONPATH=python /usr/bin/python3 tools/blob_digests.py --compare before.txt after.txt

Needs the shared models (NPUC_SHARED_MODELS or ../shared/models).
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import struct
import sys
import tempfile
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
from conftest import shared_models_dir  # noqa: E402

import npuc  # noqa: E402

#: (name, config kwargs, build kwargs). "calib" builds quantize on the model's reference input.
OPTION_SETS: List[Tuple[str, Dict[str, object], Dict[str, object]]] = [
    ("fp16", {}, {"do_quantization": False}),
    ("int8", {}, {"do_quantization": True}),
    ("int8-layer-mmse", {"quantized_method": "layer", "quantized_algorithm": "mmse"}, {"do_quantization": True}),
    ("int8-single-core", {"single_core_mode": True}, {"do_quantization": True}),
    ("int8-meanstd", {"mean_values": [[1.0, 2.0, 3.0]], "std_values": [[2.0, 2.0, 2.0]]}, {"do_quantization": True}),
    ("fp16-level1", {"optimization_level": 1, "custom_string": "it's \"quoted\""}, {"do_quantization": False}),
]
MODELS = ["mobilenet_v2", "shufflenet_v2_x0_5", "tiny_vit", "yolo_focus", "glu_net",
          "conv_transpose_clip", "ppocr_cls", "ppocrv4_det"]
SOCS = ["rk3588", "rv1106", "rk3562"]


_SECTION_COUNT_AT, _SECTION_TABLE_AT = 36, 40  # header fields (docs/blob_format.md)
_ENTRY = struct.Struct("<4sIQQQ")  # kind, flags, offset, size, reserved


def sections(blob: bytes) -> Iterator[Tuple[str, bytes]]:
    """(fourcc, payload) per section, read from the section table (docs/blob_format.md)."""
    (count,) = struct.unpack_from("<I", blob, _SECTION_COUNT_AT)
    (table,) = struct.unpack_from("<Q", blob, _SECTION_TABLE_AT)
    for i in range(count):
        kind, _flags, offset, size, _ = _ENTRY.unpack_from(blob, table + i * _ENTRY.size)
        yield kind.decode("ascii", "replace"), blob[offset:offset + size]


def digest(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()[:16]


def reference_input(folder: Path, model: str) -> np.ndarray:
    ref = np.load(folder / f"{model}.ref.npz")
    return next(ref[k] for k in ref.files if k.startswith("input:"))


def build(folder: Path, model: str, soc: str, config: Dict[str, object], build_kw: Dict[str, object],
          tmp: Path) -> bytes:
    x = reference_input(folder, model)
    dataset = None
    if build_kw.get("do_quantization"):
        np.save(tmp / "x.npy", x[0] if x.ndim == 4 else x)
        (tmp / "dataset.txt").write_text(f"{tmp / 'x.npy'}\n")
        dataset = str(tmp / "dataset.txt")
    path = tmp / "m.npub"
    with npuc.Toolkit() as tk, contextlib.redirect_stdout(io.StringIO()):  # the build reports
        tk.config(target_platform=soc, **config)
        tk.load_onnx(model=str(folder / f"{model}.onnx"))
        tk.build(dataset=dataset, **build_kw)
        tk.export_blob(path)
    return path.read_bytes()


def _parse(path: str) -> Dict[str, Dict[str, str]]:
    out: Dict[str, Dict[str, str]] = {}
    for line in Path(path).read_text().splitlines():
        key, value = line.split(": ", 1)
        out[key] = {"error": value} if value.startswith("error") else dict(p.split("=") for p in value.split())
    return out


def compare(before_path: str, after_path: str) -> int:
    """Counts builds whose blob is byte-identical, whose sections are identical but laid out
    differently, and whose section payloads differ (listed). Exit status 1 when any differ."""
    before, after = _parse(before_path), _parse(after_path)
    if before.keys() != after.keys():
        print(f"the two runs built different sets: {sorted(before.keys() ^ after.keys())[:5]}")
        return 1
    identical = reordered = 0
    differ = []
    for key, a in before.items():
        b = after[key]
        sections_a = {k: v for k, v in a.items() if k != "file"}
        sections_b = {k: v for k, v in b.items() if k != "file"}
        if a == b:
            identical += 1
        elif sections_a == sections_b:
            reordered += 1
        else:
            differ.append(key + ": " + ", ".join(k for k in sections_a.keys() | sections_b.keys()
                                                 if sections_a.get(k) != sections_b.get(k)))
    print(f"{len(before)} builds: {identical} byte-identical (or the same error), {reordered} with identical "
          f"section payloads in another file layout, {len(differ)} with different section payloads")
    for line in differ:
        print("  " + line)
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two earlier outputs")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--socs", default=",".join(SOCS))
    ap.add_argument("--whole", action="store_true", help="also print the digest of the whole file")
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    folder = shared_models_dir()
    if folder is None:
        print("shared models not found (set NPUC_SHARED_MODELS)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for model in args.models.split(","):
            for soc in args.socs.split(","):
                for name, config, build_kw in OPTION_SETS:
                    if model == "ppocrv4_det" and soc != "rk3588":
                        continue  # the large model once
                    try:
                        blob = build(folder, model, soc, config, build_kw, tmp)
                    except npuc.NpucError as e:
                        print(f"{model} {soc} {name}: error {type(e).__name__}: {str(e)[:120]}")
                        continue
                    parts = " ".join(f"{k}={digest(p)}" for k, p in sections(blob))
                    whole = f" file={digest(blob)}" if args.whole else ""
                    print(f"{model} {soc} {name}: {parts}{whole}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
