"""One search generation: the typed config's ``searcher.generation`` is the one the master
acts on and the one the built search method runs (a second definition in the searcher package
disagreed for a custom searcher without max_length, and is gone)."""

from __future__ import annotations

from typing import Any

import pytest

import trialkit.searcher
from trialkit.config import load_config
from trialkit.searcher import make_search_method

HP = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}}
SECTIONS: list[tuple[dict[str, Any], str]] = [
    ({"name": "single", "metric": "loss", "max_length": {"batches": 8}}, "0.37"),
    ({"name": "single", "metric": "loss"}, "0.38"),
    (
        {"name": "adaptive_asha", "metric": "loss", "time_metric": "batches", "max_time": 8,
         "max_trials": 2},
        "0.38",
    ),
    ({"name": "random", "metric": "loss", "max_length": {"batches": 8}, "max_trials": 2}, "0.37"),
    ({"name": "custom", "metric": "loss"}, "0.37"),
    ({"name": "custom", "metric": "loss", "max_length": {"batches": 8}}, "0.37"),
]  # fmt: skip


@pytest.mark.parametrize(("searcher", "generation"), SECTIONS)
def test_config_generation_is_the_searchers(searcher: dict[str, Any], generation: str) -> None:
    cfg = load_config({"entrypoint": "python3 t.py", "hyperparameters": HP, "searcher": searcher})
    assert cfg.searcher.generation == generation
    if cfg.searcher.name != "custom":  # custom searchers are SearchMethods, built by the master
        method = make_search_method(cfg.searcher, cfg.hyperparameters, 0)
        assert method.generation.value == generation


def test_the_searcher_package_has_no_second_generation() -> None:
    assert not hasattr(trialkit.searcher, "generation_of")
