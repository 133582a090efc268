#!/usr/bin/python3
"""Runs onnx.checker (full check, with shape inference) on each model given on the command line.

Exit status 0 when every model passes; otherwise prints the checker's message and exits 1.
"""
import sys

import onnx


def main(paths):
    failed = False
    for path in paths:
        try:
            onnx.checker.check_model(onnx.load(path), full_check=True)
        except Exception as e:  # the checker raises several exception types
            print(f"{path}: {e}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
