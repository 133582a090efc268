"""The ``npuc`` command line (also ``python -m npuc``).

Exit codes: 0 success; 1 a user error (an npuc error, bad arguments, a missing file), reported as
one line on stderr; 2 an internal error (a bug in npuc: please report it; set NPUC_DEBUG=1 for
the traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sys
import traceback
import warnings
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np

from npuc.blob_sections import format_section_rows, section_rows
from npuc.cli_common import (EXIT_INTERNAL_ERROR, EXIT_OK, EXIT_USER_ERROR, UserError, add_blobs_arg,
                              parse_shape)
from npuc.messages import capped, shown_path


class _Parser(argparse.ArgumentParser):
    """argparse exits with status 2 on bad arguments; npuc reserves 2 for internal errors."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # One line, like every other user error (the usage block would make it ten): the message
        # and where the usage is.
        self.exit(EXIT_USER_ERROR, f"{self.prog}: error: {capped(' '.join(message.split()))} "
                                   f"(see {self.prog} --help)\n")


def _add_model_args(p: argparse.ArgumentParser, what: str = "path of the .onnx model") -> None:
    p.add_argument("model", help=what)
    add_blobs_arg(p)
    p.add_argument(
        "--input-size",
        type=parse_shape,
        action="append",
        default=[],
        metavar="SHAPE",
        help="full shape of one input (e.g. 1,3,224,224), fixing dynamic dims; repeat per input, in order",
    )
    p.add_argument(
        "--input-name",
        action="append",
        default=[],
        metavar="NAME",
        help="name of the input the matching --input-size refers to (default: inputs in model order)",
    )
    p.add_argument(
        "--output-name",
        action="append",
        default=[],
        metavar="NAME",
        help="cut the model so this tensor is an output; repeat for several",
    )


def _load(args: argparse.Namespace):
    from npuc.model_files import load_model

    if not os.path.isfile(args.model):
        raise UserError(f"model file {shown_path(args.model)} does not exist")
    return load_model(args.model, args.input_name, args.input_size, args.output_name, args.blobs)


def cmd_demo(args: argparse.Namespace) -> int:
    from npuc.demo import run_demo

    return run_demo(out_dir=args.out, quantize=not args.no_quantize)


def _fmt_io(info: Dict) -> str:
    return f"{info['name']}: {info['dtype']}[{','.join(str(d) for d in info['shape'])}]"


def _human(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}"
    return str(int(n))


# ---------------------------------------------------------------------- commands


def cmd_info(args: argparse.Namespace) -> int:
    return cmd_info_for(args.model, args.input_name, args.input_size, args.output_name, args.blobs)


def cmd_info_for(
    path: str,
    input_names: Sequence[str] = (),
    input_sizes: Sequence[Sequence[int]] = (),
    output_names: Sequence[str] = (),
    blobs: Optional[str] = None,
) -> int:
    """Prints what ``npuc info`` prints for the ONNX, Darknet ``.cfg``, Caffe ``.prototxt`` or TFLite model,
    or ``.npub`` blob, at `path`."""
    from npuc.model_files import load_model

    if not os.path.isfile(path):
        raise UserError(f"model file {shown_path(path)} does not exist")
    if path.endswith(".npub"):
        if input_names or input_sizes or output_names or blobs:
            raise UserError("--input-size/--input-name/--output-name/--blobs apply to models; a .npub blob is fixed")
        model = _print_blob_header(path)
    else:
        model = load_model(path, input_names, input_sizes, output_names, blobs)
        print(f"model: {path}")
    _print_model(model)
    return EXIT_OK


def _print_blob_header(path: str):
    """Prints a blob's metadata and section table; returns its Model."""
    import npuc

    # The one reader: header first, then checksum, section digests and every section, read once.
    compiled = npuc._npuc.load_compiled(path)
    model, meta = compiled.model, compiled.meta
    options = meta["options"]
    print(f"blob: {path} ({os.path.getsize(path)} bytes)")
    print(f"format: {meta['format_version']} (written by {meta['producer']})")
    print(f"soc: {meta['soc']}")
    print(f"quantized: {_blob_precision(compiled)}")
    print(f"model digest: {meta['model_digest']}")
    print("options:")
    for key in sorted(options):
        print(f"  {key} = {options[key]}")
    program = meta.get("program")  # the lowered program (TASK/PIPE/CPUO/NWGT), verified on load
    if program:
        print(f"program: {program['tasks']} tasks ({program['npu_tasks']} NPU, {program['cpu_ops']} CPU ops, "
              f"{program['converts']} converts), {program['pipelines']} unique pipelines (reuse rate "
              f"{program['reuse_rate']:.2f}), {program['total_tiles']} tiles, "
              f"{program['packed_weight_bytes']} bytes of packed NPU weights")
    if compiled.shape_variants:  # config(dynamic_input): set 0 is the model below, the others in SHPV
        sets = [compiled] + list(compiled.shape_variants)
        print(f"shape sets (dynamic_input): {len(sets)}")
        for k, c in enumerate(sets):
            print(f"  set {k}: " + ", ".join(_fmt_io(d) for d in c.model.inputs) + " -> "
                  + ", ".join(_fmt_io(d) for d in c.model.outputs))
    print("sections:")  # with their sizes: where a blob's bytes go (issue #23)
    file_bytes = os.path.getsize(path)
    for line in format_section_rows(section_rows(meta["sections"], file_bytes, meta["format_version"]), file_bytes):
        print(line)
    return model


def _blob_precision(compiled) -> str:
    """'yes (int8: N nodes, fp16: M nodes)' for a quantized blob, 'no (fp16 on the NPU)' for a float one."""
    if not compiled.quantized:
        return "no (float build: the NPU runs it in fp16)"
    precisions = compiled.simulator().node_precisions
    counts: Dict[str, int] = {}
    for precision in precisions.values():
        counts[precision] = counts.get(precision, 0) + 1
    split = ", ".join(f"{p}: {n} node{'s' if n != 1 else ''}" for p, n in sorted(counts.items(), key=lambda kv: kv[0] != "int8"))
    return f"yes ({split})"


def _print_model(model) -> None:
    print("inputs:")
    for d in model.inputs:
        print(f"  {_fmt_io(d)}")
    print("outputs:")
    for d in model.outputs:
        print(f"  {_fmt_io(d)}")
    print(f"nodes: {model.num_nodes}")
    print("ops:")
    for op, count in sorted(model.op_histogram.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {op:<24}{count:>6}")
    print(f"MACs: {model.macs} ({_human(model.macs)})")
    print(f"params: {model.params} ({_human(model.params)}, {model.param_bytes} bytes)")


def _safe_filename(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).strip("._") or "output"


def cmd_run(args: argparse.Namespace) -> int:
    import npuc
    from npuc.input_dtype import coerce_input
    from npuc.output_files import JobInputs, atomic_output, check_folder, make_folder, refuse_output

    arrays = []
    for path in args.input:
        if not os.path.isfile(path):
            raise UserError(f"input file {shown_path(path)} does not exist")
        try:
            arrays.append(np.load(path, allow_pickle=False))
        except (ValueError, OSError) as e:
            raise UserError(f"cannot read {shown_path(path)} as a .npy array: {capped(str(e), 300)}") from None
    inputs = JobInputs()
    inputs.add(args.model, "the blob" if args.model.endswith(".npub") else "the loaded model")
    inputs.add_all((path, f"--input {i}") for i, path in enumerate(args.input))
    with contextlib.ExitStack() as stack:
        if args.model.endswith(".npub"):  # as Toolkit.load_blob + inference: the NPU simulator
            tk = stack.enter_context(npuc.Toolkit())
            model = _load_blob_for_run(args, tk)
            run = lambda: tk.inference(inputs=arrays)  # noqa: E731
        else:
            model = _load(args)
            if len(arrays) != len(model.inputs):
                raise UserError(f"the model has {len(model.inputs)} input(s), got {len(arrays)} --input file(s)")
            feeds = [coerce_input(a, info, f"--input {shown_path(path)}")
                     for a, info, path in zip(arrays, model.inputs, args.input)]
            run = lambda: npuc.Runtime(model).run(feeds, max_run_bytes=args.max_run_bytes)  # noqa: E731
        paths = [os.path.join(args.output_dir, _safe_filename(info["name"]) + ".npy") if args.output_dir else None
                 for info in model.outputs]
        for path in filter(None, paths):  # every file checked before the model runs
            refuse_output(path, "an output array", inputs)
        if args.output_dir:
            check_folder(args.output_dir, "the output arrays")
        outputs = run()
    if args.output_dir:
        make_folder(args.output_dir, "the output arrays")
    for info, value, path in zip(model.outputs, outputs, paths):
        line = f"{info['name']}: {value.dtype}[{','.join(str(d) for d in value.shape)}]"
        if path:
            with atomic_output(path, "an output array", inputs) as tmp:
                np.save(tmp, value)
            line += f" -> {path}"
        print(line)
    return EXIT_OK


def _load_blob_for_run(args: argparse.Namespace, tk: Any) -> Any:
    """Loads the blob into `tk` (verified before use, like every reader of a blob) with the run
    memory cap; returns its model."""
    if not os.path.isfile(args.model):
        raise UserError(f"model file {shown_path(args.model)} does not exist")
    if args.input_name or args.input_size or args.output_name:
        raise UserError("--input-size/--input-name/--output-name/--blobs apply to models; a .npub blob is fixed")
    tk.load_blob(args.model)
    tk.init_runtime(max_run_bytes=args.max_run_bytes)
    return tk.model


def cmd_ops(args: argparse.Namespace) -> int:
    import npuc

    for op in npuc.supported_ops():
        print(op)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``npuc`` program."""
    import npuc

    parser = _Parser(prog="npuc", description="npuc: an open NPU model compiler toolchain.")
    parser.add_argument("--version", action="version", version=f"npuc {npuc.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("info", help="show a model's or a blob's inputs, outputs, ops, MACs and parameters",
                       description="Imports an ONNX model and prints its inputs, outputs, op histogram, "
                       "MACs (Conv/ConvTranspose/Gemm/MatMul) and parameter count. For a .npub blob it first "
                       "verifies the file and prints its metadata: format version, producer, SoC, whether it "
                       "is quantized (int8/fp16 node counts), model digest, build options and sections.")
    _add_model_args(p, "path of the .onnx model, Caffe .prototxt (with --blobs), .tflite or .npub blob")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("run", help="run a model on .npy inputs (FP32 host runtime; a blob on the NPU simulator)",
                       description="Runs an ONNX model on the FP32 host runtime, or a .npub blob on the NPU "
                       "simulator (as Toolkit.load_blob + inference), and prints each output's name, dtype and "
                       "shape; with --output-dir, writes <output name>.npy files.")
    _add_model_args(p, "path of the .onnx model, Caffe .prototxt (with --blobs), .tflite or .npub blob")
    p.add_argument("--input", action="append", default=[], required=True, metavar="FILE.npy",
                   help="one .npy array per model input, in model input order")
    p.add_argument("--output-dir", metavar="DIR", help="write each output as DIR/<name>.npy")
    p.add_argument("--max-run-bytes", metavar="BYTES",
                   help="refuse the run, before allocating, when its outputs and activations need more "
                   "(e.g. 512M, 8G; default: the NPUC_MAX_RUN_BYTES environment variable, else no cap; the "
                   "memory the machine has available is always checked)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("demo", help="convert a bundled example end to end (the main job)",
                       description="Generates a small ShuffleNet-style model (Focus stem, channel shuffles, "
                       "LayerNorm head), converts it for rk3588 with INT8 quantization on a generated "
                       "calibration set, prints the optimization report and eval_perf, writes the blob "
                       "and a perf PNG, and checks the result against FP32 (cosine).")
    p.add_argument("--out", default="npuc-demo", help="folder for the model, blob and plot (default: %(default)s)")
    p.add_argument("--no-quantize", action="store_true", help="build without INT8 quantization (fp16 NPU)")
    p.set_defaults(func=cmd_demo)

    from npuc.cli_compile import add_commands

    add_commands(sub, _add_model_args)
    from npuc.cli_analyze import add_command as add_analyze

    add_analyze(sub, _add_model_args)

    p = sub.add_parser("ops", help="list the ops npuc supports",
                       description="Prints every op npuc can import and run, one per line.")
    p.set_defaults(func=cmd_ops)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the ``npuc`` program; returns its exit code."""
    try:
        from npuc.errors import NpucError
    except ImportError as e:  # the extension is not built or does not load
        print(f"npuc: error: cannot load the npuc extension module ({e}); build it first", file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    argv = list(sys.argv[1:] if argv is None else argv)
    for i, arg in enumerate(argv):  # undecodable bytes arrive as lone surrogates (surrogateescape)
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            print(f"npuc: error: argument {i + 1} ({capped(ascii(arg))}) is not valid UTF-8 text", file=sys.stderr)
            return EXIT_USER_ERROR
    parser = build_parser()
    args = parser.parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.func
    try:
        with _diagnostics_after_success():
            return command(args)
    except (NpucError, UserError) as e:
        print(f"npuc: error: {_one_line(str(e))}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:  # `npuc ... | head` closed the pipe: not an error, and nothing more to say
        sys.stdout = open(os.devnull, "w")  # so the interpreter's final flush does not complain either
        return EXIT_OK
    except OSError as e:  # a path the user gave: missing, a folder, a file where a folder goes, no permission
        print(f"npuc: error: {_one_line(str(e))}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as e:  # noqa: BLE001 - everything else is a bug in npuc
        if os.environ.get("NPUC_DEBUG"):
            traceback.print_exc()
        print(f"npuc: internal error: {type(e).__name__}: {_one_line(str(e))} "
              "(please report it; NPUC_DEBUG=1 shows the traceback)", file=sys.stderr)
        return EXIT_INTERNAL_ERROR


@contextlib.contextmanager
def _diagnostics_after_success() -> Iterator[None]:
    """Holds npuc's log records and Python warnings back while a command runs and prints them only
    when it succeeds: a failing command says one line, its error (a warning that led to it, e.g. a
    layer kept in FP16 before a later refusal, would otherwise come first and look like the cause)."""
    held: List[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = held.append  # type: ignore[method-assign]
    # npuc's loggers have no handlers of their own unless asked (verbose): their warnings reach
    # stderr through logging's last-resort handler, which this holds back instead.
    last_resort, logging.lastResort = logging.lastResort, handler
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            yield
    finally:
        logging.lastResort = last_resort
    for record in held:
        print(record.getMessage(), file=sys.stderr)
    for w in caught:
        print(warnings.formatwarning(w.message, w.category, w.filename, w.lineno).rstrip(), file=sys.stderr)


def _one_line(text: str) -> str:
    return capped(" ".join(text.split()))


if __name__ == "__main__":
    sys.exit(main())
