"""The one way npuc reads a YAML file: ``load_yaml_config(path)``, bounded against hostile input.

``npuc convert -i cfg.yml`` (rknn_convert's config) and ``hybrid_quantization_step2``'s
quantization config both come from users, and YAML aliases let a 1 KB file describe a billion
nodes ("billion laughs"): ``yaml.safe_load`` builds it with shared references, and the first code
that walks or prints the value runs out of memory. So before anything is constructed the file is
checked against three documented bounds:

* :data:`MAX_YAML_BYTES`: the file size;
* :data:`MAX_YAML_DEPTH`: nesting depth (the composer is recursive; deeper input would end in a
  RecursionError);
* :data:`MAX_YAML_NODES`: the node count *with every alias expanded*, computed with memoization
  on the composed node graph, so it costs one visit per distinct node; a recursive alias
  (``&a [*a]``) is refused too.

Every problem is raised as the caller's error class, naming the file.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Tuple, Type

import yaml

from npuc.errors import ConfigError

__all__ = ["MAX_YAML_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_NODES", "load_yaml_config"]

#: Largest YAML config read (bytes). A hybrid quantization config takes about 150 bytes per activation.
MAX_YAML_BYTES = 16 << 20
#: Deepest nesting of collections (the configs npuc reads nest four levels).
MAX_YAML_DEPTH = 32
#: Most nodes a config may hold with its aliases expanded (a hybrid quantization config takes about
#: 20 per activation, so this admits models with 50,000 calibrated activations).
MAX_YAML_NODES = 1_000_000
#: Longest YAML parser message quoted (it includes a snippet of the offending line).
_MAX_PARSER_MESSAGE = 300


class _Refused(Exception):
    """A bound was exceeded while composing (raised through PyYAML's composer)."""


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts composed nodes and nesting depth while it composes."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0
        self._composed = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D102 - PyYAML's hook
        self._depth += 1
        self._composed += 1
        if self._depth > MAX_YAML_DEPTH:
            raise _Refused(f"the YAML nests more than {MAX_YAML_DEPTH} levels deep")
        if self._composed > MAX_YAML_NODES:
            raise _Refused(f"the YAML holds more than {MAX_YAML_NODES} nodes")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _children(node: yaml.Node) -> List[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_expanded_size(root: yaml.Node) -> None:
    """Raises _Refused when `root` with every alias expanded holds more than MAX_YAML_NODES nodes,
    or when an alias refers to a collection that contains it. Iterative (no recursion limit)."""
    expanded: Dict[int, int] = {}  # id(node) -> node count of its expansion
    open_nodes = set()  # ids of the collections being expanded (the current path)
    stack: List[Tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            open_nodes.discard(key)
            total = 1 + sum(expanded[id(c)] for c in _children(node))
            if total > MAX_YAML_NODES:
                raise _Refused(f"the YAML expands to more than {MAX_YAML_NODES} nodes through its aliases")
            expanded[key] = total
            continue
        if key in expanded:
            continue
        open_nodes.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_nodes:
                raise _Refused("an alias refers to a collection that contains it (a recursive alias)")
            if id(child) not in expanded:
                stack.append((child, False))


def _read_bounded(path: str, error: Type[Exception]) -> bytes:
    try:
        size = os.path.getsize(path)
        if size > MAX_YAML_BYTES:
            raise error(f"{path}: {size} bytes is larger than the {MAX_YAML_BYTES >> 20} MiB a YAML config may have")
        with open(path, "rb") as f:
            return f.read(MAX_YAML_BYTES + 1)
    except OSError as e:
        raise error(f"cannot read config '{path}': {e.strerror or e}") from None


def load_yaml_config(path: "str | os.PathLike[str]", error: Type[Exception] = ConfigError) -> Any:
    """The document in the YAML file at `path` (safe tags only), within the bounds above.

    Raises:
        error: unreadable file, invalid YAML, or a bound exceeded; the message names the file.
    """
    path = os.fspath(path)
    data = _read_bounded(path, error)
    if len(data) > MAX_YAML_BYTES:  # the file grew after the size check
        raise error(f"{path}: larger than the {MAX_YAML_BYTES >> 20} MiB a YAML config may have")
    loader = None
    try:
        loader = _BoundedLoader(data)  # the reader decodes the first bytes here already
        root = loader.get_single_node()
        if root is None:
            return None
        _check_expanded_size(root)
        return loader.construct_document(root)
    except _Refused as e:
        raise error(f"{path}: refused: {e}") from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as e:
        # PyYAML's constructors raise plain ValueError/TypeError/OverflowError for a tagged scalar they
        # cannot convert (`!!float 1 2`, `!!int 1e999`), not YAMLError.
        message = " ".join(str(e).split())
        if len(message) > _MAX_PARSER_MESSAGE:
            message = message[:_MAX_PARSER_MESSAGE] + "..."
        raise error(f"{path}: not valid YAML: {message}") from None
    finally:
        if loader is not None:
            loader.dispose()
