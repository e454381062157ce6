"""Register the checkpoints a trial journaled while the master was away (see ``trialkit.contract``):
each entry once, and only when its files are all in storage with the sizes the trial listed."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ...contract import journal_dir
from ...storage import build as build_storage
from ...store import NotFound, Store, Trial
from ._checkpoint_place import registration_problem

logger = logging.getLogger("trialkit.master")


def register_journaled_checkpoints(store: Store, trial: Trial, trial_dir: Path) -> list[str]:
    """Register every journal entry of ``trial`` not registered yet, delete the entries, and
    return the uuids registered. An entry that is unreadable, not this trial's, or whose files
    are missing or of other sizes is dropped with a warning."""
    directory = journal_dir(trial_dir)
    if not directory.is_dir():
        return []
    registered = []
    for path in sorted(directory.glob("*.json")):
        problem = _register(store, trial, path)
        if problem is None:
            registered.append(path.stem)
            logger.info("trial %d: registered journaled checkpoint %s", trial.id, path.stem)
        elif problem:
            logger.warning("trial %d: journaled checkpoint %s dropped: %s", trial.id, path, problem)
        path.unlink(missing_ok=True)
    return registered


def _register(store: Store, trial: Trial, path: Path) -> str | None:
    """Register one entry: None when registered, "" when it already was, else the problem."""
    try:
        entry = json.loads(path.read_text())
        uuid = str(entry["uuid"])
        if uuid != path.stem or int(entry["trial_id"]) != trial.id:
            return f"it names checkpoint {uuid} of trial {entry['trial_id']}"
        resources = {str(k): int(v) for k, v in dict(entry["resources"]).items()}
        storage = dict(entry["storage"])
        steps, run_id = int(entry["steps_completed"]), int(entry["run_id"])
        metadata = dict(entry["metadata"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"unreadable entry ({e})"
    try:
        store.get_checkpoint(uuid)
        return ""
    except NotFound:
        pass
    refused = registration_problem(store, trial.experiment_id, uuid, storage)
    if refused is not None:
        return refused
    missing = _missing_files(storage, uuid, resources)
    if missing:
        return missing
    store.add_checkpoint(
        uuid=uuid,
        trial_id=trial.id,
        experiment_id=trial.experiment_id,
        run_id=run_id,
        steps_completed=steps,
        metadata=metadata,
        resources=resources,
        storage=storage,
    )
    return None


def _missing_files(storage: dict[str, Any], uuid: str, resources: dict[str, int]) -> str:
    """What of ``resources`` is not in storage as listed ("" when everything is)."""
    try:
        found = build_storage(storage).list_files(uuid)
    except Exception as e:  # not there, or storage that cannot be used any more
        return f"not in storage ({e})"
    for rel, size in resources.items():
        if rel not in found:
            return f"{rel} is missing from storage"
        if not rel.endswith("/") and found[rel] != size:
            return f"{rel} has {found[rel]} bytes in storage, {size} when saved"
    return ""
