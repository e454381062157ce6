"""Fuzzing the config loader: every outcome of a random document or of random values at known
keys is a valid config or a ConfigError whose lines each name a field path (or the file and
line); never another exception. Figures are printed at the end of the module."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.faults.fuzz_support import (
    BASE_CONFIGS,
    FuzzFigures,
    config_paths,
    hostile,
    json_values,
    mutated_configs,
    print_figures,
    to_json,
)
from trialkit.config import ConfigError, ExperimentConfig, load_config

PATHS = config_paths(ExperimentConfig)
QUICK = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
SLOW = settings(QUICK, max_examples=3000)

# YAML's punctuation with a few words: flow and block collections, anchors, aliases, tags.
YAML_ALPHABET = st.sampled_from(
    list("{}[]:,-&*!|>'\"#%@`?~ \n\t.0123456789eE+_")
    + ["name", "searcher", "max_length", "batches", "hyperparameters", "type", "&a ", "*a",
       "!!python/object", "<<: ", ".nan", ".inf", "\n  ", "\n- "]
)  # fmt: skip


@pytest.fixture(scope="module")
def figures(request: pytest.FixtureRequest) -> Iterator[FuzzFigures]:
    fig = FuzzFigures("config")
    yield fig
    print_figures(request.config, fig)


def check(figures: FuzzFigures, source: Any) -> None:
    """Load ``source``; only a config or a ConfigError of one-line, located problems may come."""
    figures.inputs += 1
    try:
        config = load_config(source)
    except ConfigError as e:
        figures.outcomes["ConfigError"] += 1
        assert e.errors, "a ConfigError must say what is wrong"
        for line in e.errors:
            assert "\n" not in line and ": " in line, line
            assert "Traceback" not in line
    except Exception as e:  # the failure the suite exists to catch
        figures.tracebacks += 1
        raise AssertionError(f"{type(e).__name__} escaped the config loader: {e}") from e
    else:
        figures.outcomes["valid"] += 1
        assert_storable(config.as_dict())


def assert_storable(value: Any) -> None:
    """A valid config can be stored: strict JSON, every integer within int64."""
    json.dumps(value, allow_nan=False)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int):
            assert -(2**63) <= item < 2**63, f"{item} does not fit the store"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@QUICK
@given(text=st.lists(YAML_ALPHABET, max_size=60).map("".join))
def test_random_yaml_documents(figures: FuzzFigures, tmp_path: Path, text: str) -> None:
    check(figures, write(tmp_path, text))


@QUICK
@given(config=mutated_configs(PATHS))
def test_random_values_at_known_keys(figures: FuzzFigures, config: dict[str, Any]) -> None:
    check(figures, config)


@QUICK
@given(config=mutated_configs(PATHS))
def test_random_values_at_known_keys_as_yaml_files(
    figures: FuzzFigures, tmp_path: Path, config: dict[str, Any]
) -> None:
    """The same through a file: YAML is a superset of this JSON (NaN and deep nesting too)."""
    text = to_json(config).replace("NaN", ".nan").replace("-Infinity", "-.inf")
    check(figures, write(tmp_path, text.replace("Infinity", ".inf")))


@QUICK
@given(overrides=st.lists(st.tuples(st.sampled_from(PATHS), json_values | hostile), max_size=3))
def test_random_overrides(
    figures: FuzzFigures, tmp_path: Path, overrides: list[tuple[tuple[str, ...], Any]]
) -> None:
    base = write(tmp_path, yaml.safe_dump(BASE_CONFIGS[0]))
    items = [f"{'.'.join(p)}={to_json(v)}" for p, v in overrides]
    figures.inputs += 1
    try:
        load_config(base, items)
    except ConfigError as e:
        figures.outcomes["ConfigError"] += 1
        assert all(": " in line and "\n" not in line for line in e.errors), e.errors
    except Exception as e:
        figures.tracebacks += 1
        raise AssertionError(f"{type(e).__name__} escaped load_config: {e}") from e
    else:
        figures.outcomes["valid"] += 1


@pytest.mark.slow
@SLOW
@given(config=mutated_configs(PATHS))
def test_random_values_at_known_keys_long(figures: FuzzFigures, config: dict[str, Any]) -> None:
    check(figures, config)


@pytest.mark.slow
@SLOW
@given(text=st.lists(YAML_ALPHABET, max_size=200).map("".join))
def test_random_yaml_documents_long(figures: FuzzFigures, tmp_path: Path, text: str) -> None:
    check(figures, write(tmp_path, text))
