"""Build a search method from the typed searcher section and the normalized hyperparameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from trialkit.config import Generation, SearcherConfig, parse_searcher
from trialkit.searcher._adaptive import (
    Tournament,
    bracket_max_concurrent,
    bracket_max_trials,
    bracket_rungs,
    effective_max_rungs,
)
from trialkit.searcher._asha_promotion import PromotionAsha
from trialkit.searcher._asha_stopping import StoppingAsha
from trialkit.searcher._grid import GridSearch
from trialkit.searcher._ops import DrivenMethod
from trialkit.searcher._random import RandomSearch
from trialkit.searcher._rungs import AshaParams
from trialkit.searcher._searcher import Searcher
from trialkit.searcher._strategy import Strategy

T = TypeVar("T")


def searcher_config(searcher: SearcherConfig | Mapping[str, Any]) -> SearcherConfig:
    """The typed section as is; a raw section is validated (ConfigError, a ValueError, lists
    every problem at its ``searcher.*`` path)."""
    return searcher if isinstance(searcher, SearcherConfig) else parse_searcher(searcher)


def make_search_method(
    searcher: SearcherConfig | Mapping[str, Any],
    hyperparameters: Mapping[str, Any],
    experiment_seed: int,
) -> DrivenMethod:
    """The search method for an experiment: 0.37 operations if ``max_length`` is set, else 0.38.

    Raises ValueError (listing every problem) for an unusable searcher section or grid space.
    ``optuna`` imports optuna here (a SearcherError naming ``pip install optuna`` if missing).
    """
    cfg = searcher_config(searcher)
    generation = cfg.generation
    if cfg.name == "custom":
        raise ValueError(
            "searcher.name: a custom searcher is a trialkit.searcher.SearchMethod run by the"
            " master or a LocalSearchRunner, not a built-in search method"
        )
    if cfg.name == "optuna":
        from trialkit.searcher._optuna import OptunaStrategy

        strategy: Strategy = OptunaStrategy(cfg, hyperparameters, int(experiment_seed))
    else:
        strategy = build_strategy(cfg, hyperparameters)
    return Searcher(cfg.name, strategy, hyperparameters, int(experiment_seed), generation)


def build_strategy(cfg: SearcherConfig, hyperparameters: Mapping[str, Any]) -> Strategy:
    """The built-in algorithm named by ``cfg.name``."""
    length = cfg.max_length.value if cfg.max_length is not None else None
    if cfg.name == "single":
        return RandomSearch(1, 1, length, replace_invalid=False)
    if cfg.name == "random":
        return RandomSearch(
            _required(cfg.max_trials), cfg.max_concurrent_trials, length, replace_invalid=True
        )
    if cfg.name == "grid":
        return GridSearch(hyperparameters, cfg.max_concurrent_trials, length)
    if cfg.name == "async_halving":
        return _asha(
            cfg, _required(cfg.num_rungs), _required(cfg.max_trials), cfg.max_concurrent_trials
        )
    return _adaptive(cfg)


def _required(value: T | None) -> T:
    """A key the config model requires for this searcher (so never None here)."""
    assert value is not None
    return value


def _asha(cfg: SearcherConfig, num_rungs: int, max_trials: int, concurrent: int) -> Strategy:
    reports = cfg.generation is Generation.REPORTS
    params = AshaParams(
        metric=_required(cfg.metric),
        smaller_is_better=cfg.smaller_is_better,
        divisor=cfg.divisor,
        num_rungs=num_rungs,
        max_trials=max_trials,
        max_concurrent=concurrent,
        max_units=_required(cfg.max_units),
        time_metric=cfg.time_metric if reports else None,
    )
    if not reports and not cfg.stop_once:
        return PromotionAsha(params)
    return StoppingAsha(params)


def _adaptive(cfg: SearcherConfig) -> Tournament:
    d = cfg.divisor
    max_trials = _required(cfg.max_trials)
    m = effective_max_rungs(cfg.max_rungs, _required(cfg.max_units), max_trials, d)
    rungs = bracket_rungs(cfg.mode, m, tuple(cfg.bracket_rungs))
    trials = bracket_max_trials(max_trials, d, rungs)
    concurrency = bracket_max_concurrent(cfg.max_concurrent_trials, d, trials)
    return Tournament(
        [_asha(cfg, r, t, c) for r, t, c in zip(rungs, trials, concurrency, strict=True)]
    )
