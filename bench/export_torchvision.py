"""Exports torchvision models to ONNX for benchmarks (random weights, BatchNorm statistics
re-estimated on random inputs, as shared/models were made). Cached in bench/.cache."""
from __future__ import annotations

import sys
from pathlib import Path

from common import CACHE


def export(arch: str, input_shape: tuple[int, ...] = (1, 3, 224, 224), opset: int = 13) -> Path:
    """Returns the path of `<arch>.onnx`, exporting it first if it is not cached."""
    out = CACHE / f"{arch}.onnx"
    if out.exists():
        return out
    try:
        import torch
        import torchvision
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise RuntimeError("PyTorch/torchvision are needed to export benchmark models: "
                           "run `make bench-deps` (Debian python3-torch, python3-torchvision)") from e
    torch.manual_seed(0)
    model = getattr(torchvision.models, arch)(weights=None)
    # Re-estimate BatchNorm statistics on random data so activations stay in a realistic range.
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(8, *input_shape[1:]))
    model.eval()
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    torch.onnx.export(model, torch.randn(*input_shape), str(tmp), opset_version=opset,
                      input_names=["input"], output_names=["output"], do_constant_folding=True)
    tmp.rename(out)
    return out


if __name__ == "__main__":
    for arch in sys.argv[1:] or ["resnet50"]:
        print(export(arch))
