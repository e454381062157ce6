"""The trial routes: what the CLI and the web UI read of a trial, and what a trial reports
(checkpoints, preemption, searcher operations, progress, status, early exit) for its current
run only. Its metrics come through ``_metrics``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from ...rest import (
    BatchMetricsList,
    CheckpointReply,
    LastValidation,
    MetricList,
    Ok,
    Preemption,
    SearcherOperation,
    TrialDescription,
    TrialList,
    routes,
)
from ...store import TERMINAL_TRIAL_STATES, Trial
from ..housekeeping._checkpoint_place import registration_problem
from ._schemas import (
    CheckpointBody,
    CompletedOp,
    EarlyExitBody,
    ExperimentId,
    PollSeconds,
    ProgressBody,
    QueryCount,
    RunBody,
    StatusBody,
    TrialId,
)
from ._services import AUTH, Services, Svc
from ._views import trial_outs

router = APIRouter(dependencies=AUTH)


def reporting_trial(services: Services, trial_id: int, run_id: int) -> Trial:
    """The trial, if ``run_id`` is its current run and it has not ended; else HTTP 409."""
    t = services.trial(trial_id)
    if t.run_id != run_id and t.state not in TERMINAL_TRIAL_STATES:
        # The engine records a new run just after starting it: ask again once it is done.
        t = services.engine.current_trial(trial_id)
    if t.state in TERMINAL_TRIAL_STATES:
        raise HTTPException(409, f"trial {trial_id} is {t.state.value}; it takes no more reports")
    if t.run_id != run_id:
        raise HTTPException(
            409,
            f"run {run_id} of trial {trial_id} is not its current run ({t.run_id}); "
            "reports of a replaced run are refused",
        )
    return t


# What the CLI and the web UI read ----------------------------------------------------------


@router.get(routes.TRIAL)
def describe_trial(trial_id: TrialId, services: Svc) -> TrialDescription:
    store = services.store
    t = services.trial(trial_id)
    _, [trial] = trial_outs(store, store.get_experiment(t.experiment_id), trial_id=t.id)
    return TrialDescription(
        trial=trial,
        checkpoints=store.list_checkpoints(trial_id=trial_id),
        validation_metrics=store.list_metrics(trial_id, "validation"),
    )


@router.get(routes.EXPERIMENT_TRIALS)
def list_trials(experiment_id: ExperimentId, services: Svc) -> TrialList:
    _, trials = trial_outs(services.store, services.store.get_experiment(experiment_id))
    return TrialList(trials=trials)


@router.get(routes.TRIAL_METRICS)
def trial_metrics(
    trial_id: TrialId, services: Svc, group: Annotated[str | None, Query(max_length=64)] = None
) -> MetricList:
    services.trial(trial_id)
    return MetricList(metrics=services.store.list_metrics(trial_id, group))


@router.get(routes.TRIAL_BATCH_METRICS)
def trial_batch_metrics(trial_id: TrialId, services: Svc) -> BatchMetricsList:
    """The per-batch metrics of the trial's training reports that carried them."""
    services.trial(trial_id)
    return BatchMetricsList(reports=services.store.list_batch_metrics(trial_id))


# What a trial reports ------------------------------------------------------------------------


@router.post(routes.TRIAL_CHECKPOINTS)
def report_checkpoint(trial_id: TrialId, body: CheckpointBody, services: Svc) -> CheckpointReply:
    # A trial's final checkpoint comes while it is still ACTIVE; checkpoints journaled in an
    # outage are registered by the master itself (_journal), not through this route.
    store = services.store
    t = reporting_trial(services, trial_id, body.run_id)
    problem = registration_problem(store, t.experiment_id, body.uuid, body.storage)
    if problem is not None:
        raise HTTPException(403, problem)
    ckpt = store.add_checkpoint(
        uuid=body.uuid,
        trial_id=t.id,
        experiment_id=t.experiment_id,
        run_id=body.run_id,
        steps_completed=body.steps_completed,
        metadata=body.metadata,
        resources=body.resources,
        storage=body.storage,
    )
    return CheckpointReply(checkpoint=ckpt)


@router.get(routes.PREEMPTION)
async def preemption(
    trial_id: TrialId, services: Svc, timeout_seconds: PollSeconds = 0.0, run_id: QueryCount = 0
) -> Preemption:
    preempt = await services.preemptions.wait(trial_id, min(timeout_seconds, 60.0))
    return Preemption(preempt=preempt)


@router.post(routes.ACK_PREEMPTION)
def ack_preemption(trial_id: TrialId, body: RunBody, services: Svc) -> Ok:
    services.engine.ack(services.trial(trial_id), body.run_id)
    return Ok()


@router.get(routes.SEARCHER_OPERATION)
def searcher_operation(trial_id: TrialId, services: Svc) -> SearcherOperation:
    t = services.trial(trial_id)
    if t.searcher.op_length is None or t.searcher.op_complete:
        return SearcherOperation(length=None, completed=True)
    return SearcherOperation(length=t.searcher.op_length, completed=False)


@router.post(routes.COMPLETED_OPERATION)
def completed_operation(trial_id: TrialId, body: CompletedOp, services: Svc) -> Ok:
    try:
        services.engine.operation_completed(services.trial(trial_id), body.length, body.metric)
    except ValueError as e:
        raise HTTPException(400, str(e)) from e
    return Ok()


@router.post(routes.PROGRESS)
def progress(trial_id: TrialId, body: ProgressBody, services: Svc) -> Ok:
    services.engine.progress_reported(services.trial(trial_id), body.progress, body.is_raw)
    return Ok()


@router.post(routes.STATUS)
def status(trial_id: TrialId, body: StatusBody, services: Svc) -> Ok:
    services.store.update_trial(services.trial(trial_id).id, status=body.status or None)
    return Ok()


@router.post(routes.EARLY_EXIT)
def early_exit(trial_id: TrialId, body: EarlyExitBody, services: Svc) -> Ok:
    t = services.trial(trial_id)
    if t.searcher.early_exit:
        raise HTTPException(400, f"trial {trial_id} already reported an early exit")
    services.store.update_trial(t.id, early_exit=body.reason)
    return Ok()


@router.get(routes.LAST_VALIDATION)
def last_validation(trial_id: TrialId, services: Svc) -> LastValidation:
    steps = services.store.last_validation_steps(services.trial(trial_id).id)
    return LastValidation(steps_completed=steps)
