"""RKNN-Toolkit2's face of npuc: the one-line change for an RKNN user's script.

    from npuc.rknn import RKNN      # was: from rknn.api import RKNN

:class:`RKNN` is :class:`npuc.Toolkit` with RKNN-Toolkit2's failure convention: a call that fails
logs ``E <call>: <what went wrong>`` to stderr (and to ``verbose_file``) and returns ``-1``
(``None`` for the calls that return data: ``inference``, ``eval_perf``, ``eval_memory``), so the
script's own ``if ret != 0:`` branch runs. Only npuc's own errors (:class:`npuc.NpucError`) are
turned into return codes; a Python error in the script (a wrong argument name, ...) or a defect of
npuc still raises, as it does in RKNN-Toolkit2's Python layer.

The native :class:`npuc.Toolkit` keeps raising: use it where a failure should stop the program.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Dict, Optional, TypeVar

from npuc.errors import NpucError
from npuc.toolkit import Toolkit

__all__ = ["RKNN", "FAILURE_VALUES"]

#: What each call returns when it fails, as RKNN-Toolkit2 does: -1 for status calls, None for the
#: calls that return data.
FAILURE_VALUES: Dict[str, Any] = {
    **{call: -1 for call in (
        "config", "load_onnx", "load_pytorch", "load_tflite", "load_caffe", "load_darknet", "load_tensorflow",
        "load_keras", "build", "hybrid_quantization_step1", "hybrid_quantization_step2", "accuracy_analysis",
        "export_rknn", "load_rknn", "init_runtime", "export_encrypted_rknn_model", "codegen", "reg_custom_op",
        "export_onnx",
    )},
    **{call: None for call in ("inference", "eval_perf", "eval_memory", "get_sdk_version")},
}

F = TypeVar("F", bound=Callable[..., Any])


def _rknn_convention(call: str, failure: Any, method: F) -> F:
    @functools.wraps(method)
    def wrapper(self: "RKNN", *args: Any, **kwargs: Any) -> Any:
        self.last_error = None
        try:
            return method(self, *args, **kwargs)
        except NpucError as e:
            self._log_failure(call, e)
            return failure

    return wrapper  # type: ignore[return-value]


class RKNN(Toolkit):
    """:class:`npuc.Toolkit` with RKNN-Toolkit2's return codes (see the module text)."""

    def __init__(self, verbose: bool = False, verbose_file: Optional[str] = None) -> None:
        super().__init__(verbose=verbose, verbose_file=verbose_file)
        #: The error of the last failed call (None after a success), for scripts that want more
        #: than the return code.
        self.last_error: Optional[NpucError] = None

    def _log_failure(self, call: str, error: NpucError) -> None:
        self.last_error = error
        message = str(error)
        # Most messages already start with the call ("load_onnx(model=...): ..."): not twice.
        line = f"E {message}" if message.startswith(call) else f"E {call}: {message}"
        print(line, file=sys.stderr, flush=True)
        self._log_to_files(line)


for _call, _failure in FAILURE_VALUES.items():
    setattr(RKNN, _call, _rknn_convention(_call, _failure, getattr(Toolkit, _call)))
