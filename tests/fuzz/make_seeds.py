#!/usr/bin/env python3
"""Writes the seed corpus of a fuzz target into a folder.

    python3 tests/fuzz/make_seeds.py onnx OUT_DIR

For ``onnx`` (fuzz_onnx_import): the bad-input corpus (tests/bad_inputs/make_corpus.py), the
shared real models small enough for the fuzzer's -max_len, and the ONNX backend node-test models
(one small model per op, so mutations start from every op npuc knows).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator, Optional

REPO_ROOT = Path(__file__).resolve().parents[2]
# Seeds above this size are skipped: libFuzzer would truncate them to -max_len (run.sh) anyway.
MAX_SEED_BYTES = 512 * 1024
DEFAULT_ONNX_TESTDATA = Path("/usr/share/libonnx-testdata/data/node")


def load_bad_input_corpus():
    spec = importlib.util.spec_from_file_location("make_corpus", REPO_ROOT / "tests" / "bad_inputs" / "make_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_corpus"] = module
    spec.loader.exec_module(module)
    return module


def shared_models_dir() -> Optional[Path]:
    env = os.environ.get("NPUC_SHARED_MODELS")
    if env:
        return Path(env) if Path(env).is_dir() else None
    for parent in REPO_ROOT.parents:
        if (parent / "shared" / "models").is_dir():
            return parent / "shared" / "models"
    return None


def onnx_node_testdata() -> Optional[Path]:
    """The libonnx-testdata node folder, found through dpkg when installed elsewhere."""
    try:
        listing = subprocess.run(["dpkg", "-L", "libonnx-testdata"], capture_output=True, text=True, check=False).stdout
        for line in listing.splitlines():
            if line.rstrip("/").endswith("/data/node"):
                return Path(line)
    except OSError:
        pass
    return DEFAULT_ONNX_TESTDATA if DEFAULT_ONNX_TESTDATA.is_dir() else None


def small_models(folder: Optional[Path], pattern: str) -> Iterator[Path]:
    if folder is None:
        return
    for path in sorted(folder.glob(pattern)):
        if path.stat().st_size <= MAX_SEED_BYTES:
            yield path


def write_onnx_seeds(out_dir: Path) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    corpus = load_bad_input_corpus()
    count = len(corpus.write_corpus(out_dir))
    (out_dir / "valid_conv_relu.onnx").write_bytes(corpus.conv_model())
    count += 1
    for path in small_models(shared_models_dir(), "*.onnx"):
        shutil.copyfile(path, out_dir / f"shared_{path.name}")
        count += 1
    for path in small_models(onnx_node_testdata(), "*/model.onnx"):
        shutil.copyfile(path, out_dir / f"node_{path.parent.name}.onnx")
        count += 1
    return count


def main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["onnx"])
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    count = write_onnx_seeds(args.out_dir)
    print(f"wrote {count} {args.kind} seeds to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
