#!/usr/bin/env python3
"""Fuzz target: YAML config text -> ``npuc convert -i CFG -t rk3588 -o OUT`` (or hybrid step 2).

Input: YAML text. It is written as ``model_config.yml`` next to a tiny valid ONNX model, its
calibration ``dataset.txt`` and ``.npy`` samples, a text file and a sub-folder (all inside a jail,
cli_harness.Jail), and ``npuc.cli.main`` runs on it in this process. An input whose first line is
``#hybrid`` is instead the ``.quantization.cfg`` of ``Toolkit.hybrid_quantization_step2``, next to
the ``.model`` and ``.data`` a step 1 wrote at start-up. ``@JAIL@`` in the text becomes the jail's
absolute path (absolute paths without naming this machine's folders in the corpus).

Oracle (cli_harness.check_cli): exit code 0 or 1; on 1 one ``npuc: error: ...`` line on stderr of
at most 2000 characters; no traceback; nothing written outside OUT; no input file changed or
deleted; per input at most -timeout seconds and -rss_limit_mb. For hybrid step 2: only
``npuc.NpucError`` escapes, its message is non-empty and at most 2000 characters, and the same
file rules hold.

    /usr/bin/python3 tests/fuzz/fuzz_yaml_config.py CORPUS_DIR -max_total_time=600
    /usr/bin/python3 tests/fuzz/fuzz_yaml_config.py crash-<sha1>     # reproduce one input
"""

from __future__ import annotations

import contextlib
import io
import random
import sys
from pathlib import Path
from typing import List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cli_harness  # noqa: E402
import pyfuzz  # noqa: E402
from cli_harness import (  # noqa: E402
    Sandbox, check_cli, files_finding, merge, redact, run_cli, too_long, under, write_fixtures)
from pyfuzz import Finding, crash_finding, one_line  # noqa: E402

HYBRID_HEADER = b"#hybrid\n"
JAIL_TOKEN = b"@JAIL@"
CONFIG_NAME = "model_config.yml"
HYBRID_PREFIX = "chain"

_CONVERT = """models:
  name: conv_relu
  platform: onnx
  model_file_path: model.onnx
  subgraphs:
    input_size_list:
      - [1, 3, 8, 8]
    inputs: [x]
    outputs: [y]
  quantize: {quantize}
  dataset: dataset.txt
  configs:
{configs}"""

# Valid configs (rknn_convert style, docs/cli.md), then each key with an odd value.
SEEDS: List[str] = [
    _CONVERT.format(quantize="false", configs="    optimization_level: 3\n"),
    _CONVERT.format(quantize="true", configs="    quantized_algorithm: normal\n    quantized_method: channel\n"
                    "    mean_values: [0, 0, 0]\n    std_values: [1, 1, 1]\n"),
    _CONVERT.format(quantize="true", configs="    quantized_algorithm: kl_divergence\n    quantized_method: layer\n"
                    "    mean_values: [[0, 0, 0]]\n    std_values: [[255, 255, 255]]\n    quant_img_RGB2BGR: true\n"),
    _CONVERT.format(quantize="true", configs="    quantized_algorithm: mmse\n    hybrid_layers: [conv]\n"
                    "    op_target: {relu: cpu}\n    disable_passes: [dead_code_elimination]\n"),
    _CONVERT.format(quantize="true", configs="    quantized_algorithm: percentile\n    quantized_dtype: asymmetric_quantized-8\n"
                    "    auto_hybrid_cos_thresh: 0.9\n    auto_hybrid_euc_thresh: 1.5\n"),
    _CONVERT.format(quantize="false", configs="    float_dtype: float16\n    single_core_mode: true\n    custom_string: hello\n"
                    "    remove_weight: false\n    compress_weight: false\n    model_pruning: false\n"
                    "    target_platform: rk3566\n"),
    _CONVERT.format(quantize="false", configs="    dynamic_input: [[[1, 3, 8, 8]]]\n    inputs_yuv_fmt: null\n"
                    "    quantize_weight: false\n    remove_reshape: false\n    sparse_infer: false\n"
                    "    enable_flash_attention: false\n    quantized_hybrid_level: 0\n    optimization_level: 0\n"),
    "models:\n  name: minimal\n  model_file_path: model.onnx\n",
    "models:\n  - name: a\n    model_file_path: model.onnx\n  - name: b\n    model_file_path: ./sub/../model.onnx\n"
    "    quantize: true\n    dataset: dataset.txt\n",
    "models: {name: flow, model_file_path: model.onnx, subgraphs: {input_size_list: [[1, 3, 8, 8]]}}\n",
    # odd values
    "models:\n  name: ../escape\n  model_file_path: model.onnx\n",
    "models:\n  name: @JAIL@/absolute\n  model_file_path: model.onnx\n",
    "models:\n  name: sub/nested\n  model_file_path: model.onnx\n",
    "models:\n  name: ünïcødé ✓\n  model_file_path: model.onnx\n",
    "models:\n  name: 123\n  model_file_path: model.onnx\n",
    "models:\n  name: model\n  model_file_path: sub\n",
    "models:\n  name: notes\n  model_file_path: notes.txt\n",
    "models:\n  name: empty\n  model_file_path: empty.onnx\n",
    "models:\n  name: q\n  model_file_path: model.onnx\n  quantize: true\n  dataset: missing.txt\n",
    "models:\n  name: q\n  model_file_path: model.onnx\n  quantize: true\n  dataset: x0.npy\n",
    "models:\n  name: q\n  model_file_path: model.onnx\n  quantize: 'no'\n",
    "models:\n  name: s\n  model_file_path: model.onnx\n  subgraphs:\n    input_size_list: [[1, 3, 0, 8]]\n",
    "models:\n  name: s\n  model_file_path: model.onnx\n  subgraphs:\n    input_size_list: [[1e309, 3, 8, 8]]\n",
    "models:\n  name: s\n  model_file_path: model.onnx\n  subgraphs:\n    input_size_list: [1, 3, 8, 8]\n",
    "models:\n  name: s\n  model_file_path: model.onnx\n  subgraphs:\n    inputs: [nope]\n    outputs: [c]\n",
    "models:\n  name: c\n  model_file_path: model.onnx\n  configs:\n    mean_values: [.nan, 1, 1]\n    std_values: [0, 0, 0]\n",
    "models:\n  name: c\n  model_file_path: model.onnx\n  configs:\n    optimization_level: 99999999999999999999\n",
    "models:\n  name: c\n  model_file_path: model.onnx\n  configs:\n    quantized_algorithm: [normal]\n",
    "models:\n  name: c\n  model_file_path: model.onnx\n  configs: [optimization_level]\n",
    "models:\n  name: c\n  model_file_path: model.onnx\n  platform: tflite\n",
    "models:\n  name: c\n  model_file_path: model.onnx\n  subgraphs: [1, 2]\n",
    "base: &base\n  model_file_path: model.onnx\nmodels:\n  <<: *base\n  name: merged\n",
    "s: &s [1, 3, 8, 8]\nmodels:\n  name: alias\n  model_file_path: model.onnx\n  subgraphs:\n"
    "    input_size_list: [*s]\n",
    "models: []\n",
    "models:\n",
    "[models]\n",
    "",
]

HYBRID_SEEDS: List[str] = [
    "custom_quantize_layers:\n  conv: float16\n",
    "custom_quantize_layers:\n  conv: int4\n",
    "custom_quantize_layers:\n  nope: float16\n",
    "custom_quantize_layers: [conv]\n",
    "quantize_parameters:\n  x:\n    min: [1.0]\n    max: [-1.0]\n",
    "quantize_parameters:\n  x:\n    min: [.nan]\n    max: [1e309]\n",
    "quantize_parameters:\n  x:\n    min: [0, 1]\n    max: ['a']\n    colour: red\n",
    "quantize_parameters: {x: 3}\n",
    "unknown: 1\n",
]


class YamlConfigTarget(pyfuzz.Target):
    name = "fuzz_yaml_config"

    def setup(self) -> None:
        cli_harness.prepare_environment()
        from yaml_mutator import YamlMutator, known_keys

        self.sandbox = Sandbox("pyfuzz-yaml-")
        self.jail = self.sandbox.jail
        home = self.jail.home
        self.fixtures = write_fixtures(home / "cfg")
        self.config = home / "cfg" / CONFIG_NAME
        self.cwd = home / "cwd"
        self.cwd.mkdir()
        self.out = home / "out"
        self.hybrid = self._hybrid_step1(home / "hyb")
        self.jail.adopt()
        self.mutator = YamlMutator(known_keys())
        self.dictionary = [k.encode() + b": " for k in known_keys()] + [JAIL_TOKEN, b"&a ", b"*a", b"<<: ", b"- ",
                                                                           b"\n  ", b"[", b"{", b"!!", b"../"]

    def _hybrid_step1(self, folder: Path) -> dict:
        import npuc

        prefix = folder / HYBRID_PREFIX
        with contextlib.redirect_stdout(io.StringIO()), npuc.Toolkit() as tk:
            tk.config(target_platform="rk3588", quantized_method="layer")
            tk.load_onnx(model=str(self.fixtures["model"]))
            tk.hybrid_quantization_step1(dataset=str(self.fixtures["dataset"]), output_prefix=prefix)
        return {"model": Path(f"{prefix}.model"), "data": Path(f"{prefix}.data"),
                "cfg": Path(f"{prefix}.quantization.cfg")}

    def teardown(self) -> None:
        self.sandbox.remove()

    def seeds(self) -> List[bytes]:
        step1_cfg = self.hybrid["cfg"].read_bytes()
        return ([s.encode() for s in SEEDS] + [HYBRID_HEADER + step1_cfg]
                + [HYBRID_HEADER + s.encode() for s in HYBRID_SEEDS])

    def mutate(self, data: bytes, rng: random.Random) -> Optional[bytes]:
        return self.mutator(data, rng)

    def execute(self, data: bytes) -> Optional[Finding]:
        text = data.replace(JAIL_TOKEN, str(self.jail.home).encode())
        with self.sandbox.guard.armed():
            if text.startswith(HYBRID_HEADER):
                finding = self._step2(text[len(HYBRID_HEADER):])
            else:
                self.jail.put(self.config, text)
                result = run_cli(["convert", "-i", str(self.config), "-t", "rk3588", "-o", str(self.out)], self.cwd)
                finding = check_cli(result, allow_usage=False, quoted=len(text) + len(str(self.config)))
        problems = self.sandbox.problems(self.jail.check(), output_ok=lambda p: under(p, self.out),
                                         change_ok=lambda p: False)
        return redact(merge(finding, files_finding(problems)), str(self.jail.home))

    def _step2(self, text: bytes) -> Optional[Finding]:
        import npuc

        self.jail.put(self.hybrid["cfg"], text)
        self.out.mkdir(exist_ok=True)  # export_blob writes into it
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), npuc.Toolkit() as tk:
                tk.config(target_platform="rk3588")
                tk.hybrid_quantization_step2(str(self.hybrid["model"]), str(self.hybrid["data"]), str(self.hybrid["cfg"]))
                tk.export_blob(str(self.out / "hybrid.npub"))
        except npuc.NpucError as e:
            message = str(e)
            if not message.strip() or too_long(message, len(text) + len(str(self.hybrid["cfg"]))):
                return Finding("oracle", f"hybrid step 2: {type(e).__name__} message of {len(message)} characters: "
                               f"{one_line(message, 300)}", f"hybrid-message:{type(e).__name__}:{bool(message.strip())}")
        except Exception as e:  # noqa: BLE001 - anything but NpucError is a bug
            return crash_finding(e, "hybrid_quantization_step2 raised")
        return None


if __name__ == "__main__":
    sys.exit(pyfuzz.main(YamlConfigTarget()))
