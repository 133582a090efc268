"""The command line shared by the doc generators (tools/gen_*.py): write the page, or with --check
say whether the committed page is what the code would generate now (exit 1 when stale)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Sequence


def run(description: str, doc_path: Path, repo_root: Path, render: Callable[[], str], script: str,
        argv: Sequence[str] = (), detail: str = "") -> int:
    """Renders the page and writes it to `doc_path` (or compares it, with --check)."""
    name = doc_path.relative_to(repo_root)
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help=f"compare with {name} instead of writing")
    args = parser.parse_args(list(argv))
    text = render()
    if args.check:
        same = doc_path.is_file() and doc_path.read_text() == text
        print(f"{name} is up to date" if same else f"{name} is stale: run {script}")
        return 0 if same else 1
    doc_path.write_text(text)
    print(f"wrote {name}{f' ({detail})' if detail else ''}")
    return 0
