"""Build a search method from the searcher section and the normalized hyperparameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trialkit.searcher._adaptive import (
    Tournament,
    bracket_max_concurrent,
    bracket_max_trials,
    bracket_rungs,
    effective_max_rungs,
)
from trialkit.searcher._asha_promotion import PromotionAsha
from trialkit.searcher._asha_stopping import StoppingAsha
from trialkit.searcher._config import SearcherSettings, parse_settings
from trialkit.searcher._grid import GridSearch
from trialkit.searcher._ops import DrivenMethod
from trialkit.searcher._random import RandomSearch
from trialkit.searcher._rungs import AshaParams
from trialkit.searcher._searcher import Searcher
from trialkit.searcher._strategy import Generation, Strategy


def make_search_method(
    searcher: Mapping[str, Any], hyperparameters: Mapping[str, Any], experiment_seed: int
) -> DrivenMethod:
    """The search method for an experiment: 0.37 operations if ``max_length`` is set, else 0.38.

    Raises ValueError (listing every problem) for an unusable searcher section or grid space.
    ``optuna`` imports optuna here (a SearcherError naming ``pip install optuna`` if missing).
    """
    if searcher.get("name") == "optuna":
        from trialkit.searcher._optuna import OptunaStrategy

        generation = (
            Generation.OPS if searcher.get("max_length") is not None else Generation.REPORTS
        )
        strategy: Strategy = OptunaStrategy(searcher, hyperparameters, int(experiment_seed))
        return Searcher("optuna", strategy, hyperparameters, int(experiment_seed), generation)
    settings = parse_settings(searcher)
    strategy = build_strategy(settings, hyperparameters)
    return Searcher(
        settings.name, strategy, hyperparameters, int(experiment_seed), settings.generation
    )


def build_strategy(settings: SearcherSettings, hyperparameters: Mapping[str, Any]) -> Strategy:
    """The algorithm named by ``settings.name``."""
    if settings.name == "single":
        return RandomSearch(1, 1, settings.length, replace_invalid=False)
    if settings.name == "random":
        return RandomSearch(
            settings.max_trials,
            settings.max_concurrent_trials,
            settings.length,
            replace_invalid=True,
        )
    if settings.name == "grid":
        return GridSearch(hyperparameters, settings.max_concurrent_trials, settings.length)
    if settings.name == "async_halving":
        assert settings.num_rungs is not None
        return _asha(
            settings, settings.num_rungs, settings.max_trials, settings.max_concurrent_trials
        )
    return _adaptive(settings)


def _asha(settings: SearcherSettings, num_rungs: int, max_trials: int, concurrent: int) -> Strategy:
    params = AshaParams(
        metric=settings.metric,
        smaller_is_better=settings.smaller_is_better,
        divisor=settings.divisor,
        num_rungs=num_rungs,
        max_trials=max_trials,
        max_concurrent=concurrent,
        max_units=settings.max_units,
        time_metric=settings.time_metric if settings.generation is Generation.REPORTS else None,
    )
    if settings.generation is Generation.OPS and not settings.stop_once:
        return PromotionAsha(params)
    return StoppingAsha(params)


def _adaptive(settings: SearcherSettings) -> Tournament:
    d = settings.divisor
    m = effective_max_rungs(settings.max_rungs, settings.max_units, settings.max_trials, d)
    rungs = bracket_rungs(settings.mode, m, settings.bracket_rungs)
    trials = bracket_max_trials(settings.max_trials, d, rungs)
    concurrency = bracket_max_concurrent(settings.max_concurrent_trials, d, trials)
    return Tournament(
        [_asha(settings, r, t, c) for r, t, c in zip(rungs, trials, concurrency, strict=True)]
    )
