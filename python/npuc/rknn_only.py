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
    "load_tensorflow": "TensorFlow (frozen .pb)",
    "load_keras": "Keras",
}


def _frontend_pending(call: str) -> NotSupportedError:
    return NotSupportedError(
        f"{call}: {FRONTENDS_PENDING[call]} models are not supported yet; npuc reads ONNX (load_onnx), "
        f"TorchScript (load_pytorch), TFLite (load_tflite), Caffe (load_caffe) and Darknet (load_darknet): "
        f"export the model to ONNX first"
    )


class RknnOnlyCalls:
    """Mixed into :class:`npuc.Toolkit`: RKNN-Toolkit2 calls without an npuc counterpart."""

    # RKNN-Toolkit2's loaders whose frontends are still to be written, with RKNN's signatures.

    def load_tensorflow(self, tf_pb: Any, inputs: Any = None, input_size_list: Any = None, outputs: Any = None,
                        input_is_nchw: bool = False) -> int:
        """RKNN ``load_tensorflow``: not supported yet (NotSupportedError)."""
        raise _frontend_pending("load_tensorflow")

    def load_keras(self, model: Any) -> int:
        """RKNN ``load_keras``: not supported yet (NotSupportedError)."""
        raise _frontend_pending("load_keras")

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
