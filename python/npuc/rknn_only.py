"""RKNN-Toolkit2 calls npuc has no counterpart for (yet), as Toolkit methods that say so.

A script written for RKNN-Toolkit2 calls them; an AttributeError would say nothing about why.
Each one raises :class:`npuc.errors.NotSupportedError` naming what is missing and what npuc offers
instead, or (``get_sdk_version``, ``list_devices``) answers truthfully for a host-only toolkit.
The RKNN face (:mod:`npuc.rknn`) turns the errors into RKNN's ``-1`` and a logged line.
"""

from __future__ import annotations

from typing import Any, List, Tuple

from npuc._npuc import __version__
from npuc.errors import NotSupportedError

__all__ = ["RknnOnlyCalls", "FRONTENDS_PENDING"]

#: RKNN-Toolkit2 loaders whose frontends are not written yet, with the framework they read.
FRONTENDS_PENDING = {
    "load_tflite": "TensorFlow Lite",
    "load_caffe": "Caffe",
    "load_darknet": "Darknet",
    "load_tensorflow": "TensorFlow (frozen .pb)",
    "load_keras": "Keras",
}


def _pending_loader(call: str, framework: str) -> Any:
    def loader(self: Any, *args: Any, **kwargs: Any) -> int:
        raise NotSupportedError(
            f"{call}: {framework} models are not supported yet; npuc reads ONNX (load_onnx) and "
            f"TorchScript (load_pytorch): export the model to ONNX first"
        )

    loader.__name__ = call
    loader.__doc__ = f"RKNN-Toolkit2 ``{call}``: {framework} is not supported yet (raises NotSupportedError)."
    return loader


class RknnOnlyCalls:
    """Mixed into :class:`npuc.Toolkit`: RKNN-Toolkit2 calls without an npuc counterpart."""

    def get_sdk_version(self) -> str:
        """The toolkit's version. RKNN reports the board's runtime and driver; npuc has neither."""
        return f"npuc {__version__} (host simulator; no board runtime or NPU driver)"

    def list_devices(self) -> Tuple[List[str], List[str]]:
        """Connected boards, as RKNN's ``list_devices``: none, since npuc runs on the host only.

        Returns:
            ``([], [])``: the adb and ntb device lists, both empty.
        """
        print("npuc runs models on the host simulator; it does not connect to boards (no adb or ntb devices)",
              flush=True)
        return [], []

    def export_encrypted_rknn_model(self, input_model: Any, output_model: Any = None, crypt_level: int = 1) -> int:
        """RKNN's model encryption: refused, npuc blobs are checksummed, not encrypted."""
        raise NotSupportedError(
            "export_encrypted_rknn_model: npuc does not encrypt blobs (a .npub is checksummed and its "
            "sections digested, so tampering is detected, but its weights are readable); nothing was written"
        )

    def codegen(self, output_path: Any, inputs: Any = None, overwrite: bool = False) -> int:
        """RKNN's C++ deploy-program generator: not written yet."""
        raise NotSupportedError(
            "codegen: generating a C++ deploy program is not supported yet; npuc's C++ library loads a .npub "
            "with npuc::loadCompiledModel (cpp/compile/compiled_model_io.h); nothing was written"
        )

    def reg_custom_op(self, custom_op: Any) -> int:
        """RKNN's Python custom operators: not supported yet."""
        raise NotSupportedError(
            f"reg_custom_op: custom operators are not supported yet ({type(custom_op).__name__}); a model "
            "that uses one fails to load with the op named"
        )


for _call, _framework in FRONTENDS_PENDING.items():
    setattr(RknnOnlyCalls, _call, _pending_loader(_call, _framework))
