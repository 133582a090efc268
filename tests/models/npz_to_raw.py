#!/usr/bin/python3
"""Unpacks a reference .npz (keys 'input:<name>' / 'output:<name>') into raw files for C++ tests.

Usage: npz_to_raw.py REF.npz OUT_DIR

Writes OUT_DIR/<n>.bin (C-order, little-endian) per array and OUT_DIR/manifest.txt with one
line per array: "<input|output> <tensor name> <dtype> <file> <dim> <dim> ...".
"""
import os
import sys

import numpy as np


def main(npz_path, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    lines = []
    with np.load(npz_path) as ref:
        for i, key in enumerate(ref.files):
            kind, _, name = key.partition(":")
            arr = np.ascontiguousarray(ref[key])
            arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
            file = f"{i}.bin"
            arr.tofile(os.path.join(out_dir, file))
            dims = " ".join(str(d) for d in arr.shape)
            lines.append(f"{kind} {name} {arr.dtype.name} {file} {dims}".rstrip())
    with open(os.path.join(out_dir, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
