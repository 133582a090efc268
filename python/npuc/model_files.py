"""Which frontend reads a model file, for the command line: ``.cfg`` is a Darknet network,
``.prototxt`` a Caffe net, ``.tflite`` a TFLite model, anything else ONNX (``.npub`` blobs are handled by each command before it
gets here).

A Darknet network is two files; the command line names the ``.cfg`` and finds the weights next to
it under the same name (``yolov3.cfg`` -> ``yolov3.weights``), darknet's own naming, so every
command keeps its one ``MODEL`` argument. A Caffe net's weights come with ``--blobs`` (RKNN's
``load_caffe(model, blobs)``).
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence

from npuc.errors import ModelLoadError
from npuc.messages import MAX_SHOWN_PATH, shown

__all__ = ["is_darknet", "is_caffe_model", "is_tflite", "darknet_weights_for", "load_model"]


def is_darknet(path: str) -> bool:
    return os.fspath(path).lower().endswith(".cfg")


def is_caffe_model(path: str) -> bool:
    return os.fspath(path).lower().endswith(".prototxt")


def is_tflite(path: str) -> bool:
    return os.fspath(path).lower().endswith(".tflite")


def darknet_weights_for(cfg: str) -> str:
    """The ``.weights`` file beside `cfg`; ModelLoadError naming it when it is missing."""
    weights = os.path.splitext(os.fspath(cfg))[0] + ".weights"
    if not os.path.isfile(weights):
        raise ModelLoadError(f"darknet model {shown(cfg, MAX_SHOWN_PATH)}: its weights "
                             f"{shown(weights, MAX_SHOWN_PATH)} (same name, beside the .cfg) do not exist")
    return weights


def load_model(path: str, input_names: Sequence[str] = (), input_sizes: Sequence[Sequence[int]] = (),
               output_names: Sequence[str] = (), blobs: Optional[str] = None) -> Any:
    """``npuc.Model`` from an ONNX file, a Darknet ``.cfg`` (with its ``.weights`` beside it), a
    Caffe ``.prototxt`` (with ``blobs``, its ``.caffemodel``) or a TFLite ``.tflite`` (4-D NHWC inputs
    become NCHW graph inputs, as ``Toolkit.load_tflite`` does)."""
    from npuc._npuc import Model

    sizes = [list(s) for s in input_sizes]
    if is_caffe_model(path):
        if blobs is not None and not os.path.isfile(blobs):
            raise ModelLoadError(f"caffemodel {shown(blobs, MAX_SHOWN_PATH)} does not exist")
        return Model.load_caffe(path, blobs or "", input_names=list(input_names), input_sizes=sizes,
                                output_names=list(output_names))
    if blobs is not None:
        raise ModelLoadError("--blobs applies to a Caffe .prototxt model")
    if is_tflite(path):
        return Model.load_tflite(path, False, list(input_names), sizes, list(output_names))
    if is_darknet(path):
        if input_names:
            raise ModelLoadError("--input-name does not apply to a darknet model: it has one input, 'data'")
        return Model.load_darknet(path, darknet_weights_for(path), sizes, list(output_names))
    from npuc.onnx_rebatch import load_at_batch

    def load(source: Any, names: Sequence[str], shapes: List[List[int]], outputs: Sequence[str]) -> Any:
        if isinstance(source, (bytes, bytearray)):
            return Model.from_bytes(bytes(source), list(names), shapes, list(outputs))
        return Model.load(source, list(names), shapes, list(outputs))

    # A batch in --input-size re-batches Reshape targets the exporter froze (issue #18).
    return load_at_batch(load, path, input_names, sizes, output_names)
