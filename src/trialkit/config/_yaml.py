"""A YAML loader that reads numbers as YAML 1.2 does (``1e-4`` is a float) and rejects duplicate keys."""

from __future__ import annotations

import re
from typing import IO, Any

import yaml

from trialkit.config._limits import MAX_CONFIG_BYTES, MAX_DEPTH, MAX_VALUES

#: Integers with more digits are refused while parsing (Python's int() refuses > 4300 digits;
#: anything past 19 is out of range anyway and is reported with its field path later).
MAX_INT_DIGITS = 1000


class YamlError(ValueError):
    """Invalid YAML, with the line and column of the problem when the parser knows them."""

    def __init__(self, problem: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(problem)
        self.problem, self.line, self.column = problem, line, column

    def describe(self) -> str:
        """``invalid YAML at line 3, column 5: <problem>``."""
        where = f" at line {self.line}, column {self.column}" if self.line is not None else ""
        return f"invalid YAML{where}: {self.problem}"


# YAML 1.2 floats: PyYAML (YAML 1.1) needs a dot, so "1e-4" would stay a string. Determined's CLI
# reads configs as YAML 1.2, so this loader does too.
_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)


class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """SafeLoader plus YAML 1.2 floats, an error on duplicate mapping keys, and limits.

    Limits: nesting deeper than MAX_DEPTH is refused while composing (before any recursion can
    run out of stack); a document whose aliases would expand to more than MAX_VALUES values (an
    "alias bomb") is refused after composing, by counting the node graph, before anything is built.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"nested more than {MAX_DEPTH} levels deep; flatten the config",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> Any:
        node = super().get_single_node()
        if node is not None:
            _check_expansion(node)
        return node

    def construct_yaml_int(self, node: Any) -> Any:
        digits = sum(ch.isdigit() for ch in node.value)
        if digits > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"integer of {digits} digits is out of range; use a value that fits 64 bits",
                node.start_mark,
            )
        return super().construct_yaml_int(node)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
        return super().construct_mapping(node, deep=deep)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _check_expansion(root: Any) -> None:
    """Refuse a node graph that expands to more than MAX_VALUES values, or refers to itself."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    # Iterative post-order walk; an alias is the same node object, so its size is counted once
    # per use without walking it again.
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = _children(node)
        if children_done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_VALUES:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"the document expands to more than {MAX_VALUES} values (through aliases); "
                    "write the values out or shrink the config",
                    node.start_mark,
                )
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise yaml.composer.ComposerError(
                None,
                None,
                "an alias refers to the node that contains it; write the value out instead",
                node.start_mark,
            )
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def load_yaml(stream: str | IO[str]) -> Any:
    """Parse one YAML document (at most MAX_CONFIG_BYTES); YamlError names the line and column."""
    text = stream if isinstance(stream, str) else stream.read(MAX_CONFIG_BYTES + 1)
    if len(text) > MAX_CONFIG_BYTES:
        raise YamlError(f"larger than {MAX_CONFIG_BYTES // 1024} KiB; shrink it")
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        raise _from_marked(exc) from None
    except yaml.YAMLError as exc:
        raise YamlError(str(exc)) from None


def _from_marked(exc: yaml.MarkedYAMLError) -> YamlError:
    mark = exc.problem_mark or exc.context_mark
    problem = str(exc.problem or exc.context or "syntax error")
    if mark is None:
        return YamlError(problem)
    return YamlError(problem, mark.line + 1, mark.column + 1)
