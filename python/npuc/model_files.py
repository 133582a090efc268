"""Which frontend reads a model file, for the command line: ``.cfg`` is a Darknet network, anything
else ONNX (``.npub`` blobs are handled by each command before it gets here).

A Darknet network is two files; the command line names the ``.cfg`` and finds the weights next to
it under the same name (``yolov3.cfg`` -> ``yolov3.weights``), darknet's own naming, so every
command keeps its one ``MODEL`` argument.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from npuc.errors import ModelLoadError
from npuc.messages import MAX_SHOWN_PATH, shown

__all__ = ["is_darknet", "darknet_weights_for", "load_model"]


def is_darknet(path: str) -> bool:
    return os.fspath(path).lower().endswith(".cfg")


def darknet_weights_for(cfg: str) -> str:
    """The ``.weights`` file beside `cfg`; ModelLoadError naming it when it is missing."""
    weights = os.path.splitext(os.fspath(cfg))[0] + ".weights"
    if not os.path.isfile(weights):
        raise ModelLoadError(f"darknet model {shown(cfg, MAX_SHOWN_PATH)}: its weights "
                             f"{shown(weights, MAX_SHOWN_PATH)} (same name, beside the .cfg) do not exist")
    return weights


def load_model(path: str, input_names: Sequence[str] = (), input_sizes: Sequence[Sequence[int]] = (),
               output_names: Sequence[str] = ()) -> Any:
    """``npuc.Model`` from an ONNX file or a Darknet ``.cfg`` (with its ``.weights`` beside it)."""
    from npuc._npuc import Model

    sizes = [list(s) for s in input_sizes]
    if is_darknet(path):
        if input_names:
            raise ModelLoadError("--input-name does not apply to a darknet model: it has one input, 'data'")
        return Model.load_darknet(path, darknet_weights_for(path), sizes, list(output_names))
    return Model.load(path, list(input_names), sizes, list(output_names))
