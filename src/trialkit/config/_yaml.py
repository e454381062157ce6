"""A YAML loader that reads numbers as YAML 1.2 does (``1e-4`` is a float) and rejects duplicate keys."""

from __future__ import annotations

import re
from typing import IO, Any

import yaml


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
    """SafeLoader plus YAML 1.2 floats and an error on duplicate mapping keys."""

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


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def load_yaml(stream: str | IO[str]) -> Any:
    """Parse one YAML document; YamlError names the line and column of the problem."""
    try:
        return yaml.load(stream, Loader=_Loader)
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
