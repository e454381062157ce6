"""The REST routes of checkpoint GC and deletion (admin token only), over ``housekeeping._gc``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, Field

from ...rest import (
    BestCheckpoints,
    CheckpointsDeleted,
    ExperimentDeleted,
    Ok,
    RankedCheckpoint,
    routes,
)
from ...storage import CheckpointStorageError, StorageConfigError
from ..housekeeping._gc import (
    DELETED,
    DeleteRefused,
    GCResult,
    best_checkpoints,
    check_not_a_warm_start_source,
    collect_garbage,
    delete_checkpoints_by_uuid,
    delete_experiment,
)
from ..search._experiment_config import searcher_config_of
from ._schemas import CheckpointId, CheckpointUuid, ExperimentId
from ._services import AUTH, Svc


class DeleteCheckpoints(BaseModel):
    uuids: Annotated[list[CheckpointId], Field(min_length=1, max_length=10_000)]


def _refused(e: Exception) -> HTTPException:
    """A refusal (409), or storage that cannot be used or refused the delete (400): one line."""
    return HTTPException(409 if isinstance(e, DeleteRefused) else 400, str(e))


def _deleted(result: GCResult) -> CheckpointsDeleted:
    return CheckpointsDeleted(
        deleted=result.deleted, bytes_freed=result.bytes_freed, missing=result.missing
    )


router = APIRouter(dependencies=AUTH)


@router.post(routes.EXPERIMENT_GC)
def experiment_gc(experiment_id: ExperimentId, services: Svc) -> CheckpointsDeleted:
    """Apply the experiment's checkpoint GC policy now (a finished experiment only)."""
    store = services.store
    exp = store.get_experiment(experiment_id)
    if not exp.state.ended:
        raise HTTPException(
            409,
            f"experiment {exp.id} is {exp.state.value}; checkpoint GC runs on a finished "
            "experiment (its trials may still resume from any checkpoint)",
        )
    try:
        result = collect_garbage(store, exp)
    except (CheckpointStorageError, StorageConfigError) as e:
        raise _refused(e) from None
    return _deleted(result)


@router.post(routes.EXPERIMENT_DELETE)
def experiment_delete(experiment_id: ExperimentId, services: Svc) -> ExperimentDeleted:
    """Delete a finished experiment, its checkpoints' files and its trials' directories."""
    store = services.store
    exp = store.get_experiment(experiment_id)
    trials_dir = services.engine.settings.home / "trials"
    try:
        result = delete_experiment(store, exp, trials_dir)
    except (DeleteRefused, CheckpointStorageError, StorageConfigError) as e:
        raise _refused(e) from None
    return ExperimentDeleted(
        experiment_id=exp.id,
        checkpoints_deleted=len(result.deleted),
        bytes_freed=result.bytes_freed,
        checkpoints_missing=len(result.missing),
    )


@router.post(routes.CHECKPOINTS_DELETE)
def checkpoints_delete(body: DeleteCheckpoints, services: Svc) -> CheckpointsDeleted:
    """Delete checkpoints (all or none): refused for a live trial's or a warm-start source."""
    try:
        result = delete_checkpoints_by_uuid(services.store, body.uuids)
    except (DeleteRefused, CheckpointStorageError, StorageConfigError) as e:
        raise _refused(e) from None
    return _deleted(result)


@router.delete(routes.CHECKPOINT)
def delete_checkpoint(uuid: CheckpointUuid, services: Svc) -> Ok:
    """Mark a checkpoint DELETED before its trial deletes the files (``ctx.checkpoint.
    delete``): refused for a warm-start source, as ``checkpoint delete`` is."""
    store = services.store
    store.get_checkpoint(uuid)
    try:
        check_not_a_warm_start_source(store, uuid)
    except DeleteRefused as e:
        raise _refused(e) from None
    store.set_checkpoint_state(uuid, DELETED)
    return Ok()


@router.get(routes.BEST_CHECKPOINTS)
def experiment_best_checkpoints(
    experiment_id: ExperimentId, services: Svc, limit: Annotated[int, Query(ge=1, le=100_000)] = 10
) -> BestCheckpoints:
    """The experiment's best checkpoints by the searcher metric, best first."""
    store = services.store
    exp = store.get_experiment(experiment_id)
    searcher = searcher_config_of(exp)
    return BestCheckpoints(
        metric=searcher.metric,
        smaller_is_better=searcher.smaller_is_better,
        checkpoints=[
            RankedCheckpoint(checkpoint=c, searcher_metric=value)
            for c, value in best_checkpoints(store, exp, limit)
        ],
    )
