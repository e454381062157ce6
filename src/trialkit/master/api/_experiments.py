"""The experiment routes: create (config checked, model directory unpacked-checked), list,
describe, the actions on a search, its checkpoints and best validation."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

from fastapi import APIRouter, HTTPException

from ..._modeldir import ModelDirError, check_archive
from ...config import ConfigError
from ...rest import (
    BestValidation,
    CheckpointList,
    CreatedExperiment,
    ExperimentDescription,
    ExperimentList,
    ExperimentReply,
    ExperimentSummary,
    ModelDef,
    routes,
)
from ...store import ExperimentState, StoreError
from ..housekeeping._gc import GONE_STATES
from ..search._create import CreateError, prepare_experiment
from ..search._experiment_config import remember_config, searcher_config_of
from ..search._warm_start import discard_warm_start_copy
from ._schemas import CreateExperiment, ExperimentId
from ._services import AUTH, Services, Svc
from ._views import describe_experiment, experiment_out, experiment_summary

router = APIRouter(dependencies=AUTH)

#: Actions on a search that runs: refused (409) once the experiment has ended.
_RUN_ACTIONS = ("pause", "activate", "kill")


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


@router.post(routes.EXPERIMENTS)
def create_experiment(body: CreateExperiment, services: Svc) -> CreatedExperiment:
    store, engine = services.store, services.engine
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


@router.get(routes.EXPERIMENTS)
def list_experiments(services: Svc, all: bool = False) -> ExperimentList:
    store = services.store
    states = store.trial_state_counts()
    return ExperimentList(
        experiments=[
            experiment_out(e, trial_states=states.get(e.id, {}))
            for e in store.list_experiments(include_archived=all)
        ]
    )


@router.get(routes.EXPERIMENT)
def describe(experiment_id: ExperimentId, services: Svc) -> ExperimentDescription:
    return describe_experiment(services.store, experiment_id)


@router.get(routes.EXPERIMENT_SUMMARY)
def summary(experiment_id: ExperimentId, services: Svc) -> ExperimentSummary:
    """Describe without the checkpoint list: what ``--follow`` polls."""
    return experiment_summary(services.store, experiment_id)


@router.get(routes.EXPERIMENT_MODEL_DEF)
def model_def(experiment_id: ExperimentId, services: Svc) -> ModelDef:
    """The packed model directory, for ``experiment download-model-def``."""
    archive = services.store.get_model_def(experiment_id) or b""
    return ModelDef(b64_tgz=base64.b64encode(archive).decode())


def _act(services: Services, experiment_id: int, action: str) -> ExperimentReply:
    """Pause, activate, kill, archive or unarchive the experiment."""
    store, engine = services.store, services.engine
    exp = store.get_experiment(experiment_id)
    if action in _RUN_ACTIONS and exp.state.ended:
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
        if action == "archive" and not exp.state.ended:
            raise HTTPException(
                400,
                f"experiment {exp.id} is {exp.state.value}; only finished experiments can be archived",
            )
        exp = store.update_experiment(exp.id, archived=action == "archive")
    return ExperimentReply(experiment=experiment_out(exp))


def _action_route(action: str) -> Callable[[int, Services], ExperimentReply]:
    """The route of one action (a route each, so each has its name in the OpenAPI spec)."""

    def act(experiment_id: ExperimentId, services: Svc) -> ExperimentReply:
        return _act(services, experiment_id, action)

    return act


for _action in routes.EXPERIMENT_ACTIONS:
    router.add_api_route(
        routes.path(routes.EXPERIMENT_ACTION, experiment_id="{experiment_id}", action=_action),
        _action_route(_action),
        methods=["POST"],
        name=_action,
        response_model=ExperimentReply,
    )


@router.get(routes.EXPERIMENT_CHECKPOINTS)
def experiment_checkpoints(experiment_id: ExperimentId, services: Svc) -> CheckpointList:
    store = services.store
    store.get_experiment(experiment_id)
    return CheckpointList(
        checkpoints=[
            c
            for c in store.list_checkpoints(experiment_id=experiment_id)
            if c.state not in GONE_STATES
        ]
    )


@router.get(routes.BEST_VALIDATION)
def best_validation(experiment_id: ExperimentId, services: Svc) -> BestValidation:
    store = services.store
    exp = store.get_experiment(experiment_id)
    searcher = searcher_config_of(exp)
    if not searcher.metric:
        return BestValidation(value=None)
    value = store.best_validation(
        metric=searcher.metric, smaller_is_better=searcher.smaller_is_better, experiment_id=exp.id
    )
    return BestValidation(value=value)
