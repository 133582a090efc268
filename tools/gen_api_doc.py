#!/usr/bin/env python3
"""Writes docs/toolkit_api.md from the code: every public ``npuc.Toolkit`` name with its signature,
its docstring, and its RKNN-Toolkit2 equivalent, plus the ``config()`` keys and the exceptions.

Signatures and docstrings come from ``inspect`` on the importable package, so the page says what
the code does. The only hand-written part is the RKNN column (``RKNN_EQUIVALENT``); the script
fails when a public method has no entry there, so a new method cannot go undocumented.

Usage (from the repository root):
    PYTHONPATH=python /usr/bin/python3 tools/gen_api_doc.py [--check]
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import doc_generator
import npuc
from npuc.toolkit import CONFIG_KEYS, TARGET_PLATFORMS

REPO_ROOT = Path(__file__).resolve().parents[1]
DOC_PATH = REPO_ROOT / "docs" / "toolkit_api.md"

#: Public Toolkit name -> what RKNN-Toolkit2 calls it (and how it differs). "-" = npuc only.
RKNN_EQUIVALENT: Dict[str, str] = {
    "config": "`rknn.config(...)`: same keys; values are checked at once (see below)",
    "load_onnx": "`rknn.load_onnx(model, inputs, input_size_list, outputs)`; also takes the model's bytes",
    "load_pytorch": "`rknn.load_pytorch(model, input_size_list)`; also takes a live `nn.Module`",
    "build": "`rknn.build(do_quantization, dataset, rknn_batch_size, auto_hybrid)`; adds `verify`, `dump_dir`",
    "hybrid_quantization_step1": "`rknn.hybrid_quantization_step1(dataset, rknn_batch_size, proposal, "
    "proposal_dataset_size)`; adds `output_prefix`",
    "hybrid_quantization_step2": "`rknn.hybrid_quantization_step2(model_input, data_input, model_quantization_cfg)`",
    "accuracy_analysis": "`rknn.accuracy_analysis(inputs, output_dir, target=None)`; simulator only (no board)",
    "export_blob": "`rknn.export_rknn(export_path)`; writes a `.npub`",
    "export_rknn": "`rknn.export_rknn` (alias of `export_blob`)",
    "export_npub": "- (alias of `export_blob`)",
    "load_blob": "`rknn.load_rknn(path)`; verifies checksum, format and SoC first",
    "load_rknn": "`rknn.load_rknn` (alias of `load_blob`; reads `.npub`, not `.rknn`)",
    "init_runtime": "`rknn.init_runtime(target=None)`; only the host (target=None)",
    "inference": "`rknn.inference(inputs, data_format, inputs_pass_through)`",
    "eval_perf": "`rknn.eval_perf(is_print, fix_freq)`; simulated cycles, no board needed; adds plot, tuning cache",
    "eval_memory": "`rknn.eval_memory(is_print)`; planned from live ranges, no board needed",
    "export_onnx": "- (RKNN has no ONNX export of the built model)",
    "release": "`rknn.release()`",
    "model": "-",
    "get_config": "-",
    "partition_report": "- (RKNN prints the CPU fallbacks in its build log)",
    "blob_meta": "- (`rknn_query` on the board)",
    "optimization_report": "-",
    "auto_hybrid_report": "-",
    "calibration_timings": "-",
    "qdq_report": "- (RKNN re-quantizes a QAT model; npuc keeps its scales, docs/qdq_import.md)",
    "accuracy_report": "-",
    "get_sdk_version": "`rknn.get_sdk_version()`; npuc's version (no board runtime or driver to report)",
    "list_devices": "`rknn.list_devices()`; no boards: prints why, returns `([], [])`",
    "export_encrypted_rknn_model": "`rknn.export_encrypted_rknn_model(...)`; refused (NotSupportedError): blobs are "
    "checksummed, not encrypted",
    "codegen": "`rknn.codegen(output_path, inputs, overwrite)`; a C++ program on npuc's C++ runtime (CMake), "
    "not a board demo",
    "reg_custom_op": "`rknn.reg_custom_op(op)`, same object shape (`op_type`, `shape_infer`, `compute`)",
    "load_tflite": "`rknn.load_tflite(model, input_is_nchw)`; NCHW inside, 4-D outputs NHWC, quantized files keep their scales",
    "load_caffe": "`rknn.load_caffe(model, blobs, input_name)`",
    "load_darknet": "`rknn.load_darknet(model, weight)`; cfg + weights, raw [yolo]/[region] tensors as outputs",
    "load_tensorflow": "`rknn.load_tensorflow(tf_pb, ...)`; not yet (NotSupportedError)",
    "load_keras": "`rknn.load_keras(model)`; not yet (NotSupportedError)",
}


def _public_members() -> List[Tuple[str, Any]]:
    members = []
    for name, member in inspect.getmembers(npuc.Toolkit):
        if name.startswith("_"):
            continue
        if inspect.isfunction(member) or isinstance(member, property):
            members.append((name, member))
    return members


def _instance_attributes() -> List[Tuple[str, str]]:
    """Public attributes set in __init__ with a ``#:`` comment (the documented ones)."""
    source = inspect.getsource(npuc.Toolkit.__init__)
    found = re.findall(r"#: (.+?)\n\s+self\.([a-z][a-z_]*)\s*:", source)
    return [(name, doc) for doc, name in found]


def _aliases() -> Dict[str, str]:
    """alias name -> the method it is bound to (``export_rknn = export_blob``)."""
    out = {}
    for name, member in _public_members():
        if inspect.isfunction(member) and member.__name__ != name:
            out[name] = member.__name__
    return out


def _signature(name: str, member: Any) -> str:
    if isinstance(member, property):
        hint = inspect.signature(member.fget).return_annotation
        return f"Toolkit.{name}  (property) -> {_annotation(hint)}"
    sig = str(inspect.signature(member)).replace("(self, ", "(").replace("(self)", "()")
    return f"Toolkit.{name}{sig}"


def _annotation(hint: Any) -> str:
    return hint if isinstance(hint, str) else inspect.formatannotation(hint)


def _method_section(name: str, member: Any) -> str:
    function = member.fget if isinstance(member, property) else member
    doc = inspect.getdoc(function) or ""
    return "\n".join([
        f"### `{name}`",
        "",
        "```python",
        _signature(name, member),
        "```",
        "",
        f"RKNN-Toolkit2: {RKNN_EQUIVALENT[name]}",
        "",
        "```text",
        doc,
        "```",
        "",
    ])


HEADER = """# The Toolkit API (`npuc.Toolkit`)

Generated by `tools/gen_api_doc.py` from the code (signatures and docstrings via `inspect`; the
RKNN-Toolkit2 column is the only hand-written part). `help(npuc.Toolkit.<name>)` prints the same
text. Regenerate after changing `python/npuc/toolkit.py`:
`PYTHONPATH=python /usr/bin/python3 tools/gen_api_doc.py`.

The workflow is RKNN-Toolkit2's, and so are the method names and the "return 0" convention:

```python
import npuc

with npuc.Toolkit(verbose=False) as tk:             # release() on exit
    tk.config(target_platform="rk3588", mean_values=[[0, 0, 0]], std_values=[[255, 255, 255]])
    tk.load_onnx(model="model.onnx")                # or load_pytorch(module_or_pt, [[1, 3, 224, 224]])
    tk.build(do_quantization=True, dataset="dataset.txt")
    tk.export_blob("model.npub")                     # export_rknn works too
    tk.init_runtime()
    outputs = tk.inference(inputs=[image])
    tk.eval_perf()
```

Unlike RKNN-Toolkit2, failures raise: every error is an `npuc.NpucError` subclass naming the
problem (file, node, op, shape, key), so a script that checks `ret != 0` still works but never
sees a non-zero code. See [migration_from_rknn.md](migration_from_rknn.md) for the differences.

"""


#: The C++ core defines these classes without docstrings; what each one means (cpp/common/error.h).
ERROR_MEANING = {
    "NpucError": "base of every error npuc raises on purpose (`except npuc.NpucError` catches them all)",
    "ModelLoadError": "the model file is missing, unreadable or not a valid ONNX / TorchScript model",
    "UnsupportedOpError": "an op (or an attribute of it) npuc cannot import or run; names the node and op",
    "ShapeError": "shapes that do not fit (a dynamic dimension not fixed by input_size_list, a bad broadcast)",
    "GraphError": "a malformed graph (a cycle, a value without producer, a duplicate name)",
    "InputError": "inference/calibration inputs of the wrong count, shape or dtype; a dataset line that cannot be read",
    "ConfigError": "an unknown config key, a wrong value, or a call in the wrong order; lists the valid choices",
    "BlobError": "a corrupt, truncated, newer-format or other-SoC `.npub`",
    "ResourceError": "a model or input beyond a resource limit (size caps against hostile files)",
}


def _errors_section() -> str:
    rows = []
    for name in npuc.__all__:
        obj = getattr(npuc, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            own_doc = obj.__doc__ if obj.__doc__ != obj.__mro__[1].__doc__ else None
            doc = ERROR_MEANING.get(name) or (inspect.getdoc(obj) or "").split("\n\n")[0].replace("\n", " ")
            if own_doc and name not in ERROR_MEANING:
                doc = " ".join(own_doc.split())
            rows.append(f"| `npuc.{name}` | {obj.__mro__[1].__name__} | {doc} |")
    return "\n".join(["## Exceptions", "", "| class | base | meaning |", "|---|---|---|", *rows, ""])


def _values(choices: Sequence[Any]) -> str:
    return ", ".join(f"`{c!r}`" for c in choices)


def _config_section() -> str:
    from npuc import config_check
    from npuc.quantize import ALGORITHMS, INT8_DTYPES, METHODS

    rules = [
        ("target_platform", f"one of {_values(TARGET_PLATFORMS)} (case-insensitive)"),
        ("mean_values, std_values", "per input, one number per channel (a flat list = one input); std != 0"),
        ("quant_img_RGB2BGR", "True or False"),
        ("quantized_dtype", f"one of {_values(INT8_DTYPES)} (all mean int8 weights and activations)"),
        ("quantized_algorithm", f"one of {_values(ALGORITHMS)}"),
        ("quantized_method", f"one of {_values(METHODS)}"),
        ("optimization_level", f"one of {_values(config_check.OPTIMIZATION_LEVELS)}"),
        ("float_dtype", f"one of {_values(config_check.FLOAT_DTYPES)}"),
        ("custom_string", "a string (recorded in the blob's options; `npuc info` shows it)"),
        ("op_target", f"dict {{node name or op type: {_values(config_check.OP_TARGET_DEVICES)}}}"),
        ("hybrid_layers", "list of node names computed in FP16"),
        ("disable_passes", "list of pass names (`npuc.pass_names()`)"),
        ("auto_hybrid_cos_thresh", "a number from 0 to 1"),
        ("auto_hybrid_euc_thresh", "a non-negative number"),
        ("single_core_mode", "True or False"),
        ("remove_weight, compress_weight, model_pruning, remove_reshape, sparse_infer, enable_flash_attention, "
         "quantize_weight", "True or False (accepted for RKNN scripts; no effect)"),
        ("dynamic_input", "a list of input-shape sets, each one full shape per input (`[[[1, 3, 224, 224]], "
         "[[1, 3, 320, 320]]]`): `build` makes one program per set in one blob (see `build`)"),
        ("quantized_hybrid_level, inputs_yuv_fmt", "not checked (accepted for RKNN scripts; no effect)"),
    ]
    lines = [
        "## `config()` keys",
        "",
        f"Valid keys (`npuc.toolkit.CONFIG_KEYS`): {', '.join(f'`{k}`' for k in CONFIG_KEYS)}.",
        "",
        "An unknown key, or a wrong value for a checked key, raises `npuc.ConfigError` listing the valid "
        "keys or values (checks: `npuc.config_check`), and leaves the earlier configuration unchanged. "
        "`None` means the default for every key.",
        "",
        "| key | valid values |",
        "|---|---|",
        *[f"| {', '.join(f'`{k}`' for k in key.split(', '))} | {rule} |" for key, rule in rules],
        "",
    ]
    return "\n".join(lines)


def render() -> str:
    members = _public_members()
    attributes = _instance_attributes()
    missing = [n for n, _ in members if n not in RKNN_EQUIVALENT] + [
        n for n, _ in attributes if n not in RKNN_EQUIVALENT]
    if missing:
        raise SystemExit(f"gen_api_doc: add an RKNN_EQUIVALENT entry for: {', '.join(missing)}")
    aliases = _aliases()
    methods = [(n, m) for n, m in members if n not in aliases]
    order = list(npuc.Toolkit.__dict__)  # source order: the workflow's order
    methods.sort(key=lambda nm: order.index(nm[0]) if nm[0] in order else len(order))
    summary = ["## Summary", "", "| npuc | RKNN-Toolkit2 |", "|---|---|"]
    summary += [f"| [`{n}`](#{n}) | {RKNN_EQUIVALENT[n]} |" for n, _ in methods]
    summary += [f"| `{a}` | alias of `{t}`: {RKNN_EQUIVALENT[a]} |" for a, t in sorted(aliases.items())]
    summary += ["", "Attributes set by the workflow (read them after the call that fills them):", ""]
    summary += [f"- `Toolkit.{n}`: {doc}" for n, doc in attributes]
    summary += [""]
    init = "\n".join(["## Constructor", "", "```python", f"npuc.Toolkit{inspect.signature(npuc.Toolkit.__init__)}"
                      .replace("(self, ", "("), "```", "", "```text", inspect.getdoc(npuc.Toolkit.__init__) or "",
                      "```", ""])
    body = "\n".join(_method_section(n, m) for n, m in methods)
    return HEADER + "\n".join(summary) + "\n" + init + "\n## Methods\n\n" + body + "\n" + _config_section() + "\n" + \
        _errors_section()


def main(argv: Sequence[str] = ()) -> int:
    return doc_generator.run(__doc__.splitlines()[0], DOC_PATH, REPO_ROOT, render, "tools/gen_api_doc.py", argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
