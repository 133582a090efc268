"""The Toolkit's session as an explicit state machine.

RKNN-Toolkit2's workflow is a sequence (``config`` -> ``load_*`` -> ``build`` -> ``export_rknn`` /
``init_runtime`` -> ``inference`` / ``eval_perf``, or ``load_rknn`` -> ``init_runtime`` -> ...), and
a call out of order used to surface as whichever attribute happened to be missing. Here the session
is in exactly one :class:`Stage`; every public call names the stages it accepts, and a call in
another stage raises one :class:`~npuc.errors.NpucError` that says what the session holds and what
to call first.

::

    EMPTY --load_onnx/load_pytorch--> LOADED --build/hybrid step 2--> BUILT
    EMPTY --load_blob--> BLOB_LOADED            (release() -> EMPTY from any stage)
"""

from __future__ import annotations

import enum
from typing import Dict, FrozenSet

from npuc.errors import NpucError

__all__ = ["Stage", "ACCEPTS", "require"]


class Stage(enum.Enum):
    """What the session holds."""

    EMPTY = "no model"
    LOADED = "a loaded model that is not built"
    BUILT = "a built model"
    BLOB_LOADED = "a model loaded from a blob"


_ANY_MODEL = frozenset({Stage.LOADED, Stage.BUILT, Stage.BLOB_LOADED})
_COMPILED = frozenset({Stage.BUILT, Stage.BLOB_LOADED})

#: The stages each Toolkit call accepts (calls not listed accept every stage).
ACCEPTS: Dict[str, FrozenSet[Stage]] = {
    "build": frozenset({Stage.LOADED, Stage.BUILT}),
    "hybrid_quantization_step1": frozenset({Stage.LOADED, Stage.BUILT}),
    "accuracy_analysis": _COMPILED,
    "export_blob": _COMPILED,
    "eval_memory": _COMPILED,
    "eval_perf": _ANY_MODEL,
    "init_runtime": _ANY_MODEL,
    "inference": _ANY_MODEL,
    "export_onnx": _ANY_MODEL,
}

#: What to call to reach a stage, for the error message.
_HOW_TO_REACH = {
    Stage.LOADED: "load_onnx() (or load_pytorch())",
    Stage.BUILT: "build()",
    Stage.BLOB_LOADED: "load_blob()",
}


def require(call: str, stage: Stage) -> None:
    """Raises NpucError when ``call`` is not accepted in ``stage``, naming what to call first."""
    accepted = ACCEPTS.get(call)
    if accepted is None or stage in accepted:
        return
    ordered = sorted(accepted, key=list(Stage).index)
    if stage == Stage.EMPTY and Stage.LOADED in accepted:
        hint = "call load_onnx() (or load_pytorch(), load_blob()) first"
    elif stage == Stage.EMPTY:
        hint = "call load_onnx() and build() (or load_blob()) first"
    else:
        hint = "call " + " or ".join(_HOW_TO_REACH[s] for s in ordered if s != stage) + " first"
    raise NpucError(f"{call}() needs {' or '.join(s.value for s in ordered)}; the toolkit holds {stage.value}: {hint}")
