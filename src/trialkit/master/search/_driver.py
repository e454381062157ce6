"""Drive one experiment's search method: feed it events, carry out its operations in the store,
and persist its state so a restarted master continues the same search exactly.

An event is decided, then applied. Deciding asks the method only: its operations, and what it
answers to each Create among them (``on_trial_created``), in the order the store applies them.
Applying asks the method nothing: the operations are saved with the method state that produced
them ("pending", ``expanded``), carried out, then saved as done; after a crash they are
re-applied idempotently from that state. A built-in method decides under the engine's lock, as
the event comes. A custom searcher's process may take up to its call timeout to answer: with an
``OffLock`` it decides on its experiment's own thread (``_serial``), in event order, without the
lock, and its answer is applied under the lock unless the search was let go meanwhile (the
experiment ended or was killed); the engine is told then (``OffLock.answered``). So a hung
searcher delays its own experiment only.
"""

from __future__ import annotations

import collections
import functools
import logging
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
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
from ._custom_process import CustomSearcherProcess, call_timeout_from_env
from ._experiment_config import config_of
from ._serial import SerialCalls

logger = logging.getLogger("trialkit.master")

_EXIT_REASONS = {
    TrialState.ERROR: ExitedReason.ERRORED,
    TrialState.CANCELED: ExitedReason.USER_CANCELED,
}
#: searchers whose 0.37 decisions need every operation's metric
_RANKS_METRICS = ("async_halving", "adaptive_asha", "optuna")
#: seconds a caller waiting for a custom searcher's answer waits beyond its call timeout
_ANSWER_SLACK = 5.0

Event = Callable[[], list[Operation]]


@dataclass(frozen=True)
class OffLock:
    """How a search whose method may block is driven off the engine's lock: the lock its
    answers are applied under, and the callback told then (under it) with the error, if any,
    and the trial the event was about."""

    lock: AbstractContextManager[Any]
    answered: Callable[[int, SearcherError | None, Trial | None], None]


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
            call_timeout=call_timeout_from_env(),
        )
    return make_search_method(searcher, cfg.hyperparameters, seed)


class SearcherDriver:
    """The bridge between a pure search method and the store. It writes the search's own data
    (trials it creates, their operation and close/stop flags, its saved state), never a trial's
    or an experiment's state: the engine reads the flags and moves trials on (``_lifecycle``).
    With ``off_lock``, a custom searcher's process is called on a thread of its own."""

    def __init__(
        self, store: Store, experiment: Experiment, off_lock: OffLock | None = None
    ) -> None:
        self.store = store
        self.experiment_id = experiment.id
        self.searcher_config = config_of(experiment).searcher
        custom = self.searcher_config.name == "custom"
        self.generation = self.searcher_config.generation
        self.metric = self.searcher_config.metric or ("searcher_metric" if custom else None)
        self.method = build_method(store, experiment)
        self.shutdown = False
        self.failure = False
        self._off_lock = off_lock
        #: the custom searcher's process when it is called off the lock, and its thread
        self._process: CustomSearcherProcess | None = None
        self._calls: SerialCalls | None = None
        #: set once the last event handed to ``_calls`` was answered
        self._answered: threading.Event | None = None
        if off_lock is not None and isinstance(self.method, CustomSearcherProcess):
            self._process = process = self.method
            self._calls = SerialCalls(f"searcher-{experiment.id}", process.kill, process.close)
        try:
            self._resume(experiment)
        except BaseException:
            self.close()  # a custom searcher's process must not outlive a failed load
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
                if saved.get("expanded"):
                    self._apply(pending)
                else:  # saved by a master that asked on_trial_created while applying
                    self._run(lambda: pending)
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
        rid = trial.request_id
        self._run(lambda: self.method.on_validation_completed(rid, metrics, length), trial)

    def progress_reported(self, trial: Trial, progress: float) -> None:
        self._run(lambda: self.method.on_trial_progress(trial.request_id, progress), trial)

    def exited_early(self, trial: Trial, reason: ExitedReason) -> None:
        self._run(lambda: self.method.on_trial_exited_early(trial.request_id, reason), trial)

    def closed(self, trial: Trial) -> None:
        self._check_operation_completed(trial)
        self._run(lambda: self.method.on_trial_closed(trial.request_id), trial)

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

    @property
    def busy(self) -> bool:
        """Whether events told to a searcher run off the lock are still unanswered."""
        return self._calls is not None and self._calls.busy

    def wait_for_answers(self) -> None:
        """Wait until the events told so far are answered, at most the searcher's call timeout
        (and a little): callers must not hold the engine's lock. At once for a built-in."""
        answered = self._answered
        if answered is not None and self._process is not None:
            answered.wait(self._process.call_timeout + _ANSWER_SLACK)

    def close(self) -> None:
        """The master is done with this search: release what its method holds (a process; one
        busy answering is killed, and what it answers is dropped). Never waits for an answer."""
        if self._calls is not None:
            self._calls.close()  # its thread closes the method
        else:
            self.method.close()

    def join(self, timeout: float) -> None:
        """Wait for the thread of a search let go to have closed its method (a process)."""
        if self._calls is not None:
            self._calls.join(timeout)

    def remote_operations(
        self, ops: list[Operation], last_event_id: int, progress: float | None
    ) -> bool:
        """Operations a runner in the user's process decided for events up to ``last_event_id``;
        False (nothing applied) when those events were already answered."""
        if not isinstance(self.method, EventQueueMethod):
            raise SearcherError("this experiment's searcher is run by the master, not by a runner")
        if not self.method.acknowledge(last_event_id, progress):
            return False
        method = self.method
        self._apply(self._decide(lambda: method.record(ops)))
        return True

    # Machinery ---------------------------------------------------------------------------------

    def _run(self, event: Event, trial: Trial | None = None) -> None:
        """Decide ``event`` and apply it: now, or in turn on the search's own thread."""
        if self._calls is not None:
            self._answered = self._calls.submit(lambda: self._decide_off_lock(event, trial))
            return
        try:
            ops = self._decide(event)
        except SearcherError as e:
            raise SearcherError(self._name_trials(str(e))) from e
        self._apply(ops)

    def _decide(self, event: Event) -> list[Operation]:
        """The operations of ``event``, each Create followed in turn by what the method answers
        to it (``on_trial_created``): the order in which the store applies them."""
        ops: list[Operation] = []
        queue = collections.deque(event())
        while queue:
            op = queue.popleft()
            ops.append(op)
            if isinstance(op, Create):
                queue.extend(self.method.on_trial_created(op.request_id))
        return ops

    def _decide_off_lock(self, event: Event, trial: Trial | None) -> None:
        """Ask the method without the engine's lock; apply its answer under it, unless the
        search was let go meanwhile (``close``: the experiment ended or was killed)."""
        assert self._off_lock is not None and self._calls is not None and self._process
        ops: list[Operation] = []
        error: SearcherError | None = None
        try:
            ops = self._decide(event)
        except SearcherError as e:
            error = e
        except Exception as e:  # e.g. an operation it answered that does not decode
            name = self._process.name
            error = SearcherError(f"custom searcher {name}: {type(e).__name__}: {e}")
        with self._off_lock.lock:
            if self._calls.closed:
                return
            if error is not None:
                error = SearcherError(self._name_trials(str(error)))
            else:
                try:
                    self._apply(ops)
                except SearcherError as e:
                    error = e
            self._off_lock.answered(self.experiment_id, error, trial)

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
            "expanded": True,  # on_trial_created was asked for the pending Creates
            "shutdown": self.shutdown,
            "failure": self.failure,
        }
        self.store.update_experiment(
            self.experiment_id, searcher_state=state, progress=self.method.progress()
        )

    def _apply(self, ops: list[Operation]) -> None:
        self._save(ops)
        for op in ops:
            self._apply_one(op)
        self._save([])

    def _trial(self, request_id: str) -> Trial | None:
        return self.store.trial_by_request(self.experiment_id, request_id)

    def _apply_one(self, op: Operation) -> None:
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
            return
        if isinstance(op, Shutdown):
            self.shutdown = True
            self.failure = op.failure
            return
        trial = self._trial(op.request_id)
        if trial is None:
            raise SearcherError(f"searcher referred to unknown trial request {op.request_id}")
        if isinstance(op, ValidateAfter):
            self.store.update_trial(trial.id, op_length=op.length, op_complete=False)
        # Close and Stop only flag the trial: the engine preempts its process, or completes it
        # at once when it has none and nothing left to train (policies.finished_idle), and then
        # tells the searcher it closed.
        elif isinstance(op, Close):
            self.store.update_trial(trial.id, closed=True)
        elif isinstance(op, Stop):
            self.store.update_trial(trial.id, stop_requested=True, closed=True)
        else:
            raise SearcherError(f"unknown searcher operation {op!r}")
