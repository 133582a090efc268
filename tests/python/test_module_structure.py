"""npuc's Python modules import each other without cycles (counting imports inside functions too),
so each module can be read, tested and loaded on its own."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "npuc"


def _imports(path: Path) -> Set[str]:
    """The npuc modules a file imports, anywhere in it (``from npuc.x import y``, ``import npuc.x``)."""
    out: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("npuc.") and node.level == 0:
            out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[1] for a in node.names if a.name.startswith("npuc."))
    return out


def _graph() -> Dict[str, Set[str]]:
    modules = {p.stem: p for p in PACKAGE.glob("*.py")}
    # The package itself (__init__) re-exports; the cycle rule is about the modules under it.
    return {name: {m for m in _imports(p) if m in modules and m != name}
            for name, p in modules.items() if name != "__init__"}


def _cycle(graph: Dict[str, Set[str]]) -> List[str]:
    state: Dict[str, int] = {}  # 1 on the stack, 2 done
    stack: List[str] = []

    def visit(m: str) -> List[str]:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return []

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return []


def test_npuc_modules_import_each_other_without_cycles() -> None:
    graph = _graph()
    assert "cli" in graph and "toolkit" in graph  # the scan sees the package
    cycle = _cycle(graph)
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []
