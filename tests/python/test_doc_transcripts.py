"""Every ``$ npuc ...`` transcript of README.md and docs/*.md is run and its printed lines checked
(issue #23: the docs' terminal sessions must not drift, as the Python blocks must not).

A transcript is a ```text block whose first line is ``$ npuc ...`` (continued by trailing ``\\``);
the lines after it are what the command prints. The commands of one doc run in doc order in one
scratch folder (a later one reads what an earlier one wrote), at ``COLUMNS=100``. The folder holds
what the docs name: ``mobilenet_v2.onnx`` (the shared model) and ``m.onnx`` (a copy), ``dataset.txt``
listing eight seeded noise images ``calib/img_<i>.jpg``, and ``model_config.yml``: the doc's own
```yaml block, so the YAML the doc shows is the one that runs.

Matching: each printed line of the doc must be an output line, in order; a doc line ``...`` (or
``...  (comment)``) stands for any number of lines, and a line ending in `` ...`` for a line that
goes on (a table cut at the terminal width). Numbers are compared as printed: the cost model and
the blob writer are deterministic, and the calibration images change no printed figure.

Skipped by rule, not by hand: commands prefixed with an environment assignment
(``NPUC_SOC_DIR=my_profiles npuc ...`` in adding_a_soc.md needs the profile folder the reader
writes by following the page).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import pytest

from conftest import REPO_ROOT, shared_models_dir

import npuc

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
PACKAGE_PARENT = str(Path(os.path.abspath(npuc.__file__)).parent.parent)
WIDTH = 100

Transcript = Tuple[int, List[str], List[str]]  # first line, argv, expected lines


def _transcripts(doc: Path) -> Tuple[List[Transcript], List[str]]:
    """The doc's runnable transcripts, and its ```yaml blocks."""
    lines = doc.read_text().splitlines()
    found, yamls, i = [], [], 0
    while i < len(lines):
        fence = lines[i].strip()
        if fence in ("```text", "```yaml"):
            start, body = i + 1, []
            i += 1
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            if fence == "```yaml":
                yamls.append("\n".join(body) + "\n")
            elif body and re.match(r"\$ npuc\b", body[0]):
                command = body.pop(0)[2:]
                while command.endswith("\\"):
                    command = command[:-1] + " " + body.pop(0).strip()
                found.append((start + 1, shlex.split(command)[1:], body))
        i += 1
    return found, yamls


def _by_doc() -> Dict[str, Tuple[List[Transcript], List[str]]]:
    out = {}
    for doc in DOCS:
        transcripts, yamls = _transcripts(doc)
        if transcripts:
            out[doc.relative_to(REPO_ROOT).as_posix()] = (transcripts, yamls)
    return out


BY_DOC = _by_doc()


def _scene(folder: Path, yamls: List[str]) -> None:
    from PIL import Image

    models = shared_models_dir()
    if models is None:
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    shutil.copy(models / "mobilenet_v2.onnx", folder / "mobilenet_v2.onnx")
    shutil.copy(models / "mobilenet_v2.onnx", folder / "m.onnx")
    (folder / "calib").mkdir()
    rng = np.random.default_rng(0)
    for i in range(8):
        Image.fromarray(rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)).save(folder / "calib" / f"img_{i}.jpg")
    (folder / "dataset.txt").write_text("".join(f"calib/img_{i}.jpg\n" for i in range(8)))
    configs = [y for y in yamls if y.startswith("models:")]
    if configs:
        (folder / "model_config.yml").write_text(configs[0])


def _matches(expected: List[str], printed: List[str]) -> Tuple[bool, str]:
    """Whether `printed` shows `expected` in order (see the module text); else where it stops."""
    at = 0
    gap = False
    for want in expected:
        want = want.rstrip()
        if want.startswith("..."):
            gap = True
            continue
        prefix = want[:-4] if want.endswith(" ...") else None
        while at < len(printed):
            line = printed[at].rstrip()
            at += 1
            if line == want or (prefix is not None and line.startswith(prefix)):
                gap = False
                break
            if not gap:
                return False, f"expected {want!r}, printed {line!r}"
        else:
            return False, f"expected {want!r}, but the output ended"
    return True, ""


def test_the_docs_have_transcripts() -> None:
    assert {"docs/cli.md", "docs/getting_started.md"} <= set(BY_DOC)


@pytest.mark.parametrize("doc", sorted(BY_DOC))
def test_transcripts_print_what_the_doc_shows(doc: str, tmp_path: Path) -> None:
    transcripts, yamls = BY_DOC[doc]
    _scene(tmp_path, yamls)
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT, COLUMNS=str(WIDTH), MPLBACKEND="Agg")
    failures = []
    for line, argv, expected in transcripts:
        done = subprocess.run([sys.executable, "-m", "npuc", *argv], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=900)
        printed = (done.stdout + done.stderr).splitlines()
        ok, why = _matches(expected, printed)
        if not ok:
            failures.append(f"{doc}:{line} `npuc {' '.join(argv)}`: {why}\n--- printed:\n" + "\n".join(printed[:60]))
    assert not failures, "\n\n".join(failures)
