"""The REST route of a trial's log: pages of lines read forward from an id, or from the start
of its last lines (found from the end of the log, not by reading it all)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import TypeAdapter

from ...rest import TrialLogs, routes
from ._schemas import QueryCount, TrialId
from ._services import AUTH, Svc

#: Characters of log text in one page: the CLI prints a long log page by page as it arrives,
#: the first within a fraction of a second.
LOG_PAGE_CHARS = 1 << 20
_TRIAL_LOGS_JSON = TypeAdapter(TrialLogs)


router = APIRouter(dependencies=AUTH)


@router.get(routes.TRIAL_LOGS, response_model=TrialLogs)
def trial_logs(
    trial_id: TrialId,
    services: Svc,
    after_id: QueryCount = 0,
    limit: Annotated[int, Query(ge=0, le=100_000)] = 10_000,  # 0: only the state
    tail: Annotated[int | None, Query(ge=0, le=10_000_000)] = None,
) -> Response:
    """A page of the trial's log lines after ``after_id``: at most ``limit`` lines and
    about LOG_PAGE_CHARS characters, ``more`` when it stopped short of the end. ``tail``:
    start at the trial's last ``tail`` lines, found from the end of its log."""
    store = services.store
    trial = store.get_trial(trial_id)
    if tail is not None:
        after_id = max(after_id, store.log_id_before_last(trial_id, tail))
    logs = store.list_logs(trial_id, after_id=after_id, limit=limit, max_chars=LOG_PAGE_CHARS)
    full = len(logs) >= limit or sum(len(ln.line) for ln in logs) >= LOG_PAGE_CHARS
    reply = TrialLogs(
        logs=logs,
        trial_state=trial.state,
        running=services.engine.has_process(trial_id),
        more=limit > 0 and full,
    )
    # Serialized by pydantic in one call, not by FastAPI's copy of every line first.
    return Response(_TRIAL_LOGS_JSON.dump_json(reply), media_type="application/json")
