"""The Python fuzzing engine (tests/fuzz/pyfuzz.py) and its two npuc targets keep working.

The engine test plants a bug behind three nested conditions: the coverage-guided loop keeps each
input that gets one condition further and reaches the bug; the same budget of plain random
mutations of the seed does not. The target tests run each target for a few hundred inputs with a
fixed seed in a subprocess (the targets set process-wide state: an audit hook, the temp folder)
and check the harness itself held up; what the targets find in npuc is reported by
tests/fuzz/run.sh, not failed here (docs/reliability.md lists the finds).
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

FUZZ_DIR = Path(__file__).resolve().parents[1] / "fuzz"
sys.path.insert(0, str(FUZZ_DIR))

import pyfuzz  # noqa: E402
from fuzz_cli_args import decode_argv, encode_argv  # noqa: E402

TOKENS = [b"alpha", b"beta", b"gamma", b"delta", b"omega", b"kappa", b"sigma", b"theta"]
# Enough for the guided engine (seeds 1-20 needed 57-940 runs, measured), far too
# few for blind mutation to put all three tokens into one input.
BUDGET = 3000


class PlantedBug(pyfuzz.Target):
    """Three nested conditions; the innermost is the bug."""

    name = "toy"
    dictionary = TOKENS

    def seeds(self) -> List[bytes]:
        return [b"hello"]

    def execute(self, data: bytes) -> Optional[pyfuzz.Finding]:
        if b"alpha" in data:
            if b"beta" in data:
                if b"gamma" in data:
                    return pyfuzz.Finding("oracle", "planted bug reached", "planted")
        return None


def _fuzz_toy(tmp_path: Path, seed: int, use_coverage: bool) -> pyfuzz.Fuzzer:
    opts = pyfuzz.Options(corpus_dirs=[], files=[], runs=BUDGET, seed=seed, artifact_prefix=f"{tmp_path}/art/",
                          use_coverage=use_coverage)
    tmp_path.mkdir(parents=True, exist_ok=True)
    with open(tmp_path / "log.txt", "w") as log, pyfuzz.Fuzzer(PlantedBug(), opts, [__file__], log=log) as fuzzer:
        fuzzer._time_left = lambda: not fuzzer.finds and fuzzer.runs < BUDGET  # stop at the first find
        fuzzer.fuzz()
    return fuzzer


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_coverage_guidance_reaches_a_bug_behind_three_branches(tmp_path: Path, seed: int) -> None:
    guided = _fuzz_toy(tmp_path, seed, use_coverage=True)
    assert [f.signature for f in guided.finds] == ["planted"], f"not found in {guided.runs} runs"
    assert len(guided.corpus) >= 4  # the seed and one input per condition passed
    artifact = next((tmp_path / "art").glob("oracle-*[0-9a-f]"))
    assert (tmp_path / "art" / f"{artifact.name}.txt").read_text() == "planted bug reached\n"

    blind = _fuzz_toy(tmp_path / "blind", seed, use_coverage=False)
    assert not blind.finds and blind.runs == BUDGET


def test_engine_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    first = _fuzz_toy(tmp_path / "a", 7, use_coverage=True)
    second = _fuzz_toy(tmp_path / "b", 7, use_coverage=True)
    assert first.runs == second.runs and first.corpus == second.corpus


def test_reproduce_mode_reruns_an_artifact(tmp_path: Path) -> None:
    guided = _fuzz_toy(tmp_path, 1, use_coverage=True)
    artifact = next((tmp_path / "art").glob("oracle-*[0-9a-f]"))
    opts = pyfuzz.Options(corpus_dirs=[], files=[artifact], artifact_prefix=f"{tmp_path}/again/")
    with open(tmp_path / "log2.txt", "w") as log, pyfuzz.Fuzzer(PlantedBug(), opts, [__file__], log=log) as fuzzer:
        assert fuzzer.reproduce([artifact]) == 1
    assert guided.finds and "planted bug reached" in (tmp_path / "log2.txt").read_text()


def test_a_slow_input_is_a_timeout_find(tmp_path: Path) -> None:
    """The watchdog saves the input and ends the process (as libFuzzer does), status 1."""
    script = tmp_path / "slow_target.py"
    script.write_text(
        "import sys, time\n"
        f"sys.path.insert(0, {str(FUZZ_DIR)!r})\n"
        "import pyfuzz\n"
        "class Slow(pyfuzz.Target):\n"
        "    def seeds(self): return [b'x']\n"
        "    def execute(self, data): time.sleep(30)\n"
        "sys.exit(pyfuzz.main(Slow(), trace_roots=[__file__]))\n"
    )
    art = tmp_path / "art"
    r = subprocess.run([sys.executable, str(script), "-runs=1", "-timeout=1", f"-artifact_prefix={art}/"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "FIND (timeout)" in r.stderr and "stat::number_of_executed_units" in r.stderr
    assert (art / "timeout-11f6ad8ec52a2984abaafd7c3b516503785c2072").read_bytes() == b"x"


def test_argv_round_trips_through_the_corpus_format() -> None:
    for argv in ([], [""], ["info", "a b", "-\r"], ["x", "", ""], ["caf\udce9"]):
        assert decode_argv(encode_argv(argv)) == argv
    assert decode_argv(b"perf\nout\0.json\n") == ["perf", "out"]  # exec() ends an argument at NUL


def _run_target(tmp_path: Path, name: str, runs: int) -> Dict[str, int]:
    import npuc

    package_root = str(Path(npuc.__file__).resolve().parents[1])  # the npuc this suite tests
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    art = tmp_path / "artifacts"
    r = subprocess.run([sys.executable, str(FUZZ_DIR / f"{name}.py"), str(tmp_path / "corpus"), f"-runs={runs}",
                        "-seed=1", f"-artifact_prefix={art}/"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode in (0, 1), r.stderr[-3000:]
    stats = {k: int(v) for k, v in re.findall(r"^stat::(\w+):\s+(\d+)$", r.stderr, re.M)}
    assert stats.get("number_of_executed_units") == runs, r.stderr[-3000:]
    harness_failures = [p.read_text() for p in art.glob("*.txt") if p.name.split("-")[0] in ("uncaught", "timeout", "oom")]
    assert not harness_failures, harness_failures
    assert not (art / "current-input").exists()  # removed on a normal exit
    assert len(list((tmp_path / "corpus").iterdir())) == stats["corpus_size"]
    return stats


def test_yaml_config_target_runs(tmp_path: Path) -> None:
    stats = _run_target(tmp_path, "fuzz_yaml_config", 150)
    # The seeds alone reach well past the YAML checks into the build (measured: ~800 edges).
    assert stats["coverage_points"] > 400 and stats["new_units_added"] > 10


def test_cli_args_target_runs(tmp_path: Path) -> None:
    stats = _run_target(tmp_path, "fuzz_cli_args", 150)
    assert stats["coverage_points"] > 600 and stats["new_units_added"] > 10


def test_write_guard_refuses_writes_outside_its_roots(tmp_path: Path) -> None:
    """Run in a subprocess: an audit hook cannot be removed again."""
    code = (
        "import sys, os\n"
        f"sys.path.insert(0, {str(FUZZ_DIR)!r})\n"
        "from pathlib import Path\n"
        "from cli_harness import WriteGuard\n"
        f"inside, outside = Path({str(tmp_path / 'in')!r}), Path({str(tmp_path / 'out')!r})\n"
        "inside.mkdir(); outside.mkdir()\n"
        "guard = WriteGuard([inside])\n"
        "with guard.armed():\n"
        "    (inside / 'a.txt').write_text('ok')\n"
        "    for attempt in (lambda: (outside / 'b.txt').write_text('no'), lambda: os.mkdir(outside / 'd'),\n"
        "                    lambda: os.replace(inside / 'a.txt', outside / 'c.txt'), lambda: open(inside / '..' / 'out' / 'e', 'w')):\n"
        "        try:\n"
        "            attempt()\n"
        "        except PermissionError:\n"
        "            pass\n"
        "print(len(guard.refused))\n"
        "(outside / 'after.txt').write_text('disarmed: allowed')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "4"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["after.txt"]
    assert (tmp_path / "in" / "a.txt").read_text() == "ok"


def test_yaml_mutator_keeps_the_mode_line_first() -> None:
    """'#hybrid' selects hybrid step 2 in fuzz_yaml_config: mutations must not move it."""
    from yaml_mutator import YamlMutator

    rng = random.Random(0)
    mutate = YamlMutator(["models", "name", "model_file_path"])
    data = b"#hybrid\ncustom_quantize_layers:\n  conv: float16\n"
    for _ in range(200):
        data = mutate(data, rng)
        assert data.startswith(b"#hybrid\n")


def test_a_finding_quoting_undecodable_argv_bytes_is_saved(tmp_path: Path) -> None:
    """Harness bug found while fuzzing: a reason holding a surrogate (argv bytes that are not
    UTF-8) made writing the reason file raise, and the fuzzer died."""

    class Quoting(PlantedBug):
        def execute(self, data: bytes) -> Optional[pyfuzz.Finding]:
            return pyfuzz.Finding("oracle", "bad path 'out\udce7'", "quoting")

    opts = pyfuzz.Options(corpus_dirs=[], files=[], runs=1, artifact_prefix=f"{tmp_path}/art/")
    with open(tmp_path / "log.txt", "w") as log, pyfuzz.Fuzzer(Quoting(), opts, [__file__], log=log) as fuzzer:
        assert fuzzer.fuzz() == 1
    (reason,) = (tmp_path / "art").glob("*.txt")
    assert reason.read_text() == "bad path 'out\\udce7'\n"


def test_oracle_counts_lines_at_newlines_only() -> None:
    """Harness bug found while fuzzing: str.splitlines() also splits at '\\r', '\\x1c' or '\\x85'
    inside a quoted argument, which made a one-line error look like two lines."""
    from cli_harness import CliResult, check_cli

    one_line = "npuc: error: model file 'a\rb\x1cc\x85' does not exist\n"
    assert check_cli(CliResult(1, "", one_line), allow_usage=False, quoted=10) is None
    usage = "usage: npuc info [-h] model\nnpuc info: error: unrecognized arguments: x\ry\n"
    assert check_cli(CliResult(1, "", usage), allow_usage=True, quoted=10) is None
    two = check_cli(CliResult(1, "", "warning: something\nnpuc: error: bad\n"), allow_usage=False, quoted=10)
    assert two is not None and "2 stderr lines" in two.reason
    internal = check_cli(CliResult(2, "", "npuc: internal error: KeyError: 0 (please report it)\n"),
                         allow_usage=False, quoted=10)
    assert internal is not None and internal.signature.startswith("exit2:KeyError")
