"""The routes of a custom searcher run by the user's process (``LocalSearchRunner``): a long
poll for the search's events, and the operations the runner's searcher answers with."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import APIRouter, HTTPException

from ...rest import OperationsApplied, SearcherEvents, routes
from ._schemas import ExperimentId, PollSeconds, QueryCount, SearcherOperations
from ._services import AUTH, Services, Svc

router = APIRouter(dependencies=AUTH)

#: Experiment states in which a search sends no more events.
_ENDED = ("COMPLETED", "CANCELED", "ERROR")


def _event_queue(services: Services, experiment_id: int) -> Any:
    """The experiment's custom search waiting for a runner, or None (404 for no experiment)."""
    services.store.get_experiment(experiment_id)
    drv = services.engine.driver(experiment_id)
    return drv.runner_queue() if drv is not None else None


@router.get(routes.SEARCHER_EVENTS)
async def searcher_events(
    experiment_id: ExperimentId,
    services: Svc,
    after: QueryCount = 0,
    timeout_seconds: PollSeconds = 0.0,
) -> SearcherEvents:
    deadline = time.monotonic() + min(timeout_seconds, 60.0)

    def poll() -> tuple[list[Any], dict[str, Any], str]:
        events, progress = services.engine.searcher_events(experiment_id, after)
        return events, progress, services.store.get_experiment(experiment_id).state.value

    while True:
        # The engine lock and the store block: off the event loop, so a long poll never
        # stalls the other async routes (the trials' preemption long polls among them).
        events, progress, state = await asyncio.to_thread(poll)
        if events or time.monotonic() >= deadline or state in _ENDED or services.stopping.is_set():
            return SearcherEvents(
                events=events,
                experiment_state=state,
                trial_progress={str(k): v for k, v in progress.items()},
            )
        await asyncio.sleep(0.05)


@router.post(routes.SEARCHER_OPERATIONS)
def searcher_operations(
    experiment_id: ExperimentId, body: SearcherOperations, services: Svc
) -> OperationsApplied:
    from ...searcher import SearcherError, decode_operation

    if _event_queue(services, experiment_id) is None:
        raise HTTPException(
            400,
            f"experiment {experiment_id} has no custom searcher waiting for a runner"
            " (searcher.name: custom without custom_searcher_class, still active)",
        )
    try:
        ops = [decode_operation(op) for op in body.operations]
    except SearcherError as e:
        raise HTTPException(400, str(e)) from e
    applied = services.engine.remote_searcher_operations(
        services.store.get_experiment(experiment_id), ops, body.last_event_id, body.progress
    )
    return OperationsApplied(applied=applied)
