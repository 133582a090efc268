"""PyTorch models into npuc: ``Toolkit.load_pytorch`` exports through ``torch.onnx``.

RKNN-Toolkit2's ``load_pytorch`` takes a TorchScript ``.pt`` file and the input shapes; npuc takes
that or a live ``torch.nn.Module``, exports it with ``torch.onnx.export`` (random float32 example
inputs of the given shapes, evaluation mode, constant folding) into a temporary file, and imports
the ONNX bytes like ``load_onnx``. torch is only imported here, and only when this is called, so
npuc works without it; a missing torch is a :class:`npuc.ConfigError` saying what to install.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from typing import Any, List, Optional, Sequence, Tuple, Union

from npuc import arg_check
from npuc._npuc import MAX_IMPORT_OPSET as MAX_OPSET  # the newest opset the importer reads
from npuc._npuc import MIN_IMPORT_OPSET
from npuc.errors import ConfigError, ModelLoadError
from npuc.shapes import check_shapes

__all__ = ["DEFAULT_OPSET", "pytorch_to_onnx"]

#: The oldest opset torch.onnx exports (the importer itself reads older ones too).
MIN_OPSET = max(MIN_IMPORT_OPSET, 7)

#: ONNX opset the export targets unless told otherwise (the oldest one every npuc op covers).
DEFAULT_OPSET = 13

#: What to install when torch is missing (Debian's package; PyPI's ``torch`` works as well).
TORCH_PACKAGE_HINT = "install PyTorch (Debian: apt-get install python3-torch; or pip install torch)"

PyTorchModel = Union[str, "os.PathLike[str]", Any]


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise ConfigError(f"load_pytorch needs PyTorch, which is not importable ({e}); {TORCH_PACKAGE_HINT}") from None
    return torch


def _load_module(torch: Any, model: PyTorchModel) -> Any:
    """`model` itself when it is a module, else the TorchScript module saved at that path."""
    if isinstance(model, torch.nn.Module):
        return model
    if not isinstance(model, (str, os.PathLike)):
        raise ConfigError(
            f"load_pytorch(model=...) takes a torch.nn.Module or the path of a TorchScript .pt file, "
            f"got {type(model).__name__}"
        )
    path = os.fspath(model)
    if not os.path.isfile(path):
        raise ModelLoadError(f"cannot open model '{path}': no such file")
    try:
        return torch.jit.load(path, map_location="cpu")
    except (RuntimeError, ValueError) as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(
            f"'{path}' is not a TorchScript file torch.jit.load can read ({first_line}); save the model with "
            f"torch.jit.trace(model, example).save(path), or pass the nn.Module itself"
        ) from None


def _check_sizes(input_size_list: Optional[Sequence[Sequence[int]]]) -> List[List[int]]:
    if input_size_list is None or (isinstance(input_size_list, (list, tuple)) and not input_size_list):
        raise ConfigError("load_pytorch needs input_size_list, one full shape per input, e.g. [[1, 3, 224, 224]]")
    sizes = check_shapes(input_size_list, "load_pytorch(input_size_list)")
    for i, dims in enumerate(sizes):
        if not dims or 0 in dims:  # torch.rand makes the example inputs: every dim must hold something
            raise ConfigError(f"load_pytorch(input_size_list)[{i}] = {dims}: every dimension must be a positive integer")
    return sizes


def _names(what: str, given: Optional[Sequence[str]], count: Optional[int], prefix: str) -> Optional[List[str]]:
    if given is None:
        return [f"{prefix}{i}" for i in range(count)] if count is not None else None
    names = arg_check.names("load_pytorch", what, given) or []
    if count is not None and len(names) != count:
        raise ConfigError(f"{what} lists {len(names)} name(s) for {count} input(s) of input_size_list")
    return names


def pytorch_to_onnx(
    model: PyTorchModel,
    input_size_list: Sequence[Sequence[int]],
    inputs: Optional[Sequence[str]] = None,
    outputs: Optional[Sequence[str]] = None,
    opset: int = DEFAULT_OPSET,
) -> Tuple[bytes, List[str]]:
    """Exports a PyTorch model to ONNX.

    Args:
        model: a ``torch.nn.Module``, or the path of a TorchScript file (``torch.jit.save``).
        input_size_list: one full shape per forward() argument; the example inputs are float32.
        inputs: names for the ONNX inputs (default ``input0``, ``input1``, ...).
        outputs: names for the ONNX outputs (default: torch's).
        opset: the ONNX opset to export to.

    Returns:
        The serialized ONNX model and its input names, in order.

    Raises:
        ConfigError: torch is missing, or a malformed argument. ModelLoadError: the ``.pt`` file is
        missing or unreadable, or ``torch.onnx.export`` fails (its message is kept).
    """
    sizes = _check_sizes(input_size_list)
    opset = arg_check.integer("load_pytorch", "opset", opset, MIN_OPSET, MAX_OPSET)
    input_names = _names("inputs", inputs, len(sizes), "input")
    output_names = _names("outputs", outputs, None, "output")
    torch = _import_torch()
    module = _load_module(torch, model)
    generator = torch.Generator().manual_seed(0)  # the example values do not matter; fixed for determinism
    examples = tuple(torch.rand(*shape, generator=generator) for shape in sizes)
    with tempfile.TemporaryDirectory(prefix="npuc-pytorch-") as folder:
        path = os.path.join(folder, "model.onnx")
        try:
            with torch.no_grad(), warnings.catch_warnings():
                # Exporting a TorchScript module always warns that it has no Python signature.
                warnings.filterwarnings("ignore", message="no signature found")
                torch.onnx.export(
                    module,
                    examples,
                    path,
                    input_names=input_names,
                    output_names=output_names,
                    opset_version=opset,
                    do_constant_folding=True,
                )
        except Exception as e:  # noqa: BLE001 - torch raises many kinds; each is "this model did not export"
            message = " ".join(str(e).split())[:500] or type(e).__name__
            raise ModelLoadError(f"torch.onnx.export failed for this model (opset {opset}): {message}") from None
        with open(path, "rb") as f:
            return f.read(), list(input_names or [])
