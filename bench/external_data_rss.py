#!/usr/bin/env python3
"""Peak-RSS cost of loading a model whose weights live in ONNX external data (issue #8: "loading a
2 GiB-external-data model does not copy it twice").

    PYTHONPATH=<build>/pyroot /usr/bin/python3 bench/external_data_rss.py [--gib 2] [--repeats 3]

Writes y = x + w with one float32 weight of --gib GiB in weights.bin (a temporary folder, removed
afterwards), then measures in fresh interpreters the growth of the peak RSS (ru_maxrss) over an
interpreter that has imported numpy, onnx and npuc:

* ``npuc load``     npuc.Model.load (import, shape inference, checks of the weight values);
* ``npuc runtime``  the same plus npuc.Runtime (planning and compiling the FP32 executor);
* ``onnx.load``     the peer: the onnx package reading the model with its external data.

Prints the median growth of each, its ratio to the data size, and npuc's ratio to the peer.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

from common import fresh_python

MIB = 1 << 20

MEASURE = r"""
import resource, sys
import numpy, onnx, npuc
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
stage = sys.argv[2]
if stage == "onnx.load":
    onnx.load(sys.argv[1], load_external_data=True)
else:
    model = npuc.Model.load(sys.argv[1])
    if stage == "npuc runtime":
        npuc.Runtime(model)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024)
"""

STAGES = ("npuc load", "npuc runtime", "onnx.load")


def write_model(folder: Path, nbytes: int) -> Path:
    """y = x + w, w of nbytes/4 float32 in folder/weights.bin, written in chunks (no big buffer)."""
    from onnx import TensorProto, helper

    n = nbytes // 4
    chunk = 16 * MIB // 4
    import numpy as np

    with open(folder / "weights.bin", "wb") as f:
        for start in range(0, n, chunk):
            np.arange(start, min(n, start + chunk), dtype=np.float32).tofile(f)
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[n])
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", str(n * 4))):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        "external",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])],
        initializer=[w],
    )
    path = folder / "external.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    return path


def peak_rss_growth(model: Path, stage: str) -> int:
    return int(fresh_python(MEASURE, [str(model), stage]).strip().splitlines()[-1])


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="size of the external weight in GiB")
    parser.add_argument("--repeats", type=int, default=3, help="runs per stage (interleaved), median reported")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the model (default: a temp folder)")
    args = parser.parse_args(argv)
    nbytes = int(args.gib * 1024 * MIB)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        model = write_model(Path(tmp), nbytes)
        growth: Dict[str, List[int]] = {s: [] for s in STAGES}
        for _ in range(args.repeats):
            for stage in STAGES:  # interleaved, so load on the machine hits every stage alike
                growth[stage].append(peak_rss_growth(model, stage))
    data_mib = nbytes / MIB
    print(f"external data: {data_mib:.0f} MiB, {args.repeats} runs per stage (median peak-RSS growth)")
    medians = {s: statistics.median(v) / MIB for s, v in growth.items()}
    for stage in STAGES:
        runs = ", ".join(f"{g / MIB:.0f}" for g in growth[stage])
        print(f"  {stage:13s} {medians[stage]:8.0f} MiB  = {medians[stage] / data_mib:.2f} x data   (runs: {runs})")
    peer = medians["onnx.load"]
    print(f"  npuc load / onnx.load = {medians['npuc load'] / peer:.2f}; "
          f"npuc runtime / onnx.load = {medians['npuc runtime'] / peer:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
