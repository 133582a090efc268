"""The compile-side commands of ``npuc``: ``convert``, ``perf`` and ``socs``.

``npuc convert`` has two forms that produce byte-identical blobs for the same settings:
flags (``npuc convert model.onnx -t rk3588 -o out.npub --quantize --dataset ds.txt``) and
RKNN ``rknn_convert``'s YAML (``npuc convert -i model_config.yml -t rk3588 -o OUTDIR``).
"""

from __future__ import annotations

import argparse
import io
import os
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from npuc.cli_common import (ConfigFileError, add_blobs_arg, fit_width,
                              parse_floats, parse_shape, terminal_width)
from npuc.dataset import dataset_files
from npuc.output_files import JobInputs, check_folder, make_folder, refuse_output
from npuc.errors import ConfigError
from npuc.messages import shown, shown_key, shown_path

__all__ = ["ConvertJob", "add_commands", "run_convert"]


@dataclass
class ConvertJob:
    """Everything one conversion needs; both command-line forms are parsed into this."""

    model: str
    soc: str
    output: str
    quantize: bool = False
    dataset: Optional[str] = None
    inputs: List[str] = field(default_factory=list)
    input_size_list: List[List[int]] = field(default_factory=list)
    outputs: List[str] = field(default_factory=list)
    config: Dict[str, Any] = field(default_factory=dict)
    verify: bool = False
    blobs: Optional[str] = None  # the .caffemodel of a Caffe .prototxt model
    platform: str = ""  # the YAML's platform ("tflite" reads the model as TFLite whatever its name)
    batch: Optional[int] = None  # build(rknn_batch_size); None: the batch of input_size_list, else 1
    core_mask: Optional[str] = None  # RKNN core mask name: the predicted FPS uses its cores


def run_convert(job: ConvertJob, quiet: bool = False) -> Dict[str, Any]:
    """Loads, builds and exports `job`; returns the summary (passes fired, split, FPS, blob size)."""
    import npuc
    from npuc.model_files import darknet_weights_for, is_caffe_model, is_darknet, is_tflite

    sink = io.StringIO()
    with contextlib.redirect_stdout(sink) if quiet else contextlib.nullcontext():
        with npuc.Toolkit() as tk:
            tk.config(target_platform=job.soc, **job.config)
            if job.platform == "tflite" or is_tflite(job.model):
                if job.inputs or job.input_size_list or job.outputs:
                    raise ConfigFileError("--input-size/--input-name/--output-name apply to ONNX models; a TFLite "
                                          "model fixes its input shapes and outputs")
                tk.load_tflite(model=job.model)
            elif is_darknet(job.model):
                tk.load_darknet(model=job.model, weight=darknet_weights_for(job.model))
            elif is_caffe_model(job.model):
                if job.inputs or job.input_size_list or job.outputs:
                    raise ConfigFileError("--input-size/--input-name/--output-name apply to ONNX models; a Caffe "
                                          "prototxt fixes its input shapes and outputs")
                tk.load_caffe(model=job.model, blobs=job.blobs)
            else:
                if job.blobs:
                    raise ConfigFileError("--blobs applies to a Caffe .prototxt model")
                tk.load_onnx(model=job.model, inputs=job.inputs or None,
                             input_size_list=job.input_size_list or None, outputs=job.outputs or None)
            tk.build(do_quantization=job.quantize, dataset=job.dataset, verify=job.verify, rknn_batch_size=job.batch)
            if job.core_mask is not None:
                tk.init_runtime(core_mask=job.core_mask)
            perf = tk.eval_perf(is_print=False)
            make_folder(os.path.dirname(job.output) or ".", "the blob")
            tk.export_blob(job.output)
            report = tk.optimization_report or {}
            partition = tk.partition_report
            tk_batch = tk.built_batch
    return {
        "blob": job.output,
        "blob_bytes": os.path.getsize(job.output),
        "fired": report.get("fired", []),
        "nodes": (report.get("nodes_before"), report.get("nodes_after")),
        "perf": perf,
        "partition": partition,
        "batch": tk_batch,
    }


def _print_summary(summary: Dict[str, Any]) -> None:
    perf = summary["perf"]
    s = perf.summary
    before, after = summary["nodes"]
    fired = ", ".join(f"{name} x{count}" for name, count in summary["fired"]) or "none"
    print("== npuc convert summary")
    print(f"graph:      {before} -> {after} nodes; passes fired: {fired}")
    print(f"placement:  {s['npu_tasks']} NPU tasks, {s['cpu_ops']} CPU ops, {s['handovers']} NPU<->CPU hand-overs")
    for n in summary["partition"]["cpu_nodes"]:
        print(f"  CPU: {n['node']} ({n['op_type']}): {n['reason']}: {n['detail']}")
    cores = f", {s['cores']} NPU cores" if s["cores"] > 1 else ""
    if summary.get("batch", 1) > 1:
        n = summary["batch"]
        print(f"predicted:  {s['total_time_us']:.1f} us per batch of {n} = {s['fps'] * n:.1f} images/s on {s['soc']} "
              f"({s['dtype']}{cores})")
    elif getattr(perf, "shape_sets", None):  # config(dynamic_input): one line per set
        for k, (shapes, r) in enumerate(perf.shape_sets):
            print(f"predicted:  set {k} {shapes}: {r.summary['total_time_us']:.1f} us/frame = {r.summary['fps']:.1f} "
                  f"FPS on {s['soc']} ({s['dtype']}{cores})")
    else:
        print(f"predicted:  {s['total_time_us']:.1f} us/frame = {s['fps']:.1f} FPS on {s['soc']} ({s['dtype']}{cores})")
    print(f"blob:       {summary['blob']} ({summary['blob_bytes']} bytes)")


def _parse_op_target(items: Sequence[str]) -> Dict[str, str]:
    targets = {}
    for item in items:
        name, sep, where = item.partition("=")
        if not sep or where not in ("cpu", "npu") or not name:
            raise ConfigFileError(f"--op-target {shown(item)}: expected NAME_OR_OPTYPE=cpu or =npu")
        targets[name] = where
    return targets


def _job_from_flags(args: argparse.Namespace) -> ConvertJob:
    if not args.output:
        raise ConfigFileError("-o/--output is required (the .npub file to write)")
    config: Dict[str, Any] = {}
    if args.algorithm:
        config["quantized_algorithm"] = args.algorithm
    if args.dtype:
        config["quantized_dtype"] = args.dtype
    if args.method:
        config["quantized_method"] = args.method
    if args.mean:
        config["mean_values"] = [args.mean]
    if args.std:
        config["std_values"] = [args.std]
    if args.op_target:
        config["op_target"] = _parse_op_target(args.op_target)
    if args.optimization_level is not None:
        config["optimization_level"] = args.optimization_level
    if args.dynamic_input:
        config["dynamic_input"] = args.dynamic_input
    if args.single_core:
        config["single_core_mode"] = True
    if args.quantize and not args.dataset:
        raise ConfigFileError("--quantize needs --dataset (a dataset.txt listing calibration samples)")
    return ConvertJob(model=args.model, soc=args.target, output=args.output, quantize=args.quantize,
                      dataset=args.dataset, inputs=args.input_name, input_size_list=args.input_size,
                      outputs=args.output_name, config=config, verify=args.verify, blobs=args.blobs,
                      batch=args.batch, core_mask=args.core_mask)


#: Keys of an rknn_convert-style YAML ``models`` entry, and of its ``subgraphs``.
#: ``core_mask`` is npuc's (an RKNN core mask name, as ``npuc convert --core-mask``): the cores the
#: predicted FPS is for; ``configs: {single_core_mode: true}`` builds for one core.
YAML_MODEL_KEYS = ("name", "platform", "model_file_path", "subgraphs", "quantize", "dataset", "rknn_batch_size",
                   "configs", "core_mask")
YAML_SUBGRAPH_KEYS = ("input_size_list", "inputs", "outputs")


def _expect(ok: bool, where: str, expected: str, value: Any) -> None:
    """ConfigFileError ``<where>: expected <expected>, got <type> <value>`` unless `ok`."""
    if not ok:
        raise ConfigFileError(f"{where}: expected {expected}, got {type(value).__name__} {shown(value)}")


def _string_list(where: str, value: Any) -> List[str]:
    if value is None:
        return []
    _expect(isinstance(value, list) and all(isinstance(v, str) for v in value), where, "a list of strings", value)
    return list(value)


def _check_configs(configs: Dict[str, Any], where: str) -> None:
    """The values of a ``configs`` entry, by Toolkit.config's own rules, named by the entry."""
    import npuc

    try:
        npuc.Toolkit().config(**configs)
    except npuc.NpucError as e:
        raise ConfigFileError(f"{where}: {e}") from None


def _jobs_from_yaml(path: str, soc: str, out_dir: str) -> List[ConvertJob]:
    from npuc.shapes import check_shapes
    from npuc.toolkit import CONFIG_KEYS
    from npuc.yaml_config import load_yaml_config

    doc = load_yaml_config(path, ConfigFileError)
    if not isinstance(doc, dict) or "models" not in doc:
        raise ConfigFileError(f"{path}: expected a top-level 'models' entry")
    entries = doc["models"] if isinstance(doc["models"], list) else [doc["models"]]
    if not entries:  # converting nothing and exiting 0 would hide a config mistake
        raise ConfigFileError(f"{path}: 'models' is empty; list at least one model")
    base = Path(path).resolve().parent
    jobs = []
    for i, entry in enumerate(entries):
        where = f"{path}: models[{i}]"
        if not isinstance(entry, dict):
            raise ConfigFileError(f"{where}: expected a mapping")
        unknown = sorted(shown_key(k) for k in set(entry) - set(YAML_MODEL_KEYS))
        if unknown:
            raise ConfigFileError(f"{where}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(YAML_MODEL_KEYS)}")
        for required in ("name", "model_file_path"):
            if required not in entry:
                raise ConfigFileError(f"{where}: missing '{required}'")
        _expect(isinstance(entry["name"], str), f"{where}.name", "a string", entry["name"])  # _blob_path: the rest
        _expect(isinstance(entry["model_file_path"], str) and entry["model_file_path"] != "",
                f"{where}.model_file_path", "a non-empty string", entry["model_file_path"])
        platform = entry.get("platform", "onnx")
        _expect(isinstance(platform, str), f"{where}.platform", "a string", platform)
        if platform not in ("onnx", "tflite"):
            raise ConfigFileError(f"{where}: platform {shown(platform)} is not supported (onnx or tflite)")
        quantize = entry.get("quantize", False)
        _expect(isinstance(quantize, bool), f"{where}.quantize", "true or false", quantize)
        dataset = entry.get("dataset")
        _expect(dataset is None or isinstance(dataset, str), f"{where}.dataset", "a path (a string)", dataset)
        batch = entry.get("rknn_batch_size")
        _expect(batch is None or isinstance(batch, int) and not isinstance(batch, bool), f"{where}.rknn_batch_size",
                "an integer (the batch the blob takes)", batch)
        sub = entry.get("subgraphs") or {}
        _expect(isinstance(sub, dict), f"{where}.subgraphs", "a mapping", sub)
        unknown = sorted(shown_key(k) for k in set(sub) - set(YAML_SUBGRAPH_KEYS))
        if unknown:
            raise ConfigFileError(f"{where}.subgraphs: unknown key(s) {', '.join(unknown)}; "
                                  f"valid keys: {', '.join(YAML_SUBGRAPH_KEYS)}")
        try:
            sizes = check_shapes(sub.get("input_size_list") or [], "input_size_list")
        except ConfigError as e:
            raise ConfigFileError(f"{where}.subgraphs.{e}") from None
        configs = entry.get("configs") or {}
        _expect(isinstance(configs, dict), f"{where}.configs", "a mapping", configs)
        configs = dict(configs)
        unknown = sorted(shown_key(k) for k in set(configs) - set(CONFIG_KEYS))
        if unknown:
            raise ConfigFileError(f"{where}.configs: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(CONFIG_KEYS)}")
        for key in ("mean_values", "std_values"):  # rknn_convert writes one list for a one-input model
            if key in configs and isinstance(configs[key], list) and configs[key] \
                    and not isinstance(configs[key][0], (list, tuple)):
                configs[key] = [configs[key]]
        configs.pop("target_platform", None)
        _check_configs(configs, f"{where}.configs")
        mask = entry.get("core_mask")
        if mask is not None:
            from npuc.core_mask import core_mask_value

            try:
                core_mask_value(mask, f"{where}.core_mask")
            except ConfigError as e:
                raise ConfigFileError(str(e)) from None
            mask = str(mask)
        jobs.append(ConvertJob(
            core_mask=mask,
            model=str(base / entry["model_file_path"]), soc=soc,
            output=_blob_path(out_dir, entry["name"], where), quantize=quantize,
            dataset=str(base / dataset) if dataset else None,
            inputs=_string_list(f"{where}.subgraphs.inputs", sub.get("inputs")),
            input_size_list=sizes,
            outputs=_string_list(f"{where}.subgraphs.outputs", sub.get("outputs")), config=configs,
            platform=platform, batch=batch))
    _refuse_duplicate_outputs(path, jobs)
    return jobs


def _blob_path(out_dir: str, name: str, where: str) -> str:
    """``OUTDIR/<name>.npub`` for a YAML model `name`: the one rule keeping every blob in OUTDIR.

    A name that is not a plain file name (empty, a NUL byte, an absolute path, a path separator,
    ``.`` or ``..``) would put the blob elsewhere, so it is refused.
    """
    if "\0" in name:
        problem = "contains a NUL byte"
    elif not name.strip():
        problem = "is empty"
    elif os.path.isabs(name) or "/" in name or "\\" in name:
        problem = "is a path"
    elif name in (".", ".."):
        problem = "names a folder"
    else:
        return str(Path(out_dir) / f"{name}.npub")
    raise ConfigFileError(f"{where}: name {shown(name)} {problem}; it must be a plain file name, "
                          "as the blob is written to OUTDIR/<name>.npub")


def _refuse_duplicate_outputs(path: str, jobs: Sequence[ConvertJob]) -> None:
    """Two models with one name would write one blob, the second replacing the first."""
    first: Dict[str, int] = {}
    for i, job in enumerate(jobs):
        if job.output in first:
            raise ConfigFileError(f"{path}: models[{first[job.output]}] and models[{i}] have the same name "
                                  f"'{Path(job.output).stem}': both would be written to {job.output}")
        first[job.output] = i


def _refuse_outputs_over_inputs(jobs: Sequence[ConvertJob], config_file: Optional[str]) -> None:
    """Checks every blob path against every file the conversion reads (each job's model, dataset
    list and the files it lists, the YAML config), and the folder it goes in, before anything is built."""
    inputs = JobInputs()
    if config_file:
        inputs.add(config_file, "the config file")
    for job in jobs:
        inputs.add(job.model, "the loaded model")
        inputs.add_all(dataset_files(job.dataset))
    for job in jobs:
        refuse_output(job.output, "the blob", inputs)
        check_folder(os.path.dirname(job.output) or ".", "the blob")


def cmd_convert(args: argparse.Namespace) -> int:
    if bool(args.model) == bool(args.config_file):
        raise ConfigFileError("give either MODEL.onnx or -i CONFIG.yml")
    jobs = (_jobs_from_yaml(args.config_file, args.target, args.output or ".") if args.config_file
            else [_job_from_flags(args)])
    for job in jobs:
        if not os.path.isfile(job.model):
            raise ConfigFileError(f"model file {shown_path(job.model)} does not exist")
    _refuse_outputs_over_inputs(jobs, args.config_file)
    for job in jobs:
        _print_summary(run_convert(job, quiet=not args.verbose))
    return 0


def cmd_perf(args: argparse.Namespace) -> int:
    import npuc
    from npuc.model_files import darknet_weights_for, is_darknet, load_model
    from npuc.perf import PerfReport, check_output_paths, eval_perf, timeline_path

    if not os.path.isfile(args.model):
        raise ConfigFileError(f"model file {shown_path(args.model)} does not exist")
    inputs = JobInputs()
    inputs.add(args.model, "the loaded model")
    if is_darknet(args.model):
        inputs.add(darknet_weights_for(args.model), "the weights of the loaded model")
    if args.blobs:
        inputs.add(args.blobs, "the weights of the loaded model")
    check_output_paths(inputs, csv=args.csv, json=args.json, plot=args.plot)  # before any work
    compiled = None
    if args.model.endswith(".npub"):
        if args.input_size:
            raise ConfigFileError("--input-size applies to an ONNX model; a .npub has fixed shapes")
        compiled = npuc._npuc.load_compiled(args.model)
        model, soc, optimize = compiled.model, args.soc or compiled.soc, False
        dtype = "int8" if compiled.quantized else "fp16"
    else:
        model = load_model(args.model, input_sizes=args.input_size, blobs=args.blobs)
        soc, dtype, optimize = args.soc or "rk3588", args.dtype, True
    if args.compare_socs:
        print(f"{'SoC':<10}{'time (us)':>12}{'FPS':>10}{'NPU tasks':>11}{'CPU ops':>9}{'DDR KB':>10}")
        for name in npuc._npuc.soc_names():
            try:
                s = eval_perf(model, name, dtype=dtype, optimize=optimize).summary
            except npuc.NpucError as e:  # e.g. an SoC without fp16: say so, keep comparing
                print(f"{name:<10}  n/a: {e}")
                continue
            print(f"{name:<10}{s['total_time_us']:>12.1f}{s['fps']:>10.1f}{s['npu_tasks']:>11}{s['cpu_ops']:>9}"
                  f"{s['ddr_bytes_per_frame'] / 1024:>10.1f}")
        return 0
    from npuc.core_mask import cores_for_mask

    own_blob = compiled is not None and npuc._npuc.soc_profile(soc)["name"] == compiled.soc
    single = args.single_core or (own_blob and compiled.options.single_core_mode)
    cores = 0 if args.core_mask is None else cores_for_mask(
        args.core_mask, soc, int(npuc._npuc.soc_profile(soc)["npu_cores"]), single)
    if own_blob:
        if args.single_core and not compiled.options.single_core_mode:
            cores = 1
        report = PerfReport(compiled.eval_perf("", cores))  # the blob's own program, task by task
    else:
        report = eval_perf(model, soc, dtype=dtype, optimize=optimize, single_core_mode=single, cores=cores)
    report.inputs = inputs
    print(fit_width(str(report), None if args.wide else terminal_width()))
    if own_blob and compiled.shape_variants:  # config(dynamic_input): every other set's program too
        from npuc.dynamic_input import describe

        for k, v in enumerate(compiled.shape_variants, start=1):
            print(f"\n==== dynamic_input set {k}: inputs {describe([i['shape'] for i in v.model.inputs])} ====")
            print(fit_width(str(PerfReport(v.eval_perf("", cores))), None if args.wide else terminal_width()))
    if args.csv:
        report.to_csv(args.csv)
    if args.json:
        report.to_json(args.json)
    if args.plot:
        report.plot(args.plot)
        if report.summary["cores"] > 1:
            report.plot_timeline(timeline_path(args.plot))
    return 0


def cmd_socs(args: argparse.Namespace) -> int:
    import npuc

    print(f"{'SoC':<10}{'aliases':<12}{'NPU cores':>10}{'clock MHz':>11}{'INT8 TOPS':>11}{'buffer KiB':>12}  {'dtypes':<31}quantized_dtype")
    for name in npuc._npuc.soc_names():
        p = npuc._npuc.soc_profile(name)
        print(f"{p['name']:<10}{','.join(p['aliases']) or '-':<12}{p['npu_cores']:>10}{p['clock_mhz']:>11}"
              f"{p['peak_tops'].get('int8', 0):>11.2f}{p['onchip_buffer_bytes'] // 1024:>12}  {', '.join(p['dtypes']):<31}"
              f"{', '.join(p['quantized_dtypes'])}")
    return 0


def add_commands(sub: Any, add_model_args: Any) -> None:
    """Adds convert, perf and socs to the ``npuc`` sub-command parser."""
    p = sub.add_parser("convert", help="compile an ONNX model into a .npub blob",
                       description="Optimizes, (optionally) quantizes and compiles an ONNX model for an SoC "
                       "and writes the .npub blob, then prints a one-screen summary. Either "
                       "`npuc convert MODEL.onnx -t SOC -o OUT.npub [options]` or "
                       "`npuc convert -i model_config.yml -t SOC -o OUTDIR` (rknn_convert's YAML).")
    p.add_argument("model", nargs="?", help="the .onnx model, Caffe .prototxt or .tflite (omit with -i)")
    add_blobs_arg(p)
    p.add_argument("-i", "--config-file", metavar="YAML", help="rknn_convert-style YAML config")
    p.add_argument("-t", "--target", required=True, metavar="SOC", help="target SoC, e.g. rk3588 (see `npuc socs`)")
    p.add_argument("-o", "--output", metavar="PATH", help="the .npub to write (a folder with -i)")
    p.add_argument("--quantize", action="store_true", help="INT8 quantization (needs --dataset)")
    p.add_argument("--dataset", metavar="TXT", help="dataset.txt: one calibration sample per line")
    p.add_argument("--algorithm", choices=["normal", "kl_divergence", "mmse", "percentile"],
                   help="how activation ranges are chosen from the calibration histograms (config "
                        "quantized_algorithm; default normal: min/max)")
    p.add_argument("--dtype", choices=["w8a8", "w8a16", "w16a16i", "w16a16i_dfp", "w4a16"],
                   help="quantized dtype (config quantized_dtype; default w8a8); each SoC builds the ones its "
                        "profile lists (`npuc socs`)")
    p.add_argument("--method", choices=["channel", "layer", "group32", "group64", "group128", "group256"],
                   help="weight scales per output channel, one per layer, or (w4a16) per group of N "
                        "elements (config quantized_method; default channel, w4a16 needs a group)")
    p.add_argument("--mean", type=parse_floats, metavar="M,M,M", help="per-channel mean of the input")
    p.add_argument("--std", type=parse_floats, metavar="S,S,S", help="per-channel std of the input")
    p.add_argument("--op-target", action="append", default=[], metavar="NAME=cpu|npu",
                   help="force a node (by name or op type) onto the CPU or the NPU; repeatable")
    p.add_argument("--optimization-level", type=int, choices=[0, 1, 2, 3],
                   help="graph passes to run: 0 none, 1-2 only exact ones, 3 all (default 3)")
    p.add_argument("--verify", action="store_true", help="check the optimized graph against the original")
    p.add_argument("--batch", type=int, metavar="N",
                   help="batch the blob takes (RKNN's rknn_batch_size, 1..32; ONNX models only)")
    add_core_args(p, "the predicted FPS is for those cores (the blob holds the schedule for every core count)")
    p.add_argument("-v", "--verbose", action="store_true", help="print the build reports too")
    p.add_argument("--dynamic-input", type=_shape_set, action="append", default=[], metavar="SHAPESET",
                   help="one input-shape set the blob takes (config dynamic_input): a full shape per input, "
                        "inputs separated by ';' (e.g. 1,3,224,224 or '1,3,48,320;1,10'); repeat per set, the "
                        "first set is the one calibration uses (ONNX models only)")
    p.add_argument("--input-size", type=_shape, action="append", default=[], metavar="SHAPE",
                   help="full shape of one input (e.g. 1,3,224,224); repeat per input")
    p.add_argument("--input-name", action="append", default=[], metavar="NAME",
                   help="the input --input-size refers to (default: the model's inputs in order); repeatable")
    p.add_argument("--output-name", action="append", default=[], metavar="NAME",
                   help="cut the model at this value, which becomes an output; repeatable")
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("perf", help="simulated per-layer NPU performance (eval_perf)",
                       description="Prints eval_perf's per-layer table, summary and op ranking for an ONNX "
                       "model or a .npub blob; --compare-socs estimates it on every SoC side by side.")
    p.add_argument("model", help="an .onnx model, a Caffe .prototxt, a .tflite or a .npub blob")
    add_blobs_arg(p)
    p.add_argument("--soc", help="SoC to cost on (default: the blob's, or rk3588 for ONNX)")
    p.add_argument("--dtype", default="int8", choices=["int8", "fp16"], help="NPU data type for an ONNX model")
    p.add_argument("--input-size", type=_shape, action="append", default=[], metavar="SHAPE",
                   help="full shape of one input of an ONNX model with dynamic dims (e.g. 1,3,640,640); "
                        "repeat per input")
    p.add_argument("--csv", metavar="FILE", help="also write the per-layer rows as CSV")
    p.add_argument("--json", metavar="FILE", help="also write the rows and the summary as JSON")
    p.add_argument("--plot", metavar="PNG", help="also draw the per-layer time and a roofline into a PNG")
    add_core_args(p, "place the program on those cores (default: all the SoC's)")
    p.add_argument("--compare-socs", action="store_true",
                   help="one summary line per SoC profile instead of the table")
    p.add_argument("--wide", action="store_true",
                   help="print the table's full lines (default: cut to $COLUMNS or the terminal width)")
    p.set_defaults(func=cmd_perf)

    p = sub.add_parser("socs", help="list the SoC profiles", description="Lists every SoC profile npuc knows.")
    p.set_defaults(func=cmd_socs)


def _shape_set(text: str) -> List[List[int]]:
    """``--dynamic-input``: one shape per input, separated by ``;`` (``1,3,48,320;1,10``)."""
    parts = text.split(";")
    if not all(p.strip() for p in parts):
        raise argparse.ArgumentTypeError(f"invalid shape set {shown(text)}: expected one shape per input separated "
                                         f"by ';', like 1,3,224,224 or 1,3,48,320;1,10")
    return [parse_shape(p) for p in parts]


def add_core_args(p: argparse.ArgumentParser, what: str) -> None:
    from npuc.core_mask import CORE_MASKS

    p.add_argument("--core-mask", choices=list(CORE_MASKS), metavar="MASK",
                   help=f"RKNN NPU core mask ({', '.join(CORE_MASKS)}; AUTO = one core): {what}")
    p.add_argument("--single-core", action="store_true",
                   help="config single_core_mode: build and cost for one NPU core")


def _shape(text: str) -> List[int]:

    return parse_shape(text)
