"""Warm start: the checkpoint a new experiment's trials start from (Determined's
``searcher.source_checkpoint_uuid`` / ``source_trial_id``, and ``--warm-start PATH``).

Resolved once, when the experiment is created (as Determined does): a trial id becomes its
checkpoint with the most steps, and the checkpoint's files are made reachable in the new
experiment's checkpoint storage under the uuid the stored config then names. A trial with no
checkpoint of its own gets that uuid as its latest checkpoint with ``steps_completed`` 0, so a
harness loads the weights and starts its batch count at 0 (Determined never continues the
source's counters on a warm start).

QUIRK (Determined's, kept): a warm start restores everything the checkpoint holds except the
loop's progress and RNG: optimizer and LR-scheduler state too, so a PyTorch optimizer's saved
``lr`` wins over the new experiment's hyperparameter until the scheduler or user code sets it;
the data order is drawn afresh. A uuid is resolved when the experiment is created, so a later
checkpoint of a ``source_trial_id`` is not picked up."""

from __future__ import annotations

import uuid as uuidlib
from pathlib import Path
from typing import Any

from ...config import CheckpointStorage, ExperimentConfig
from ...storage import (
    CheckpointContentError,
    CheckpointIntegrityError,
    CheckpointNotFound,
    CheckpointStorageError,
    StorageConfigError,
    StorageManager,
    build,
    list_directory,
)
from ...store import NotFound, Store


class WarmStartError(ValueError):
    """The warm-start source does not exist or cannot be read; the message is one line."""


def warm_start_checkpoint(cfg: ExperimentConfig) -> str | None:
    """The uuid a trial without checkpoints of its own starts from (None: a cold start)."""
    return cfg.searcher.source_checkpoint_uuid or None


def storage_of(cfg: ExperimentConfig) -> CheckpointStorage:
    """The experiment's checkpoint storage (the master filled in its default where none)."""
    assert cfg.checkpoint_storage is not None  # with_defaults filled it in
    return cfg.checkpoint_storage


def _with_source(cfg: ExperimentConfig, storage_id: str) -> ExperimentConfig:
    """``cfg`` with ``searcher.source_checkpoint_uuid`` set to ``storage_id``."""
    searcher = cfg.searcher.model_copy(update={"source_checkpoint_uuid": storage_id})
    return cfg.model_copy(update={"searcher": searcher})


def _same_place(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = (
        *("type", "host_path", "storage_path", "container_path"),
        *("bucket", "prefix", "endpoint_url", "container", "connection_string", "account_url"),
    )
    return all(a.get(k) == b.get(k) for k in keys)


def _copy_in(src: Path, storage_id: str, dest: StorageManager, what: str) -> None:
    """Copy the checkpoint directory ``src`` into ``dest``; a failed copy leaves nothing."""
    try:
        files = list_directory(src)
    except (CheckpointContentError, OSError) as e:
        raise WarmStartError(f"{what}: cannot be read ({e})") from None
    if not any(not rel.endswith("/") for rel in files):
        raise WarmStartError(f"{what}: holds no files, so it is no checkpoint")
    try:
        dest.upload(src, storage_id, sorted(files))
    except (CheckpointStorageError, OSError) as e:
        dest.delete(storage_id)
        raise WarmStartError(f"{what}: could not be copied into checkpoint storage ({e})") from None
    except BaseException:
        dest.delete(storage_id)
        raise


def _from_trial(store: Store, trial_id: int) -> str:
    try:
        store.get_trial(trial_id)
    except NotFound:
        raise WarmStartError(
            f"searcher.source_trial_id: no trial {trial_id} on this master"
        ) from None
    latest = store.latest_checkpoint(trial_id)
    if latest is None:
        raise WarmStartError(
            f"searcher.source_trial_id: trial {trial_id} has no completed checkpoint to start from"
        )
    return latest.uuid


def _reachable(store: Store, storage_id: str, cfg: ExperimentConfig, field: str) -> None:
    """The registered checkpoint ``storage_id``, copied into the experiment's storage when it
    lives in another one (a trial reads checkpoints from its own experiment's storage)."""
    try:
        ckpt = store.get_checkpoint(storage_id)
    except NotFound:
        raise WarmStartError(
            f"{field}: no checkpoint {storage_id!r} on this master "
            "('trialkit checkpoint list' shows them; a directory goes in --warm-start PATH)"
        ) from None
    if ckpt.state != "COMPLETED":
        raise WarmStartError(f"{field}: checkpoint {storage_id} is {ckpt.state}, not COMPLETED")
    target = storage_of(cfg)
    reported = store.checkpoint_storage_with_secrets(storage_id)
    if _same_place(reported, target.model_dump()) or build(target).exists(storage_id):
        return  # read in place, or copied there for another experiment already
    try:
        source = build(reported)
        with source.restore_path(storage_id) as path:
            _copy_in(path, storage_id, build(target), f"{field}: checkpoint {storage_id}")
    except (CheckpointNotFound, CheckpointIntegrityError, StorageConfigError) as e:
        raise WarmStartError(f"{field}: checkpoint {storage_id} cannot be read ({e})") from None


def _from_path(path: str, cfg: ExperimentConfig) -> str:
    src = Path(path).expanduser()
    what = f"--warm-start {path}"
    if not src.is_absolute():
        raise WarmStartError(f"{what}: give an absolute path (the master resolves it)")
    if not src.is_dir():
        raise WarmStartError(f"{what}: no such directory on the master's machine")
    storage_id = str(uuidlib.uuid4())
    _copy_in(src, storage_id, build(storage_of(cfg)), what)
    return storage_id


def resolve_warm_start(
    cfg: ExperimentConfig, store: Store, path: str | None = None
) -> ExperimentConfig:
    """Check the experiment's warm-start source; return the config whose
    ``searcher.source_checkpoint_uuid`` is the checkpoint its trials start from.
    ``source_trial_id`` wins over a uuid given with it, as in Determined; a ``path``
    (``--warm-start PATH``) with either is refused."""
    trial_id = cfg.searcher.source_trial_id
    given = cfg.searcher.source_checkpoint_uuid
    if path is not None:
        if trial_id is not None or given:
            raise WarmStartError(
                f"--warm-start {path}: the config also names searcher.source_trial_id or "
                "source_checkpoint_uuid; keep one warm-start source"
            )
        return _with_source(cfg, _from_path(path, cfg))
    if trial_id is not None:
        storage_id = _from_trial(store, trial_id)
        _reachable(store, storage_id, cfg, f"searcher.source_trial_id {trial_id}")
        return _with_source(cfg, storage_id)
    if given:
        _reachable(store, given, cfg, "searcher.source_checkpoint_uuid")
    return cfg


def warm_start_copy(
    store: Store, config: dict[str, Any], other_than: int | None = None
) -> str | None:
    """The storage id of the warm-start copy that an experiment with ``config`` (a stored
    config) owns in its checkpoint storage (None: no copy was made, or another experiment than
    ``other_than`` reads the same copy). A ``--warm-start PATH`` copy is no registered
    checkpoint; a source from other storage was copied under its own uuid. Places are compared
    with their credentials (an Azure connection string names the account)."""
    source = stored_source(config)
    target = config.get("checkpoint_storage") or {}
    if source is None:
        return None
    try:
        if _same_place(store.checkpoint_storage_with_secrets(source), target):
            return None  # the trials read the source itself
    except NotFound:
        pass  # a --warm-start PATH copy (or a source deleted since)
    for exp in store.list_experiments():
        if (
            exp.id != other_than
            and stored_source(exp.config) == source
            and _same_place(_storage_with_secrets(store, exp.id), target)
        ):
            return None
    return source


def _storage_with_secrets(store: Store, experiment_id: int) -> dict[str, Any]:
    return store.config_with_secrets(experiment_id).get("checkpoint_storage") or {}


def stored_source(config: dict[str, Any]) -> str | None:
    """The warm-start uuid a stored config names, read raw: any experiment's config, an
    unmanaged one's too, whose config need not parse (``warm_start_checkpoint`` is typed)."""
    searcher = config.get("searcher")
    value = searcher.get("source_checkpoint_uuid") if isinstance(searcher, dict) else None
    return str(value) if value else None


def discard_warm_start_copy(store: Store, config: dict[str, Any]) -> None:
    """Delete the warm-start copy made for an experiment whose create failed after it."""
    copy = warm_start_copy(store, config)
    if copy is not None:
        build(config["checkpoint_storage"]).delete(copy)
