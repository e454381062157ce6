"""The checkpoint routes: find by UUID prefix, read one; and the trial a checkpoint belongs to,
which ``TokenAuth`` asks before a trial token may use it."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from ...rest import CheckpointOut, UuidList, routes
from ...store import NotFound, Store
from ._schemas import CheckpointUuid
from ._services import AUTH, Svc

router = APIRouter(dependencies=AUTH)


@router.get(routes.CHECKPOINTS)
def find_checkpoints(uuid_prefix: str, services: Svc) -> UuidList:
    """The UUIDs that start with a prefix (the CLI accepts any unique prefix)."""
    prefix = uuid_prefix.strip().lower()
    if not prefix:
        raise HTTPException(400, "uuid_prefix: give at least one character of a UUID")
    return UuidList(
        uuids=[c.uuid for c in services.store.list_checkpoints() if c.uuid.startswith(prefix)]
    )


@router.get(routes.CHECKPOINT)
def get_checkpoint(uuid: CheckpointUuid, services: Svc) -> CheckpointOut:
    return services.store.get_checkpoint(uuid)


def checkpoint_trial(store: Store, uuid: str) -> int | None:
    """The trial a checkpoint belongs to, or None when there is no such checkpoint."""
    try:
        return store.get_checkpoint(uuid).trial_id
    except NotFound:
        return None
