"""An experiment's config inside the master: the parsed, frozen ``ExperimentConfig`` (the store
keeps its JSON form, ``as_dict()``), so defaults come from the config models only."""

from __future__ import annotations

import functools
import json

from ..config import ExperimentConfig, parse_config
from ..store import Experiment


@functools.lru_cache(maxsize=256)
def _parse(text: str) -> ExperimentConfig:
    return parse_config(json.loads(text))


def config_of(exp: Experiment) -> ExperimentConfig:
    """The experiment's typed config (parsed once per distinct stored config)."""
    return _parse(json.dumps(exp.config, sort_keys=True))
