"""The API's read models: response dataclasses built from the store's domain objects (one
mapping per type, field by field: no dict in between), with
the read-model queries (``Store.trial_views``) so a describe runs a fixed number of SQL
statements whatever the number of trials, and the cache that rebuilds a view only when what it
was built from changed."""

from __future__ import annotations

import dataclasses
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from ...rest import (
    BestTrial,
    BracketOut,
    ExperimentDescription,
    ExperimentOut,
    ExperimentRungs,
    ExperimentSummary,
    RungOut,
    RungTrial,
    SearcherSummary,
    TrialOut,
)
from ...searcher import BracketState, asha_rungs
from ...store import (
    Experiment,
    Store,
    Trial,
    TrialView,
)
from ..search._experiment_config import searcher_config_of

logger = logging.getLogger(__name__)
R = TypeVar("R")
V = TypeVar("V")


class ViewCache:
    """The last value built per key, reused while its fingerprint (cheap reads of what the
    value is built from) compares equal; the least recently used keys are dropped past
    ``size``. The fingerprint is read before the build, so a change during the build makes
    the next fingerprint differ and the value is rebuilt: never older than its fingerprint."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._entries: OrderedDict[Hashable, tuple[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, fingerprint: Any, build: Callable[[], V]) -> V:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0] == fingerprint:
                self._entries.move_to_end(key)
                return hit[1]  # type: ignore[no-any-return]
        value = build()
        with self._lock:
            self._entries[key] = (fingerprint, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value


_CACHES: weakref.WeakKeyDictionary[Store, dict[str, ViewCache]] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def view_cache(store: Store, name: str) -> ViewCache:
    """The store's cache of the views called ``name`` (one per store: a test may run several)."""
    with _CACHES_LOCK:
        return _CACHES.setdefault(store, {}).setdefault(name, ViewCache())


def experiment_fingerprint(store: Store, exp: Experiment) -> tuple[Any, ...]:
    """What an experiment's views are built from, read cheaply: its row, its trials' rows,
    its newest metric row's id (metric rows are only ever added) and its checkpoints."""
    return (
        exp,
        store.list_trials(exp.id),
        store.last_metric_id(exp.id),
        store.list_checkpoints(experiment_id=exp.id),
    )


def _record_fields(record: Any) -> dict[str, Any]:
    """A stored record's fields by name (shallow: the response extends the record's type)."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}


def experiment_out(exp: Experiment, *, trial_states: dict[str, int] | None = None) -> ExperimentOut:
    """An experiment as the API shows it (``trial_states``: the experiment list's counts)."""
    return ExperimentOut(
        **_record_fields(exp),
        # The interpreter the trials run with (None: the master's, older experiments).
        python=(exp.config.get("environment") or {}).get("python"),
        trial_states=trial_states or {},
    )


def trial_out(view: TrialView) -> TrialOut:
    """A trial with its latest metrics, best searcher-metric value and latest checkpoint."""
    return TrialOut(
        **_record_fields(view.trial),
        latest_training=view.latest_training,
        latest_validation=view.latest_validation,
        best_validation=view.best_validation,
        latest_checkpoint=view.latest_checkpoint,
    )


def searcher_of(exp: Experiment) -> tuple[str | None, bool]:
    """The searcher's metric and whether smaller is better."""
    searcher = searcher_config_of(exp)
    return searcher.metric, searcher.smaller_is_better


def trial_outs(
    store: Store, exp: Experiment, *, trial_id: int | None = None
) -> tuple[list[TrialView], list[TrialOut]]:
    """The experiment's trials (or one of them) as read models and as responses."""
    metric, smaller = searcher_of(exp)
    if trial_id is None:
        views = store.trial_views(metric=metric, smaller_is_better=smaller, experiment_id=exp.id)
    else:
        views = store.trial_views(metric=metric, smaller_is_better=smaller, trial_id=trial_id)
    return views, [trial_out(v) for v in views]


def best_trial(exp: Experiment, views: list[TrialView]) -> BestTrial | None:
    """The trial with the best searcher-metric value (the first such trial on a tie)."""
    metric, smaller = searcher_of(exp)
    scored = [v for v in views if v.best_validation is not None]
    if not metric or not scored:
        return None
    sign = 1.0 if smaller else -1.0
    top = min(scored, key=lambda v: sign * v.best_validation)  # type: ignore[operator]
    return BestTrial(
        trial_id=top.trial.id,
        metric=metric,
        value=top.best_validation,  # type: ignore[arg-type]
        hparams=top.trial.hparams,
        checkpoint=top.latest_checkpoint,
    )


def searcher_summary(exp: Experiment, trials: list[Trial]) -> SearcherSummary:
    """What the search is and how far it got, for describe and --follow."""
    searcher = searcher_config_of(exp)
    states: dict[str, int] = {}
    for t in trials:
        states[t.state.value] = states.get(t.state.value, 0) + 1
    return SearcherSummary(
        name=searcher.name,
        metric=searcher.metric,
        smaller_is_better=searcher.smaller_is_better,
        generation=searcher.generation,
        max_trials=1 if searcher.name == "single" else searcher.max_trials,
        progress=exp.progress,
        trials=len(trials),
        trial_states=states,
    )


def experiment_summary(store: Store, experiment_id: int) -> ExperimentSummary:
    """The experiment, its trials, best trial and search (what --follow polls and the web UI
    loads): rebuilt only when the experiment, a trial, a metric or a checkpoint changed (for
    200 trials of 1,000 validations the build reads 200,000 metric rows: 0.15 s)."""
    exp = store.get_experiment(experiment_id)
    return view_cache(store, "summary").get(
        experiment_id, experiment_fingerprint(store, exp), lambda: _build_summary(store, exp)
    )


def _build_summary(store: Store, exp: Experiment) -> ExperimentSummary:
    views, trials = trial_outs(store, exp)
    return ExperimentSummary(
        experiment=experiment_out(exp),
        trials=trials,
        best_trial=best_trial(exp, views),
        searcher=searcher_summary(exp, [v.trial for v in views]),
    )


def describe_experiment(store: Store, experiment_id: int) -> ExperimentDescription:
    """The summary and every checkpoint of the experiment."""
    summary = experiment_summary(store, experiment_id)
    return ExperimentDescription(
        experiment=summary.experiment,
        trials=summary.trials,
        checkpoints=store.list_checkpoints(experiment_id=experiment_id),
        best_trial=summary.best_trial,
        searcher=summary.searcher,
    )


def experiment_rungs(store: Store, experiment_id: int) -> ExperimentRungs:
    """An ASHA search's brackets and rungs, read from the searcher state the master saved
    (trials named by id); no brackets for a search that is not ASHA."""
    exp = store.get_experiment(experiment_id)
    searcher = searcher_config_of(exp)
    saved = store.get_searcher_state(experiment_id)
    try:
        brackets = asha_rungs(searcher, saved["method"] if saved else None) or []
    except (KeyError, TypeError, ValueError) as e:
        # A state this version cannot read (written by another one): no rungs, never a 500.
        logger.warning("experiment %d: searcher state not readable for rungs: %s", exp.id, e)
        brackets = []
    ids = {t.request_id: t.id for t in store.list_trials(experiment_id)}
    length = searcher.max_length
    unit: str | None = length.unit if length is not None else searcher.time_metric
    return ExperimentRungs(
        experiment_id=experiment_id,
        searcher=searcher.name,
        metric=searcher.metric,
        unit=unit,
        brackets=[_bracket_out(b, ids) for b in brackets],
    )


def _bracket_out(bracket: BracketState, ids: dict[str, int]) -> BracketOut:
    return BracketOut(
        index=bracket.index,
        max_trials=bracket.max_trials,
        rungs=[
            RungOut(
                index=r.index,
                length=r.length,
                trials=[RungTrial(ids.get(e.request_id), e.value, e.status) for e in r.entries],
                training=[ids[i] for i in r.training if i in ids],
            )
            for r in bracket.rungs
        ],
    )
