"""Batch > 1 (issue #18): ``build(rknn_batch_size=N)`` and a batch in ``load_onnx(input_size_list)``.

A batch build is made in two steps so that its numerics cannot depend on N: the model is
optimized and quantized at batch 1 (calibration statistics are per image), then re-imported and
re-optimized at batch N and given that same quantization plan (``Toolkit._specialized``). Each
batch item then runs through the same integer program as a single image, so the N outputs equal
the single-image outputs bit for bit. The compiled blob records the batch through its input and
output shapes.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence

from npuc import arg_check
from npuc.errors import ConfigError, NotSupportedError, ShapeError

# npuc's own bound, a choice (no RKNN-Toolkit2 limit was found to copy): memory grows N times while
# the predicted per-image throughput has flattened by N = 8 on every model measured
# (docs/perf_model.md, "Batch").
MAX_BATCH = 32

Shape = List[int]


def check_size(call: str, value: Any) -> int:
    """``rknn_batch_size`` as an int in 1..MAX_BATCH (None means 1)."""
    if value is None:
        return 1
    return arg_check.integer(call, "rknn_batch_size", value, 1, MAX_BATCH)


def loaded_batch(inputs: Sequence[Mapping[str, Any]]) -> int:
    """The batch the loaded model's inputs share (dim 0), 1 when they do not share one above 1."""
    firsts = {int(i["shape"][0]) for i in inputs if len(i["shape"]) > 0}
    return firsts.pop() if len(firsts) == 1 else 1


def resolve(call: str, rknn_batch_size: Any, inputs: Sequence[Mapping[str, Any]], loaded: int) -> int:
    """The batch the build makes: ``rknn_batch_size`` or ``loaded``, the batch ``input_size_list``
    gave (1 when it kept the file's own dim 0).

    Raises ConfigError when both are above 1 and differ (RKNN's rknn_batch_size re-batches a
    batch-1 model), or when an input has no batch axis to set.
    """
    asked = check_size(call, rknn_batch_size)
    if asked > 1:
        bad = [f"'{i['name']}' {list(i['shape'])}" for i in inputs if len(i["shape"]) == 0 or i["shape"][0] != 1]
        if loaded > 1 and loaded != asked:
            raise ConfigError(f"{call}: rknn_batch_size={asked} but the model was loaded at batch {loaded} "
                              f"(input_size_list); give the batch once, in either")
        if bad and loaded != asked:
            raise ConfigError(f"{call}: rknn_batch_size={asked} sets dim 0 of every input, which must be 1 "
                              f"(the batch); inputs " + ", ".join(bad))
    return max(asked, loaded)


def shapes_at(inputs: Sequence[Mapping[str, Any]], batch: int) -> List[Shape]:
    """The inputs' shapes with dim 0 set to ``batch``."""
    return [[batch] + [int(d) for d in i["shape"][1:]] for i in inputs]


def require_reloadable(call: str, reload: Optional[Any], batch: int) -> None:
    """A batch above 1 re-imports the model, which a fixed-shape loader cannot do."""
    if batch > 1 and reload is None:
        raise NotSupportedError(
            f"{call}: batch {batch} needs a model loaded with load_onnx or load_pytorch (re-imported at each "
            f"batch); this model's loader (TFLite, Darknet, Caffe, a loaded blob or hybrid step 2) fixed its "
            f"shapes. Export the model to ONNX, or build at batch 1")


def check_batched(one: Any, many: Any, batch: int) -> None:
    """The batch-N graph must be N independent copies of the batch-1 one: every output's dim 0
    scaled by N with the other dims equal, and exactly N times the MACs. A Reshape or Flatten whose
    target the exporter froze at batch 1 would mix items; it is refused here, naming the output."""
    for a, b in zip(one.outputs, many.outputs):
        sa, sb = list(a["shape"]), list(b["shape"])
        if not sa or sb != [sa[0] * batch] + sa[1:]:
            raise ShapeError(f"at batch {batch} output '{b['name']}' is {sb}, not {sa} with dim 0 times {batch}: "
                             f"the model's graph does not keep batch items apart (a Reshape to a fixed "
                             f"shape?); export it with a dynamic batch dimension")
    if many.macs != batch * one.macs:
        raise ShapeError(f"at batch {batch} the model has {many.macs} MACs, not {batch} x {one.macs}: "
                         f"its graph does not keep batch items apart")
