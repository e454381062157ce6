"""The master's REST API: thin routes over the store and the engine, token-protected
(the tokens are checked by ``_auth.TokenAuth`` before routing; see docs/security.md)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import logging
import os
import sys
import threading
import time
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ... import __version__
from ..._modeldir import ModelDirError, check_archive
from ...config import ConfigError
from ...rest import (
    BatchMetricsList,
    BatchMetricsOut,
    BestValidation,
    CheckpointList,
    CheckpointOut,
    CheckpointReply,
    CreatedExperiment,
    ExperimentDescription,
    ExperimentList,
    ExperimentReply,
    ExperimentSummary,
    Health,
    LastValidation,
    MasterInfo,
    MetricList,
    ModelDef,
    Ok,
    OperationsApplied,
    PoolInfo,
    Preemption,
    SearcherEvents,
    SearcherOperation,
    TrialDescription,
    TrialList,
    UuidList,
    routes,
)
from ...store import (
    TERMINAL_TRIAL_STATES,
    ExperimentState,
    NotFound,
    Store,
    StoreError,
    Trial,
)
from ..engine._engine import Engine
from ..housekeeping._checkpoint_place import registration_problem
from ..housekeeping._gc import GONE_STATES
from ..search._create import CreateError, prepare_experiment
from ..search._experiment_config import remember_config, searcher_config_of
from ..search._warm_start import discard_warm_start_copy
from ._auth import TokenAuth
from ._errors import UnexpectedErrors, full_disk_message
from ._gc import add_gc_routes
from ._logs import add_log_routes
from ._metrics import add_metric_routes
from ._preemption import PreemptionWaits
from ._schemas import (
    CheckpointBody,
    CheckpointUuid,
    CompletedOp,
    CreateExperiment,
    EarlyExitBody,
    ExperimentId,
    PollSeconds,
    ProgressBody,
    QueryCount,
    RunBody,
    SearcherOperations,
    StatusBody,
    TrialId,
    field_errors,
)
from ._ui import add_ui_routes
from ._ui_session import UiSessions
from ._views import (
    checkpoint_out,
    describe_experiment,
    experiment_out,
    experiment_summary,
    metrics_out,
    trial_outs,
)

logger = logging.getLogger(__name__)


def _decode_model_def(text: str | None) -> bytes | None:
    """The model directory tarball sent as base64; HTTP 400 when it is not valid base64 or
    not an archive a trial's launch could unpack (found now, not when a trial starts)."""
    if not text:
        return None
    try:
        archive = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise HTTPException(
            400, {"errors": ["model_def: not valid base64; send the tar.gz base64-encoded"]}
        ) from None
    try:
        check_archive(archive)
    except ModelDirError as e:
        raise HTTPException(400, {"errors": [f"model_def: {e}"]}) from None
    return archive


#: Actions on a search that runs: refused (409) once the experiment has ended.
_RUN_ACTIONS = ("pause", "activate", "kill")

_BEARER = HTTPBearer(auto_error=False, description="the master token or a trial's own token")


def create_app(
    store: Store,
    engine: Engine,
    token: str,
    on_shutdown: Any = None,
    *,
    trial_key: str | None = None,
    idle_timeout: float = 0.0,
) -> FastAPI:
    """The FastAPI application for one master: ``token`` is the admin token; trial tokens
    derived from ``trial_key`` (none accepted without one) report for their own trial only."""
    # No /docs or /redoc: a browser page cannot send the token. The spec is at /openapi.json
    # (token needed) and app.openapi() in-process.
    app = FastAPI(title="trialkit master", version=__version__, docs_url=None, redoc_url=None)
    ui_sessions = UiSessions(token)
    app.add_middleware(
        TokenAuth,
        router=app.router,
        admin_token=token,
        trial_key=trial_key,
        checkpoint_trial=lambda uuid: _checkpoint_trial(store, uuid),
        ui_sessions=ui_sessions,
    )
    # added last: the outermost, around TokenAuth too
    app.add_middleware(
        UnexpectedErrors, full_disk=full_disk_message(store.url, engine.settings.home)
    )
    started = time.time()
    # Set once a shutdown is asked for: long polls then answer at once, so the server is not
    # left waiting for them (their clients simply ask the next master).
    stopping = threading.Event()

    async def auth(
        request: Request,
        # Declares the bearer scheme in the OpenAPI spec; TokenAuth already checked the token.
        _: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)] = None,
    ) -> None:
        """A guard on every route: TokenAuth let the request through (401 otherwise)."""
        if "principal" not in request.scope.get("state", {}):
            raise HTTPException(401, "missing or wrong token")

    Auth = Depends(auth)

    @app.exception_handler(NotFound)
    async def not_found(_: Request, exc: NotFound) -> Any:
        return JSONResponse(status_code=404, content={"detail": str(exc)})

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> Any:
        return JSONResponse(status_code=422, content={"detail": {"errors": field_errors(exc)}})

    def trial_or_404(trial_id: TrialId) -> Trial:
        return store.get_trial(trial_id)

    @app.get(routes.HEALTH)
    def health() -> Health:
        return Health(status="ok")

    @app.get(routes.MASTER, dependencies=[Auth])
    def master_info() -> MasterInfo:
        return MasterInfo(
            version=__version__,
            slots=engine.settings.slots,
            gpus=engine.settings.gpus,
            home=str(engine.settings.home),
            python=sys.executable,
            pid=os.getpid(),
            uptime_seconds=round(time.time() - started, 1),
            running_trials=engine.running_trial_ids(),
            idle_timeout_seconds=idle_timeout,
            pools=[PoolInfo(**pool) for pool in engine.pool_infos()],
        )

    @app.post(routes.SHUTDOWN, dependencies=[Auth])
    def shutdown() -> Ok:
        stopping.set()
        if on_shutdown is not None:
            on_shutdown()
        return Ok(status="stopping")

    # Experiments -------------------------------------------------------------------------------

    @app.post(routes.EXPERIMENTS, dependencies=[Auth])
    def create_experiment(body: CreateExperiment) -> CreatedExperiment:
        model_def = _decode_model_def(body.model_def)
        try:
            cfg, warnings = prepare_experiment(
                body.config,
                engine.settings.slots,
                engine.settings.home,
                python=body.python,
                model_def=model_def,
                store=store,
                warm_start_path=body.warm_start_path,
                master_config=engine.settings.master_config,
                pool_capacity=engine.pool_capacity,
            )
        except (ConfigError, CreateError) as e:
            raise HTTPException(400, {"errors": getattr(e, "errors", [str(e)])}) from e
        config = cfg.as_dict()
        try:
            exp = store.create_experiment(
                name=cfg.name,
                config=config,
                description=cfg.description,
                labels=list(cfg.labels),
                model_def=model_def,
                state=ExperimentState.ACTIVE if body.activate else ExperimentState.PAUSED,
            )
        except BaseException:
            discard_warm_start_copy(store, config)  # no experiment owns it
            raise
        remember_config(exp, cfg)
        try:
            engine.start_experiment(exp)  # an experiment that cannot start ends ERROR there
        except StoreError:  # the store could not start it: the engine deleted it
            discard_warm_start_copy(store, config)
            raise
        except ValueError as e:  # its search rejected the config (an unknown optuna sampler)
            lines = [line.strip() for line in str(e).splitlines() if line.strip()]
            raise HTTPException(400, {"errors": lines}) from e
        return CreatedExperiment(
            experiment=experiment_out(store.get_experiment(exp.id)), warnings=list(warnings)
        )

    @app.get(routes.EXPERIMENTS, dependencies=[Auth])
    def list_experiments(all: bool = False) -> ExperimentList:
        exps = store.list_experiments(include_archived=all)
        states = store.trial_state_counts()
        return ExperimentList(
            experiments=[
                dataclasses.replace(experiment_out(e), trial_states=states.get(e.id, {}))
                for e in exps
            ]
        )

    @app.get(routes.EXPERIMENT, dependencies=[Auth])
    def describe(experiment_id: ExperimentId) -> ExperimentDescription:
        return describe_experiment(store, experiment_id)

    @app.get(routes.EXPERIMENT_SUMMARY, dependencies=[Auth])
    def summary(experiment_id: ExperimentId) -> ExperimentSummary:
        """Describe without the checkpoint list: what ``--follow`` polls."""
        return experiment_summary(store, experiment_id)

    @app.get(routes.EXPERIMENT_MODEL_DEF, dependencies=[Auth])
    def model_def(experiment_id: ExperimentId) -> ModelDef:
        """The packed model directory, for ``experiment download-model-def``."""
        archive = store.get_model_def(experiment_id) or b""
        return ModelDef(b64_tgz=base64.b64encode(archive).decode())

    def _command(experiment_id: int, action: str) -> ExperimentReply:
        exp = store.get_experiment(experiment_id)
        if action in _RUN_ACTIONS and exp.state.terminal:
            # A 200 that changed nothing read as success to every client (the UI said nothing).
            raise HTTPException(
                409, f"experiment {exp.id} is already {exp.state.value}; nothing to {action}"
            )
        if action == "pause":
            exp = engine.pause(exp)
        elif action == "activate":
            exp = engine.activate(exp)
        elif action == "kill":
            exp = engine.kill(exp)
        elif action in ("archive", "unarchive"):
            if action == "archive" and not exp.state.terminal:
                raise HTTPException(
                    400,
                    f"experiment {exp.id} is {exp.state.value}; only finished experiments can be archived",
                )
            exp = store.update_experiment(exp.id, archived=action == "archive")
        return ExperimentReply(experiment=experiment_out(exp))

    def _command_route(action: str) -> Any:
        def command(experiment_id: ExperimentId) -> ExperimentReply:
            return _command(experiment_id, action)

        return command

    for action in routes.EXPERIMENT_ACTIONS:
        app.post(
            routes.path(routes.EXPERIMENT_ACTION, experiment_id="{experiment_id}", action=action),
            dependencies=[Auth],
            name=action,
            response_model=ExperimentReply,
        )(_command_route(action))

    @app.get(routes.EXPERIMENT_CHECKPOINTS, dependencies=[Auth])
    def experiment_checkpoints(experiment_id: ExperimentId) -> CheckpointList:
        store.get_experiment(experiment_id)
        return CheckpointList(
            checkpoints=[
                checkpoint_out(c)
                for c in store.list_checkpoints(experiment_id=experiment_id)
                if c.state not in GONE_STATES
            ]
        )

    @app.get(routes.BEST_VALIDATION, dependencies=[Auth])
    def best_validation(experiment_id: ExperimentId) -> BestValidation:
        exp = store.get_experiment(experiment_id)
        searcher = searcher_config_of(exp)
        if not searcher.metric:
            return BestValidation(value=None)
        value = store.best_validation(
            metric=searcher.metric,
            smaller_is_better=searcher.smaller_is_better,
            experiment_id=exp.id,
        )
        return BestValidation(value=value)

    # Custom searchers run by the user's process (LocalSearchRunner) ---------------------------

    def _event_queue(experiment_id: ExperimentId) -> Any:
        store.get_experiment(experiment_id)
        drv = engine.driver(experiment_id)
        queue = getattr(drv, "method", None)
        if queue is None or not hasattr(queue, "events_after"):
            return None
        return queue

    @app.get(routes.SEARCHER_EVENTS, dependencies=[Auth])
    async def searcher_events(
        experiment_id: ExperimentId, after: QueryCount = 0, timeout_seconds: PollSeconds = 0.0
    ) -> SearcherEvents:
        deadline = time.monotonic() + min(timeout_seconds, 60.0)

        def poll() -> tuple[list[Any], dict[str, Any], str]:
            events, progress = engine.searcher_events(experiment_id, after)
            return events, progress, store.get_experiment(experiment_id).state.value

        while True:
            # The engine lock and the store block: off the event loop, so a long poll never
            # stalls the other async routes (the trials' preemption long polls among them).
            events, progress, state = await asyncio.to_thread(poll)
            if (
                events
                or time.monotonic() >= deadline
                or state in ("COMPLETED", "CANCELED", "ERROR")
                or stopping.is_set()
            ):
                return SearcherEvents(
                    events=events,
                    experiment_state=state,
                    trial_progress={str(k): v for k, v in progress.items()},
                )
            await asyncio.sleep(0.05)

    @app.post(routes.SEARCHER_OPERATIONS, dependencies=[Auth])
    def searcher_operations(
        experiment_id: ExperimentId, body: SearcherOperations
    ) -> OperationsApplied:
        from ...searcher import SearcherError
        from ...searcher._custom import decode_operation

        if _event_queue(experiment_id) is None:
            raise HTTPException(
                400,
                f"experiment {experiment_id} has no custom searcher waiting for a runner"
                " (searcher.name: custom without custom_searcher_class, still active)",
            )
        try:
            ops = [decode_operation(op) for op in body.operations]
        except SearcherError as e:
            raise HTTPException(400, str(e)) from e
        applied = engine.remote_searcher_operations(
            store.get_experiment(experiment_id), ops, body.last_event_id, body.progress
        )
        return OperationsApplied(applied=applied)

    # Trials ------------------------------------------------------------------------------------

    @app.get(routes.TRIAL, dependencies=[Auth])
    def describe_trial(trial_id: TrialId) -> TrialDescription:
        t = trial_or_404(trial_id)
        _, [trial] = trial_outs(store, store.get_experiment(t.experiment_id), trial_id=t.id)
        return TrialDescription(
            trial=trial,
            checkpoints=[checkpoint_out(c) for c in store.list_checkpoints(trial_id=trial_id)],
            validation_metrics=metrics_out(store.list_metrics(trial_id, "validation")),
        )

    @app.get(routes.EXPERIMENT_TRIALS, dependencies=[Auth])
    def list_trials(experiment_id: ExperimentId) -> TrialList:
        _, trials = trial_outs(store, store.get_experiment(experiment_id))
        return TrialList(trials=trials)

    @app.get(routes.TRIAL_METRICS, dependencies=[Auth])
    def trial_metrics(
        trial_id: TrialId, group: Annotated[str | None, Query(max_length=64)] = None
    ) -> MetricList:
        trial_or_404(trial_id)
        return MetricList(metrics=metrics_out(store.list_metrics(trial_id, group)))

    @app.get(routes.TRIAL_BATCH_METRICS, dependencies=[Auth])
    def trial_batch_metrics(trial_id: TrialId) -> BatchMetricsList:
        """The per-batch metrics of the trial's training reports that carried them."""
        trial_or_404(trial_id)
        return BatchMetricsList(
            reports=[BatchMetricsOut(**vars(b)) for b in store.list_batch_metrics(trial_id)]
        )

    def reporting_trial(trial_id: int, run_id: int) -> Trial:
        """The trial, if ``run_id`` is its current run and it has not ended; else HTTP 409."""
        t = trial_or_404(trial_id)
        if t.run_id != run_id and t.state not in TERMINAL_TRIAL_STATES:
            # The engine records a new run just after starting it: ask again once it is done.
            t = engine.current_trial(trial_id)
        if t.state in TERMINAL_TRIAL_STATES:
            raise HTTPException(
                409, f"trial {trial_id} is {t.state.value}; it takes no more reports"
            )
        if t.run_id != run_id:
            raise HTTPException(
                409,
                f"run {run_id} of trial {trial_id} is not its current run ({t.run_id}); "
                "reports of a replaced run are refused",
            )
        return t

    add_metric_routes(app, store, engine, Auth, reporting_trial)

    @app.post(routes.TRIAL_CHECKPOINTS, dependencies=[Auth])
    def report_checkpoint(trial_id: TrialId, body: CheckpointBody) -> CheckpointReply:
        # A trial's final checkpoint comes while it is still ACTIVE; checkpoints journaled in an
        # outage are registered by the master itself (_journal), not through this route.
        t = reporting_trial(trial_id, body.run_id)
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
        return CheckpointReply(checkpoint=checkpoint_out(ckpt))

    preemptions = PreemptionWaits(engine.should_preempt, stopping.is_set)

    @app.get(routes.PREEMPTION, dependencies=[Auth])
    async def preemption(
        trial_id: TrialId, timeout_seconds: PollSeconds = 0.0, run_id: QueryCount = 0
    ) -> Preemption:
        return Preemption(preempt=await preemptions.wait(trial_id, min(timeout_seconds, 60.0)))

    @app.post(routes.ACK_PREEMPTION, dependencies=[Auth])
    def ack_preemption(trial_id: TrialId, body: RunBody) -> Ok:
        engine.ack(trial_or_404(trial_id), body.run_id)
        return Ok()

    @app.get(routes.SEARCHER_OPERATION, dependencies=[Auth])
    def searcher_operation(trial_id: TrialId) -> SearcherOperation:
        t = trial_or_404(trial_id)
        if t.searcher.op_length is None or t.searcher.op_complete:
            return SearcherOperation(length=None, completed=True)
        return SearcherOperation(length=t.searcher.op_length, completed=False)

    @app.post(routes.COMPLETED_OPERATION, dependencies=[Auth])
    def completed_operation(trial_id: TrialId, body: CompletedOp) -> Ok:
        try:
            engine.operation_completed(trial_or_404(trial_id), body.length, body.metric)
        except ValueError as e:
            raise HTTPException(400, str(e)) from e
        return Ok()

    @app.post(routes.PROGRESS, dependencies=[Auth])
    def progress(trial_id: TrialId, body: ProgressBody) -> Ok:
        engine.progress_reported(trial_or_404(trial_id), body.progress, body.is_raw)
        return Ok()

    @app.post(routes.STATUS, dependencies=[Auth])
    def status(trial_id: TrialId, body: StatusBody) -> Ok:
        store.update_trial(trial_or_404(trial_id).id, status=body.status or None)
        return Ok()

    @app.post(routes.EARLY_EXIT, dependencies=[Auth])
    def early_exit(trial_id: TrialId, body: EarlyExitBody) -> Ok:
        t = trial_or_404(trial_id)
        if t.searcher.early_exit:
            raise HTTPException(400, f"trial {trial_id} already reported an early exit")
        store.update_trial(t.id, early_exit=body.reason)
        return Ok()

    @app.get(routes.LAST_VALIDATION, dependencies=[Auth])
    def last_validation(trial_id: TrialId) -> LastValidation:
        return LastValidation(
            steps_completed=store.last_validation_steps(trial_or_404(trial_id).id)
        )

    # Checkpoints -------------------------------------------------------------------------------

    @app.get(routes.CHECKPOINTS, dependencies=[Auth])
    def find_checkpoints(uuid_prefix: str) -> UuidList:
        """The UUIDs that start with a prefix (the CLI accepts any unique prefix)."""
        prefix = uuid_prefix.strip().lower()
        if not prefix:
            raise HTTPException(400, "uuid_prefix: give at least one character of a UUID")
        return UuidList(
            uuids=[c.uuid for c in store.list_checkpoints() if c.uuid.startswith(prefix)]
        )

    @app.get(routes.CHECKPOINT, dependencies=[Auth])
    def get_checkpoint(uuid: CheckpointUuid) -> CheckpointOut:
        return checkpoint_out(store.get_checkpoint(uuid))

    add_gc_routes(app, store, Auth, engine.settings.home / "trials")
    add_log_routes(app, store, Auth, engine.has_process)
    add_ui_routes(
        app, store, ui_sessions, Auth, stopping, engine.settings.home
    )  # last: it mounts the pages at /ui
    return app


def _checkpoint_trial(store: Store, uuid: str) -> int | None:
    """The trial a checkpoint belongs to, or None when there is no such checkpoint."""
    try:
        return store.get_checkpoint(uuid).trial_id
    except NotFound:
        return None
