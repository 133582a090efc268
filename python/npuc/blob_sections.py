"""What each section of a ``.npub`` blob holds, and the section table as rows with sizes: what
``npuc info`` prints for a blob (layout: docs/blob_format.md)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

#: One line per section kind npuc writes: what its bytes are.
SECTION_CONTENTS: Dict[str, str] = {
    "META": "target SoC, build options, model digest",
    "GRPH": "the graph: values (dtype, shape, where a constant's bytes are), nodes, attributes",
    "WGHT": "float constants the NPU does not pack (biases, CPU-op weights, other constants)",
    "QUNT": "quantization plan: scales and zero points, node precisions",
    "TASK": "lowered program: tasks and their tensors",
    "PIPE": "lowered program: unique NPU pipelines",
    "CPUO": "lowered program: ops on the CPU and why",
    "NWGT": "packed NPU weights (int8 or fp16, NC1HWC2): the only copy of the MAC weights",
    "MPLN": "activation memory plan",
    "CSCH": "multi-core schedule: the cores and split of every task, per usable core count",
    "SHPV": "config(dynamic_input): the other input-shape sets' programs, bytes equal to set 0's as references",
    "SDIG": "digest of every other section",
}


#: Format 1.2 kept every weight in FP32 in WGHT and the packed copy in NWGT beside it.
SECTION_CONTENTS_1_2: Dict[str, str] = {
    **SECTION_CONTENTS,
    "WGHT": "every float constant, FP32 (format 1.2: the NPU weights too, beside their NWGT copy)",
    "NWGT": "packed NPU weights (int8 or fp16, NC1HWC2): a copy of WGHT's MAC weights",
}


def section_rows(sections: Sequence[Mapping[str, Any]], file_bytes: int,
                 format_version: str = "2.0") -> List[Dict[str, Any]]:
    """The section table (``meta["sections"]``) in file order, each row with its share of the file
    (``fraction``, 0..1) and what it holds in a blob of ``format_version`` (``contents``; unknown
    kinds: "not decoded by this npuc")."""
    contents = SECTION_CONTENTS_1_2 if format_version.startswith("1.") else SECTION_CONTENTS
    rows = []
    for s in sections:
        rows.append({
            "kind": s["kind"],
            "required": bool(s["required"]),
            "size": int(s["size"]),
            "offset": int(s["offset"]),
            "fraction": int(s["size"]) / file_bytes if file_bytes else 0.0,
            "contents": contents.get(s["kind"], "not decoded by this npuc"),
        })
    return rows


def format_section_rows(rows: Sequence[Mapping[str, Any]], file_bytes: int) -> List[str]:
    """``npuc info``'s lines: kind, required/optional, bytes, share of the file, offset, contents;
    then the bytes the sections leave to the header, table and alignment padding."""
    lines = [f"  {r['kind']:<6}{'required' if r['required'] else 'optional':<10}{r['size']:>10} bytes "
             f"({100 * r['fraction']:5.1f}%) at offset {r['offset']}  {r['contents']}" for r in rows]
    overhead = file_bytes - sum(r["size"] for r in rows)
    lines.append(f"  header, section table and padding: {overhead} bytes")
    return lines
