"""Hostile command lines and files (tests/bad_inputs/make_jobs.py): each exits 1 with one line naming
the problem, leaves every input byte-identical, writes nothing outside its output folder, and stays
within its time and memory bounds (issue #15)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import io
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Tuple

import pytest

from conftest import REPO_ROOT


def _load_jobs_module():
    path = REPO_ROOT / "tests" / "bad_inputs" / "make_jobs.py"
    spec = importlib.util.spec_from_file_location("make_jobs", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_jobs"] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module


jobs = _load_jobs_module()


def _snapshot(root: Path) -> Dict[str, Tuple[int, str]]:
    """Every regular file under root (links followed once): size and sha256 of the first 1 MiB plus
    the size for big sparse files, whose full hash would cost seconds."""
    state = {}
    for path in sorted(root.rglob("*")):
        if path.is_dir() or path.name == "job.json":
            continue
        rel = str(path.relative_to(root))
        if path.is_symlink():
            state[rel] = (-1, os.readlink(path))
            continue
        size = path.stat().st_size
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read(1 << 20) if size > (64 << 20) else f.read()).hexdigest()
        state[rel] = (size, digest)
    return state


def _run_in_process(argv, cwd: Path) -> Tuple[int, str, float]:
    from npuc.cli import main

    err = io.StringIO()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(list(argv))
            except SystemExit as e:  # argparse's usage errors
                code = e.code if isinstance(e.code, int) else 1
    finally:
        os.chdir(old)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    return code, err.getvalue(), grown_mb


def _child(args, cwd: Path) -> Tuple[int, str, float]:
    """Runs the interpreter with args; returns its exit code, stderr and peak RSS in MB (os.wait4
    reports the child's own peak)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT / "python"), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([sys.executable, *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), err.decode(errors="replace"), usage.ru_maxrss / 1024


@functools.lru_cache(maxsize=1)
def _baseline_rss_mb() -> float:
    """Peak RSS of an interpreter that imports what an npuc command imports and does nothing."""
    code, err, peak = _child(["-c", "import npuc, npuc.cli, npuc.toolkit, numpy, onnx, PIL.Image"], REPO_ROOT)
    assert code == 0, err
    return peak


def _run_isolated(argv, cwd: Path) -> Tuple[int, str, float]:
    """A fresh interpreter, so the peak RSS above the baseline is the job's alone."""
    code, err, peak = _child(["-m", "npuc", *argv], cwd)
    return code, err, max(0.0, peak - _baseline_rss_mb())


@pytest.fixture(scope="module")
def jobs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bad_jobs")


@pytest.mark.parametrize("case", jobs.JOBS, ids=lambda c: c.name)
def test_bad_job_is_refused_in_one_line(case, jobs_dir: Path) -> None:
    root = jobs.write_job(case, jobs_dir)
    before = _snapshot(root)
    start = time.perf_counter()
    code, stderr, rss_growth_mb = (_run_isolated if case.isolate else _run_in_process)(case.argv, root)
    seconds = time.perf_counter() - start

    lines = stderr.strip().splitlines()
    assert code == 1, f"{case.name}: exit {code}, stderr: {stderr[:2000]}"
    assert len(lines) == 1, f"{case.name}: {len(lines)} stderr lines: {stderr[:2000]}"
    assert len(lines[0]) <= jobs.MAX_MESSAGE_CHARS, f"{case.name}: a {len(lines[0])}-char message: {lines[0][:300]}..."
    assert re.search(case.message, lines[0]), f"{case.name}: {lines[0]!r} does not match {case.message!r}"
    after = _snapshot(root)
    changed = [rel for rel, state in before.items() if after.get(rel) != state]
    assert not changed, f"{case.name}: npuc changed its input(s) {changed}"
    new = [rel for rel in after if rel not in before and not rel.startswith("out" + os.sep)]
    assert not new, f"{case.name}: npuc wrote {new} outside out/"
    assert seconds < case.max_seconds, f"{case.name}: took {seconds:.1f} s (bound {case.max_seconds} s)"
    assert rss_growth_mb < case.max_rss_growth_mb, f"{case.name}: peak RSS grew {rss_growth_mb:.0f} MB"


def test_job_names_are_unique_and_every_defect_class_is_present() -> None:
    names = [case.name for case in jobs.JOBS]
    assert len(names) == len(set(names))
    # Issue 15's numbered defects that a command line can reach; 9 (Toolkit.inference dtypes) is
    # reached through `npuc run`; 6 is no refusal any more (a 70000-character custom_string now
    # round-trips: test_entry_point_types, test_blob_limits) and 10 (re-sealed blobs) needs the
    # resealing helper of test_blob_integrity.
    assert {case.defect for case in jobs.JOBS} >= {1, 2, 3, 4, 5, 7, 8, 9, 11}


def test_corpus_writes_a_readable_job_file(tmp_path: Path) -> None:
    root = jobs.write_job(jobs.JOBS[0], tmp_path)
    recorded = json.loads((root / "job.json").read_text())
    assert recorded["argv"] == list(jobs.JOBS[0].argv)
