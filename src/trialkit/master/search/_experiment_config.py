"""An experiment's config inside the master: the parsed, frozen ``ExperimentConfig`` (the store
keeps its JSON form, ``as_dict()``), so defaults come from the config models only."""

from __future__ import annotations

import functools
import json
import logging

from ...config import ConfigError, ExperimentConfig, SearcherConfig, parse_config, parse_searcher
from ...store import Experiment

logger = logging.getLogger(__name__)

#: What an unmanaged experiment whose searcher section does not parse reads as: one trial.
_NO_SEARCH = SearcherConfig.model_validate({"name": "single"})


@functools.lru_cache(maxsize=256)
def _parse(text: str) -> ExperimentConfig:
    return parse_config(json.loads(text))


def config_of(exp: Experiment) -> ExperimentConfig:
    """The experiment's typed config (parsed once per distinct stored config)."""
    return _parse(json.dumps(exp.config, sort_keys=True))


def searcher_config_of(exp: Experiment) -> SearcherConfig:
    """The experiment's typed searcher section, for reading (views, GC, charts).

    A managed experiment's config was validated at creation, so it parses; an unmanaged one (a
    run outside the master: local mode, a Core API script) stores a minimal config that need
    not. A stored config that does not parse (unmanaged, or a managed one written by hand or by
    another version) is read by its searcher section alone, and one whose searcher section does
    not parse either reads as a single search with no metric: a read never fails on an old row.
    The engine, which acts on a config, uses ``config_of`` and does fail.
    """
    try:
        return config_of(exp).searcher
    except ConfigError as e:
        if not exp.unmanaged:
            _warn_once(exp.id, str(e))
    raw = exp.config.get("searcher") if isinstance(exp.config, dict) else None
    try:
        return parse_searcher(raw if isinstance(raw, dict) else {})
    except ConfigError:
        return _NO_SEARCH


@functools.lru_cache(maxsize=256)
def _warn_once(experiment_id: int, problem: str) -> None:
    logger.warning(
        "experiment %d: its stored config does not parse (%s); reading its searcher section alone",
        experiment_id,
        problem.splitlines()[0],
    )
