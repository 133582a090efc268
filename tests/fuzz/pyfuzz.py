"""pyfuzz: a small coverage-guided mutation fuzzer for npuc's Python code.

libFuzzer covers the C++ core (tests/fuzz/fuzz_*.cc); the YAML config and the command line are
Python, and atheris is not available here, so this engine does the same job in pure Python:

* coverage: ``sys.settrace`` records (previous line, line) edges inside the traced files only
  (the ``npuc`` package by default). The global trace function returns None for every frame
  outside them, so library code (argparse, yaml, numpy) runs untraced after one dict lookup;
* corpus: every input that added an edge is kept (and written to the corpus folder);
* mutation: one to five stacked byte-, token- and line-level edits, a splice with another corpus
  entry, or the target's own structure-aware mutator (YAML tokens, argv values);
* limits: a watchdog thread ends the process on an input slower than ``-timeout`` seconds or on an
  RSS growth above ``-rss_limit_mb`` over the process after set-up (faulthandler's C-level timer
  backs it up when C++ holds the GIL);
  the input being run is kept in ``<artifact_prefix>current-input`` so a hard crash (segfault,
  OOM kill) still leaves its reproducer;
* finds: an oracle violation the target reports, or an exception escaping the target, is written
  to ``<artifact_prefix><kind>-<sha1>`` with a one-line ``.txt`` reason next to it. Finds with the
  same signature (kind + place) are saved once; fuzzing goes on, and the exit status is 1.

Command line (libFuzzer's spelling, so tests/fuzz/run.sh drives both kinds of target alike)::

    python3 tests/fuzz/fuzz_X.py [CORPUS_DIR [SEED_DIR...]] [-max_total_time=S] [-runs=N]
        [-seed=N] [-timeout=S] [-rss_limit_mb=MB] [-max_len=BYTES] [-artifact_prefix=DIR/]
        [-print_final_stats=1]
    python3 tests/fuzz/fuzz_X.py FILE...      # reproduce: run each file once, report, exit 0/1

The first folder receives new corpus entries; the target's built-in seeds are always run first.
"""

from __future__ import annotations

import faulthandler
import hashlib
import os
import random
import resource
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

__all__ = ["Finding", "Target", "Coverage", "Fuzzer", "Options", "parse_options", "main"]

# libFuzzer's default per-input limits, in the same units.
DEFAULT_TIMEOUT_S = 10
DEFAULT_RSS_LIMIT_MB = 2048
DEFAULT_MAX_LEN = 4096
# Mutations stacked on one corpus entry before it is run (libFuzzer's default depth is 5).
MAX_MUTATION_DEPTH = 5
# Share of mutations handed to the target's structure-aware mutator when it has one.
STRUCTURED_SHARE = 0.5
WATCHDOG_PERIOD_S = 0.2
# faulthandler's backstop fires this long after -timeout: the watchdog thread normally wins.
BACKSTOP_GRACE_S = 20

# Byte values that tend to break parsers: boundaries, separators, quotes, NUL, high bit.
INTERESTING_BYTES = b"\x00\x01\x7f\x80\xff\n\r\t :-,[]{}\"'#&*!|>%@`\\/."
INTERESTING_NUMBERS = (
    b"0", b"-1", b"1", b"-0", b"2147483648", b"-2147483649", b"4294967296", b"9223372036854775808",
    b"1e308", b"1e309", b"-1e309", b"nan", b".nan", b".inf", b"-.inf", b"0x7fffffff", b"1" * 40, b"3.5",
)


@dataclass
class Finding:
    """An input that broke a promise: what kind, one line saying why, and a key to deduplicate."""

    kind: str  # "oracle", "crash", "uncaught" (an exception escaped the target), "timeout", "oom"
    reason: str
    signature: str


class Target:
    """What a fuzz target supplies. Subclasses override what they need."""

    name = "target"
    #: Tokens the generic mutator may insert (keywords, flags, placeholders).
    dictionary: Sequence[bytes] = ()

    def setup(self) -> None:
        """Builds the fixtures once per process (models, temp folders)."""

    def teardown(self) -> None:
        """Removes what setup made."""

    def seeds(self) -> List[bytes]:
        """Inputs the corpus starts from."""
        return []

    def execute(self, data: bytes) -> Optional[Finding]:
        """Runs one input; returns a Finding when an oracle is violated, else None."""
        raise NotImplementedError

    def mutate(self, data: bytes, rng: random.Random) -> Optional[bytes]:
        """A structure-aware mutation of `data`, or None to use only the generic ones."""
        return None


# ---------------------------------------------------------------------------------- coverage


class Coverage:
    """(code object, previous line, line) edges observed in the traced files during one run."""

    def __init__(self, roots: Iterable[str]) -> None:
        self._roots = tuple(os.path.realpath(r) for r in roots)
        # code object -> its small id, or -1 for code outside the roots. Keyed by the code object
        # itself (not id()) so a freed code object's recycled id never inherits a classification.
        self._ids: Dict[object, int] = {}
        self.edges: Set[int] = set()

    def _classify(self, code) -> int:
        filename = os.path.realpath(code.co_filename) if code.co_filename[:1] not in ("<", "") else ""
        inside = bool(filename) and any(filename == r or filename.startswith(r + os.sep) for r in self._roots)
        cid = len(self._ids) + 1 if inside else -1
        self._ids[code] = cid
        return cid

    def tracer(self, frame, event, arg):  # the global trace function (sys.settrace)
        code = frame.f_code
        cid = self._ids.get(code)
        if cid is None:
            cid = self._classify(code)
        if cid < 0:
            return None  # no line events for this frame: library code stays cheap
        edges = self.edges
        base = cid << 40
        prev = [frame.f_lineno]

        def local(frame, event, arg):
            if event == "line":
                line = frame.f_lineno
                edges.add(base | (prev[0] & 0xFFFFF) << 20 | (line & 0xFFFFF))
                prev[0] = line
            elif event == "exception":  # where an exception passes is a behaviour of its own
                edges.add(base | 0xFFFFF << 20 | (frame.f_lineno & 0xFFFFF))
            return local

        return local


# ---------------------------------------------------------------------------------- mutation


def _rand_range(rng: random.Random, n: int) -> Tuple[int, int]:
    start = rng.randrange(n)
    return start, min(n, start + 1 + int(rng.expovariate(1 / 8)))


def _mutate_bytes(data: bytes, rng: random.Random, other: bytes, dictionary: Sequence[bytes]) -> bytes:
    """One generic edit: bit/byte/number changes, insert/delete/duplicate, tokens, lines, splice."""
    b = bytearray(data)
    op = rng.randrange(13)
    if not b and op < 9:
        op = 3
    if op == 0:  # flip a bit
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    elif op == 1:  # set a byte to a random value
        b[rng.randrange(len(b))] = rng.randrange(256)
    elif op == 2:  # set a byte to an interesting one
        b[rng.randrange(len(b))] = rng.choice(INTERESTING_BYTES)
    elif op == 3:  # insert random or interesting bytes
        chunk = bytes(rng.choice(INTERESTING_BYTES) if rng.random() < 0.5 else rng.randrange(256)
                      for _ in range(1 + rng.randrange(4)))
        i = rng.randrange(len(b) + 1)
        b[i:i] = chunk
    elif op == 4:  # delete a range
        s, e = _rand_range(rng, len(b))
        del b[s:e]
    elif op == 5:  # duplicate a range in place
        s, e = _rand_range(rng, len(b))
        b[e:e] = b[s:e]
    elif op == 6:  # copy a range elsewhere
        s, e = _rand_range(rng, len(b))
        i = rng.randrange(len(b) + 1)
        b[i:i] = b[s:e]
    elif op == 7:  # replace a run of digits with an interesting number
        digits = [i for i, c in enumerate(b) if 48 <= c <= 57]
        i = rng.choice(digits) if digits else rng.randrange(len(b))
        e = i
        while e < len(b) and (48 <= b[e] <= 57 or b[e] in b".eE+-"):
            e += 1
        b[i:e] = rng.choice(INTERESTING_NUMBERS)
    elif op == 8:  # shuffle a short range
        s, e = _rand_range(rng, len(b))
        part = list(b[s:e])
        rng.shuffle(part)
        b[s:e] = bytes(part)
    elif op == 9:  # insert a dictionary token (or an interesting number)
        token = rng.choice(dictionary) if dictionary and rng.random() < 0.8 else rng.choice(INTERESTING_NUMBERS)
        i = rng.randrange(len(b) + 1)
        b[i:i] = token
    elif op == 10:  # line edit: delete, duplicate or swap lines
        lines = bytes(b).split(b"\n")
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        choice = rng.randrange(3)
        if choice == 0 and len(lines) > 1:
            del lines[i]
        elif choice == 1:
            lines.insert(j, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        b = bytearray(b"\n".join(lines))
    elif op == 11:  # insert a line of the other corpus entry
        theirs = other.split(b"\n")
        lines = bytes(b).split(b"\n")
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(theirs))
        b = bytearray(b"\n".join(lines))
    else:  # splice: our head, their tail
        cut = rng.randrange(len(b) + 1)
        b = b[:cut] + other[rng.randrange(len(other) + 1):]
    return bytes(b)


# ---------------------------------------------------------------------------------- the engine


@dataclass
class Options:
    corpus_dirs: List[Path]
    files: List[Path]  # reproduce mode: run these once
    max_total_time: float = 0.0  # 0: no limit
    runs: int = -1  # -1: no limit
    seed: int = 0
    timeout: float = DEFAULT_TIMEOUT_S
    rss_limit_mb: int = DEFAULT_RSS_LIMIT_MB
    max_len: int = DEFAULT_MAX_LEN
    artifact_prefix: str = "./"
    print_final_stats: bool = True
    use_coverage: bool = True  # False: plain random mutation of the seeds (the unit test's control)


def parse_options(argv: Sequence[str]) -> Options:
    """libFuzzer-style ``-flag=value`` options (``--seed=N`` also accepted) and paths."""
    opts = Options(corpus_dirs=[], files=[])
    numeric = {"max_total_time": float, "runs": int, "seed": int, "timeout": float, "rss_limit_mb": int,
               "max_len": int, "print_final_stats": int}
    for arg in argv:
        if arg.startswith("-"):
            key, sep, value = arg.lstrip("-").partition("=")
            if not sep:
                raise SystemExit(f"pyfuzz: option '{arg}' needs a value (-{key}=VALUE)")
            if key == "artifact_prefix":
                opts.artifact_prefix = value
            elif key in numeric:
                try:
                    parsed = numeric[key](value)
                except ValueError:
                    raise SystemExit(f"pyfuzz: option -{key}: '{value}' is not a number") from None
                setattr(opts, key, bool(parsed) if key == "print_final_stats" else parsed)
            else:
                # libFuzzer flags without a meaning here (e.g. -malloc_limit_mb) are accepted and ignored.
                print(f"pyfuzz: ignoring option {arg}", file=sys.stderr)
        elif Path(arg).is_file():
            opts.files.append(Path(arg))
        else:
            opts.corpus_dirs.append(Path(arg))
    return opts


class Fuzzer:
    """Runs a Target: seeds, then mutations of the corpus, until -runs or -max_total_time."""

    def __init__(self, target: Target, opts: Options, trace_roots: Sequence[str], log=None) -> None:
        self.target, self.opts = target, opts
        self.rng = random.Random(opts.seed)
        self.coverage = Coverage(trace_roots)
        self.seen: Set[int] = set()
        self.corpus: List[bytes] = []
        self.corpus_hashes: Set[str] = set()
        self.finds: List[Finding] = []
        self.signatures: Set[str] = set()
        self.duplicate_finds = 0
        self.runs = 0
        self.new_units = 0
        self.slowest = 0.0
        self.start = time.monotonic()
        self._next_pulse = 1
        # The engine's own messages go to the real stderr even while the target captures fd 2.
        self.log = log or os.fdopen(os.dup(2), "w", buffering=1, errors="backslashreplace")
        # faulthandler writes to a file descriptor: the log's, or the process's stderr for a log in memory.
        self._fault_file = self.log if _has_fileno(self.log) else sys.__stderr__
        self._current: Optional[bytes] = None
        self._started: Optional[float] = None
        self._current_fd: Optional[int] = None
        self._stop_watchdog = threading.Event()
        self.baseline_rss_mb = 0.0

    def _say(self, text: str) -> None:
        """Writes to the log; argv bytes that are not UTF-8 (surrogates) are shown escaped."""
        self.log.write(text.encode("utf-8", "backslashreplace").decode("utf-8"))

    # -- limits

    def _current_input_path(self) -> str:
        return f"{self.opts.artifact_prefix}current-input"

    def _rss_mb(self) -> float:
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        except OSError:  # not Linux: the peak is the best we have
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def _watchdog(self) -> None:
        while not self._stop_watchdog.wait(WATCHDOG_PERIOD_S):
            started, data = self._started, self._current
            if started is None or data is None:
                continue
            elapsed = time.monotonic() - started
            if elapsed > self.opts.timeout:
                self._die(data, Finding("timeout", f"input ran longer than {self.opts.timeout:g} s", "timeout"))
            growth = self._rss_mb() - self.baseline_rss_mb
            if growth > self.opts.rss_limit_mb:
                self._die(data, Finding("oom", f"RSS grew by {growth:.0f} MB, above -rss_limit_mb={self.opts.rss_limit_mb}", "oom"))

    def _die(self, data: bytes, finding: Finding) -> None:
        """A timeout or runaway memory: the process state is unknown, so save, report and exit."""
        self._save_artifact(data, finding)
        self._say("==pyfuzz: stack of every thread at the moment of the find:\n")
        self.log.flush()
        faulthandler.dump_traceback(file=self._fault_file, all_threads=True)
        self._print_stats()
        self.log.flush()
        os._exit(1)

    def _arm(self, data: bytes) -> None:
        if self._current_fd is not None:  # cheap: one pwrite + truncate of a file kept open
            os.ftruncate(self._current_fd, 0)
            os.pwrite(self._current_fd, data, 0)
        # The C-level backstop works even when C++ holds the GIL and the watchdog cannot run.
        faulthandler.dump_traceback_later(self.opts.timeout + BACKSTOP_GRACE_S, exit=True, file=self._fault_file)
        self._current, self._started = data, time.monotonic()

    def _disarm(self) -> None:
        faulthandler.cancel_dump_traceback_later()
        elapsed = time.monotonic() - (self._started or time.monotonic())
        self.slowest = max(self.slowest, elapsed)
        self._current, self._started = None, None

    # -- running

    def run_one(self, data: bytes) -> Tuple[Optional[Finding], Set[int]]:
        """Runs `data` under the tracer and the limits; returns (finding, edges of this run)."""
        self.coverage.edges = edges = set()
        self._arm(data)
        finding: Optional[Finding] = None
        sys.settrace(self.coverage.tracer if self.opts.use_coverage else None)
        try:
            finding = self.target.execute(data)
        except Exception as e:  # noqa: BLE001 - an exception escaping the target is itself a find
            finding = crash_finding(e, "target raised", kind="uncaught")
        finally:
            sys.settrace(None)
            self._disarm()
        self.runs += 1
        growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - self.baseline_rss_mb
        if finding is None and growth > self.opts.rss_limit_mb:
            finding = Finding("oom", f"peak RSS grew by {growth:.0f} MB, above -rss_limit_mb={self.opts.rss_limit_mb}", "oom")
        if finding is not None:
            self._record(data, finding)
        return finding, edges

    def _record(self, data: bytes, finding: Finding) -> None:
        if finding.signature in self.signatures:
            self.duplicate_finds += 1
            return
        self.signatures.add(finding.signature)
        self.finds.append(finding)
        self._save_artifact(data, finding)

    def _save_artifact(self, data: bytes, finding: Finding) -> None:
        name = f"{self.opts.artifact_prefix}{finding.kind}-{hashlib.sha1(data).hexdigest()}"
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_bytes(data)
        Path(name + ".txt").write_text(one_line(finding.reason) + "\n", errors="backslashreplace")
        self._say(f"==pyfuzz: FIND ({finding.kind}) {one_line(finding.reason)}\n"
                       f"artifact_prefix='{self.opts.artifact_prefix}'; Test unit written to {name}\n")

    def _consider(self, data: bytes, edges: Set[int], why: str) -> None:
        new = edges - self.seen
        if not new:
            return
        self.seen |= new
        self.corpus.append(data)
        self.new_units += 1
        digest = hashlib.sha1(data).hexdigest()
        if self.opts.corpus_dirs and digest not in self.corpus_hashes:
            self.opts.corpus_dirs[0].mkdir(parents=True, exist_ok=True)
            (self.opts.corpus_dirs[0] / digest).write_bytes(data)
        self.corpus_hashes.add(digest)
        self._status(why)

    def _status(self, what: str) -> None:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        size = sum(len(c) for c in self.corpus)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        self._say(f"#{self.runs}\t{what:<6} cov: {len(self.seen)} corp: {len(self.corpus)}/{size}b "
                       f"exec/s: {self.runs / elapsed:.0f} rss: {rss}Mb finds: {len(self.finds)}\n")

    def mutate(self, data: bytes) -> bytes:
        structured = self.rng.random() < STRUCTURED_SHARE
        if structured:
            out = self.target.mutate(data, self.rng)
            if out is not None:
                return out[: self.opts.max_len]
        for _ in range(1 + self.rng.randrange(MAX_MUTATION_DEPTH)):
            other = self.rng.choice(self.corpus) if self.corpus else b""
            data = _mutate_bytes(data, self.rng, other, self.target.dictionary)
        return data[: self.opts.max_len]

    def _initial_inputs(self) -> List[bytes]:
        inputs = list(self.target.seeds())
        for folder in self.opts.corpus_dirs:
            if folder.is_dir():
                inputs += [p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()]
        return [i[: self.opts.max_len] for i in inputs]

    def _time_left(self) -> bool:
        if 0 <= self.opts.runs <= self.runs:
            return False
        return not (self.opts.max_total_time and time.monotonic() - self.start >= self.opts.max_total_time)

    def fuzz(self) -> int:
        """The fuzzing loop; returns the exit status (1 when anything was found)."""
        self._say(f"INFO: pyfuzz target {self.target.name}, seed {self.opts.seed}\n")
        for data in self._initial_inputs():
            if not self._time_left():
                break
            _, edges = self.run_one(data)
            if self.opts.use_coverage:
                self._consider(data, edges, "NEW")
            else:  # the control: the seeds stay the only mutation bases
                self.corpus.append(data)
        self._status("INITED")
        if not self.corpus:  # nothing traced (every seed empty?): mutate from an empty input
            self.corpus.append(b"")
        while self._time_left():
            base = self.rng.choice(self.corpus)
            data = self.mutate(base)
            _, edges = self.run_one(data)
            if self.opts.use_coverage:
                self._consider(data, edges, "NEW")
            if self.runs >= self._next_pulse:
                self._status("pulse")
                while self._next_pulse <= self.runs:
                    self._next_pulse *= 2
        self._status("DONE")
        self._print_stats()
        return 1 if self.finds else 0

    def reproduce(self, files: Sequence[Path]) -> int:
        """Runs each file once (no mutation) and says what it found."""
        status = 0
        for path in files:
            finding, _ = self.run_one(path.read_bytes())
            if finding is None:
                self._say(f"{path}: ok\n")
            else:
                status = 1
                self._say(f"{path}: {finding.kind}: {one_line(finding.reason)}\n")
        return status

    def _print_stats(self) -> None:
        elapsed = time.monotonic() - self.start
        self._say(f"Done {self.runs} runs in {int(elapsed)} second(s)\n")
        if not self.opts.print_final_stats:
            return
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        stats = [
            ("number_of_executed_units", self.runs),
            ("average_exec_per_sec", int(self.runs / max(elapsed, 1e-9))),
            ("new_units_added", self.new_units),
            ("slowest_unit_time_sec", int(self.slowest)),
            ("peak_rss_mb", rss),
            ("coverage_points", len(self.seen)),
            ("corpus_size", len(self.corpus)),
            ("finds", len(self.finds)),
            ("duplicate_finds", self.duplicate_finds),
        ]
        for key, value in stats:
            self._say(f"stat::{key + ':':<28}{value}\n")

    # -- lifecycle

    def __enter__(self) -> "Fuzzer":
        faulthandler.enable(file=self._fault_file, all_threads=True)  # a segfault in C++ still shows where
        prefix_dir = Path(self._current_input_path()).parent
        prefix_dir.mkdir(parents=True, exist_ok=True)
        self._current_fd = os.open(self._current_input_path(), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        threading.Thread(target=self._watchdog, name="pyfuzz-watchdog", daemon=True).start()
        self.target.setup()
        # -rss_limit_mb bounds the growth over the process with its fixtures loaded (the
        # interpreter, numpy, onnx and npuc take a few hundred MB before the first input).
        self.baseline_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return self

    def __exit__(self, *exc) -> None:
        self._stop_watchdog.set()
        self.target.teardown()
        if self._current_fd is not None:
            os.close(self._current_fd)
            os.unlink(self._current_input_path())  # the process ended normally: nothing to reproduce
            self._current_fd = None
        self.log.flush()


def _has_fileno(f) -> bool:
    try:
        f.fileno()
        return True
    except (AttributeError, OSError, ValueError):
        return False


def one_line(text: str, limit: int = 500) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def innermost_frame(tb) -> str:
    """'file.py:LINE' of the innermost frame of a traceback (the signature of a crash)."""
    frames = traceback.extract_tb(tb)
    if not frames:
        return "?"
    last = frames[-1]
    return f"{os.path.basename(last.filename)}:{last.lineno}"


def crash_finding(e: BaseException, what: str, kind: str = "crash") -> Finding:
    """A finding for an exception: `kind` "crash" when the target caught it from the code under
    test, "uncaught" when it escaped the target itself (for the npuc targets: a harness bug)."""
    where = innermost_frame(e.__traceback__)
    return Finding(kind, f"{what} {type(e).__name__}: {e} (at {where})", f"{kind}:{type(e).__name__}:{where}")


def main(target: Target, argv: Optional[Sequence[str]] = None, trace_roots: Optional[Sequence[str]] = None) -> int:
    """Parses libFuzzer-style options and fuzzes (or reproduces with) `target`; returns the exit status."""
    opts = parse_options(sys.argv[1:] if argv is None else argv)
    if trace_roots is None:
        import npuc

        trace_roots = [os.path.dirname(npuc.__file__)]
    with Fuzzer(target, opts, trace_roots) as fuzzer:
        return fuzzer.reproduce(opts.files) if opts.files else fuzzer.fuzz()
