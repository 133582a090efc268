"""Running a TFLite model in Arm NN 20.08 (Debian python3-pyarmnn, TfLiteParser, CpuRef backend),
inputs and outputs by TFLite tensor name. pyarmnn is imported only when a model runs, so the rest
of the harness never needs Arm NN; one IRuntime is shared by the whole process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import numpy as np

_RUNTIME: List[Any] = []


def _armnn() -> Any:
    import pyarmnn  # noqa: deferred so that importing this module never needs Arm NN

    return pyarmnn


def _runtime() -> Any:
    ann = _armnn()
    if not _RUNTIME:
        _RUNTIME.append(ann.IRuntime(ann.CreationOptions()))
    return _RUNTIME[0]


def armnn_run(path: "str | Path", inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """Run a TFLite model (an Arm NN-readable one, e.g. from :func:`fp32_weight_copy`) with Arm NN's
    TfLiteParser on the CpuRef backend. Inputs and outputs are keyed by TFLite tensor name, in the
    model's own layout (NHWC) and dtype."""
    ann = _armnn()
    parser = ann.ITfLiteParser()
    network = parser.CreateNetworkFromBinaryFile(str(path))
    runtime = _runtime()
    opt, _messages = ann.Optimize(network, [ann.BackendId("CpuRef")], runtime.GetDeviceSpec(),
                                  ann.OptimizerOptions())
    net_id, _ = runtime.LoadNetwork(opt)
    try:
        in_names = list(parser.GetSubgraphInputTensorNames(0))
        missing = set(in_names) - set(inputs)
        if missing:
            raise KeyError(f"{path}: inputs {sorted(missing)} not given (model inputs: {in_names})")
        bindings = [parser.GetNetworkInputBindingInfo(0, n) for n in in_names]
        arrays = []
        for n, (_, info) in zip(in_names, bindings):
            a = np.ascontiguousarray(inputs[n])
            if a.size != info.GetNumElements():
                raise ValueError(f"{path}: input {n} has {a.size} elements, the model wants {info.GetNumElements()}")
            arrays.append(a)
        out_names = list(parser.GetSubgraphOutputTensorNames(0))
        out_bindings = [parser.GetNetworkOutputBindingInfo(0, n) for n in out_names]
        in_tensors = ann.make_input_tensors(bindings, arrays)
        out_tensors = ann.make_output_tensors(out_bindings)
        runtime.EnqueueWorkload(net_id, in_tensors, out_tensors)
        results = ann.workload_tensors_to_ndarray(out_tensors)
        shapes = {n: [int(d) for d in info.GetShape()] for n, (_, info) in zip(out_names, out_bindings)}
        return {n: np.asarray(r).reshape(shapes[n]) for n, r in zip(out_names, results)}
    finally:
        runtime.UnloadNetwork(net_id)
