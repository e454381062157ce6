"""Size, alias, nesting and number limits of the config loader (issue 12 item 9): a hostile
document is refused at once with one line naming the file and line or the field path, the same
for the CLI (a YAML file) and the REST create path (a JSON mapping)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.inprocess_master import SINGLE, InProcessMaster, inprocess_master
from trialkit.config import ConfigError, load_config, parse_config
from trialkit.config._limits import MAX_CONFIG_BYTES, MAX_DEPTH

ALIAS_BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(
            f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]"
            for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
        ),
    ]
)


def refused(source: Any) -> str:
    """The one-line problems of a config that must be refused, timed."""
    start = time.monotonic()
    with pytest.raises(ConfigError) as info:
        load_config(source)
    assert time.monotonic() - start < 1.0, "a hostile config must be refused in well under 1 s"
    return str(info.value)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    message = refused(write(tmp_path, ALIAS_BOMB))
    assert "config.yaml: invalid YAML at line" in message and "aliases" in message


def test_alias_referring_to_itself_is_refused(tmp_path: Path) -> None:
    assert "alias refers to the node that contains it" in refused(write(tmp_path, "a: &a [*a]"))


@pytest.mark.parametrize(
    "doc", ["a: " + "[" * 5000 + "]" * 5000, "a: " + "{b: " * 3000 + "1" + "}" * 3000]
)
def test_deep_nesting_is_refused(tmp_path: Path, doc: str) -> None:
    assert f"nested more than {MAX_DEPTH} levels deep" in refused(write(tmp_path, doc))


def test_file_over_the_size_cap_is_refused_naming_it(tmp_path: Path) -> None:
    path = write(tmp_path, "description: '" + "x" * MAX_CONFIG_BYTES + "'\n")
    message = refused(path)
    assert message.startswith(f"{path}: larger than 1024 KiB")


def test_five_thousand_digit_integer_is_refused(tmp_path: Path) -> None:
    message = refused(write(tmp_path, "hyperparameters:\n  x: " + "9" * 5000 + "\n"))
    assert "line 2" in message and "5000 digits is out of range" in message


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"hyperparameters": {"x": 10**30}}, "hyperparameters.x"),
        ({"hyperparameters": {"x": -(2**63) - 1}}, "hyperparameters.x"),
        (
            {"searcher": {"name": "single", "max_length": {"batches": 10**30}}},
            "searcher.max_length",
        ),
        ({"hyperparameters": {"x": float("inf")}}, "hyperparameters.x"),
        ({"hyperparameters": {"x": {"type": "const", "val": [float("nan")]}}}, "x.val[0]"),
    ],
)
def test_numbers_out_of_range_name_the_field(config: dict[str, Any], path: str) -> None:
    message = refused({**SINGLE, **config})
    assert message.splitlines()[0].startswith(path) or f".{path}:" in message, message


def test_mapping_with_shared_references_is_refused_like_an_alias_bomb() -> None:
    """The REST path gets a mapping: the same value limit holds for it."""
    level: Any = ["lol"] * 9
    for _ in range(8):
        level = [level] * 9
    assert "more than 100000 values" in refused({**SINGLE, "data": {"bomb": level}})


def test_deep_mapping_is_refused_without_recursion_error() -> None:
    deep: Any = 1
    for _ in range(5000):
        deep = {"k": deep}
    message = refused({**SINGLE, "data": deep})
    assert message.startswith("data.k.k.k") and "nested more than" in message


def test_limits_leave_an_ordinary_config_alone() -> None:
    assert parse_config({**SINGLE, "hyperparameters": {"x": 2**63 - 1, "y": -(2**63)}}).name


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcessMaster]:
    with inprocess_master(tmp_path / "master") as m:
        yield m


def test_rest_create_applies_the_same_limits(api: InProcessMaster) -> None:
    deep: Any = 1
    for _ in range(200):
        deep = {"k": deep}
    for config, field in (
        ({**SINGLE, "data": deep}, "nested more than"),
        ({**SINGLE, "description": "x" * (MAX_CONFIG_BYTES + 1)}, "larger than 1024 KiB"),
        ({**SINGLE, "hyperparameters": {"x": 10**40}}, "hyperparameters.x"),
    ):
        resp = api.call("POST", "/api/v1/experiments", {"config": config})
        assert resp.status_code == 400 and field in resp.text, resp.text[:300]
    assert api.store.list_experiments() == []


def test_cli_refuses_the_alias_bomb_in_one_line(tmp_path: Path) -> None:
    """The CLI took 7.85 GB and 198 s, then crashed; now: one line, exit 2, no master needed."""
    path = write(tmp_path, ALIAS_BOMB)
    proc = subprocess.run(
        [sys.executable, "-m", "trialkit.cli", "experiment", "create", str(path), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr  # the CLI's exit code for a bad config
    assert "Traceback" not in proc.stderr and "aliases" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize(
    ("searcher", "hyperparameters", "expected"),
    [
        (
            {"name": "grid"},
            {"x": {"type": "int", "minval": 0, "maxval": 10**9, "count": 10**9}},
            "hyperparameters.x.count: 1000000000 grid points is more than the 100000",
        ),
        (
            {"name": "grid"},
            {
                "x": {"type": "double", "minval": 0, "maxval": 1, "count": 400},
                "g": {"y": {"type": "log", "minval": 0, "maxval": 1, "count": 300}},
            },
            "hyperparameters: the grid has more than 100000 points",
        ),
        ({"name": "random", "max_trials": 10**9}, {}, "searcher.max_trials: expected an integer"),
        (
            {"name": "adaptive_asha", "max_trials": 4, "max_rungs": 10**6},
            {},
            "searcher.max_rungs: expected an integer between 1 and 64",
        ),
    ],
)
def test_searches_too_large_to_plan_are_refused(
    searcher: dict[str, Any], hyperparameters: dict[str, Any], expected: str
) -> None:
    """A grid of 10**18 points once hung the master while it enumerated them."""
    config = {
        **SINGLE,
        "searcher": {**SINGLE["searcher"], **searcher},
        "hyperparameters": hyperparameters,
    }
    assert expected in refused(config)
