"""An experiment's config inside the master: the parsed, frozen ``ExperimentConfig`` (the store
keeps its JSON form, ``as_dict()``), so defaults come from the config models only."""

from __future__ import annotations

import functools
import json

from ..config import ConfigError, ExperimentConfig, SearcherConfig, parse_config, parse_searcher
from ..store import Experiment

#: What an unmanaged experiment whose searcher section does not parse reads as: one trial.
_NO_SEARCH = SearcherConfig.model_validate({"name": "single"})


@functools.lru_cache(maxsize=256)
def _parse(text: str) -> ExperimentConfig:
    return parse_config(json.loads(text))


def config_of(exp: Experiment) -> ExperimentConfig:
    """The experiment's typed config (parsed once per distinct stored config)."""
    return _parse(json.dumps(exp.config, sort_keys=True))


def searcher_config_of(exp: Experiment) -> SearcherConfig:
    """The experiment's typed searcher section.

    A managed experiment's config was validated at creation, so it always parses. An unmanaged
    one (a run outside the master: local mode, a Core API script) stores a minimal config that
    need not parse as a whole; its searcher section is then read on its own, and one that does
    not parse either reads as a single search with no metric.
    """
    if not exp.unmanaged:
        return config_of(exp).searcher
    try:
        return config_of(exp).searcher
    except ConfigError:
        pass
    raw = exp.config.get("searcher") if isinstance(exp.config, dict) else None
    try:
        return parse_searcher(raw if isinstance(raw, dict) else {})
    except ConfigError:
        return _NO_SEARCH
