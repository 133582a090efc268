"""What ``npuc info`` shows about a ``.npub`` blob: its metadata and its section table.

The metadata comes from ``npuc._npuc.load_blob`` (which verifies the whole file first); the section
table (kinds, flags, offsets, sizes) is read here from the header, following docs/blob_format.md,
because the loader does not return it. Reading it only after a successful load means the layout
has already been checked; the bounds are checked again so a misuse cannot read past the file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import List

__all__ = ["BlobSection", "read_section_table"]

#: Header fields used here (docs/blob_format.md, "Header"): section count and table offset.
_HEADER_SIZE = 128
_SECTION_COUNT_AT = 36
_SECTION_TABLE_AT = 40
#: One section table entry: kind (u32 fourcc), flags (u32), offset (u64), size (u64), reserved (u64).
_ENTRY = struct.Struct("<4sIQQQ")
_REQUIRED_FLAG = 1


@dataclass(frozen=True)
class BlobSection:
    """One entry of a blob's section table."""

    kind: str
    required: bool
    offset: int
    size: int


def read_section_table(path: str) -> List[BlobSection]:
    """The sections of the (already verified) blob at `path`, in table order.

    Raises:
        ValueError: the header or table does not fit in the file (not a blob load_blob accepted).
    """
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < _HEADER_SIZE or data[:4] != b"NPUB":
        raise ValueError(f"'{path}' is not an npuc blob")
    (count,) = struct.unpack_from("<I", data, _SECTION_COUNT_AT)
    (table,) = struct.unpack_from("<Q", data, _SECTION_TABLE_AT)
    if table + count * _ENTRY.size > len(data):
        raise ValueError(f"'{path}': the section table runs past the end of the file")
    sections = []
    for i in range(count):
        kind, flags, offset, size, _ = _ENTRY.unpack_from(data, table + i * _ENTRY.size)
        name = "".join(chr(b) if 32 <= b < 127 else f"\\x{b:02x}" for b in kind)
        sections.append(BlobSection(name, bool(flags & _REQUIRED_FLAG), offset, size))
    return sections
