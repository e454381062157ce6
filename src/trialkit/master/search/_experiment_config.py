"""An experiment's config inside the master: the parsed, frozen ``ExperimentConfig`` (the store
keeps its JSON form, ``as_dict()``), so defaults come from the config models only."""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict

from ...config import (
    CheckpointStorage,
    ConfigError,
    ExperimentConfig,
    SearcherConfig,
    parse_config,
    parse_searcher,
)
from ...storage import StorageConfigError, storage_model
from ...store import Experiment

logger = logging.getLogger(__name__)

#: What an unmanaged experiment whose searcher section does not parse reads as: one trial.
_NO_SEARCH = SearcherConfig.model_validate({"name": "single"})


#: Typed configs by (experiment id, creation time): ids of different stores in one process
#: (tests) may repeat, their creation times do not. A stored config never changes.
_Key = tuple[int, float]
_TYPED: OrderedDict[_Key, ExperimentConfig] = OrderedDict()
_TYPED_LOCK = threading.Lock()
_KEEP = 1024


def _key(exp: Experiment) -> _Key:
    return exp.id, exp.created_at


def _remember(key: _Key, cfg: ExperimentConfig) -> None:
    with _TYPED_LOCK:
        _TYPED[key] = cfg
        _TYPED.move_to_end(key)
        while len(_TYPED) > _KEEP:
            _TYPED.popitem(last=False)


def remember_config(exp: Experiment, cfg: ExperimentConfig) -> None:
    """Keep the typed config an experiment was created from, so it is never parsed again."""
    _remember(_key(exp), cfg)


def config_of(exp: Experiment) -> ExperimentConfig:
    """The experiment's typed config: the one it was created with, or (after a restart) its
    stored config parsed once. Storage credentials may read masked: take them from the store."""
    key = _key(exp)
    with _TYPED_LOCK:
        cfg = _TYPED.get(key)
    if cfg is None:
        cfg = parse_config(exp.config)
        _remember(key, cfg)
    return cfg


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


def storage_config_of(exp: Experiment) -> CheckpointStorage | None:
    """The experiment's typed checkpoint storage (None: it has none), for reading its GC
    policy. A stored config that does not parse (see ``searcher_config_of``) is read by its
    storage block alone, as ``storage.build`` reads one."""
    try:
        return config_of(exp).checkpoint_storage
    except ConfigError:
        pass
    raw = exp.config.get("checkpoint_storage") if isinstance(exp.config, dict) else None
    try:
        return storage_model(raw) if isinstance(raw, dict) else None
    except StorageConfigError:
        return None


@functools.lru_cache(maxsize=256)
def _warn_once(experiment_id: int, problem: str) -> None:
    logger.warning(
        "experiment %d: its stored config does not parse (%s); reading its searcher section alone",
        experiment_id,
        problem.splitlines()[0],
    )
