"""The generated docs stay true: toolkit_api.md matches the code, every pass has a firing example,
and the user docs link each other (no dead relative links)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))

import gen_api_doc  # noqa: E402
import gen_pass_doc  # noqa: E402


def test_toolkit_api_doc_matches_the_code() -> None:
    committed = (REPO_ROOT / "docs" / "toolkit_api.md").read_text()
    assert gen_api_doc.render() == committed, (
        "docs/toolkit_api.md is stale: run PYTHONPATH=<build>/pyroot /usr/bin/python3 tools/gen_api_doc.py")


def test_every_pass_has_an_example_that_fires() -> None:
    text = gen_pass_doc.render()  # raises SystemExit naming the pass otherwise
    assert text.count("\n## ") >= 10


@pytest.mark.parametrize("page", sorted(p.name for p in (REPO_ROOT / "docs").glob("*.md")) + ["../README.md"])
def test_relative_links_resolve(page: str) -> None:
    path = (REPO_ROOT / "docs" / page).resolve()
    prose = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # graph dumps are not links
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", prose):
        assert (path.parent / target).exists(), f"{path.name} links to missing {target}"
