#!/usr/bin/env python3
"""Fuzz target: an argv (one argument per line) -> ``npuc.cli.main(argv)`` in this process.

Every sub-command but ``demo`` (seconds per run; skipped) is reachable. Arguments may hold
placeholders for files made at start-up inside a jail (cli_harness.Jail), anywhere in the
argument (``--csv=@OUT@.csv``, ``@DIR@/x.npub``):

    @MODEL@ tiny valid ONNX model     @BLOB@ its float blob       @QBLOB@ its INT8 blob
    @BADBLOB@ a truncated blob         @DATASET@ dataset.txt       @NPY@ @NPY2@ input samples
    @NPY_BAD@ an .npy of the wrong shape  @YAML@ a convert config  @PNG@ an 8x8 image
    @TEXT@ a text file                 @EMPTY@ an empty .onnx      @DIR@ a folder
    @OUT@ a path in the working folder that does not exist yet     @MISSING@ a missing file

The mutator knows the parser (sub-commands, each one's flags and choices, read from
``npuc.cli.build_parser()``): it drops, duplicates and swaps arguments, inserts flags, swaps
the sub-command, joins ``--flag=value``, and replaces values with placeholders or interesting
values (huge, negative, nan, empty, unicode, paths to the wrong kind of file, an input file as
the output).

Oracle (cli_harness.check_cli): exit code 0 or 1; on 1 one ``npuc: error: ...`` line, or
argparse's usage block ending in ``npuc ...: error: ...``, at most 2000 characters; no
traceback; the input files' bytes never change (an input named as an output too is no excuse);
new files only in the working folder or where an output flag (-o, --csv, --json, --plot,
--output-dir) points; no write outside the jail; -timeout and -rss_limit_mb per input.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cli_harness  # noqa: E402
import pyfuzz  # noqa: E402
from cli_harness import (  # noqa: E402
    Sandbox, build_blob, check_cli, files_finding, merge, redact, run_cli, under, write_fixtures)
from pyfuzz import Finding  # noqa: E402

# Flags whose value is a path npuc writes to (new files there are expected; a fixture there may be
# overwritten when it is not also an input of the same run).
OUTPUT_FLAGS = ("-o", "--output", "--csv", "--json", "--plot", "--output-dir", "--out")
SKIPPED_COMMANDS = ("demo",)  # builds and quantizes a ShuffleNet: seconds per run
PLACEHOLDER_SUFFIXES = ("", "", "", ".npub", ".csv", ".json", ".png", "/x.npub", "/../x", "/", "/.", ".onnx")
INTERESTING_ARGS = (
    "", " ", "-", "--", "0", "-1", "1", "3", "-0", "1e309", "nan", "inf", "-inf", "99999999999999999999",
    "2147483648", "0.5", "1.0", "1,3,8,8", "1x3x8x8", "1,3,0,8", "1,3,-8,8", "-1,3,8,8", ",", "1,,3", "x", "1,3,8,8,1,1,1,1",
    "9999999999,9999999999,9999999999,9999999999", "0,0,0", "1,1,1", "nan,nan,nan", "1e309,0,0", "0,0", "1,2,3,4,5",
    "relu=cpu", "conv=npu", "Conv=cpu", "=cpu", "relu=gpu", "relu=", "x", "y", "c", "conv", "relu", "ünïcødé✓",
    "A" * 3000, ".", "..", "/", "/dev/null", "/proc/self/status", "rk3588", "rk3566", "rv1106", "rk3568", "RK3588",
    "rk9999", "int8", "fp16", "normal", "mmse", "layer", "channel", "-t", "-o", "-h", "--version", "-v",
)
# The sub-commands' seeds: valid invocations, then a few odd ones.
SEEDS: List[List[str]] = [
    ["info", "@MODEL@"],
    ["info", "@BLOB@"],
    ["info", "@QBLOB@"],
    ["info", "@BADBLOB@"],
    ["info", "@MODEL@", "--input-size", "1,3,8,8", "--input-name", "x", "--output-name", "y"],
    ["run", "@MODEL@", "--input", "@NPY@", "--output-dir", "@OUT@"],
    ["run", "@MODEL@", "--input", "@NPY_BAD@"],
    ["convert", "@MODEL@", "-t", "rk3588", "-o", "@OUT@.npub"],
    ["convert", "@MODEL@", "-t", "rk3588", "-o", "@OUT@.npub", "--quantize", "--dataset", "@DATASET@", "--algorithm",
     "kl_divergence", "--method", "layer", "--mean", "0,0,0", "--std", "1,1,1", "--op-target", "relu=cpu",
     "--optimization-level", "2", "--verify", "-v", "--input-size", "1,3,8,8", "--input-name", "x", "--output-name", "y"],
    ["convert", "-i", "@YAML@", "-t", "rk3588", "-o", "@OUT@"],
    ["convert", "@MODEL@", "-t", "rk3588", "-o", "@MODEL@"],
    ["perf", "@MODEL@", "--csv", "@OUT@.csv", "--json", "@OUT@.json"],
    ["perf", "@BLOB@", "--soc", "rk3566"],
    ["perf", "@QBLOB@", "--compare-socs"],
    ["perf", "@MODEL@", "--dtype", "fp16", "--plot", "@OUT@.png"],
    ["analyze", "@MODEL@", "-t", "rk3588", "--dataset", "@DATASET@", "--inputs", "@NPY@", "--output-dir", "@OUT@"],
    ["analyze", "@MODEL@", "-t", "rk3588", "--fp16", "--inputs", "@PNG@", "--output-dir", "@OUT@"],
    ["analyze", "@MODEL@", "-t", "rk3588", "--dataset", "@DATASET@", "--inputs", "@NPY@", "--auto-hybrid",
     "--cos-thresh", "0.99", "--hybrid-layer", "conv", "--mean", "0,0,0", "--std", "1,1,1", "--output-dir", "@OUT@"],
    ["socs"],
    ["ops"],
    ["--version"],
    ["info", "--help"],
    ["info", "@TEXT@"],
    ["info", "@EMPTY@"],
    ["info", "@DIR@"],
    ["run", "@MODEL@", "--input", "@NPY@", "--output-dir", "@TEXT@"],
    ["perf", "@MISSING@"],
    [],
]


class ArgvGrammar:
    """The parser's sub-commands, their flags, which flags take a value, and their choices."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.top_flags = [s for a in parser._actions for s in a.option_strings]
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        self.commands: Dict[str, List[str]] = {}
        self.takes_value: Set[str] = set()
        self.choices: Dict[str, List[str]] = {}
        for name, p in sub.choices.items():
            flags = []
            for action in p._actions:
                flags += action.option_strings
                for flag in action.option_strings:
                    if action.nargs != 0:
                        self.takes_value.add(flag)
                    if action.choices:
                        self.choices[flag] = [str(c) for c in action.choices]
            self.commands[name] = flags

    def flags_of(self, argv: Sequence[str]) -> List[str]:
        command = next((a for a in argv if a in self.commands), None)
        return self.commands[command] if command else self.top_flags


class ArgvMutator:
    def __init__(self, grammar: ArgvGrammar, placeholders: Sequence[str]) -> None:
        self.grammar, self.placeholders = grammar, list(placeholders)

    def value(self, rng: random.Random, flag: Optional[str] = None) -> str:
        if flag in self.grammar.choices and rng.random() < 0.5:
            return rng.choice(self.grammar.choices[flag])
        if rng.random() < 0.5:
            return rng.choice(self.placeholders) + rng.choice(PLACEHOLDER_SUFFIXES)
        return rng.choice(INTERESTING_ARGS)

    def __call__(self, data: bytes, rng: random.Random) -> bytes:
        argv = decode_argv(data)
        op = rng.randrange(10)
        i = rng.randrange(len(argv)) if argv else 0
        if op == 0 and argv:  # drop
            del argv[i]
        elif op == 1 and argv:  # duplicate
            argv.insert(rng.randrange(len(argv) + 1), argv[i])
        elif op == 2 and len(argv) > 1:  # swap
            j = rng.randrange(len(argv))
            argv[i], argv[j] = argv[j], argv[i]
        elif op in (3, 4) and argv:  # replace a value (the flag before it picks the choices)
            argv[i] = self.value(rng, argv[i - 1] if i else None)
        elif op == 5:  # insert a flag of this sub-command (and a value when it takes one)
            flag = rng.choice(self.grammar.flags_of(argv) or ["--help"])
            new = [flag, self.value(rng, flag)] if flag in self.grammar.takes_value else [flag]
            argv[i:i] = new
        elif op == 6:  # another sub-command
            command = rng.choice(sorted(self.grammar.commands))
            slot = next((k for k, a in enumerate(argv) if a in self.grammar.commands), None)
            if slot is None:
                argv.insert(0, command)
            else:
                argv[slot] = command
        elif op == 7 and argv:  # --flag value <-> --flag=value
            if "=" in argv[i] and argv[i].startswith("--"):
                argv[i:i + 1] = argv[i].split("=", 1)
            elif argv[i].startswith("-") and i + 1 < len(argv):
                argv[i:i + 2] = [f"{argv[i]}={argv[i + 1]}" if argv[i].startswith("--") else argv[i] + argv[i + 1]]
        elif op == 8 and argv:  # an input file where an output goes, or the other way round
            argv[i] = rng.choice(self.placeholders)
        else:  # append something
            argv.append(self.value(rng))
        return encode_argv(argv)


def decode_argv(data: bytes) -> List[str]:
    """One argument per line; an empty input is no argument (a trailing newline ends the last one).

    Bytes that are not UTF-8 decode as Python decodes a real argv (surrogateescape); a NUL ends
    its argument, as it ends the C string exec() passes (no real argv holds one)."""
    text = data.decode("utf-8", "surrogateescape")
    if not text:
        return []
    lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    return [line.split("\0", 1)[0] for line in lines]


def encode_argv(argv: Sequence[str]) -> bytes:
    return ("\n".join(argv) + "\n").encode("utf-8", "surrogateescape") if argv else b""


class CliArgsTarget(pyfuzz.Target):
    name = "fuzz_cli_args"

    def setup(self) -> None:
        cli_harness.prepare_environment()
        from npuc.cli import build_parser

        self.sandbox = Sandbox("pyfuzz-argv-")
        self.jail = self.sandbox.jail
        home = self.jail.home
        files = write_fixtures(home / "in")
        self.cwd = home / "work"
        self.cwd.mkdir()
        self.paths = {f"@{role.upper()}@": path for role, path in files.items()}  # @MODEL@, @NPY_BAD@, ...
        self.paths.update({
            "@BLOB@": build_blob(files["model"], home / "in" / "model.npub", quantize=False),
            "@QBLOB@": build_blob(files["model"], home / "in" / "model_int8.npub", quantize=True, dataset=files["dataset"]),
            "@YAML@": home / "in" / "model_config.yml",
            "@PNG@": home / "in" / "img.png",
            "@BADBLOB@": home / "in" / "broken.npub",
            "@OUT@": self.cwd / "out",
            "@MISSING@": home / "in" / "missing.onnx",
        })
        blob = self.paths["@BLOB@"].read_bytes()
        self.paths["@BADBLOB@"].write_bytes(blob[: len(blob) // 2])
        self.paths["@YAML@"].write_text("models:\n  name: conv_relu\n  model_file_path: model.onnx\n  quantize: true\n"
                                        "  dataset: dataset.txt\n")
        _write_png(self.paths["@PNG@"])
        self.jail.adopt()
        self.grammar = ArgvGrammar(build_parser())
        self.mutator = ArgvMutator(self.grammar, sorted(self.paths))
        flags = sorted({f for fl in self.grammar.commands.values() for f in fl})
        self.dictionary = [t.encode() for t in [*self.paths, *self.grammar.commands, *flags]] + [b"\n", b"="]
        try:  # matplotlib builds its font cache on first use: not inside a timed run
            import importlib

            importlib.import_module("matplotlib.pyplot")
        except ImportError:
            pass

    def teardown(self) -> None:
        self.sandbox.remove()

    def seeds(self) -> List[bytes]:
        return [encode_argv(s) for s in SEEDS]

    def mutate(self, data: bytes, rng: random.Random) -> Optional[bytes]:
        return self.mutator(data, rng)

    def substitute(self, arg: str) -> str:
        for token, path in self.paths.items():
            if token in arg:
                arg = arg.replace(token, str(path))
        return arg

    def execute(self, data: bytes) -> Optional[Finding]:
        argv = [self.substitute(a) for a in decode_argv(data)]
        positional = [a for a in argv if not a.startswith("-")]
        if positional and positional[0] in SKIPPED_COMMANDS:
            return None
        with self.sandbox.guard.armed():
            result = run_cli(argv, self.cwd)
        finding = check_cli(result, allow_usage=True, quoted=sum(len(a) + 1 for a in argv))
        outputs, inputs = self._split_paths(argv)
        problems = self.sandbox.problems(
            self.jail.check(),
            output_ok=lambda p: under(p, self.cwd) or any(under(p, o) for o in outputs),
            change_ok=lambda p: any(under(p, o) for o in outputs) and p not in inputs,
        )
        return redact(merge(finding, files_finding(problems)), str(self.jail.home))

    def _split_paths(self, argv: Sequence[str]):
        """(paths given to output flags, every other argument as a path), resolved against the cwd."""
        outputs, inputs = [], set()
        skip = False
        flags = self.grammar.flags_of(argv)
        output_flags = [f for f in OUTPUT_FLAGS if f in flags]
        for i, arg in enumerate(argv):
            if skip:
                skip = False
                continue
            flag, sep, value = arg.partition("=")
            if arg.startswith("--") and _is_output_flag(flag, output_flags, flags):
                if sep:
                    outputs.append(self._resolve(value))
                elif i + 1 < len(argv):
                    outputs.append(self._resolve(argv[i + 1]))
                    skip = True
            elif arg == "-o" and "-o" in output_flags and i + 1 < len(argv):
                outputs.append(self._resolve(argv[i + 1]))
                skip = True
            elif arg.startswith("-o") and not arg.startswith("--") and "-o" in output_flags:
                outputs.append(self._resolve(arg[2:].lstrip("=")))
            else:
                inputs.add(self._resolve(value if sep else arg))
        return outputs, inputs

    def _resolve(self, arg: str) -> Path:
        return Path(os.path.normpath(self.cwd / arg)) if arg else self.cwd / "\0"


def _is_output_flag(flag: str, output_flags: Sequence[str], flags: Sequence[str]) -> bool:
    """`flag` is an output flag or argparse's unique abbreviation of one."""
    if flag in output_flags:
        return True
    matches = [f for f in flags if f.startswith(flag) and f.startswith("--")]
    return len(matches) == 1 and matches[0] in output_flags


def _write_png(path: Path) -> None:
    try:
        import numpy as np
        from PIL import Image

        Image.fromarray(np.arange(8 * 8 * 3, dtype=np.uint8).reshape(8, 8, 3)).save(path)
    except ImportError:  # no Pillow: the placeholder names a file that is not an image
        path.write_bytes(b"not a png")


if __name__ == "__main__":
    sys.exit(pyfuzz.main(CliArgsTarget()))
