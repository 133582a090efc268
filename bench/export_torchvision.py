"""Exports torchvision models to ONNX for benchmarks (random weights, BatchNorm statistics
re-estimated on random inputs, as shared/models were made). Cached in bench/.cache.

`build_torchvision` returns the seeded in-memory module (so a benchmark can hand the very module
it exported to another tool, e.g. PyTorch's own quantizer) and `export_module` writes any module."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Optional

from common import CACHE

#: Batches of 8 inputs run in train mode to re-estimate BatchNorm running statistics.
BN_BATCHES = 4
BN_BATCH_SIZE = 8


def _torch() -> tuple[Any, Any]:
    try:
        import torch
        import torchvision
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise RuntimeError("PyTorch/torchvision are needed to export benchmark models: "
                           "run `make bench-deps` (Debian python3-torch, python3-torchvision)") from e
    return torch, torchvision


def reestimate_batchnorm(model: Any, make_batch: Callable[[int], Any], batches: int = BN_BATCHES,
                         exact: bool = False) -> Any:
    """Runs `batches` batches from `make_batch(index)` in train mode (no gradients) so BatchNorm
    running statistics describe those inputs, then returns the model in eval mode.

    `exact=False` keeps PyTorch's momentum 0.1 from the initial statistics (mean 0, variance 1),
    as the shared models were made: after 4 batches the running statistics are only 34% of the
    way to the data's. `exact=True` resets them and uses the cumulative average (momentum None),
    so they are the statistics of the batches seen; without it deep random-weight nets can
    saturate (mobilenet_v2's output then hardly depends on its input)."""
    torch, _ = _torch()
    if exact:
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.reset_running_stats()
                m.momentum = None
    model.train()
    with torch.no_grad():
        for i in range(batches):
            model(make_batch(i))
    return model.eval()


def build_torchvision(arch: str, input_shape: tuple[int, ...] = (1, 3, 224, 224), seed: int = 0,
                      make_batch: Optional[Callable[[int], Any]] = None, batches: int = BN_BATCHES,
                      exact: bool = False) -> Any:
    """torchvision `arch` with seeded random weights and BatchNorm statistics re-estimated on
    `batches` batches `make_batch(i)` (default: standard normal batches of 8), in eval mode
    (`exact`: see reestimate_batchnorm)."""
    torch, torchvision = _torch()
    torch.manual_seed(seed)
    model = getattr(torchvision.models, arch)(weights=None)
    if make_batch is None:
        make_batch = lambda _i: torch.randn(BN_BATCH_SIZE, *input_shape[1:])  # noqa: E731
    return reestimate_batchnorm(model, make_batch, batches, exact)


def export_module(model: Any, out: Path, input_shape: tuple[int, ...], opset: int = 13) -> Path:
    """Writes `model` (eval mode) as ONNX to `out` (atomically: a temporary file is renamed)."""
    torch, _ = _torch()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    torch.onnx.export(model, torch.randn(*input_shape), str(tmp), opset_version=opset,
                      input_names=["input"], output_names=["output"], do_constant_folding=True)
    tmp.rename(out)
    return out


def export(arch: str, input_shape: tuple[int, ...] = (1, 3, 224, 224), opset: int = 13) -> Path:
    """Returns the path of `<arch>.onnx`, exporting it first if it is not cached."""
    out = CACHE / f"{arch}.onnx"
    if out.exists():
        return out
    return export_module(build_torchvision(arch, input_shape), out, input_shape, opset)


if __name__ == "__main__":
    for arch in sys.argv[1:] or ["resnet50"]:
        print(export(arch))
