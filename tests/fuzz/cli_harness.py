"""What the Python fuzz targets share: the fixture files, the jail, the in-process CLI and its oracle.

* ``write_fixtures`` writes a tiny valid model (Conv + Relu, 1x3x8x8), two calibration ``.npy``
  samples and the ``dataset.txt`` listing them, a text file that is no model, and a sub-folder;
* ``Jail`` is a temp folder whose files are known: after each run it lists the paths that
  appeared and the fixtures whose bytes changed or that vanished, then restores the fixtures and
  removes everything else, so runs do not interact;
* ``WriteGuard`` refuses (and records) Python-level writes outside the jail and a scratch folder,
  so a mutated path cannot touch the machine; ``Sandbox`` bundles the three;
* ``run_cli`` runs ``npuc.cli.main(argv)`` in this process with stdout/stderr captured (Python
  level and file-descriptor level, so output of C code is seen too);
* ``check_cli`` is the oracle of the exit code and stderr.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence

from pyfuzz import Finding, crash_finding, one_line

# Environment of the fuzzed program, set before npuc is imported: one thread (two shared cores,
# and thread timing must not change coverage), no display, and the traceback of an internal error
# on stderr so a find's signature can name the line.
FUZZ_ENV = {"OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "NPUC_DEBUG": "1"}
# How much longer than the input it quotes an error line may be: quoting a 3000-character argument
# is honest, but an alias bomb of 200 bytes turning into a 100 kB message is a find.
MAX_ERROR_CHARS = 2000
ERROR_PREFIX = "npuc: error: "
INTERNAL_PREFIX = "npuc: internal error: "
# argparse's usage errors: "npuc[ SUBCOMMAND]: error: ... (see npuc SUBCOMMAND --help)", one line
# (npuc's parser), or that line after argparse's usage block.
_USAGE_ERROR = re.compile(r"^npuc( [\w-]+)?: error: \S")


def prepare_environment() -> None:
    for key, value in FUZZ_ENV.items():
        os.environ.setdefault(key, value)
    sys.dont_write_bytecode = True  # a module first imported during a run must not write a .pyc


# ---------------------------------------------------------------------------------- fixtures


def _tiny_model() -> bytes:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_seeds import load_bad_input_corpus  # the Conv + Relu model of the bad-input corpus

    return load_bad_input_corpus().conv_model()


def _npy(array) -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def write_fixtures(folder: Path) -> Dict[str, Path]:
    """Writes the shared input files into `folder`; returns them by role."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    files = {
        "model": ("model.onnx", _tiny_model()),
        "npy": ("x0.npy", _npy(rng.standard_normal((1, 3, 8, 8)).astype(np.float32))),
        "npy2": ("x1.npy", _npy(rng.standard_normal((1, 3, 8, 8)).astype(np.float32))),
        "npy_bad": ("wrong_shape.npy", _npy(np.zeros((2, 5), np.float64))),
        "dataset": ("dataset.txt", b"x0.npy\nx1.npy\n"),
        "text": ("notes.txt", b"this is not a model\n"),
        "empty": ("empty.onnx", b""),
    }
    paths = {}
    for role, (name, data) in files.items():
        (folder / name).write_bytes(data)
        paths[role] = folder / name
    (folder / "sub").mkdir(exist_ok=True)
    paths["dir"] = folder / "sub"
    return paths


def build_blob(model: Path, out: Path, quantize: bool, dataset: Optional[Path] = None) -> Path:
    """Compiles `model` into `out` with the toolkit (quietly)."""
    import npuc

    with contextlib.redirect_stdout(io.StringIO()):
        with npuc.Toolkit() as tk:
            tk.config(target_platform="rk3588")
            tk.load_onnx(model=str(model))
            tk.build(do_quantization=quantize, dataset=str(dataset) if dataset else None)
            tk.export_blob(str(out))
    return out


# ---------------------------------------------------------------------------------- the jail


@dataclass
class JailDiff:
    new: List[Path]
    changed: List[Path]
    deleted: List[Path]


class Jail:
    """A temp folder whose content is known; `check` reports and undoes what a run changed in it."""

    def __init__(self, prefix: str, depth: int = 8) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=prefix)).resolve()
        # The files live a few folders down, so a path that climbs with '..' still lands inside
        # the jail, where the check sees it.
        self.home = self.root.joinpath(*[f"d{i}" for i in range(depth)])
        self.home.mkdir(parents=True)
        self._fixtures: Dict[Path, bytes] = {}
        self._dirs = {self.root, self.home} | {p for p in self.home.parents if self.root in p.parents}

    def adopt(self) -> None:
        """Records every file and folder now under the root as a fixture."""
        for path in self.root.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                self._dirs.add(path)
            else:
                self._fixtures[path] = path.read_bytes()

    def put(self, path: Path, data: bytes) -> None:
        """Sets (or replaces) a fixture file, e.g. the input of this run."""
        path.write_bytes(data)
        self._fixtures[path] = data

    def check(self) -> "JailDiff":
        """What a run changed under the root (new paths, changed or vanished fixtures); then restores."""
        diff = JailDiff([], [], [])
        seen = set()
        for dirpath, dirnames, filenames in os.walk(self.root):
            here = Path(dirpath)
            for name in dirnames + filenames:
                path = here / name
                if path in self._fixtures:
                    seen.add(path)
                    if path.is_symlink() or not path.is_file() or path.read_bytes() != self._fixtures[path]:
                        diff.changed.append(path)
                elif path not in self._dirs:
                    if not path.is_dir() or path.is_symlink() or not any(True for _ in path.iterdir()):
                        diff.new.append(path)  # files and empty folders: a full folder shows by its files
        diff.deleted = [path for path in self._fixtures if path not in seen]
        self.restore()
        return diff

    def restore(self) -> None:
        for dirpath, dirnames, filenames in os.walk(self.root, topdown=False):
            here = Path(dirpath)
            for name in filenames + dirnames:
                path = here / name
                if path in self._fixtures or path in self._dirs:
                    continue
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink()
        for path in sorted(self._dirs):
            if path.is_symlink() or path.is_file():
                path.unlink()
            path.mkdir(parents=True, exist_ok=True)
        for path, data in self._fixtures.items():
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.is_symlink():
                path.unlink()
            if not path.is_file() or path.read_bytes() != data:
                path.write_bytes(data)

    def rel(self, path: Path) -> str:
        """`path` as JAIL/..., relative to the fixtures' home (the report must not name this machine's temp folder)."""
        return "JAIL/" + os.path.relpath(path, self.home)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


# ---------------------------------------------------------------------------------- the guard

# Audit events that write, and where their paths are among the event's arguments.
_WRITE_EVENTS = {
    "os.mkdir": (0,), "os.rename": (0, 1), "os.replace": (0, 1), "os.remove": (0,), "os.rmdir": (0,),
    "os.truncate": (0,), "os.chmod": (0,), "os.chown": (0,), "os.link": (1,), "os.symlink": (1,),
    "os.utime": (0,), "shutil.rmtree": (0,), "shutil.copyfile": (1,), "shutil.copymode": (1,),
    "shutil.copystat": (1,), "shutil.move": (0, 1),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# Writing there changes nothing on the machine; a fuzzer may use it as an output.
HARMLESS_TARGETS = ("/dev/null",)


class WriteGuard:
    """While armed, refuses Python-level writes outside its roots (sys.addaudithook) and records them.

    The fuzzer runs as whatever user starts it, root included, and npuc writes where a config or
    an argument says: a mutated ``name: /x`` must not create ``/x.npub`` on this machine. Paths
    npuc creates the parent of (pathlib ``mkdir``) are refused before the C++ writer runs; the
    jail's depth keeps '..' climbs inside. Only the thread that armed the guard is checked, so
    the fuzzer's watchdog can still save an artifact.
    """

    def __init__(self, roots: Sequence[Path]) -> None:
        self.roots = [os.path.realpath(r) for r in roots]
        self.refused: List[str] = []
        self._owner: Optional[int] = None
        sys.addaudithook(self._hook)

    @contextlib.contextmanager
    def armed(self):
        self.refused = []
        self._owner = threading.get_ident()
        try:
            yield self
        finally:
            self._owner = None

    def allows(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real in HARMLESS_TARGETS or any(real == r or real.startswith(r + os.sep) for r in self.roots)

    def _hook(self, event: str, args: tuple) -> None:
        if self._owner is None or self._owner != threading.get_ident():
            return
        if event == "open":
            path, flags = args[0], args[2]
            candidates = [path] if isinstance(flags, int) and flags & _WRITE_FLAGS else []
        elif event in _WRITE_EVENTS:
            candidates = [args[i] for i in _WRITE_EVENTS[event] if i < len(args)]
        else:
            return
        for path in candidates:
            if not isinstance(path, (str, bytes, os.PathLike)):
                continue  # a file descriptor: opened earlier, where the check already ran
            text = os.fsdecode(path)
            self._owner = None  # realpath below must not re-enter the hook
            try:
                allowed = self.allows(text)
            finally:
                self._owner = threading.get_ident()
            if not allowed:
                self.refused.append(f"{event} {os.path.realpath(text)}")
                raise PermissionError(f"pyfuzz write guard: {event} outside the fuzzing folders: {text}")


class Sandbox:
    """The jail, a scratch folder for library temp files and caches, and the guard over both."""

    def __init__(self, prefix: str) -> None:
        self.jail = Jail(prefix)
        self.scratch = Path(tempfile.mkdtemp(prefix=prefix + "scratch-")).resolve()
        tempfile.tempdir = str(self.scratch)  # temp files made during a run land here, not in /tmp
        os.environ["MPLCONFIGDIR"] = str(self.scratch / "matplotlib")
        self.guard = WriteGuard([self.jail.root, self.scratch])

    def problems(self, diff: JailDiff, output_ok: Callable[[Path], bool], change_ok: Callable[[Path], bool]) -> List[str]:
        """The broken file promises of one run, as sentences naming the paths (JAIL/...)."""
        problems = [f"tried to write outside the fuzzing folders: {r}" for r in self.guard.refused]
        problems += [f"wrote {self.jail.rel(p)} where no output was asked for" for p in diff.new if not output_ok(p)]
        problems += [f"input file {self.jail.rel(p)} was changed" for p in diff.changed if not change_ok(p)]
        problems += [f"input file {self.jail.rel(p)} was deleted" for p in diff.deleted if not change_ok(p)]
        return problems

    def remove(self) -> None:
        self.jail.remove()
        shutil.rmtree(self.scratch, ignore_errors=True)


def under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


# ---------------------------------------------------------------------------------- the CLI


@dataclass
class CliResult:
    code: Optional[int]  # None when an exception escaped main()
    stdout: str
    stderr: str
    escaped: Optional[BaseException] = None


class _FdCapture:
    """Points fd 1 and 2 at temp files for one run (output of C code bypasses sys.stdout)."""

    def __init__(self) -> None:
        self._files = [tempfile.TemporaryFile() for _ in range(2)]

    @contextlib.contextmanager
    def capture(self):
        saved = [os.dup(1), os.dup(2)]
        for fd, f in zip((1, 2), self._files):
            f.seek(0)
            f.truncate()
            os.dup2(f.fileno(), fd)
        try:
            yield
        finally:
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)

    def read(self, which: int) -> str:
        f = self._files[which - 1]
        f.seek(0)
        return f.read().decode("utf-8", "replace")


_FDS: Optional[_FdCapture] = None


def run_cli(argv: Sequence[str], cwd: Path) -> CliResult:
    """``npuc.cli.main(argv)`` in this process, in `cwd`, with everything it prints captured."""
    global _FDS
    from npuc import cli

    if _FDS is None:
        _FDS = _FdCapture()
    out, err = io.StringIO(), io.StringIO()
    saved_out, saved_err, saved_cwd = sys.stdout, sys.stderr, os.getcwd()
    code: Optional[int] = None
    escaped = None
    os.chdir(cwd)
    try:
        with _FDS.capture():
            sys.stdout, sys.stderr = out, err
            try:
                code = cli.main(list(argv))
            except SystemExit as e:  # argparse: --help, --version, usage errors
                if isinstance(e.code, str):
                    err.write(e.code + "\n")
                code = 0 if e.code is None else (e.code if isinstance(e.code, int) else 1)
            except Exception as e:  # noqa: BLE001 - escaped main(): the real program prints a traceback
                escaped = e
            finally:  # also undoes main()'s sys.stdout = devnull after a broken pipe
                sys.stdout, sys.stderr = saved_out, saved_err
    finally:
        os.chdir(saved_cwd)
    return CliResult(code, out.getvalue() + _FDS.read(1), err.getvalue() + _FDS.read(2), escaped)


# ---------------------------------------------------------------------------------- the oracle


def _template(message: str) -> str:
    """A message without its particulars (quoted values, numbers): one bug, one signature."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "Q", message)
    text = re.sub(r"\d+", "N", text)
    return text[:80]


def _traceback_place(stderr: str) -> str:
    """Where a traceback printed with NPUC_DEBUG=1 left npuc: 'file.py:LINE' of its innermost npuc
    frame, followed by the innermost frame when that is in a library ('cli_compile.py:117 >
    <frozen codecs>:322'), so finds in different npuc lines get different signatures."""
    places = re.findall(r'File "([^"]+)", line (\d+)', stderr)
    if not places:
        return "?"
    names = [(os.path.basename(f), line, f"{os.sep}npuc{os.sep}" in f) for f, line in places]
    innermost = f"{names[-1][0]}:{names[-1][1]}"
    ours = [f"{name}:{line}" for name, line, in_npuc in names if in_npuc]
    if not ours or ours[-1] == innermost:
        return innermost
    return f"{ours[-1]} > {innermost}"


def too_long(message: str, quoted: int) -> bool:
    """An error message longer than what it may quote (`quoted` characters of input) + MAX_ERROR_CHARS."""
    return len(message) > MAX_ERROR_CHARS + quoted


def check_cli(result: CliResult, allow_usage: bool, quoted: int, what: str = "") -> Optional[Finding]:
    """The exit code is 0 or 1; on 1, stderr is one ``npuc: error: ...`` line (or argparse's usage
    block and its error line when `allow_usage`); no traceback. The line may quote what the user
    gave (`quoted` characters: the input with its paths) but not amplify it: at most
    MAX_ERROR_CHARS more. Lines end at '\n' only: a '\r' or '\x1c' inside a quoted argument
    is no second line."""
    if result.escaped is not None:
        return crash_finding(result.escaped, f"{what}exception escaped npuc.cli.main:")
    lines = [line for line in result.stderr.split("\n") if line.strip()]
    if result.code not in (0, 1):
        last = next((line for line in reversed(lines) if line.startswith(INTERNAL_PREFIX)), lines[-1] if lines else "")
        kind = last[len(INTERNAL_PREFIX):].split(":", 1)[0] if last.startswith(INTERNAL_PREFIX) else "?"
        place = _traceback_place(result.stderr)
        return Finding("oracle", f"{what}exit code {result.code} (raised at {place}): {one_line(last)}",
                       f"exit{result.code}:{kind}:{place}")
    if "Traceback (most recent call last)" in result.stderr:
        return Finding("oracle", f"{what}exit code {result.code} with a traceback on stderr: "
                       f"{one_line(lines[-1] if lines else '')}", f"traceback:{_traceback_place(result.stderr)}")
    if result.code == 0:
        return None
    if allow_usage and lines and lines[0].startswith("usage:"):
        message = lines[-1]
        if not _USAGE_ERROR.match(message):
            return Finding("oracle", f"{what}usage error without an error line: {one_line(message)}",
                           f"usage:{_template(message)}")
    elif len(lines) != 1:
        return Finding("oracle", f"{what}exit code 1 with {len(lines)} stderr lines: {one_line(result.stderr)}",
                       f"lines:{_template(lines[0] if lines else '')}")
    else:
        message = lines[0]
        usage_line = allow_usage and _USAGE_ERROR.match(message)
        if not usage_line and (not message.startswith(ERROR_PREFIX) or not message[len(ERROR_PREFIX):].strip()):
            return Finding("oracle", f"{what}exit code 1 without an 'npuc: error: <message>' line: {one_line(message)}",
                           f"prefix:{_template(message)}")
    if too_long(message, quoted):
        # One signature per message kind: what precedes the first quoted or bracketed value
        # ("npuc: error: config(", "npuc: error: cannot write blob file "), whichever key it was.
        kind = re.split(r"[\[{'\"]", message, maxsplit=1)[0]
        return Finding("oracle", f"{what}error line of {len(message)} characters from {quoted} of input "
                       f"(limit: input + {MAX_ERROR_CHARS}): "
                       f"{one_line(message, 300)}", f"long:{_template(kind)}")
    return None


def files_finding(problems: Iterable[str], what: str = "") -> Optional[Finding]:
    """One finding for a run's file problems (signature: the first problem's template)."""
    problems = list(problems)
    if not problems:
        return None
    return Finding("oracle", f"{what}{'; '.join(problems[:5])}", "files:" + _template(problems[0]))


def merge(a: Optional[Finding], b: Optional[Finding]) -> Optional[Finding]:
    """One finding for a run that broke two promises (e.g. a wrong exit code and a stray file)."""
    if a is None or b is None:
        return a or b
    return Finding(a.kind, f"{a.reason}; and {b.reason}", f"{a.signature}+{b.signature}")


def redact(finding: Optional[Finding], home: str) -> Optional[Finding]:
    """The finding with the jail's path written JAIL: reports name no folder of this machine, and
    the same bug found by two processes (two temp folders) has one signature."""
    if finding is None:
        return None
    return Finding(finding.kind, finding.reason.replace(home, "JAIL"), finding.signature.replace(home, "JAIL"))
