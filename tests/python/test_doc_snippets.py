"""Every ```python block of README.md and docs/*.md runs (issue #23: docs must not drift).

A block runs in a scratch folder that holds the files the docs name: ``model.onnx`` (the shared
mobilenet_v2, input ``input`` [1, 3, 224, 224]), ``mobilenet_v2.onnx`` and ``mobilenet_v2.ref.npz``,
``dataset.txt`` listing two photo-like images (one of another size, resized on reading),
``yolov3.cfg`` + ``yolov3.weights`` (Debian darknet's yolov3-tiny cfg with random weights in
darknet's format; only when the darknet package is installed), ``hand_landmark_lite.tflite``
(MediaPipe's, from npm via tests/python/tflite_reference.py, when installed); and one
name the snippets use without defining it, ``image``: an RGB uint8 HWC array, as cv2/PIL give.
Blocks that are not programs are skipped by rule, not by hand: the generated signature blocks of
docs/toolkit_api.md (one line, ``Toolkit.<call>(...) -> ...``).
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from pathlib import Path
from typing import List, Tuple

import numpy as np
import pytest

from conftest import REPO_ROOT, shared_models_dir

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
_SIGNATURE = re.compile(r"^(npuc\.)?Toolkit[.(]\S*.*\)\s*->")


def _blocks() -> List[Tuple[str, int, str]]:
    """(doc name, first line, code) of every ```python block that is a program."""
    found = []
    for doc in DOCS:
        lines = doc.read_text().splitlines()
        i = 0
        while i < len(lines):
            if lines[i].strip() == "```python":  # also indented, inside a list item
                start, body = i + 1, []
                i += 1
                while lines[i].strip() != "```":
                    body.append(lines[i])
                    i += 1
                code = textwrap.dedent("\n".join(body))
                if not (len(body) == 1 and _SIGNATURE.match(body[0].strip())) and not code.startswith("Toolkit.model"):
                    found.append((doc.relative_to(REPO_ROOT).as_posix(), start + 1, code))
            i += 1
    return found


BLOCKS = _blocks()


def _scene(folder: Path) -> dict:
    from PIL import Image

    models = shared_models_dir()
    if models is None:
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    shutil.copy(models / "mobilenet_v2.onnx", folder / "model.onnx")
    shutil.copy(models / "mobilenet_v2.onnx", folder / "mobilenet_v2.onnx")
    shutil.copy(models / "mobilenet_v2.ref.npz", folder / "mobilenet_v2.ref.npz")
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:224, 0:224] / 224.0
    image = np.clip(np.stack([255 * x, 255 * y, 128 + 100 * np.sin(6 * x * y)], -1)
                    + rng.normal(0, 8, (224, 224, 3)), 0, 255).astype(np.uint8)
    Image.fromarray(image).save(folder / "a.png")
    Image.fromarray(image[::-1]).resize((300, 260)).save(folder / "b.jpg")
    (folder / "dataset.txt").write_text("a.png\nb.jpg\n")
    from darknet_ref import DARKNET_CFG_DIR, write_random_weights

    if (DARKNET_CFG_DIR / "yolov3-tiny.cfg").is_file():
        cfg = (DARKNET_CFG_DIR / "yolov3-tiny.cfg").read_text()
        (folder / "yolov3.cfg").write_text(cfg)
        write_random_weights(cfg, folder / "yolov3.weights")
    from tflite_reference import mediapipe_model

    try:
        shutil.copy(mediapipe_model("hand_landmark_lite"), folder / "hand_landmark_lite.tflite")
    except FileNotFoundError:
        pass  # the TFLite page's block then fails naming the file, as a missing install should
    return {"image": image}


def test_the_docs_have_python_blocks() -> None:
    docs = {doc for doc, _, _ in BLOCKS}
    assert {"README.md", "docs/getting_started.md", "docs/toolkit_api.md", "docs/perf_model.md"} <= docs


@pytest.mark.parametrize("doc, line, code", BLOCKS, ids=[f"{d}:{n}" for d, n, _ in BLOCKS])
def test_python_block_runs(doc: str, line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    given = _scene(tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__doc_snippet__", **given}
    exec(compile(code, f"{doc}:{line}", "exec"), namespace)  # noqa: S102  (the docs' own code)
