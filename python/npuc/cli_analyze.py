"""``npuc analyze``: per-layer accuracy of the INT8 (or FP16) build against FP32.

``npuc analyze MODEL.onnx -t SOC --dataset ds.txt --inputs a.npy [...] [--output-dir D]`` builds
the model as ``npuc convert --quantize`` would (optionally with ``--auto-hybrid`` or
``--hybrid-layer``), runs ``Toolkit.accuracy_analysis`` on the inputs and prints its table
(entire and single cosine / Euclidean distance / SQNR per layer) and the 10 layers with the worst
single cosine; the dumps and ``error_analysis.txt`` go to ``--output-dir`` (default
``./snapshot``), or nowhere with ``--no-dump``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
from typing import Any, Dict

from npuc.accuracy import worst_layers
from npuc.cli_common import EXIT_OK, UserError, fit_width, parse_floats, terminal_width
from npuc.messages import shown_path

__all__ = ["add_command", "cmd_analyze"]


def add_command(sub: Any, add_model_args: Any) -> None:
    """Adds ``analyze`` to the ``npuc`` sub-command parser."""

    p = sub.add_parser(
        "analyze", help="per-layer accuracy of the quantized model vs FP32 (accuracy_analysis)",
        description="Builds MODEL for SOC (INT8 from --dataset, or FP16 with --fp16), runs it on --inputs "
        "and prints, per layer, cosine / Euclidean distance / SQNR against FP32: 'entire' (end to end) and "
        "'single' (the layer alone on its FP32 inputs). Writes the per-tensor dumps and "
        "error_analysis.txt to --output-dir.")
    add_model_args(p)
    p.add_argument("-t", "--target", required=True, metavar="SOC", help="target SoC, e.g. rk3588")
    p.add_argument("--dataset", metavar="TXT", help="dataset.txt for calibration (required unless --fp16)")
    p.add_argument("--inputs", nargs="+", required=True, metavar="FILE",
                   help="one .npy or image per model input, in model input order (preprocessed like --dataset)")
    p.add_argument("--output-dir", default="./snapshot", metavar="DIR",
                   help="where the dumps and error_analysis.txt go (default: %(default)s)")
    p.add_argument("--no-dump", action="store_true",
                   help="write nothing: print the table and the worst layers only (the dumps hold every "
                        "activation three times: hundreds of MB for a large input)")
    p.add_argument("--fp16", action="store_true", help="analyse the FP16 build instead of INT8")
    p.add_argument("--algorithm", choices=["normal", "kl_divergence", "mmse", "percentile"],
                   help="how activation ranges are chosen (config quantized_algorithm; default normal)")
    p.add_argument("--method", choices=["channel", "layer"],
                   help="int8 weight scales per output channel or per layer (default channel)")
    p.add_argument("--mean", type=parse_floats, metavar="M,M,M", help="per-channel mean of the input")
    p.add_argument("--std", type=parse_floats, metavar="S,S,S", help="per-channel std of the input")
    p.add_argument("--auto-hybrid", action="store_true",
                   help="move layers whose single cosine is below --cos-thresh to FP16 first")
    p.add_argument("--cos-thresh", type=float, metavar="COS", help="auto hybrid threshold (default 0.98)")
    p.add_argument("--hybrid-layer", action="append", default=[], metavar="NODE",
                   help="keep this node in FP16; repeatable")
    p.add_argument("-v", "--verbose", action="store_true", help="print the build reports too")
    p.add_argument("--wide", action="store_true",
                   help="print the table's full lines (default: cut to $COLUMNS or the terminal width)")
    p.set_defaults(func=cmd_analyze)


def _config(args: argparse.Namespace) -> Dict[str, Any]:
    config: Dict[str, Any] = {"target_platform": args.target}
    optional = {"quantized_algorithm": args.algorithm, "quantized_method": args.method,
                "auto_hybrid_cos_thresh": args.cos_thresh, "hybrid_layers": args.hybrid_layer or None}
    config.update({k: v for k, v in optional.items() if v is not None})
    if args.mean is not None:
        config["mean_values"] = [args.mean]
    if args.std is not None:
        config["std_values"] = [args.std]
    return config


def cmd_analyze(args: argparse.Namespace) -> int:
    """Runs ``npuc analyze``; user errors raise (``main`` turns them into exit code 1)."""
    import npuc

    if not os.path.isfile(args.model):
        raise UserError(f"model file {shown_path(args.model)} does not exist")
    if not args.fp16 and not args.dataset:
        raise UserError("analyze needs --dataset for INT8 calibration (or --fp16)")
    if args.fp16 and (args.auto_hybrid or args.hybrid_layer):
        raise UserError("--auto-hybrid / --hybrid-layer apply to INT8 builds, not --fp16")
    for path in [args.dataset] if args.dataset else []:
        if not os.path.isfile(path):
            raise UserError(f"dataset file {shown_path(path)} does not exist")
    with npuc.Toolkit() as tk:
        tk.config(**_config(args))
        reports = io.StringIO()
        with contextlib.nullcontext() if args.verbose else contextlib.redirect_stdout(reports):
            tk.load_onnx(model=args.model, inputs=args.input_name or None,
                         input_size_list=args.input_size or None, outputs=args.output_name or None)
            tk.build(do_quantization=not args.fp16, dataset=args.dataset, auto_hybrid=args.auto_hybrid)
        if tk.auto_hybrid_report is not None and not args.verbose:
            print(tk.auto_hybrid_report.text)
        output_dir = None if args.no_dump else args.output_dir
        table = io.StringIO()
        with contextlib.redirect_stdout(table):
            tk.accuracy_analysis(inputs=args.inputs, output_dir=output_dir)
        print(fit_width(table.getvalue().rstrip("\n"), None if args.wide else terminal_width()))
        print(worst_layers(tk.accuracy_report.rows))
        if output_dir is not None:
            print(f"dumps and error_analysis.txt written to {os.path.abspath(output_dir)}")
    return EXIT_OK
