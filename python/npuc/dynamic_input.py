"""``config(dynamic_input=[[shape per input], ...])`` (issue #18): one blob, several input-shape sets.

RKNN-Toolkit2's dynamic shapes are a list of fixed input-shape sets, not arbitrary shapes. npuc
builds set 0 as an ordinary build (the model re-imported at set 0's shapes and calibrated there),
then makes every other set from it with ``Toolkit._specialized``: the same quantization plan, so
the same integer weights, and per sample exactly the output a build at that shape alone with that
plan gives. The compiled model keeps the other sets as ``shape_variants``; the blob stores them in
its SHPV section, where bytes equal to set 0's (the weights) are references, not copies
(docs/blob_format.md). ``inference`` runs the program whose input shapes the arrays have.
"""

from __future__ import annotations

from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple

from npuc import batch as batching
from npuc.errors import ConfigError, InputError, NotSupportedError

Shape = List[int]
ShapeSet = List[Shape]


def describe(shapes: Sequence[Sequence[int]]) -> str:
    """A set as the messages print it: ``[[1, 3, 224, 224]]``."""
    return "[" + ", ".join(str(list(s)) for s in shapes) + "]"


def resolve(call: str, value: Any, inputs: Sequence[Mapping[str, Any]], reload: Optional[Any],
            rknn_batch_size: Any) -> List[ShapeSet]:
    """The shape sets a build makes ([] without ``dynamic_input``), checked against the loaded model.

    ``config`` already checked each shape's form (npuc.config_check); here each set must give one
    shape per model input, of the input's rank. Raises ConfigError naming the set and the input
    (or a repeated set), NotSupportedError for a fixed-shape loader or a batch given twice.
    """
    if not value:
        return []
    sets = [[[int(d) for d in shape] for shape in shapes] for shapes in value]
    names = [str(i["name"]) for i in inputs]
    for k, shapes in enumerate(sets):
        if len(shapes) != len(inputs):
            raise ConfigError(f"{call}: config(dynamic_input) set {k} {describe(shapes)} gives {len(shapes)} shape(s) "
                              f"for the model's {len(inputs)} input(s) {names}; give one full shape per input")
        for j, (shape, info) in enumerate(zip(shapes, inputs)):
            rank = len(info["shape"])
            if len(shape) != rank:
                raise ConfigError(f"{call}: config(dynamic_input) set {k}, input {j} '{info['name']}': {shape} has "
                                  f"rank {len(shape)}, the input has rank {rank} ({list(info['shape'])})")
            if 0 in shape:
                raise ConfigError(f"{call}: config(dynamic_input) set {k}, input {j} '{info['name']}': {shape} has a "
                                  f"zero dimension")
        if shapes in sets[:k]:
            raise ConfigError(f"{call}: config(dynamic_input) set {k} {describe(shapes)} repeats set "
                              f"{sets.index(shapes)}")
    if reload is None:
        raise NotSupportedError(
            f"{call}: config(dynamic_input) lists {len(sets)} input-shape set(s), which re-import the model at "
            f"each set; this model's loader (TFLite, Darknet, Caffe, a loaded blob or hybrid step 2) fixed its "
            f"shapes. Export the model to ONNX (load_onnx), or drop dynamic_input")
    asked = batching.check_size(call, rknn_batch_size)
    if asked > 1:
        raise NotSupportedError(
            f"{call}: rknn_batch_size={asked} with config(dynamic_input): npuc takes the batch from each set's "
            f"dim 0; give it there (e.g. set 0 as {describe([[asked] + s[1:] for s in sets[0]])}) and leave "
            f"rknn_batch_size unset")
    return sets


def specialize_all(sets: Sequence[ShapeSet], specialized: Callable[[ShapeSet], Tuple[Any, Any]]) -> List[Tuple[Any, Any]]:
    """(model, simulator) for each set after the first, from ``Toolkit._specialized``.

    A set whose graph the set-0 plan does not cover raises NotSupportedError naming it (as a batch
    build does); another error is re-raised with the set named.
    """
    out = []
    for k, shapes in enumerate(sets[1:], start=1):
        try:
            out.append(specialized(shapes))
        except ConfigError as e:  # the plan names a value this set's graph lacks, or the reverse
            raise NotSupportedError(
                f"build: config(dynamic_input) set {k} {describe(shapes)}: the optimizer shapes this model's graph "
                f"differently from set 0 {describe(sets[0])}, so set 0's quantization plan does not fit it ({e}); "
                f"build it with do_quantization=False (FP16), or without this set") from e
        except Exception as e:
            if hasattr(e, "args") and e.args and isinstance(e.args[0], str):
                e.args = (f"build: config(dynamic_input) set {k} {describe(shapes)}: {e.args[0]}",) + e.args[1:]
            raise
    return out


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 10_000 else f"{n} B"


def reuse_text(reuse: Mapping[str, Any]) -> str:
    """The reuse line build() and eval_memory print, from CompiledModel.shape_variant_reuse()."""
    sets = int(reuse["sets"])
    stored, per = int(reuse["packed_weight_bytes_stored"]), int(reuse["packed_weight_bytes_per_program"])
    sharing = int(reuse["programs_sharing_packed_weights"])
    packed = (f"packed weights {_mb(stored)} stored once, shared by {sets} programs" if sharing == sets else
              f"packed weights {_mb(stored)} stored, {sharing} of {sets} programs sharing set 0's")
    w_stored, w_per = int(reuse["weight_bytes_stored"]), int(reuse["weight_bytes_per_program"])
    return (f"dynamic_input: {sets} shape sets; {packed} ({_mb(per)} if stored per program); other weights "
            f"{_mb(w_stored)} stored ({_mb(w_per)} per program); pipelines shared: {reuse['pipelines_shared']} of "
            f"{reuse['pipelines']}; SHPV section {_mb(int(reuse['shpv_bytes']))} "
            f"({_mb(int(reuse['variant_referenced_bytes']))} of the other sets' "
            f"{_mb(int(reuse['variant_payload_bytes']))} stored as references to set 0)")


def pick(sets: Sequence[Tuple[ShapeSet, Any]], fits: Callable[[Any], bool], given: Sequence[Sequence[int]]) -> int:
    """The first set whose runtime takes arrays of the shapes `given` (``fits(runtime)``, which
    applies inference's layout rules); none: InputError listing the allowed sets."""
    for k, (_, runtime) in enumerate(sets):
        if fits(runtime):
            return k
    allowed = "; ".join(f"set {k}: {describe(s)}" for k, (s, _) in enumerate(sets))
    raise InputError(f"inference: input shape(s) {describe(given)} match none of the model's config(dynamic_input) "
                     f"shape sets ({allowed}; 4-D inputs in NCHW, or NHWC as data_format allows)")


def per_set_text(kind: str, sets: Sequence[Tuple[ShapeSet, Any]]) -> str:
    """Each set's report under a heading."""
    blocks = [f"==== {kind}, dynamic_input set {k}: inputs {describe(s)} ====\n{report}"
              for k, (s, report) in enumerate(sets)]
    return "\n\n".join(blocks)


def memory_summary(sets: Sequence[Tuple[ShapeSet, Mapping[str, Any]]], reuse: Mapping[str, Any]) -> str:
    """The lines under the per-set memory reports: the runtime arena is the largest set's (one
    program runs at a time), and what the sets share in the blob."""
    arenas = [int(r["arena_bytes"]) for _, r in sets]
    k = arenas.index(max(arenas))
    first = sets[0][1]
    total = int(first["weight_bytes"]) + int(first["other_bytes"]) + max(arenas) + max(int(r["io_bytes"]) for _, r in sets)
    return (f"activation arena the runtime needs: {_mb(max(arenas))}, the max over the {len(sets)} shape sets (set "
            f"{k}; one program runs at a time, so the sets share one arena)\n"
            f"device memory for all sets: {_mb(total)} (weights {_mb(int(first['weight_bytes']))} once, the rest of the "
            f"{_mb(int(first['blob_bytes']))} blob, the largest arena and I/O buffers); each set's report above counts "
            f"its program as if alone\n" + reuse_text(reuse))
