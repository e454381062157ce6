"""Shared pieces of the fuzz suites: hostile values, JSON text that can hold NaN and deep nesting,
strategies built from a JSON schema (the app's OpenAPI), configs mutated at known keys, and the
figures each suite prints at its end (inputs fuzzed, 5xx, tracebacks)."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import strategies as st
from pydantic import BaseModel

# -- figures -------------------------------------------------------------------------------------


@dataclass
class FuzzFigures:
    """What one suite fuzzed and what came back; printed when the module ends."""

    suite: str
    inputs: int = 0
    server_errors: int = 0
    tracebacks: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)

    def line(self) -> str:
        top = ", ".join(f"{k}: {v}" for k, v in sorted(self.outcomes.items()))
        return (
            f"fuzz {self.suite}: {self.inputs} inputs fuzzed, {self.server_errors} 5xx, "
            f"{self.tracebacks} tracebacks ({top})"
        )


def print_figures(config: pytest.Config, figures: FuzzFigures) -> None:
    """Write the figures past pytest's output capture, so a plain run shows them."""
    import contextlib

    capture = config.pluginmanager.get_plugin("capturemanager")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    paused = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
    with paused:
        if reporter is not None:
            reporter.write_line("")
            reporter.write_line(figures.line())
        else:  # pragma: no cover - pytest always has one unless -p no:terminal
            print(figures.line())


# -- hostile values ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RawJson:
    """Text spliced into a JSON document as is (nesting deeper than json.dumps allows)."""

    text: str


def deep_json(depth: int, opener: str = "[") -> RawJson:
    closer = {"[": "]", "{": "}"}[opener]
    if opener == "{":
        return RawJson('{"a":' * depth + "1" + closer * depth)
    return RawJson(opener * depth + closer * depth)


HOSTILE_SCALARS: list[Any] = [
    2**63,
    2**64 + 1,
    -(2**63) - 1,
    10**30,
    2**31,
    2**31 - 1,
    -1,
    0,
    float("nan"),
    float("inf"),
    float("-inf"),
    1e308,
    -0.0,
    "",
    "x" * 10_000,
    "../../../etc/passwd",
    "/etc/passwd",
    "\x00",
    "é✓\U0001f600",
    "\ud800",  # a lone surrogate: JSON and YAML escapes can produce one
    "9" * 5000,
    None,
    True,
    False,
    [],
    {},
]

hostile_scalars = st.sampled_from(HOSTILE_SCALARS)
hostile = st.one_of(
    hostile_scalars,
    st.integers(min_value=5, max_value=5000).map(deep_json),
    st.integers(min_value=5, max_value=5000).map(lambda n: deep_json(n, "{")),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
)

json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20), hostile_scalars
)
json_values = st.recursive(
    json_leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


def to_json(value: Any) -> str:
    """JSON text for ``value``: NaN/Infinity kept (as Python writes them), RawJson spliced in."""
    if isinstance(value, RawJson):
        return value.text
    if isinstance(value, dict):
        items = (f"{json.dumps(str(k))}:{to_json(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    return json.dumps(value, allow_nan=True)


# -- strategies from a JSON schema (OpenAPI components) ------------------------------------------


def from_schema(schema: dict[str, Any], components: dict[str, Any], depth: int = 0) -> Any:
    """A strategy for values valid under ``schema`` (the subset FastAPI emits)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return from_schema(components[name], components, depth)
    if "anyOf" in schema:
        return st.one_of([from_schema(s, components, depth) for s in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "integer":
        lo = schema.get("minimum", schema.get("exclusiveMinimum", -(2**40)))
        hi = schema.get("maximum", schema.get("exclusiveMaximum", 2**40))
        return st.integers(min_value=math.ceil(lo), max_value=int(hi))
    if kind == "number":
        lo, hi = schema.get("minimum"), schema.get("maximum")
        return st.floats(min_value=lo, max_value=hi, allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(re.compile(schema["pattern"]), fullmatch=True).filter(
                lambda s: len(s) <= schema.get("maxLength", 1000)
            )
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 30))
    if kind == "array":
        items = schema.get("items", {})
        return st.lists(
            from_schema(items, components, depth + 1) if items and depth < 4 else json_values,
            max_size=4,
        )
    if kind == "object" or "properties" in schema:
        return _object(schema, components, depth)
    return json_values


def _object(schema: dict[str, Any], components: dict[str, Any], depth: int) -> Any:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    if props:
        return st.fixed_dictionaries(
            {k: from_schema(v, components, depth + 1) for k, v in props.items() if k in required},
            optional={
                k: from_schema(v, components, depth + 1)
                for k, v in props.items()
                if k not in required
            },
        )
    extra = schema.get("additionalProperties", True)
    values = (
        from_schema(extra, components, depth + 1)
        if isinstance(extra, dict) and extra and depth < 4
        else json_values
    )
    return st.dictionaries(st.text(max_size=12), values, max_size=4)


@st.composite
def corrupted(draw: Any, valid: Any) -> Any:
    """A valid value with some of its parts replaced by hostile ones, or dropped."""
    value = draw(valid)
    return draw(_corrupt(value))


def _corrupt(value: Any) -> Any:
    if isinstance(value, dict) and value:
        keys = list(value)

        @st.composite
        def one(draw: Any) -> Any:
            out = dict(value)
            key = draw(st.sampled_from(keys))
            action = draw(st.sampled_from(["replace", "replace", "drop", "deeper", "add"]))
            if action == "replace":
                out[key] = draw(hostile)
            elif action == "drop":
                del out[key]
            elif action == "deeper":
                out[key] = draw(_corrupt(out[key]))
            else:
                out[draw(st.text(max_size=10))] = draw(hostile)
            return out

        return one()
    if isinstance(value, list) and value:
        return st.lists(st.one_of(st.sampled_from(value), hostile), max_size=len(value) + 2)
    return hostile


# -- configs -------------------------------------------------------------------------------------

BASE_CONFIGS: list[dict[str, Any]] = [
    {
        "name": "fuzz",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10}},
    },
    {
        "name": "fuzz-random",
        "entrypoint": ["python3", "train.py"],
        "hyperparameters": {
            "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
            "layers": {"type": "int", "minval": 1, "maxval": 4},
            "act": {"type": "categorical", "vals": ["relu", "tanh"]},
        },
        "searcher": {
            "name": "random",
            "metric": "loss",
            "max_trials": 3,
            "max_length": {"epochs": 1},
        },
        "records_per_epoch": 100,
        "max_restarts": 1,
        "resources": {"slots_per_trial": 1},
    },
    {
        "name": "fuzz-grid",
        "entrypoint": "model_def:Trial",
        "hyperparameters": {"x": {"type": "double", "minval": 0, "maxval": 1, "count": 3}},
        "searcher": {"name": "grid", "metric": "acc", "smaller_is_better": False, "max_length": 5},
        "min_validation_period": {"batches": 2},
    },
    {
        "name": "fuzz-asha",
        "entrypoint": "python3 train.py",
        "searcher": {
            "name": "adaptive_asha",
            "metric": "loss",
            "max_trials": 4,
            "max_length": {"batches": 64},
            "divisor": 4,
            "max_rungs": 3,
        },
        "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/trialkit-fuzz"},
    },
]


def config_paths(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every dotted key of the config model, nested sections included."""
    out: list[tuple[str, ...]] = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        out.append((*prefix, key))
        for arg in _classes(info.annotation):
            if len(prefix) < 3:
                out.extend(config_paths(arg, (*prefix, key)))
    return sorted(set(out))


def _classes(annotation: Any) -> list[type[BaseModel]]:
    import typing

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [cls for arg in typing.get_args(annotation) for cls in _classes(arg)]


@st.composite
def mutated_configs(draw: Any, paths: list[tuple[str, ...]]) -> Any:
    """A valid config with one to three known keys set to random or hostile values."""
    config = json.loads(json.dumps(draw(st.sampled_from(BASE_CONFIGS))))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        node = config
        for part in path[:-1]:
            child = node.get(part) if isinstance(node, dict) else None
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[path[-1]] = draw(st.one_of(hostile, json_values))
    return config
