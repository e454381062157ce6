"""A search's hyperparameter importance by optuna's estimators (the experiment page's
importance table): fANOVA where optuna and scikit-learn (its random forest) are installed,
optuna's PED-ANOVA where only optuna is, and no answer without optuna (the page then shows its
own rank-correlation estimate). optuna is imported here only, on the first request: never at
the master's start-up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel

from ...rest import TrialOut, routes
from ...searcher import optuna_search_space
from ...store import Store
from ..search._experiment_config import config_of
from ._schemas import ExperimentId
from ._services import AUTH, Svc
from ._views import experiment_fingerprint, experiment_summary, view_cache

#: Fewer trials with a searcher-metric value tell nothing (the page's own estimate asks as many).
MIN_TRIALS = 3
#: fANOVA's random forest is seeded: the same trials always give the same importances.
FANOVA_SEED = 0


class ParamImportance(BaseModel):
    """One hyperparameter's share of the searcher metric's variation (the shares sum to 1)."""

    name: str
    importance: float


class HpImportance(BaseModel):
    """Each searched hyperparameter's importance, highest first, and the estimator that gave
    it; ``estimator`` None (with ``reason``) when none could run."""

    estimator: str | None
    reason: str | None = None
    metric: str | None
    trials: int
    importances: list[ParamImportance] = []


router = APIRouter(dependencies=AUTH)


@router.get(routes.EXPERIMENT_IMPORTANCE)
def hp_importance(experiment_id: ExperimentId, services: Svc) -> HpImportance:
    """The importances, rebuilt only when the experiment's trials or metrics changed."""
    store = services.store
    exp = store.get_experiment(experiment_id)
    return view_cache(store, "importance").get(
        experiment_id, experiment_fingerprint(store, exp), lambda: _build(store, experiment_id)
    )


def _build(store: Store, experiment_id: int) -> HpImportance:
    summary = experiment_summary(store, experiment_id)
    metric = summary.searcher.metric
    scored = [t for t in summary.trials if isinstance(t.best_validation, int | float)]
    unanswered = HpImportance(estimator=None, metric=metric, trials=len(scored))
    try:
        import optuna
    except ImportError:
        unanswered.reason = "optuna is not installed in the master's environment"
        return unanswered
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    hyperparameters = config_of(store.get_experiment(experiment_id)).hyperparameters
    space, categorical = _distributions(optuna, hyperparameters)
    frozen = (_frozen(optuna, space, categorical, t) for t in scored)
    trials = [t for t in frozen if t is not None]
    unanswered.trials = len(trials)
    if not space:
        unanswered.reason = "the search has no hyperparameter optuna can vary"
        return unanswered
    if len(trials) < MIN_TRIALS:
        unanswered.reason = f"needs {MIN_TRIALS} trials with a {metric} ({len(trials)} so far)"
        return unanswered
    name, evaluator = _evaluator(optuna)
    direction: Literal["minimize", "maximize"] = (
        "minimize" if summary.searcher.smaller_is_better else "maximize"
    )
    study = optuna.create_study(direction=direction)
    study.add_trials(trials)
    found = optuna.importance.get_param_importances(study, evaluator=evaluator)
    return HpImportance(
        estimator=name,
        metric=metric,
        trials=len(trials),
        importances=[ParamImportance(name=k, importance=float(v)) for k, v in found.items()],
    )


def _evaluator(optuna: Any) -> tuple[str, Any]:
    """fANOVA (seeded) where scikit-learn is installed, else optuna's PED-ANOVA (numpy only)."""
    try:
        import sklearn  # noqa: F401  (optuna's fANOVA fits its random forest)
    except ImportError:
        return "PED-ANOVA (optuna)", optuna.importance.PedAnovaImportanceEvaluator()
    return "fANOVA (optuna)", optuna.importance.FanovaImportanceEvaluator(seed=FANOVA_SEED)


def _distributions(
    optuna: Any, hyperparameters: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """The search space as optuna's distributions by dotted name (constants and what optuna
    cannot sample left out) and each categorical's values (its distribution holds indices)."""
    fixed: dict[str, Any] = {}
    space = optuna_search_space(optuna, hyperparameters, fixed, [])
    return space, fixed.get("__categorical__", {})


def _at(hparams: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path of a trial's nested hyperparameters (None where missing)."""
    node: Any = hparams
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _frozen(
    optuna: Any, space: dict[str, Any], categorical: Mapping[str, list[Any]], trial: TrialOut
) -> Any:
    """The trial as a finished optuna trial, or None where its hyperparameters are not all in
    the space (a value outside its range or not among a categorical's values)."""
    params: dict[str, Any] = {}
    for path in space:
        value = _at(trial.hparams, path)
        if path in categorical:
            if value not in categorical[path]:
                return None
            value = categorical[path].index(value)
        params[path] = value
    try:
        return optuna.trial.create_trial(
            params=params, distributions=space, value=float(trial.best_validation or 0.0)
        )
    except (ValueError, TypeError):
        return None
