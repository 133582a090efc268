"""``Toolkit.eval_memory``: the device memory a compiled model needs, in RKNN-Toolkit2's terms.

RKNN prints "Total Weight Memory", "Total Internal Tensor Memory" and "Total Memory"; npuc reports
the same from the ``.npub`` blob (``cpp/memory``, ``docs/memory_plan.md``):

* ``weight_bytes``: every constant as the NPU stores it (int8 weights packed with channel padding,
  int32 biases, FP16 in a float build), each tensor 64-byte aligned;
* ``arena_bytes``: the one activation arena of the memory plan (the blob's MPLN section), with
  ``lower_bound_bytes`` (max over steps of the live bytes) and ``arena_ratio``; the bound is for
  the node order the compiler chose (``order``: ``exporter`` or the memory-aware candidate that
  beat it), next to ``exporter_order_bound_bytes`` (the exporter's order, without in-place Concats)
  and ``order_bound_ratio``; ``in_place_concats`` names the Concats whose inputs are slices of
  their output's buffer (each ``tensors`` row's ``within``);
* ``io_bytes``: the graph's input and output buffers (separate from the arena);
* ``other_bytes``: the rest of the blob (graph, tasks, quantization tables, plan, metadata);
* ``total_bytes``: the sum of the four; ``tensors`` and ``weights`` hold per-tensor detail.
"""

from __future__ import annotations

import os
from typing import Optional, Union

from npuc._npuc import eval_memory_blob

__all__ = ["MemoryReport", "blob_memory_report"]

PathLike = Union[str, "os.PathLike[str]"]


class MemoryReport(dict):
    """The result of ``eval_memory``: a dict of the numbers; ``str()`` is the printable report."""

    def __str__(self) -> str:
        return str(self["text"])

    def summary(self) -> dict:
        """The headline numbers only (no per-tensor lists, no text)."""
        return {k: v for k, v in self.items() if k not in ("tensors", "weights", "text")}


def blob_memory_report(path: PathLike, soc: Optional[str] = None, use_stored_plan: bool = True) -> MemoryReport:
    """The memory report of the blob at ``path``.

    Args:
        path: a ``.npub`` file.
        soc: refuse a blob built for another SoC (None: accept the blob's own).
        use_stored_plan: report the blob's MPLN plan (True) or plan the activations afresh.

    Raises:
        BlobError: the blob does not verify, or its plan is inconsistent with its graph.
    """
    return MemoryReport(eval_memory_blob(os.fspath(path), soc, use_stored_plan))
