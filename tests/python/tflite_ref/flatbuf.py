"""Flatbuffer reader and writer for the TFLite schema subset of :mod:`.schema`.

:func:`read_model` parses a .tflite file into nested dicts holding exactly the fields present and
refuses any field outside the subset (so a rewrite cannot silently drop one); :func:`model_bytes` /
:func:`write_model` serialize such dicts with ``flatbuffers.Builder`` (Debian's python3-flatbuffers,
optional at import: ``flatbuffers`` is None without it). Kept apart from the graph edits and the
runners, which only see the dicts.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

try:
    import flatbuffers
    from flatbuffers import number_types as _fbn
except ImportError:  # callers decide whether that is a skip or a failure (NPUC_STRICT_DEPS)
    flatbuffers = None
    _fbn = None

from .schema import SCHEMA, UNIONS, Table, TFLiteFormatError

# Reader

class _Reader:
    def __init__(self, data: bytes, where: str) -> None:
        self.buf = memoryview(data)
        self.where = where

    def _u32(self, pos: int) -> int:
        if pos < 0 or pos + 4 > len(self.buf):
            raise TFLiteFormatError(f"{self.where}: offset {pos} is outside the file")
        return struct.unpack_from("<I", self.buf, pos)[0]

    def _deref(self, pos: int) -> int:
        return pos + self._u32(pos)

    def table(self, name: str, pos: int) -> Table:
        fields = SCHEMA.get(name)
        if fields is None:
            raise TFLiteFormatError(f"{self.where}: table {name} is outside the supported schema subset")
        vtable = pos - struct.unpack_from("<i", self.buf, pos)[0]
        vt_size = struct.unpack_from("<H", self.buf, vtable)[0]
        out: Table = {}
        for slot in range((vt_size - 4) // 2):
            off = struct.unpack_from("<H", self.buf, vtable + 4 + 2 * slot)[0]
            if off == 0:
                continue
            if slot >= len(fields) or fields[slot][1] is None:
                what = fields[slot][0] if slot < len(fields) else f"slot {slot}"
                raise TFLiteFormatError(f"{self.where}: {name}.{what} is present but not supported by this reader")
            fname, kind, arg = fields[slot]
            p = pos + off
            if kind == "str" or kind == "bytes":
                q = self._deref(p)
                n = self._u32(q)
                out[fname] = bytes(self.buf[q + 4:q + 4 + n])
            elif kind == "vec":
                q = self._deref(p)
                n = self._u32(q)
                out[fname] = np.frombuffer(self.buf, np.dtype("<" + arg), n, q + 4).copy()
            elif kind == "table":
                out[fname] = self.table(arg, self._deref(p))
            elif kind == "tvec":
                q = self._deref(p)
                out[fname] = [self.table(arg, self._deref(q + 4 + 4 * i)) for i in range(self._u32(q))]
            elif kind == "union":
                members = UNIONS[arg]
                t = out.get(fname + "_type", 0)
                if not 0 < t < len(members):
                    raise TFLiteFormatError(f"{self.where}: {name}.{fname} has union type {t} outside the subset")
                out[fname] = self.table(members[t], self._deref(p))
            else:
                out[fname] = struct.unpack_from("<" + kind, self.buf, p)[0]
        return out


def read_model(source: "str | bytes | Path") -> Table:
    """Parse a .tflite file (path or bytes) into nested dicts holding exactly the fields present."""
    if isinstance(source, (bytes, bytearray)):
        data, where = bytes(source), "<tflite bytes>"
    else:
        data, where = Path(source).read_bytes(), str(source)
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise TFLiteFormatError(f"{where}: not a TFLite flatbuffer (no TFL3 identifier)")
    r = _Reader(data, where)
    try:
        return r.table("Model", r._u32(0))
    except (struct.error, IndexError, KeyError, ValueError) as e:
        if isinstance(e, TFLiteFormatError):
            raise
        raise TFLiteFormatError(f"{where}: malformed flatbuffer ({type(e).__name__}: {e})") from e


def buffer_data_offsets(data: bytes) -> List[Optional[int]]:
    """File offset of each Buffer's data bytes (None for an empty buffer): for alignment checks."""
    r = _Reader(data, "<tflite bytes>")
    root = r._u32(0)
    out: List[Optional[int]] = []
    fields = [f[0] for f in SCHEMA["Model"]]
    vt = root - struct.unpack_from("<i", data, root)[0]
    slot = fields.index("buffers")
    off = struct.unpack_from("<H", data, vt + 4 + 2 * slot)[0]
    vec = r._deref(root + off)
    for i in range(r._u32(vec)):
        b = r._deref(vec + 4 + 4 * i)
        bvt = b - struct.unpack_from("<i", data, b)[0]
        boff = struct.unpack_from("<H", data, bvt + 4)[0] if struct.unpack_from("<H", data, bvt)[0] > 4 else 0
        if boff == 0:
            out.append(None)
            continue
        q = r._deref(b + boff)
        out.append(q + 4 if r._u32(q) else None)
    return out


# Writer

def _flags(fmt: str) -> Any:
    return {"b": _fbn.Int8Flags, "B": _fbn.Uint8Flags, "?": _fbn.BoolFlags, "h": _fbn.Int16Flags,
            "H": _fbn.Uint16Flags, "i": _fbn.Int32Flags, "I": _fbn.Uint32Flags, "q": _fbn.Int64Flags,
            "Q": _fbn.Uint64Flags, "f": _fbn.Float32Flags, "d": _fbn.Float64Flags}[fmt]


def _raw_vector(b: "flatbuffers.Builder", data: bytes, elem_size: int, align: int) -> int:
    # Builder has no aligned byte-vector helper: Buffer.data is force_align 16 in the schema (TFLite
    # and Arm NN may map weights in place), so place the bytes by hand after an aligned StartVector.
    n = len(data) // elem_size
    b.StartVector(elem_size, n, max(align, elem_size))
    b.head = b.head - len(data)
    b.Bytes[b.head:b.head + len(data)] = data
    return b.EndVector()


def _emit(b: "flatbuffers.Builder", name: str, t: Table) -> int:
    fields = SCHEMA[name]
    offsets: Dict[int, int] = {}
    for slot, (fname, kind, arg) in enumerate(fields):
        if fname not in t or kind is None:
            continue
        v = t[fname]
        if kind == "str":
            offsets[slot] = b.CreateString(bytes(v))
        elif kind == "bytes":
            offsets[slot] = _raw_vector(b, bytes(v), 1, arg)
        elif kind == "vec":
            a = np.asarray(v, dtype=np.dtype("<" + arg))
            offsets[slot] = _raw_vector(b, a.tobytes(), a.dtype.itemsize, a.dtype.itemsize)
        elif kind == "table":
            offsets[slot] = _emit(b, arg, v)
        elif kind == "tvec":
            children = [_emit(b, arg, x) for x in v]
            b.StartVector(4, len(children), 4)
            for o in reversed(children):
                b.PrependUOffsetTRelative(o)
            offsets[slot] = b.EndVector()
        elif kind == "union":
            offsets[slot] = _emit(b, UNIONS[arg][t[fname + "_type"]], v)
    b.StartObject(len(fields))
    # Scalars go in as stored, defaults included: presence is part of what the rewrite keeps.
    for slot, (fname, kind, arg) in enumerate(fields):
        if fname in t and kind is not None and len(kind) == 1:
            b.Prepend(_flags(kind), t[fname])
            b.Slot(slot)
    for slot, off in offsets.items():
        b.PrependUOffsetTRelative(off)
        b.Slot(slot)
    return b.EndObject()


def model_bytes(model: Table) -> bytes:
    """Serialize a model dict (as :func:`read_model` returns) with flatbuffers.Builder.

    The result is semantically identical to the source (same fields, values and presence), not
    byte-identical: the original converter orders and deduplicates differently. Emission is
    deterministic, so write(read(write(m))) == write(m) byte for byte."""
    if flatbuffers is None:
        raise ImportError("python3-flatbuffers is required to write TFLite files")
    size = 1024 + sum(len(buf.get("data", b"")) + 32 for buf in model.get("buffers", []))
    b = flatbuffers.Builder(size)
    root = _emit(b, "Model", model)
    b.Finish(root, file_identifier=b"TFL3")
    return bytes(b.Output())


def write_model(model: Table, path: "str | Path") -> None:
    Path(path).write_bytes(model_bytes(model))


def tables_equal(a: Any, b: Any) -> bool:
    """Deep equality of two parsed models (numpy vectors compared by dtype and value bits)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(tables_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(tables_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and a.tobytes() == b.tobytes())
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)  # bit-exact, NaN-safe
    return type(a) == type(b) and a == b
