"""Structure-aware mutations of YAML text, for fuzz_yaml_config.py.

Two levels:

* tree: when the text parses (``yaml.safe_load``), one node of the document is replaced by a
  value of another type, wrapped in a list or mapping, deleted, duplicated under a known key, or
  given a new known or odd key; the tree is dumped again in block or flow style;
* text: a scalar after ``key:`` or ``-`` is replaced by an interesting value, a key by another
  known key, anchors and aliases are added (including small alias fans, merge keys and a self
  reference), a line is indented or dedented, a key is repeated.

Known keys come from npuc itself (the rknn_convert model keys, the Toolkit config keys, the hybrid
config keys), so the mutations follow the code as it changes.
"""

from __future__ import annotations

import random
import re
from typing import Any, List, Optional, Sequence

# Values of every YAML type and the edges of each. "@JAIL@" is replaced by the target with an
# absolute path inside its jail (so absolute paths are tried without naming this machine's).
INTERESTING_VALUES = (
    "null", "~", "true", "false", "yes", "off", "''", '""', "[]", "{}", "0", "-1", "1", "3", "-0.0",
    "1e309", "-1e309", ".nan", ".inf", "-.inf", "99999999999999999999999", "-2147483649", "0x7fffffff", "0o17",
    "1_000", "+.5", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "!!binary aGVsbG8=", "!!set {a, b}",
    "!!str 123", "!!float 1", "!!int '7'", "\"\\u00e9\\u2713\\U0001F600\"", "\"a\\0b\"", "\"\\t\\n\"", "'  '",
    "ünïcødé", "\"" + "A" * 3000 + "\"", "[1, [2, [3, [4]]]]", "{a: 1, b: [2]}", "[[1, 3, 8, 8]]", "[1, 3, 8, 8]",
    "[[1, 3, 0, 8]]", "[[-1, 3, 8, 8]]", "[[1, 3, 8, 8], [1, 3, 8, 8]]", "[[1e309, 3, 8, 8]]", "[[1.5, 3, 8, 8]]",
    "[123.675, 116.28, 103.53]", "[[0, 0, 0]]", "[0, 0, 0]", "[.nan, 1, 1]", "[[1, 2]]",
    "model.onnx", "notes.txt", "empty.onnx", "sub", "sub/", "x0.npy", "dataset.txt", "missing.txt", "..", ".",
    "../model.onnx", "../../../../x", "../../../../../../../../../x", "@JAIL@", "@JAIL@/abs", "/dev/null",
    "/proc/self/status", "a/b/c", "nul\x00", "*", "&", "!!python/object/apply:os.getcwd []", "? x", "|\n  block",
    "x", "conv", "relu", "y", "c", "Conv", "cpu", "npu", "float16", "int8", "layer", "channel", "normal",
    "kl_divergence", "mmse", "percentile", "asymmetric_quantized-8", "rk3588", "rk9999", "onnx", "tflite",
)
ODD_KEYS = ("1", "null", "true", "'': ", "[a]", "{a: 1}", "<<", "? [x]", "ünï", "name ", "NAME", "a.b", "-")


def known_keys() -> List[str]:
    """The keys npuc's YAML readers accept (fuzz inputs should reach past the key checks)."""
    from npuc import hybrid
    from npuc.cli_compile import YAML_MODEL_KEYS, YAML_SUBGRAPH_KEYS
    from npuc.toolkit import CONFIG_KEYS

    keys = ["models", *YAML_MODEL_KEYS, *YAML_SUBGRAPH_KEYS, *CONFIG_KEYS, *hybrid.CFG_KEYS, *hybrid.PARAM_KEYS]
    return sorted(set(keys))


class YamlMutator:
    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = list(keys)

    def __call__(self, data: bytes, rng: random.Random) -> bytes:
        text = data.decode("utf-8", "replace")
        header = ""
        if text.startswith("#"):  # a target's mode line (e.g. '#hybrid') stays first
            header, _, text = text.partition("\n")
            header += "\n"
        out = self._tree(text, rng) if rng.random() < 0.5 else None
        if out is None:
            out = self._text(text, rng)
        return (header + out).encode("utf-8", "surrogatepass")

    # -- tree level

    def _tree(self, text: str, rng: random.Random) -> Optional[str]:
        import yaml

        try:
            doc = yaml.safe_load(text)
        except (yaml.YAMLError, ValueError, RecursionError):
            return None
        nodes: List[Any] = []
        try:
            _collect(doc, nodes, set())
        except RecursionError:  # nested deeper than the interpreter's stack: leave it to the text level
            return None
        if not nodes:
            return None
        parent = rng.choice(nodes)
        if isinstance(parent, dict):
            key = rng.choice(list(parent)) if parent else None
            op = rng.randrange(5)
            if op == 0 and key is not None:
                parent[key] = self._value(rng)
            elif op == 1 and key is not None:
                del parent[key]
            elif op == 2:
                parent[rng.choice(self.keys)] = self._value(rng)
            elif op == 3 and key is not None:
                parent[key] = [parent[key]] if rng.random() < 0.5 else {rng.choice(self.keys): parent[key]}
            else:
                parent[rng.choice(self.keys)] = parent[key] if key is not None else None
        else:  # a list
            if parent and rng.random() < 0.7:
                i = rng.randrange(len(parent))
                parent[i] = self._value(rng) if rng.random() < 0.6 else [parent[i]]
            elif parent:
                parent.append(parent[rng.randrange(len(parent))])
            else:
                parent.append(self._value(rng))
        try:
            return yaml.safe_dump(doc, default_flow_style=rng.choice([False, None, True]), allow_unicode=rng.random() < 0.5,
                                  sort_keys=False)
        except (yaml.YAMLError, ValueError, TypeError, RecursionError):
            return None

    def _value(self, rng: random.Random) -> Any:
        import yaml

        text = rng.choice(INTERESTING_VALUES)
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError:
            return text

    # -- text level

    def _text(self, text: str, rng: random.Random) -> str:
        lines = text.split("\n") or [""]
        i = rng.randrange(len(lines))
        line = lines[i]
        op = rng.randrange(8)
        value = rng.choice(INTERESTING_VALUES).replace("\n", "\n" + " " * (_indent(line) + 2))
        if op == 0:  # replace the scalar after 'key:' or '- '
            m = re.match(r"^(\s*(?:-\s+)?[^:#]*:\s?|\s*-\s+)(.*)$", line)
            lines[i] = (m.group(1) if m else line + " ") + value
        elif op == 1:  # replace the key
            m = re.match(r"^(\s*(?:-\s+)?)([^:#]+)(:.*)$", line)
            key = rng.choice(self.keys) if rng.random() < 0.8 else rng.choice(ODD_KEYS)
            lines[i] = m.group(1) + key + m.group(3) if m else line
        elif op == 2:  # new key line at this line's indentation
            lines.insert(i, " " * _indent(line) + f"{rng.choice(self.keys)}: {value}")
        elif op == 3:  # anchor here, alias elsewhere (or a merge key)
            if ":" in line:
                lines[i] = line.replace(":", ": &a", 1) if not re.search(r":\s*$", line) else line + " &a"
                j = rng.randrange(len(lines))
                target = lines[j]
                lines[j] = (re.sub(r":\s.*$", ": *a", target) if ":" in target else target)
                if rng.random() < 0.3:
                    lines.insert(j, " " * _indent(target) + "<<: *a")
        elif op == 4:  # an alias fan: each level repeats the previous one (a small 'billion laughs')
            depth, width = rng.randint(2, 6), rng.randint(2, 9)
            fan = ["f0: &f0 [x, y]"] + [f"f{k}: &f{k} [{', '.join([f'*f{k - 1}'] * width)}]" for k in range(1, depth)]
            key_line = re.match(r"^(\s*(?:-\s+)?[^:#]*:)", line)
            lines = fan + lines
            if key_line:
                lines[i + len(fan)] = f"{key_line.group(1)} *f{depth - 1}"
        elif op == 5:  # indent or dedent
            lines[i] = ("  " + line) if rng.random() < 0.5 else line[2:]
        elif op == 6:  # repeat the line (a duplicate key)
            lines.insert(i, line)
        else:  # a self-referencing node
            m = re.match(r"^(\s*(?:-\s+)?[^:#]*:)", line)
            lines[i] = f"{m.group(1)} &r [1, *r]" if m else line
        return "\n".join(lines)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _collect(node: Any, out: List[Any], seen: set) -> None:
    """Every dict and list of a parsed document (each once: aliases may make it a cycle)."""
    if isinstance(node, (dict, list)) and id(node) not in seen:
        seen.add(id(node))
        out.append(node)
        for child in node.values() if isinstance(node, dict) else node:
            _collect(child, out, seen)
