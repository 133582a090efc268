"""The audit of #15 defect 11: wrong-typed or out-of-range arguments at every public entry point
give the npuc error for the problem, naming it; never a raw TypeError/ValueError, a C++ error
that is not an NpucError, or exit code 2.

Three tables document what was tried: Toolkit methods (method, stage, kwargs, error class,
message regex), ``npuc`` sub-commands (arguments, message regex; exit code 1 and one line), and
rknn_convert YAML entries for ``npuc convert -i`` (entry, message regex). The type rules live in
npuc.arg_check (arguments), npuc.shapes (shapes), npuc.config_check (config values),
npuc.input_dtype (arrays) and npuc.cli_compile._jobs_from_yaml (YAML keys)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any, Dict

import numpy as np
import pytest
import yaml

import npuc
from npuc.cli_common import ConfigFileError
from test_cli import npuc_cli

X = np.zeros((1, 3, 8, 8), np.float32)
HUGE_INT = 2**70
NAN = float("nan")

# (method, stage, kwargs, error class, message regex). Stages: "empty", "loaded", "built". Paths
# in kwargs starting with "@" are made relative to the test's tmp_path.
TOOLKIT_CASES = [
    # config
    ("config", "empty", {"target_platform": 3588}, npuc.ConfigError, r"target_platform 3588 is not supported"),
    ("config", "empty", {"mean_values": "0,0,0"}, npuc.ConfigError, r"mean_values: expected per input a list"),
    ("config", "empty", {"mean_values": [[0, None, 0]]}, npuc.ConfigError, r"mean_values\[0\]\[1\]: expected a number, got NoneType"),
    ("config", "empty", {"std_values": [[1, 2], 3]}, npuc.ConfigError, r"std_values\[1\]: expected a list of per-channel numbers, got int 3"),
    ("config", "empty", {"quant_img_RGB2BGR": "yes"}, npuc.ConfigError, r"quant_img_RGB2BGR='yes'\): expected True or False"),
    ("config", "empty", {"optimization_level": 2.0}, npuc.ConfigError, r"optimization_level=2.0\): expected one of 0, 1, 2, 3"),
    ("config", "empty", {"optimization_level": np.array([1, 2])}, npuc.ConfigError, r"optimization_level=array"),
    ("config", "empty", {"quantized_hybrid_level": -1}, npuc.ConfigError, r"expected a non-negative integer"),
    ("config", "empty", {"dynamic_input": [[[1, 3, HUGE_INT, 8]]]}, npuc.ConfigError, r"dynamic_input\)\[0\]\[0\]\[2\]: dimension .* larger than any tensor"),
    ("config", "empty", {"inputs_yuv_fmt": "nv12"}, npuc.ConfigError, r"inputs_yuv_fmt='nv12'\): expected a list"),
    ("config", "empty", {"disable_passes": "fuse_conv_relu"}, npuc.ConfigError, r"expected a list of pass names"),
    ("config", "empty", {"op_target": {"conv": 1}}, npuc.ConfigError, r"'conv' -> 1; a target is one of cpu, npu"),
    ("config", "empty", {"auto_hybrid_cos_thresh": "0.9"}, npuc.ConfigError, r"auto_hybrid_cos_thresh\): expected a number, got str"),
    ("config", "empty", {"auto_hybrid_euc_thresh": float("inf")}, npuc.ConfigError, r"expected a finite number"),
    ("config", "empty", {"custom_string": "x" * (1 << 24)}, npuc.ConfigError,
     r"custom_string is 16777218 bytes as the blob records it .*more than the \.npub limit of 16777216"),
    ("config", "empty", {"custom_string": "bad \ud800 text"}, npuc.ConfigError, r"expected a string \(valid Unicode text\)"),
    ("config", "empty", {"hybrid_layers": ["conv", "\udcff"]}, npuc.ConfigError, r"expected a list of node names"),
    # load_onnx
    ("load_onnx", "empty", {"model": None}, npuc.ConfigError, r"load_onnx\(model=...\): expected a path .*got NoneType"),
    ("load_onnx", "empty", {"model": 123}, npuc.ConfigError, r"load_onnx\(model=...\): expected a path .*got int 123"),
    ("load_onnx", "empty", {"model": ["@m.onnx"]}, npuc.ConfigError, r"load_onnx\(model=...\): expected a path .*got list"),
    ("load_onnx", "empty", {"model": "@m.onnx", "inputs": "x", "input_size_list": [[1, 3, 8, 8]]}, npuc.ConfigError,
     r"load_onnx\(inputs=...\): expected a list of names \(strings\), got str 'x'"),
    ("load_onnx", "empty", {"model": "@m.onnx", "outputs": ["y", 2]}, npuc.ConfigError, r"load_onnx\(outputs=...\): expected a list of names"),
    ("load_onnx", "empty", {"model": "@m.onnx", "input_size_list": [[HUGE_INT, 3, 8, 8]]}, npuc.ConfigError,
     r"load_onnx\(input_size_list\)\[0\]\[0\]: dimension 1180591620717411303424 is larger than any tensor npuc can hold"),
    ("load_onnx", "empty", {"model": "@m.onnx", "input_size_list": [[1, 3.0, 8, 8]]}, npuc.ConfigError,
     r"input_size_list\)\[0\]\[1\]: expected an integer dimension, got float 3.0"),
    ("load_onnx", "empty", {"model": "@m.onnx", "input_size_list": [[1, -3, 8, 8]]}, npuc.ConfigError, r"cannot be negative, got -3"),
    ("load_onnx", "empty", {"model": "@m.onnx", "input_size_list": [[True, 3, 8, 8]]}, npuc.ConfigError, r"expected an integer dimension, got bool"),
    ("load_onnx", "empty", {"model": "@m.onnx", "input_size_list": [1, 3, 8, 8]}, npuc.ConfigError, r"input_size_list\)\[0\]: expected a shape"),
    ("load_onnx", "empty", {"model": "@m.onnx", "input_size_list": [[2**20, 2**20, 2**20, 1]]}, npuc.ConfigError, r"has more elements than any tensor"),
    ("load_onnx", "empty", {"model": "@m.onnx", "input_size_list": [[1] * 33]}, npuc.ConfigError, r"33 dimensions; a shape has at most 32"),
    # load_pytorch (argument checks run before torch is imported)
    ("load_pytorch", "empty", {"model": "@none.pt", "input_size_list": [[1, 0, 8]]}, npuc.ConfigError, r"every dimension must be a positive integer"),
    ("load_pytorch", "empty", {"model": "@none.pt", "input_size_list": [[HUGE_INT]]}, npuc.ConfigError, r"larger than any tensor"),
    ("load_pytorch", "empty", {"model": "@none.pt", "input_size_list": [[1, 3]], "opset": "13"}, npuc.ConfigError, r"load_pytorch\(opset=...\): expected an integer from 7 to 21"),
    ("load_pytorch", "empty", {"model": "@none.pt", "input_size_list": [[1, 3]], "opset": 99}, npuc.ConfigError, r"from 7 to 21, got int 99"),
    ("load_pytorch", "empty", {"model": "@none.pt", "input_size_list": [[1, 3]], "inputs": "x"}, npuc.ConfigError, r"load_pytorch\(inputs=...\): expected a list of names"),
    # build
    ("build", "loaded", {"do_quantization": "dataset.txt"}, npuc.ConfigError, r"build\(do_quantization=...\): expected True or False, got str"),
    ("build", "loaded", {"dataset": 5}, npuc.ConfigError, r"build\(dataset=...\): expected a dataset.txt path or an iterable of samples"),
    ("build", "loaded", {"dataset": [1, 2]}, npuc.InputError, r"dataset sample 0: expected an array .* got int 1"),
    ("build", "loaded", {"dataset": [X], "rknn_batch_size": 33}, npuc.ConfigError, r"build\(rknn_batch_size=...\): expected an integer from 1 to 32, got int 33"),
    ("build", "loaded", {"dataset": [X], "rknn_batch_size": np.array([1, 1])}, npuc.ConfigError, r"rknn_batch_size"),
    ("build", "loaded", {"dataset": [X], "verify": "no"}, npuc.ConfigError, r"build\(verify=...\): expected True or False"),
    ("build", "loaded", {"dataset": [X], "dump_dir": 7}, npuc.ConfigError, r"build\(dump_dir=...\): expected a path"),
    # inference
    ("inference", "loaded", {"inputs": 3.5}, npuc.InputError, r"inputs must be a list of arrays, got float"),
    ("inference", "loaded", {"inputs": [X], "data_format": 1.5}, npuc.InputError, r"data_format: expected one of 'auto', 'nchw', 'nhwc'"),
    ("inference", "loaded", {"inputs": [X], "data_format": ["nchw", "nhwc"]}, npuc.InputError, r"data_format has 2 entries for 1 input"),
    ("inference", "loaded", {"inputs": [X], "inputs_pass_through": "yes"}, npuc.InputError, r"inputs_pass_through: expected one of 0, 1"),
    ("inference", "built", {"inputs": [X.astype(np.complex64)]}, npuc.InputError, r"dtype complex64 is not accepted"),
    # eval_perf / eval_memory
    ("eval_perf", "loaded", {"is_print": "false"}, npuc.ConfigError, r"eval_perf\(is_print=...\): expected True or False"),
    ("eval_perf", "loaded", {"tuning_cache": 5}, npuc.ConfigError, r"eval_perf\(tuning_cache=...\): expected a path"),
    ("eval_memory", "built", {"is_print": None}, npuc.ConfigError, r"eval_memory\(is_print=...\): expected True or False"),
    # accuracy_analysis
    ("accuracy_analysis", "built", {"inputs": 5}, npuc.InputError, r"inputs must be a list of arrays or file paths, got int"),
    ("accuracy_analysis", "built", {"inputs": [X], "output_dir": 7}, npuc.ConfigError, r"accuracy_analysis\(output_dir=...\): expected a path"),
    ("accuracy_analysis", "built", {"inputs": [X], "target": "rk3588"}, npuc.ConfigError, r"only the host simulator"),
    # hybrid quantization
    ("hybrid_quantization_step1", "loaded", {"dataset": [X], "proposal": 1}, npuc.ConfigError, r"proposal=...\): expected True or False"),
    ("hybrid_quantization_step1", "loaded", {"dataset": [X], "proposal_dataset_size": 0}, npuc.ConfigError, r"proposal_dataset_size=...\): expected an integer >= 1"),
    ("hybrid_quantization_step1", "loaded", {"dataset": [X], "rknn_batch_size": 2}, npuc.ConfigError, r"hybrid_quantization_step1\(rknn_batch_size=...\)"),
    ("hybrid_quantization_step1", "loaded", {"dataset": [X], "output_prefix": 5}, npuc.ConfigError, r"output_prefix=...\): expected a path"),
    ("hybrid_quantization_step2", "empty", {"model_input": None, "data_input": "@d", "model_quantization_cfg": "@c"},
     npuc.ConfigError, r"hybrid_quantization_step2\(model_input=...\): expected a path"),
    ("hybrid_quantization_step2", "empty", {"model_input": "@m.onnx", "data_input": 1, "model_quantization_cfg": "@c"},
     npuc.ConfigError, r"data_input=...\): expected a path"),
    # load_blob / init_runtime
    ("load_blob", "empty", {"path": 42}, npuc.ConfigError, r"load_blob\(path=...\): expected a path"),
    ("load_blob", "empty", {"path": "@"}, npuc.BlobError, r"not a regular file"),  # a folder: was MemoryError (std::bad_alloc)
    ("init_runtime", "loaded", {"target": ["rk3588"]}, npuc.ConfigError, r"init_runtime\(target=\['rk3588'\]\): only the host runtime"),
]


@pytest.fixture
def model_path(tmp_path: Path, conv_relu_path: Path) -> Path:
    (tmp_path / "m.onnx").write_bytes(conv_relu_path.read_bytes())
    return tmp_path / "m.onnx"


def _at(value: Any, root: Path) -> Any:
    if isinstance(value, str) and value.startswith("@"):
        return str(root / value[1:])
    if isinstance(value, list):
        return [_at(v, root) for v in value]
    return value


def _toolkit(stage: str, model: Path) -> npuc.Toolkit:
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588")
    with contextlib.redirect_stdout(io.StringIO()):
        if stage in ("loaded", "built"):
            tk.load_onnx(model=str(model))
        if stage == "built":
            tk.build(do_quantization=True, dataset=[X])
    return tk


@pytest.mark.parametrize("method, stage, kwargs, error, message", TOOLKIT_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(TOOLKIT_CASES)])
def test_toolkit_arguments(method: str, stage: str, kwargs: Dict[str, Any], error: type, message: str,
                           model_path: Path, tmp_path: Path) -> None:
    tk = _toolkit(stage, model_path)
    kwargs = {k: _at(v, tmp_path) for k, v in kwargs.items()}
    with pytest.raises(npuc.NpucError) as info, contextlib.redirect_stdout(io.StringIO()):
        getattr(tk, method)(**kwargs)
    assert type(info.value) is error, f"{type(info.value).__name__}: {info.value}"
    assert re.search(message, str(info.value)), str(info.value)
    assert len(str(info.value)) < 1500


def test_mean_values_that_do_not_fit_the_model_are_refused_at_build(model_path: Path) -> None:
    tk = _toolkit("loaded", model_path)
    tk.config(mean_values=[[1, 2]])  # 2 values for a 3-channel input: was recorded into the blob silently
    with pytest.raises(npuc.ConfigError, match=r"mean_values\[0\] has 2 value\(s\) for input 'x' \[1, 3, 8, 8\], which has 3 channel"):
        tk.build(do_quantization=False)
    tk.config(mean_values=[[1, 2, 3], [4]])
    with pytest.raises(npuc.ConfigError, match=r"mean_values lists values for 2 inputs; the model has 1"):
        tk.build(do_quantization=False)


# (arguments with {m} for the model and {t} for tmp_path, message regex)
CLI_CASES = [
    (["info", "{m}", "--input-size", "99999999999999999999,3,32,32"], r"dimension 99999999999999999999 is larger than any tensor"),
    (["info", "{m}", "--input-size", "65536,65536,65536,3"], r"has more elements than any tensor npuc can hold"),
    (["info", "{m}", "--input-size", ",".join(["1"] * 40)], r"40 dimensions; a shape has at most 32"),
    (["info", "{m}", "--input-size", "9" * 5000], r"invalid shape '9999.*\(5000 chars\)"),
    (["convert", "{m}", "-t", "rk3588", "-o", "{t}/o.npub", "--input-size", "4294967296,3,8,8"], r"more elements than any tensor"),
    (["convert", "{m}", "-t", "rk3588", "-o", "{t}/o.npub", "--mean", "1,2"], r"mean_values\[0\] has 2 value\(s\)"),
    (["convert", "{m}", "-t", "rk3588", "-o", "{t}/o.npub", "--std", "1e39,1,1"], r"std_values\[0\]\[0\]: 1e\+39 is beyond float32's range"),
    (["convert", "{m}", "-t", "x" * 100_000, "-o", "{t}/o.npub"], r"target_platform 'xxx.*\(100000 chars\) is not supported"),
    (["convert", "{m}", "-t", "rk3588", "-o", "{t}/o.npub", "--optimization-level", "9"], r"invalid choice: 9"),
    (["run", "{m}", "--input", "{t}/c.npy"], r"dtype complex64 is not accepted for input 'x'"),
    (["run", "{m}", "--input", "{t}/x.npy", "--input", "{t}/x.npy"], r"the model has 1 input\(s\), got 2 --input file\(s\)"),
    (["analyze", "{m}", "-t", "rk3588", "--fp16", "--inputs", "{t}/x.npy", "--cos-thresh", "nan"], r"auto_hybrid_cos_thresh"),
    (["perf", "{m}", "--soc", "x" * 100_000], r"unknown target platform"),
]


@pytest.mark.parametrize("args, message", CLI_CASES, ids=[f"{c[0][0]}-{i}" for i, c in enumerate(CLI_CASES)])
def test_cli_arguments(args, message: str, model_path: Path, tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "c.npy", X.astype(np.complex64))
    r = npuc_cli(*[a.format(m=model_path, t=tmp_path) for a in args])
    assert r.returncode == 1, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert r.stderr.count("\n") == 1, r.stderr[-2000:]  # one line, argparse's errors too (no usage block)
    assert re.search(message, r.stderr), r.stderr[-2000:]
    assert len(r.stderr) < 5000


# (a models[0] entry, message regex); every message names the file and the key
YAML_CASES = [
    ({"name": 123, "model_file_path": "m.onnx"}, r"models\[0\]\.name: expected a string, got int 123"),
    ({"name": "", "model_file_path": "m.onnx"}, r"models\[0\]: name '' is empty"),  # the name -> path rule's
    ({"name": "m", "model_file_path": ["a.onnx", "b.onnx"]}, r"models\[0\]\.model_file_path: expected a non-empty string, got list"),
    ({"name": "m", "model_file_path": "m.onnx", "platform": 5}, r"models\[0\]\.platform: expected a string, got int 5"),
    ({"name": "m", "model_file_path": "m.onnx", "quantize": "yes"}, r"models\[0\]\.quantize: expected true or false, got str 'yes'"),
    ({"name": "m", "model_file_path": "m.onnx", "dataset": 5}, r"models\[0\]\.dataset: expected a path \(a string\), got int 5"),
    ({"name": "m", "model_file_path": "m.onnx", "subgraphs": [1]}, r"models\[0\]\.subgraphs: expected a mapping, got list"),
    ({"name": "m", "model_file_path": "m.onnx", "subgraphs": {"input_size_list": [[HUGE_INT, 3]]}},
     r"models\[0\]\.subgraphs\.input_size_list\[0\]\[0\]: dimension .* larger than any tensor"),
    ({"name": "m", "model_file_path": "m.onnx", "subgraphs": {"input_size_list": [["1", 3]]}},
     r"subgraphs\.input_size_list\[0\]\[0\]: expected an integer dimension, got str '1'"),
    ({"name": "m", "model_file_path": "m.onnx", "subgraphs": {"inputs": "x"}}, r"models\[0\]\.subgraphs\.inputs: expected a list of strings"),
    ({"name": "m", "model_file_path": "m.onnx", "subgraphs": {"outputs": [1]}}, r"models\[0\]\.subgraphs\.outputs: expected a list of strings"),
    ({"name": "m", "model_file_path": "m.onnx", "configs": [1]}, r"models\[0\]\.configs: expected a mapping, got list"),
    ({"name": "m", "model_file_path": "m.onnx", "configs": {"mean_values": [".nan", 0, 0]}},
     r"models\[0\]\.configs: mean_values\[0\]\[0\]: expected a number, got str"),
    ({"name": "m", "model_file_path": "m.onnx", "configs": {"mean_values": [NAN, 0, 0]}},
     r"models\[0\]\.configs: mean_values\[0\]\[0\]: expected a finite number, got nan"),
    ({"name": "m", "model_file_path": "m.onnx", "configs": {"optimization_level": "3"}},
     r"models\[0\]\.configs: config\(optimization_level='3'\): expected one of 0, 1, 2, 3"),
    ({"name": "m", "model_file_path": "m.onnx", "configs": {"quantized_algorithm": ["normal"]}},
     r"models\[0\]\.configs: config\(quantized_algorithm=\['normal'\]\)"),
]


@pytest.mark.parametrize("entry, message", YAML_CASES, ids=[f"yaml-{i}" for i in range(len(YAML_CASES))])
def test_yaml_entries(entry: Dict[str, Any], message: str, tmp_path: Path) -> None:
    from npuc.cli_compile import _jobs_from_yaml

    cfg = tmp_path / "cfg.yml"
    cfg.write_text(yaml.safe_dump({"models": [entry]}))
    with pytest.raises(ConfigFileError) as info:
        _jobs_from_yaml(str(cfg), "rk3588", str(tmp_path / "out"))
    assert str(info.value).startswith(f"{cfg}: "), str(info.value)
    assert re.search(message, str(info.value)), str(info.value)


def test_an_empty_models_list_is_refused(tmp_path: Path) -> None:
    from npuc.cli_compile import _jobs_from_yaml

    cfg = tmp_path / "cfg.yml"
    cfg.write_text("models: []\n")  # converted nothing and exited 0
    with pytest.raises(ConfigFileError, match=r"cfg.yml: 'models' is empty"):
        _jobs_from_yaml(str(cfg), "rk3588", str(tmp_path / "out"))


def test_hybrid_cfg_ranges_beyond_float32_are_refused(tmp_path: Path, model_path: Path) -> None:
    tk = _toolkit("loaded", model_path)
    with contextlib.redirect_stdout(io.StringIO()):
        tk.hybrid_quantization_step1(dataset=[X], output_prefix=str(tmp_path / "h"))
    cfg = yaml.safe_load((tmp_path / "h.quantization.cfg").read_text())
    cfg["quantize_parameters"]["x"]["max"] = [1e39]  # a float32 Inf in the quantizer
    (tmp_path / "h.quantization.cfg").write_text(yaml.safe_dump(cfg))
    with pytest.raises(npuc.ConfigError, match=r"quantize_parameters.x.max: 1e\+39 is beyond float32's range"):
        tk.hybrid_quantization_step2(str(tmp_path / "h.model"), str(tmp_path / "h.data"), str(tmp_path / "h.quantization.cfg"))


def test_yaml_name_123_through_the_cli(tmp_path: Path, conv_relu_path: Path) -> None:
    (tmp_path / "m.onnx").write_bytes(conv_relu_path.read_bytes())
    cfg = tmp_path / "cfg.yml"
    cfg.write_text("models:\n  name: 123\n  model_file_path: m.onnx\n")
    r = npuc_cli("convert", "-i", str(cfg), "-t", "rk3588", "-o", str(tmp_path / "out"))
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert f"{cfg}: models[0].name: expected a string, got int 123" in r.stderr


def test_the_longest_custom_string_a_blob_holds_round_trips(model_path: Path, tmp_path: Path) -> None:
    # A 70000-character custom_string used to be exported into a blob load_blob refused (issue #15
    # defect 6); the reader and the writer now share one limit (blob_limits.h, 16 MiB of text).
    tk = _toolkit("loaded", model_path)
    text = "y" * 70_000
    tk.config(target_platform="rk3588", custom_string=text)
    with contextlib.redirect_stdout(io.StringIO()):
        tk.build(do_quantization=False)
    tk.export_blob(str(tmp_path / "m.npub"))
    loaded = npuc.Toolkit()
    loaded.load_blob(str(tmp_path / "m.npub"))
    assert loaded.blob_meta["options"]["custom_string"] == repr(text)
