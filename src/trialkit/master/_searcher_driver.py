"""Drive one experiment's search method: feed it events, carry out its operations in the store,
and persist its state so a restarted master continues the same search exactly.

Before operations are applied they are saved with the method state that produced them
("pending"); after a crash they are re-applied idempotently from that state.
"""

from __future__ import annotations

import collections
import importlib.util
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import _modeldir
from ..searcher import (
    Close,
    Create,
    DrivenMethod,
    ExitedReason,
    Operation,
    SearcherError,
    SearchMethod,
    Shutdown,
    Stop,
    ValidateAfter,
    make_search_method,
)
from ..searcher._custom import (
    CustomMethod,
    EventQueueMethod,
    decode_operation,
    encode_operation,
)
from ..store import Experiment, Store, Trial, TrialState

logger = logging.getLogger("trialkit.master")


def build_method(store: Store, experiment: Experiment) -> DrivenMethod:
    """The experiment's search method: a built-in, a custom searcher (in the master or polled by
    a runner in the user's process), or Optuna."""
    cfg = experiment.config
    searcher = cfg["searcher"]
    seed = int(cfg["reproducibility"]["experiment_seed"])
    if searcher.get("name") == "custom":
        metric = searcher.get("metric") or "searcher_metric"
        spec = searcher.get("custom_searcher_class")
        if not spec:
            return EventQueueMethod(metric, seed)
        user = _load_custom_class(store, experiment, spec)(
            **(searcher.get("custom_searcher_kwargs") or {})
        )
        if not isinstance(user, SearchMethod):
            raise SearcherError(
                f"searcher.custom_searcher_class: {spec} is not a trialkit.searcher.SearchMethod"
            )
        return CustomMethod(user, seed, metric)
    return make_search_method(searcher, cfg["hyperparameters"], seed)


def _load_custom_class(store: Store, experiment: Experiment, spec: str) -> Any:
    """Import ``module:Class`` from the experiment's model directory (unpacked to a temp dir)."""
    module_name, _, attr = spec.partition(":")
    archive = store.get_model_def(experiment.id)
    root = Path(tempfile.mkdtemp(prefix=f"trialkit-searcher-{experiment.id}-"))
    if archive:
        _modeldir.unpack(archive, root)
    path = root.joinpath(*module_name.split(".")).with_suffix(".py")
    if not path.exists():
        raise SearcherError(
            f"searcher.custom_searcher_class: {spec}: no file {path.relative_to(root)} in the"
            " model directory"
        )
    unique = f"_trialkit_custom_searcher_{experiment.id}_{module_name.replace('.', '_')}"
    sys.path.insert(0, str(root))
    try:
        module_spec = importlib.util.spec_from_file_location(unique, path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[unique] = module
        module_spec.loader.exec_module(module)
    except Exception as e:
        raise SearcherError(
            f"searcher.custom_searcher_class: importing {path.name} raised {type(e).__name__}: {e}"
        ) from e
    finally:
        sys.path.remove(str(root))
    try:
        return getattr(module, attr)
    except AttributeError:
        raise SearcherError(
            f"searcher.custom_searcher_class: {module_name} has no attribute {attr!r}"
        ) from None


class SearcherDriver:
    """The bridge between a pure search method and the store."""

    def __init__(
        self,
        store: Store,
        experiment: Experiment,
        *,
        has_process: Callable[[int], bool],
        request_stop: Callable[[int], None],
    ) -> None:
        self.store = store
        self.experiment_id = experiment.id
        cfg = experiment.config
        custom = cfg["searcher"].get("name") == "custom"
        self.generation = "0.37" if custom or cfg["searcher"].get("max_length") else "0.38"
        self.metric = cfg["searcher"].get("metric") or ("searcher_metric" if custom else None)
        self.method = build_method(store, experiment)
        self._has_process = has_process
        self._request_stop = request_stop
        self.shutdown = False
        self.failure = False
        saved = store.get_searcher_state(experiment.id)
        if saved is None:
            self._run(lambda: self.method.initial_operations())
        else:
            self.method.load(saved["method"])
            self.shutdown = bool(saved.get("shutdown"))
            self.failure = bool(saved.get("failure"))
            pending = [decode_operation(d) for d in saved.get("pending", [])]
            if pending:
                logger.info(
                    "experiment %d: re-applying %d searcher operations", experiment.id, len(pending)
                )
                self._apply(pending)

    # Events ------------------------------------------------------------------------------------

    def validation_completed(
        self, trial: Trial, metrics: Mapping[str, Any], length: int | None
    ) -> None:
        self._run(lambda: self.method.on_validation_completed(trial.request_id, metrics, length))

    def progress_reported(self, trial: Trial, progress: float) -> None:
        self._run(lambda: self.method.on_trial_progress(trial.request_id, progress))

    def exited_early(self, trial: Trial, reason: ExitedReason) -> None:
        self._run(lambda: self.method.on_trial_exited_early(trial.request_id, reason))

    def closed(self, trial: Trial) -> None:
        self._run(lambda: self.method.on_trial_closed(trial.request_id))

    def remote_operations(
        self, ops: list[Operation], last_event_id: int, progress: float | None
    ) -> bool:
        """Operations a runner in the user's process decided for events up to ``last_event_id``;
        False (nothing applied) when those events were already answered."""
        if not isinstance(self.method, EventQueueMethod):
            raise SearcherError("this experiment's searcher runs in the master, not in a runner")
        if not self.method.acknowledge(last_event_id, progress):
            return False
        self._apply(self.method.record(ops))
        return True

    # Machinery ---------------------------------------------------------------------------------

    def _run(self, event: Callable[[], list[Operation]]) -> None:
        try:
            ops = event()
        except SearcherError as e:
            raise SearcherError(self._name_trials(str(e))) from e
        self._apply(ops)

    def _name_trials(self, message: str) -> str:
        """Errors from the method name request ids; users know trials by their ids."""
        for t in self.store.list_trials(self.experiment_id):
            message = message.replace(f"trial {t.request_id}", f"trial {t.id}")
            message = message.replace(t.request_id, f"trial {t.id}")
        return message

    def _save(self, pending: list[Operation]) -> None:
        state = {
            "method": self.method.save(),
            "pending": [encode_operation(op) for op in pending],
            "shutdown": self.shutdown,
            "failure": self.failure,
        }
        self.store.update_experiment(
            self.experiment_id, searcher_state=state, progress=self.method.progress()
        )

    def _apply(self, ops: list[Operation]) -> None:
        self._save(ops)
        queue = collections.deque(ops)
        while queue:
            queue.extend(self._apply_one(queue.popleft()))
        self._save([])

    def _trial(self, request_id: str) -> Trial | None:
        for t in self.store.list_trials(self.experiment_id):
            if t.request_id == request_id:
                return t
        return None

    def _apply_one(self, op: Operation) -> list[Operation]:
        if isinstance(op, Create):
            if self._trial(op.request_id) is None:
                self.store.create_trial(
                    experiment_id=self.experiment_id,
                    request_id=op.request_id,
                    hparams=op.hparams,
                    seed=op.trial_seed,
                )
            return self.method.on_trial_created(op.request_id)
        if isinstance(op, Shutdown):
            self.shutdown = True
            self.failure = op.failure
            return []
        trial = self._trial(op.request_id)
        if trial is None:
            raise SearcherError(f"searcher referred to unknown trial request {op.request_id}")
        if isinstance(op, ValidateAfter):
            self.store.update_trial(trial.id, op_length=op.length, op_complete=False)
            return []
        if isinstance(op, Close):
            trial = self.store.update_trial(trial.id, closed=True)
            return self._finish_if_idle(trial)
        if isinstance(op, Stop):
            trial = self.store.update_trial(trial.id, stop_requested=True, closed=True)
            self._request_stop(trial.id)
            return self._finish_if_idle(trial, stopping=True)
        raise SearcherError(f"unknown searcher operation {op!r}")

    def _finish_if_idle(self, trial: Trial, stopping: bool = False) -> list[Operation]:
        """A closed trial with no process and nothing left to train is complete right away."""
        if trial.state.terminal or self._has_process(trial.id):
            return []
        if not (stopping or (self.generation == "0.37" and trial.op_complete)):
            return []
        self.store.update_trial(trial.id, state=TrialState.COMPLETED, ended_at=time.time())
        return self.method.on_trial_closed(trial.request_id)
