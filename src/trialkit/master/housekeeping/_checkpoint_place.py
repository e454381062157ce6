"""Where a trial may register a checkpoint: under a plain storage id, in its experiment's
checkpoint storage only (a record naming other storage would send downloads, GC and deletes
to files that are not the trial's)."""

from __future__ import annotations

from typing import Any

from ...storage import CheckpointNotFound, check_storage_id, location_mismatch
from ...store import Store


def registration_problem(
    store: Store, experiment_id: int, uuid: str, storage: dict[str, Any]
) -> str | None:
    """Why a checkpoint ``uuid`` in ``storage`` may not be registered for the experiment (one
    line naming the rule), or None."""
    try:
        check_storage_id(uuid)
    except CheckpointNotFound as e:
        return f"uuid: {e}"
    configured = store.config_with_secrets(experiment_id).get("checkpoint_storage")
    if not configured:
        return f"experiment {experiment_id} has no checkpoint_storage to register checkpoints in"
    try:
        mismatch = location_mismatch(storage, configured)
    except (KeyError, TypeError, ValueError) as e:  # a block build() would refuse too
        mismatch = f"cannot be read ({e})"
    if mismatch is None:
        return None
    return (
        f"storage: {mismatch} (experiment {experiment_id}'s checkpoint_storage); a trial "
        "registers checkpoints only in its experiment's checkpoint storage"
    )
