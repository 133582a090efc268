"""Byte surgery on .npub blobs for tests, following docs/blob_format.md: read the section table,
replace one section's payload (later sections move to keep the 64-byte alignment), and re-seal:
recompute the header's file size and XXH3-128 checksum, as a buggy or hostile writer would
(tests/fuzz/fuzz_blob_load.cc). ``reseal`` leaves the SDIG section alone, so an edited or spliced
section no longer matches its recorded digest; ``reseal_with_digests`` rewrites SDIG too (a writer
forging both), so an edit reaches the section decoders behind it.
"""

from __future__ import annotations

import struct
from typing import Dict, List, NamedTuple

from npuc import _npuc

HEADER_SIZE = 128
CHECKSUM_AT = 8
CHECKSUM_SIZE = 16
FILE_SIZE_AT = 24
SECTION_COUNT_AT = 36
SECTION_TABLE_AT = 40
ALIGNMENT = 64
#: kind (fourcc), flags, offset, size, reserved
ENTRY = struct.Struct("<4sIQQQ")


class Section(NamedTuple):
    kind: str
    flags: int
    offset: int
    size: int


def section_table(blob: bytes) -> List[Section]:
    """The section table, in file order."""
    (count,) = struct.unpack_from("<I", blob, SECTION_COUNT_AT)
    (table,) = struct.unpack_from("<Q", blob, SECTION_TABLE_AT)
    out = []
    for i in range(count):
        kind, flags, offset, size, _ = ENTRY.unpack_from(blob, table + i * ENTRY.size)
        out.append(Section(kind.decode("latin-1"), flags, offset, size))
    return out


def payloads(blob: bytes) -> Dict[str, bytes]:
    """Every section's payload by kind."""
    return {s.kind: bytes(blob[s.offset:s.offset + s.size]) for s in section_table(blob)}


def with_section(blob: bytes, kind: str, payload: bytes) -> bytes:
    """`blob` with section `kind`'s payload replaced (header not re-sealed)."""
    sections = section_table(blob)
    (table,) = struct.unpack_from("<Q", blob, SECTION_TABLE_AT)
    head = bytearray(blob[:sections[0].offset])
    body = bytearray()
    pos = sections[0].offset
    for i, s in enumerate(sections):
        data = payload if s.kind == kind else blob[s.offset:s.offset + s.size]
        pad = (-pos) % ALIGNMENT
        body += b"\0" * pad
        pos += pad
        ENTRY.pack_into(head, table + i * ENTRY.size, s.kind.encode("latin-1"), s.flags, pos, len(data), 0)
        body += data
        pos += len(data)
    return bytes(head + body)


def flip_byte(blob: bytes, kind: str, at: int = -1) -> bytes:
    """`blob` with one byte of section `kind` inverted (`at` indexes its payload; default the last)."""
    s = next(s for s in section_table(blob) if s.kind == kind)
    pos = s.offset + (at % s.size)
    return blob[:pos] + bytes([blob[pos] ^ 0xFF]) + blob[pos + 1:]


def reseal(blob: bytes) -> bytes:
    """Header file size and checksum recomputed; SDIG (the section digests) left as it was."""
    out = bytearray(blob)
    struct.pack_into("<Q", out, FILE_SIZE_AT, len(out))
    covered = bytes(out[:CHECKSUM_AT]) + bytes(out[CHECKSUM_AT + CHECKSUM_SIZE:])
    out[CHECKSUM_AT:CHECKSUM_AT + CHECKSUM_SIZE] = _npuc.xxh3_128(covered)
    return bytes(out)


def reseal_with_digests(blob: bytes) -> bytes:
    """SDIG rewritten for the current payloads, then the header re-sealed."""
    entries = [s for s in section_table(blob) if s.kind != "SDIG"]
    sdig = struct.pack("<I", len(entries)) + b"".join(
        s.kind.encode("latin-1") + _npuc.xxh3_128(bytes(blob[s.offset:s.offset + s.size])) for s in entries)
    return reseal(with_section(blob, "SDIG", sdig))
