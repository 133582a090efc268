"""A huge file that is not a blob is refused from its 128-byte header (issue #15, defect 3): a
sparse 4 GiB file of zeros, or one with the blob magic but a header that disagrees with the file's
size or holds a section table outside it, is refused in well under a second, with a BlobError naming
the file and the problem, and without the process's memory growing by the file's size. Every entry
point is measured in a fresh subprocess (peak RSS from resource.getrusage)."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

import npuc
from npuc import _npuc

PACKAGE_PARENT = str(Path(os.path.abspath(npuc.__file__)).parent.parent)
SIZE = 4 << 30  # 4 GiB, sparse: no disk blocks behind the zeros
MAX_SECONDS = 1.0
MAX_RSS_GROWTH_MB = 100

# Loads `path` through one entry point and prints {"seconds", "rss_growth_mb", "error"}.
PROBE = r"""
import json, resource, sys, time
import npuc
from npuc import _npuc
from npuc.cli import main as cli_main
entry, path = sys.argv[1], sys.argv[2]
calls = {
    "load_compiled": lambda: _npuc.load_compiled(path),
    "load_blob": lambda: npuc.Toolkit().load_blob(path),
    "npuc info": lambda: cli_main(["info", path]),
    "npuc perf": lambda: cli_main(["perf", path]),
}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
error = ""
try:
    code = calls[entry]()
    if code != 1:
        error = f"exit code {code}"
except npuc.BlobError as e:
    error = str(e)
seconds = time.perf_counter() - t0
growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps({"seconds": seconds, "rss_growth_mb": growth, "error": error}))
"""


def header(declared_size: int, count: int = 0, table: int = 128) -> bytes:
    """A 1.2 header: magic, version, zero checksum, the given size and section table."""
    h = bytearray(128)
    h[0:4] = b"NPUB"
    struct.pack_into("<HH", h, 4, 1, 2)
    struct.pack_into("<QII Q", h, 24, declared_size, 128, count, table)
    return bytes(h)


def sparse_file(path: Path, head: bytes) -> Path:
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(SIZE)
    return path


CASES: Dict[str, tuple] = {
    "zeros": (b"", "not an npuc blob"),
    "wrong size": (header(1000), f"size mismatch: the header says 1000 bytes, the file has {SIZE}"),
    "table outside": (header(SIZE, count=2, table=SIZE - 32),
                      f"section table at offset {SIZE - 32} (2 entries) lies outside the file"),
}


@pytest.fixture(scope="module")
def big_files(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    tmp = tmp_path_factory.mktemp("big")
    return {name: sparse_file(tmp / f"{name.replace(' ', '_')}.npub", head) for name, (head, _) in CASES.items()}


def probe(entry: str, path: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PACKAGE_PARENT, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", PROBE, entry, str(path)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", list(CASES))
def test_a_huge_non_blob_is_refused_from_its_header(big_files: Dict[str, Path], case: str) -> None:
    path = big_files[case]
    assert path.stat().st_size == SIZE
    want = CASES[case][1]
    with pytest.raises(npuc.BlobError, match=re.escape(f"cannot load blob '{path}': {want}")):
        _npuc.load_compiled(str(path))
    for entry in ("load_compiled", "load_blob", "npuc info", "npuc perf"):
        got = probe(entry, path)
        if entry.startswith("npuc"):
            assert got["error"] == "", (entry, got)  # exit code 1; the message went to stderr
        else:
            assert want in got["error"] and str(path) in got["error"], (entry, got)
        assert got["seconds"] < MAX_SECONDS, (entry, got)
        assert got["rss_growth_mb"] < MAX_RSS_GROWTH_MB, (entry, got)
