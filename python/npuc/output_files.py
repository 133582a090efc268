"""Where npuc writes a file the user named: never over a file the job reads, never half a file.

Every writer (``Toolkit.export_blob`` / ``export_onnx`` / ``verbose_file``, ``PerfReport``, the
accuracy and hybrid dumps, the CLI) goes through this module, so the two rules live here once:

* **An output never replaces an input.** :class:`JobInputs` remembers the files a job reads by
  device and inode (``os.stat().st_dev/st_ino``), so ``m.onnx``, ``../c/./m.onnx``, a symlink and
  a hard link to it are the same file; :func:`refuse_output` raises :class:`OutputError` naming
  the output and the input it would destroy. An existing directory is refused too.
* **An output appears whole or not at all.** :func:`atomic_output` gives the writer a temporary
  file in the destination's folder and renames it over the destination (``os.replace``) only when
  the writer succeeded; a failure removes the temporary and leaves the earlier file as it was.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import stat
import tempfile
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from npuc.errors import OutputError

__all__ = [
    "JobInputs",
    "OutputError",
    "refuse_output",
    "atomic_output",
    "write_text_output",
    "staged_folder",
    "make_folder",
    "check_folder",
    "AppendedLog",
    "onnx_external_files",
]

PathLike = Union[str, "os.PathLike[str]"]
FileId = Tuple[int, int]

#: ONNX files up to this size are parsed (without their weights) to find their external-data
#: files; a larger file holds its weights inline, and parsing it twice would cost real time.
_EXTERNAL_DATA_SCAN_LIMIT = 64 << 20


def _file_id(path: PathLike) -> Optional[FileId]:
    """(st_dev, st_ino) of the regular file at `path` (symlinks followed), else None."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # missing, unreadable, or a NUL in the name
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


class JobInputs:
    """The files one job reads, by identity, each with its role and the name the user gave."""

    def __init__(self) -> None:
        self._files: Dict[FileId, Tuple[str, str]] = {}

    def add(self, path: PathLike, role: str) -> None:
        """Records `path` as read by the job, as `role` (e.g. "the loaded model").

        Only existing regular files are kept: a missing file cannot be overwritten (reading it
        reports that), and a device or pipe (``/dev/stdin``) is not destroyed by a write.
        """
        key = _file_id(path)
        if key is not None:
            self._files.setdefault(key, (role, os.fspath(path)))

    def add_all(self, files: Iterable[Tuple[PathLike, str]]) -> None:
        """:meth:`add` for each (path, role)."""
        for path, role in files:
            self.add(path, role)

    def find(self, path: PathLike) -> Optional[Tuple[str, str]]:
        """(role, name as given) when `path` is one of the job's inputs, else None."""
        key = _file_id(path)
        return self._files.get(key) if key is not None else None

    def refuse_if_input(self, path: PathLike, what: str) -> None:
        """Raises OutputError when writing `what` to `path` would replace one of these inputs."""
        refuse_output(path, what, self)


def refuse_output(path: PathLike, what: str, inputs: Optional[JobInputs] = None) -> None:
    """Raises :class:`OutputError` if `what` (e.g. "the blob") must not be written to `path`:
    an empty name, a NUL byte, an existing directory, or one of `inputs`."""
    name = os.fspath(path)
    if not name:
        raise OutputError(f"cannot write {what}: the file name is empty")
    if "\0" in name:
        raise OutputError(f"cannot write {what} to {name!r}: the file name contains a NUL byte")
    if os.path.isdir(name):
        raise OutputError(f"cannot write {what} to '{name}': it is a directory")
    hit = inputs.find(name) if inputs is not None else None
    if hit is not None:
        role, given = hit
        raise OutputError(f"refusing to write {what} to '{name}': it is {role} ({given})")


@contextlib.contextmanager
def atomic_output(path: PathLike, what: str, inputs: Optional[JobInputs] = None) -> Iterator[str]:
    """Yields a temporary path for the writer; on success it becomes `path`, in one rename.

    Checks :func:`refuse_output` first. The temporary sits in the destination's folder (a rename
    across filesystems would not be atomic) and keeps the destination's extension last
    (``np.save`` appends ``.npy`` otherwise, matplotlib picks the format by it). The result has
    the permission bits ``open()`` would give: an existing file's own, else 0666 minus the umask.
    A symlink is written through (its target replaced), as ``open()`` does; a device or pipe
    (``/dev/stdout``) cannot be renamed over, so the finished bytes are copied into it.
    Any failure removes the temporary and leaves `path` untouched; an OSError becomes an
    :class:`OutputError` naming `what` and `path`.
    """
    refuse_output(path, what, inputs)
    name = os.fspath(path)
    special = _is_special(name)  # through symlinks: /dev/stdout links to /proc/self/fd/1
    target = os.path.realpath(name) if os.path.islink(name) and not special else name
    try:
        fd, tmp = _create_temp(tempfile.gettempdir() if special else os.path.dirname(target) or ".",
                               os.path.basename(target))
    except OSError as e:
        raise _write_error(what, name, e) from None
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)  # 0666 & ~umask: os.open applied the umask
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            existing = os.stat(target)
            if stat.S_ISREG(existing.st_mode):
                mode = stat.S_IMODE(existing.st_mode)
        yield tmp
        _fsync(tmp)
        if special:
            with open(tmp, "rb") as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.unlink(tmp)
        else:
            os.chmod(tmp, mode)
            os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise _write_error(what, name, e) from None
        raise


def write_text_output(path: PathLike, text: str, what: str, inputs: Optional[JobInputs] = None) -> None:
    """Writes `text` (UTF-8) to `path` through :func:`atomic_output`."""
    with atomic_output(path, what, inputs) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)


@contextlib.contextmanager
def staged_folder(folder: Optional[PathLike], what: str, inputs: Optional[JobInputs] = None) -> Iterator[str]:
    """For a writer that fills a folder with names it picks itself (the optimizer's
    ``check<N>_<stage>.onnx`` dumps): yields a fresh temporary folder inside `folder` (created if
    needed), then moves each file it holds into `folder`, after checking all of them with
    :func:`refuse_output`. Yields "" when `folder` is None or empty (nothing to write)."""
    if not folder:
        yield ""
        return
    name = os.fspath(folder)
    if os.path.exists(name) and not os.path.isdir(name):
        raise OutputError(f"cannot write {what} into '{name}': it is a file, not a folder")
    make_folder(name, what)
    try:
        staging = tempfile.mkdtemp(prefix=".npuc-tmp-", dir=name)
    except OSError as e:
        raise _write_error(what, name, e) from None
    try:
        yield staging
        files = sorted(os.listdir(staging))
        for file in files:  # every name checked before the first is moved
            refuse_output(os.path.join(name, file), what, inputs)
        for file in files:
            os.replace(os.path.join(staging, file), os.path.join(name, file))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _is_special(path: str) -> bool:
    """True for an existing file that is neither regular nor a directory (device, pipe, socket)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _create_temp(folder: str, name: str) -> Tuple[int, str]:
    stem, suffix = os.path.splitext(name)
    while True:  # O_EXCL: never reuse a file someone else created meanwhile
        tmp = os.path.join(folder, f".{stem[:96]}.npuc-tmp-{secrets.token_hex(4)}{suffix[:32]}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue


def _fsync(path: str) -> None:
    """Flushes the finished temporary to disk, so the rename never publishes an empty file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_folder(folder: PathLike, what: str) -> None:
    """Raises :class:`OutputError` if :func:`make_folder` would refuse `folder`: a ``..`` after a
    folder that does not exist (creating it would leave it behind, where ``open()`` refuses such a
    path). Callers check before any work, then create the folder when they write."""
    name = os.fspath(folder)
    prefix = ""
    for part in name.split(os.sep):
        if part == ".." and prefix and not os.path.isdir(prefix):
            raise OutputError(
                f"cannot create the folder for {what} '{name}': '{prefix}' does not exist, and '..' after it "
                "would leave it behind"
            )
        prefix = os.path.join(prefix, part) if prefix or part else os.sep


def make_folder(folder: PathLike, what: str) -> None:
    """Creates `folder` and its missing parents, like ``os.makedirs(exist_ok=True)``, after
    :func:`check_folder`; a file standing where a folder goes is an :class:`OutputError` naming
    `what` too."""
    check_folder(folder, what)
    name = os.fspath(folder)
    try:
        os.makedirs(name, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot create the folder for {what} '{name}': {e.strerror or e}") from None


def _write_error(what: str, name: str, e: OSError) -> OutputError:
    if isinstance(e, FileNotFoundError):
        folder = os.path.dirname(name) or "."
        return OutputError(f"cannot write {what} to '{name}': folder '{folder}' does not exist")
    return OutputError(f"cannot write {what} to '{name}': {e.strerror or e}")


class AppendedLog(logging.FileHandler):
    """A log file that is appended to (``Toolkit(verbose_file=...)``) and must not be an input.

    Which files the toolkit reads is only known later (``load_onnx``, ``build(dataset=...)``),
    and lines are appended before that (``config()`` logs). So the size the file had when it was
    opened is remembered, and :meth:`guard`, called as each input is recorded and before anything
    is logged about it, cuts the lines this log appended back off before refusing: the input's
    bytes are exactly as they were.
    """

    WHAT = "the verbose_file log"

    def __init__(self, path: PathLike) -> None:
        refuse_output(path, self.WHAT)
        try:
            super().__init__(os.fspath(path), mode="a", encoding="utf-8")
        except OSError as e:
            raise _write_error(self.WHAT, os.fspath(path), e) from None
        st = os.fstat(self.stream.fileno())
        self._name = os.fspath(path)
        self._start = st.st_size
        self._regular = stat.S_ISREG(st.st_mode)

    def guard(self, inputs: JobInputs) -> None:
        """Raises OutputError if the log file is one of `inputs`, after restoring its content."""
        hit = inputs.find(self._name)
        if hit is None or not self._regular:
            return
        self.acquire()
        try:
            if self.stream is not None:
                self.stream.flush()
                os.ftruncate(self.stream.fileno(), self._start)
        finally:
            self.release()
        refuse_output(self._name, self.WHAT, inputs)


def onnx_external_files(model_path: PathLike) -> List[str]:
    """The external-data files an ONNX model file names, resolved against its folder.

    Read from the model without its weights; skipped (empty) for files above
    ``_EXTERNAL_DATA_SCAN_LIMIT``, which hold their weights inline, and for files ``onnx`` cannot
    parse (the import reports those).
    """
    path = os.fspath(model_path)
    try:
        if os.path.getsize(path) > _EXTERNAL_DATA_SCAN_LIMIT:
            return []
        import onnx

        proto = onnx.load(path, load_external_data=False)
    except Exception:  # noqa: BLE001 - the C++ import is the one that reports a bad model
        return []
    folder = os.path.dirname(path)
    files = []
    for tensor in _graph_tensors(proto.graph):
        if tensor.data_location == tensor.EXTERNAL:
            location = next((e.value for e in tensor.external_data if e.key == "location"), "")
            if location:
                files.append(os.path.join(folder, location))
    return files


def _graph_tensors(graph: Any) -> Iterator[Any]:  # onnx.GraphProto -> onnx.TensorProto
    """Initializers and constant attributes of `graph` and of its subgraphs (If/Loop bodies)."""
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _graph_tensors(attr.g)
            for sub in attr.graphs:
                yield from _graph_tensors(sub)
