#!/usr/bin/env python3
"""Writes npuc's bad-job corpus: hostile command lines and files, each with the one line npuc must say.

    python3 tests/bad_inputs/make_jobs.py OUT_DIR

make_corpus.py holds broken *models*; this module holds broken *jobs*: an ``npuc`` command line
together with the files it reads (YAML configs, dataset lists, images, ``.npy`` samples, models,
links). Each case is a folder ``OUT_DIR/<name>/`` with those files and ``job.json`` (the argv,
relative to the folder, and what must happen). tests/python/test_bad_jobs.py runs every case and
asserts, as a new user would see it:

* exit status 1 and exactly one line on stderr, matching the case's regular expression, no longer
  than ``MAX_MESSAGE_CHARS``;
* every file the case wrote is byte-identical afterwards (npuc never writes over its inputs) and no
  file appears outside the case's ``out/`` folder;
* the run stays under the case's time and memory bounds (hostile files cost bounded resources).

Every file is generated here (nothing is a hand-edited binary) so the corpus is reviewed as code
and can be regenerated anywhere; the CLI fuzz target uses the argvs as seeds.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import struct
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Union

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_corpus import conv_model  # noqa: E402  (a valid Conv+Relu model, input x: [1,3,8,8])

#: Longest one-line error the CLI may print for any case (a hostile value must not be echoed whole).
MAX_MESSAGE_CHARS = 600


@dataclass(frozen=True)
class Link:
    """A link to another file of the case: ``kind`` is "sym" or "hard"."""

    target: str
    kind: str = "sym"


@dataclass(frozen=True)
class Sparse:
    """A file of ``size`` bytes that starts with ``head`` and is zeros (a hole) after it."""

    size: int
    head: bytes = b""


#: A file's content: bytes built from the case folder (for configs naming absolute paths), a link or
#: a sparse file.
FileSpec = Union[Callable[[Path], bytes], Link, Sparse]


@dataclass(frozen=True)
class BadJob:
    name: str  # folder name of the case
    what: str  # one line: what is hostile about it
    files: Dict[str, FileSpec]
    argv: Sequence[str]  # npuc's arguments, run from the case folder
    message: str  # regular expression the one stderr line must match (re.search)
    defect: int  # the issue-15 defect it reproduces
    max_seconds: float = 30.0
    max_rss_growth_mb: float = 1024.0
    isolate: bool = False  # run in a fresh interpreter (memory-bound cases measure its peak RSS)
    stdin: bytes = b""
    extra: Dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------- file builders


def _const(data: bytes) -> Callable[[Path], bytes]:
    return lambda _root: data


def _model(_root: Path) -> bytes:
    return conv_model()


def _npy(array: np.ndarray) -> Callable[[Path], bytes]:
    def build(_root: Path) -> bytes:
        out = io.BytesIO()
        np.save(out, array, allow_pickle=False)
        return out.getvalue()

    return build


def _sample(_root: Path) -> bytes:
    return _npy(np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32))(_root)


def _text(text: str) -> Callable[[Path], bytes]:
    return lambda _root: text.encode()


def _yaml(body: Callable[[Path], str]) -> Callable[[Path], bytes]:
    return lambda root: body(root).encode()


def _convert_yaml(name: str = "m", model: str = "model.onnx", extra: str = "") -> str:
    return f"models:\n  name: {name}\n  platform: onnx\n  model_file_path: {model}\n{extra}"


def _png(width: int, height: int) -> Callable[[Path], bytes]:
    """A 1-bit grayscale PNG of width x height, all zero: ~height*width/8 raw bytes deflate to a few
    hundred KB, so a tiny file declares a gigapixel image (a decompression bomb)."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    def build(_root: Path) -> bytes:
        row = b"\x00" + b"\x00" * ((width + 7) // 8)  # filter byte + packed bits
        packer = zlib.compressobj(9)
        body = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
        ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", body) + chunk(b"IEND", b"")

    return build


def _laughs(levels: int = 9, width: int = 9) -> Callable[[Path], bytes]:
    """YAML "billion laughs": each anchor is a list of `width` aliases of the previous one."""

    def build(_root: Path) -> bytes:
        lines = ['a0: &a0 ["lol"]']
        for i in range(1, levels + 1):
            lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
        lines.append(_convert_yaml(extra=f"  configs:\n    custom_string: *a{levels}\n"))
        return "\n".join(lines).encode() + b"\n"

    return build


def _huge_resize_model(_root: Path) -> bytes:
    """Resize of x [1,3,8,8] by scales [1,1,4330,4330]: a float32 [1,3,34640,34640] output of 13.4
    GiB, under the 16 GiB tensor cap, so only a check of planned run memory stops it before numpy
    fails."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    scales = numpy_helper.from_array(np.array([1, 1, 4330, 4330], np.float32), "scales")
    roi = numpy_helper.from_array(np.array([], np.float32), "roi")
    node = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="resize", mode="nearest")
    graph = helper.make_graph([node], "huge", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 34640, 34640])],
                              initializer=[roi, scales])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


_DATASET = {"model.onnx": _model, "s0.npy": _sample, "dataset.txt": _text("s0.npy\n")}
_CONVERT = ["convert", "model.onnx", "-t", "rk3588"]


# ---------------------------------------------------------------------------- the cases

JOBS: List[BadJob] = [
    # --- 1: never write over an input of the job, however it is spelled
    BadJob("out_is_model", "convert -o the model itself", {"model.onnx": _model}, [*_CONVERT, "-o", "model.onnx"],
           r"model\.onnx", defect=1),
    BadJob("out_is_model_dotted", "convert -o the model spelled ../c/./model.onnx",
           {"c/model.onnx": _model}, ["convert", "c/model.onnx", "-t", "rk3588", "-o", "c/../c/./model.onnx"],
           r"model\.onnx", defect=1),
    BadJob("out_is_model_symlink", "convert -o a symlink to the model",
           {"model.onnx": _model, "link.npub": Link("model.onnx")}, [*_CONVERT, "-o", "link.npub"],
           r"link\.npub", defect=1),
    BadJob("out_is_model_hardlink", "convert -o a hard link to the model",
           {"model.onnx": _model, "hard.npub": Link("model.onnx", "hard")}, [*_CONVERT, "-o", "hard.npub"],
           r"hard\.npub", defect=1),
    BadJob("out_is_dataset_list", "convert --quantize -o the dataset list", dict(_DATASET),
           [*_CONVERT, "--quantize", "--dataset", "dataset.txt", "-o", "dataset.txt"], r"dataset\.txt", defect=1),
    BadJob("out_is_calibration_npy", "convert --quantize -o a sample the dataset lists", dict(_DATASET),
           [*_CONVERT, "--quantize", "--dataset", "dataset.txt", "-o", "s0.npy"], r"s0\.npy", defect=1),
    BadJob("perf_csv_is_model", "perf --csv the model", {"model.onnx": _model}, ["perf", "model.onnx", "--csv", "model.onnx"],
           r"model\.onnx", defect=1),
    BadJob("perf_json_is_model", "perf --json the model", {"model.onnx": _model},
           ["perf", "model.onnx", "--json", "model.onnx"], r"model\.onnx", defect=1),
    BadJob("perf_plot_is_model", "perf --plot the model", {"model.onnx": _model},
           ["perf", "model.onnx", "--plot", "model.onnx"], r"model\.onnx", defect=1),
    # --- 2: a YAML alias bomb is refused quickly, and the message does not echo its expansion
    BadJob("yaml_billion_laughs", "9 levels of 9 aliases (387M strings expanded)",
           {"model.onnx": _model, "cfg.yml": _laughs()}, ["convert", "-i", "cfg.yml", "-t", "rk3588", "-o", "out"],
           r"cfg\.yml", defect=2, max_seconds=10, max_rss_growth_mb=200, isolate=True),
    # --- 3: a 4 GiB file is not a blob, and finding out reads only its header
    BadJob("blob_4gib_zeros", "a 4 GiB sparse file of zeros named .npub", {"big.npub": Sparse(4 << 30)},
           ["info", "big.npub"], r"big\.npub", defect=3, max_seconds=10, max_rss_growth_mb=200, isolate=True),
    BadJob("blob_4gib_magic", "a 4 GiB sparse file starting with the blob magic", {"big.npub": Sparse(4 << 30, b"NPUB\x01\x00")},
           ["perf", "big.npub"], r"big\.npub", defect=3, max_seconds=10, max_rss_growth_mb=200, isolate=True),
    # --- 4: YAML names stay inside the output folder and are unique
    BadJob("yaml_name_parent", "name: ../../escaped", {"model.onnx": _model, "cfg.yml": _yaml(lambda r: _convert_yaml("../../escaped"))},
           ["convert", "-i", "cfg.yml", "-t", "rk3588", "-o", "out"], r"cfg\.yml.*name", defect=4),
    BadJob("yaml_name_absolute", "name: an absolute path", {"model.onnx": _model,
           "cfg.yml": _yaml(lambda r: _convert_yaml(str(r / "abs" / "escaped")))},
           ["convert", "-i", "cfg.yml", "-t", "rk3588", "-o", "out"], r"cfg\.yml.*name", defect=4),
    BadJob("yaml_name_duplicate", "two models named m", {"model.onnx": _model, "cfg.yml": _text(
        "models:\n  - {name: m, platform: onnx, model_file_path: model.onnx}\n"
        "  - {name: m, platform: onnx, model_file_path: model.onnx}\n")},
        ["convert", "-i", "cfg.yml", "-t", "rk3588", "-o", "out"], r"cfg\.yml.*\bm\b", defect=4),
    # --- 5: non-finite values are refused, naming them
    BadJob("calibration_all_nan", "every calibration value is NaN", {"model.onnx": _model, "dataset.txt": _text("s0.npy\n"),
           "s0.npy": _npy(np.full((1, 3, 8, 8), np.nan, np.float32))},
           [*_CONVERT, "--quantize", "--dataset", "dataset.txt", "-o", "out/m.npub"], r"s0\.npy", defect=5),
    BadJob("mean_nan", "--mean nan,nan,nan", {"model.onnx": _model}, [*_CONVERT, "--mean", "nan,nan,nan", "-o", "out/m.npub"],
           r"(?i)nan|finite", defect=5),
    BadJob("std_inf_yaml", "configs: std_values: [.inf, 1, 1]", {"model.onnx": _model, "cfg.yml": _yaml(
        lambda r: _convert_yaml(extra="  configs:\n    std_values: [.inf, 1, 1]\n"))},
        ["convert", "-i", "cfg.yml", "-t", "rk3588", "-o", "out"], r"std_values", defect=5),
    # --- 7: an image is measured from its header and refused before it is decoded
    BadJob("png_bomb_14000", "a 14000x14000 PNG calibration sample", {"model.onnx": _model, "dataset.txt": _text("big.png\n"),
           "big.png": _png(14000, 14000)}, [*_CONVERT, "--quantize", "--dataset", "dataset.txt", "-o", "out/m.npub"],
           r"big\.png", defect=7, max_seconds=15, max_rss_growth_mb=300, isolate=True),
    BadJob("png_wrong_size_10000", "a 10000x10000 PNG for an 8x8 input", {"model.onnx": _model, "dataset.txt": _text("big.png\n"),
           "big.png": _png(10000, 10000)}, [*_CONVERT, "--quantize", "--dataset", "dataset.txt", "-o", "out/m.npub"],
           r"big\.png", defect=7, max_seconds=15, max_rss_growth_mb=300, isolate=True),
    # --- 8: a run that needs more memory than allowed is refused before it allocates
    # Without --max-run-bytes the bound is the memory the machine has free now, so on a machine with
    # more than 13.4 GiB free this run would be allowed: the case sets a cap below it.
    BadJob("run_output_13gib", "Resize to a 13.4 GiB output, with a 4 GiB cap",
           {"huge.onnx": _huge_resize_model, "x.npy": _sample},
           ["run", "huge.onnx", "--input", "x.npy", "--max-run-bytes", "4G"], r"GiB|bytes", defect=8, max_seconds=20, max_rss_growth_mb=500,
           isolate=True),
    # --- 9: one input-dtype rule
    BadJob("run_complex_input", "a complex64 .npy for a float32 input", {"model.onnx": _model,
           "x.npy": _npy(np.ones((1, 3, 8, 8), np.complex64))}, ["run", "model.onnx", "--input", "x.npy"], r"complex", defect=9),
    # --- 11: wrong types and out-of-range numbers get a message, not a traceback
    BadJob("yaml_name_int", "name: 123", {"model.onnx": _model, "cfg.yml": _yaml(lambda r: _convert_yaml("123"))},
           ["convert", "-i", "cfg.yml", "-t", "rk3588", "-o", "out"], r"name", defect=11),
    BadJob("yaml_model_path_list", "model_file_path: [a, b]", {"model.onnx": _model,
           "cfg.yml": _yaml(lambda r: _convert_yaml(model="[model.onnx, model.onnx]"))},
           ["convert", "-i", "cfg.yml", "-t", "rk3588", "-o", "out"], r"model_file_path", defect=11),
    BadJob("yaml_tag_unconvertible", "a tagged scalar PyYAML cannot convert (`!!float 1 2`: ValueError, not YAMLError)",
           {"model.onnx": _model, "cfg.yml": _yaml(lambda r: _convert_yaml(extra="  configs:\n    std_values: !!float 1 2\n"))},
           ["convert", "-i", "cfg.yml", "-t", "rk3588", "-o", "out"], r"cfg\.yml: not valid YAML", defect=11),
    BadJob("argv_not_utf8", "an argument of undecodable bytes (a surrogate-escaped str)", {"model.onnx": _model},
           [*_CONVERT, "-o", "out/\udcffm.npub"], r"argument 6 .* is not valid UTF-8", defect=11),
    BadJob("warning_then_error", "a layer kept in FP16 (a logged warning), then a refused input",
           {"model.onnx": _model, "dataset.txt": _text("s0.npy\n"), "s0.npy": _sample, "bad.npy": _text("not npy")},
           ["analyze", "model.onnx", "-t", "rk3588", "--dataset", "dataset.txt", "--inputs", "bad.npy",
            "--hybrid-layer", "conv"], r"bad\.npy", defect=11),
    BadJob("input_size_huge", "--input-size 99999999999999999999,3,32,32", {"model.onnx": _model},
           [*_CONVERT, "--input-size", "99999999999999999999,3,32,32", "-o", "out/m.npub"], r"99999999999999999999|input.size",
           defect=11),
]


# ---------------------------------------------------------------------------- writing


def _write_file(root: Path, rel: str, spec: FileSpec) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(spec, Link):
        target = root / spec.target
        if spec.kind == "sym":
            path.symlink_to(os.path.relpath(target, path.parent))
        else:
            os.link(target, path)
    elif isinstance(spec, Sparse):
        with open(path, "wb") as f:
            f.write(spec.head)
            f.truncate(spec.size)
    else:
        path.write_bytes(spec(root))


def write_job(case: BadJob, out_dir: Path) -> Path:
    """Writes one case's folder (files in declaration order, links after their targets)."""
    root = out_dir / case.name
    root.mkdir(parents=True, exist_ok=True)
    for rel, spec in sorted(case.files.items(), key=lambda kv: isinstance(kv[1], Link)):
        _write_file(root, rel, spec)
    (root / "job.json").write_text(json.dumps({
        "what": case.what, "argv": list(case.argv), "message": case.message, "defect": case.defect,
        "max_seconds": case.max_seconds, "max_rss_growth_mb": case.max_rss_growth_mb, "isolate": case.isolate,
    }, indent=1) + "\n")
    return root


def write_jobs(out_dir: Path) -> List[Path]:
    return [write_job(case, out_dir) for case in JOBS]


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    paths = write_jobs(args.out_dir)
    print(f"wrote {len(paths)} bad jobs to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
