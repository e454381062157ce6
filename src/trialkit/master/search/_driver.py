"""Drive one experiment's search method: feed it events, carry out its operations in the store,
and persist its state so a restarted master continues the same search exactly.

Before operations are applied they are saved with the method state that produced them
("pending"); after a crash they are re-applied idempotently from that state.
"""

from __future__ import annotations

import collections
import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

from ...config import Generation
from ...searcher import (
    Close,
    Create,
    DrivenMethod,
    EventQueueMethod,
    ExitedReason,
    Operation,
    SearcherError,
    Shutdown,
    Stop,
    ValidateAfter,
    decode_operation,
    encode_operation,
    make_search_method,
)
from ...store import Experiment, ExperimentState, Store, Trial, TrialState
from ._custom_process import CustomSearcherProcess
from ._experiment_config import config_of

logger = logging.getLogger("trialkit.master")

_EXIT_REASONS = {
    TrialState.ERROR: ExitedReason.ERRORED,
    TrialState.CANCELED: ExitedReason.USER_CANCELED,
}
#: searchers whose 0.37 decisions need every operation's metric
_RANKS_METRICS = ("async_halving", "adaptive_asha", "optuna")


def build_method(store: Store, experiment: Experiment) -> DrivenMethod:
    """The experiment's search method: a built-in, Optuna, or a custom searcher (in its own
    process, or polled by a runner in the user's process)."""
    cfg = config_of(experiment)
    searcher = cfg.searcher
    seed = int(cfg.reproducibility.experiment_seed or 0)  # the master set it at creation
    if searcher.name == "custom":
        metric = searcher.metric or "searcher_metric"
        spec = searcher.custom_searcher_class
        if not spec:
            return EventQueueMethod(metric, seed)
        return CustomSearcherProcess(
            experiment.id,
            spec,
            searcher.custom_searcher_kwargs,
            seed,
            metric,
            store.get_model_def(experiment.id),
        )
    return make_search_method(searcher, cfg.hyperparameters, seed)


class SearcherDriver:
    """The bridge between a pure search method and the store. It writes the search's own data
    (trials it creates, their operation and close/stop flags, its saved state), never a trial's
    or an experiment's state: the engine reads the flags and moves trials on (``_lifecycle``)."""

    def __init__(self, store: Store, experiment: Experiment) -> None:
        self.store = store
        self.experiment_id = experiment.id
        self.searcher_config = config_of(experiment).searcher
        custom = self.searcher_config.name == "custom"
        self.generation = self.searcher_config.generation
        self.metric = self.searcher_config.metric or ("searcher_metric" if custom else None)
        self.method = build_method(store, experiment)
        self.shutdown = False
        self.failure = False
        try:
            self._resume(experiment)
        except BaseException:
            self.method.close()  # a custom searcher's process must not outlive a failed load
            raise

    def _resume(self, experiment: Experiment) -> None:
        """Start the search, or continue it from its saved state (repairing a crash)."""
        store = self.store
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
            if experiment.state in (ExperimentState.ACTIVE, ExperimentState.PAUSED):
                self._reconcile()

    def _reconcile(self) -> None:
        """Repair what a master crash between two store writes can leave behind.

        The engine writes a trial's row, then tells the searcher (whose state is saved next).
        A crash in between leaves (a) a trial that ended (terminal) but was never closed in the
        search, which would stall it: the exit is told now; or (b) a 0.37 trial marked done with
        its operation although the searcher never got the metric: the operation is reopened, so
        the trial's retried report (or a relaunch, which finds its checkpoint at the target and
        validates again) delivers it.
        """
        method = self.method
        for t in self.store.list_trials(self.experiment_id):
            if not method.knows(t.request_id):
                continue
            if t.state.ended and not method.is_closed(t.request_id):
                logger.info("trial %d: telling the searcher about its exit (%s)", t.id, t.state)
                reason = _EXIT_REASONS.get(t.state)
                if t.searcher.early_exit == "INVALID_HP":
                    reason = ExitedReason.INVALID_HP
                if reason is not None:
                    self.exited_early(t, reason)
                self._run(functools.partial(self.method.on_trial_closed, t.request_id))
            elif (
                not t.state.ended
                and t.searcher.op_complete
                and t.searcher.op_length is not None
                and method.outstanding(t.request_id) == t.searcher.op_length
            ):
                logger.info(
                    "trial %d: reopening op %d (its metric was lost)", t.id, t.searcher.op_length
                )
                self.store.update_trial(t.id, op_complete=False)

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
        self._check_operation_completed(trial)
        self._run(lambda: self.method.on_trial_closed(trial.request_id))

    def _check_operation_completed(self, trial: Trial) -> None:
        """0.37 with a searcher that ranks metrics: a trial that ended by itself (exit 0, no ack,
        no early exit) while its ValidateAfter was in flight never gave the searcher its metric.
        Determined took this as a user stop and the search silently ran short (or never ended,
        reference §7.6.4); trialkit fails the experiment and says what the trial did report."""
        name = self.searcher_config.name
        if (
            self.generation != Generation.OPS
            or name not in _RANKS_METRICS
            or trial.searcher.op_complete
            or trial.searcher.op_length is None
            or trial.searcher.early_exit is not None
            or trial.searcher.stop_requested
            or trial.state != TrialState.COMPLETED
        ):
            return
        latest = self.store.latest_metrics(trial.id, "validation")
        reported = (
            f"its last validation report was {latest.values} at steps_completed"
            f" {latest.steps_completed}"
            if latest is not None
            else "it reported no validation metrics"
        )
        raise SearcherError(
            f"trial {trial.id}: exited without completing its searcher operation"
            f" (train to {trial.searcher.op_length}, then op.report_completed(metric)); {reported}."
            f" searcher.max_length (0.37) makes {name} wait for the {self.metric!r} of each"
            " operation: iterate core_context.searcher.operations(), or configure time_metric +"
            " max_time (0.38) to have every validation report read instead"
        )

    def runner_queue(self) -> EventQueueMethod | None:
        """The event queue of a custom searcher run in the user's process, else None."""
        return self.method if isinstance(self.method, EventQueueMethod) else None

    def close(self) -> None:
        """The master is done with this search: release what its method holds (a process)."""
        self.method.close()

    def remote_operations(
        self, ops: list[Operation], last_event_id: int, progress: float | None
    ) -> bool:
        """Operations a runner in the user's process decided for events up to ``last_event_id``;
        False (nothing applied) when those events were already answered."""
        if not isinstance(self.method, EventQueueMethod):
            raise SearcherError("this experiment's searcher is run by the master, not by a runner")
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
        return self.store.trial_by_request(self.experiment_id, request_id)

    def _apply_one(self, op: Operation) -> list[Operation]:
        if isinstance(op, Create):
            if op.trial_seed is None:  # the adapters give every Create a seed
                raise SearcherError(f"Create for {op.request_id} has no trial_seed")
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
        # Close and Stop only flag the trial: the engine preempts its process, or completes it
        # at once when it has none and nothing left to train (policies.finished_idle), and then
        # tells the searcher it closed.
        if isinstance(op, Close):
            self.store.update_trial(trial.id, closed=True)
            return []
        if isinstance(op, Stop):
            self.store.update_trial(trial.id, stop_requested=True, closed=True)
            return []
        raise SearcherError(f"unknown searcher operation {op!r}")
