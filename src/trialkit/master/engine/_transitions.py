"""The one writer of trial and experiment state: applies ``_lifecycle`` transitions and carries
out their actions (signals through the supervisor, rows in the store, events to the searcher).

Callers hold the engine's lock."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import signal
import time
from collections.abc import Iterator
from typing import Any

from ...store import Experiment, ExperimentState, Store, Trial, TrialState
from ..housekeeping._gc import collect_garbage_after
from ..runs._process_table import Supervisor
from ..search._experiment_config import config_of
from ..search._router import SearcherRouter
from . import _policies as policy
from ._lifecycle import (
    ExperimentAction,
    ExperimentEvent,
    TrialAction,
    TrialEvent,
    TrialPhase,
    experiment_transition,
    phase_without_process,
    trial_transition,
)
from ._policies import RunClock

logger = logging.getLogger("trialkit.master")

A = TrialAction
EA = ExperimentAction


class Transitions:
    """Trial phases (those with a process live here) and the state changes of both machines."""

    def __init__(self, store: Store, procs: Supervisor, searchers: SearcherRouter) -> None:
        self.store = store
        self.procs = procs
        self.searchers = searchers
        #: trial id -> phase and timers of a trial that has a process
        self.clocks: dict[int, RunClock] = {}
        #: experiments to settle when ``settling_once`` ends (None: settle at once)
        self._to_settle: dict[int, Experiment] | None = None

    def phase(self, trial: Trial) -> TrialPhase:
        clock = self.clocks.get(trial.id)
        return clock.phase if clock is not None else phase_without_process(trial.state)

    def should_preempt(self, trial_id: int) -> bool:
        clock = self.clocks.get(trial_id)
        return clock is not None and clock.phase.preempt_requested

    # Trials ------------------------------------------------------------------------------------

    def trial(
        self,
        trial: Trial,
        event: TrialEvent,
        fields: dict[str, Any] | None = None,
        failure: str | None = None,
    ) -> Trial:
        """Move a trial on by ``event``, storing ``fields`` with its new state; ``failure`` is
        the experiment's error should the event fail it."""
        new, actions = trial_transition(self.phase(trial), event)
        self._clock(trial.id, new, actions)
        updates = dict(fields or {})
        if new.stored != trial.state:
            updates["state"] = new.stored
        if A.RELEASE_RUN in actions:
            updates.update(pid=None, slots=[])
        if A.RECORD_END in actions:
            updates["ended_at"] = time.time()
        if updates:
            trial = self.store.update_trial(trial.id, **updates)
        if A.TELL_SEARCHER in actions:
            exp = self.store.get_experiment(trial.experiment_id)
            self.searcher_said(exp, self.searchers.trial_ended(exp, trial))
        if A.FAIL_EXPERIMENT in actions:
            exp = self.store.get_experiment(trial.experiment_id)
            self.experiment(exp, ExperimentEvent.FAILED, error=failure)
        return trial

    def _clock(self, trial_id: int, phase: TrialPhase, actions: tuple[TrialAction, ...]) -> None:
        """Keep the phase and timers of a trial with a process; send the signals."""
        if not phase.has_process:
            self.clocks.pop(trial_id, None)
            return
        now = time.monotonic()
        clock = dataclasses.replace(self.clocks.get(trial_id) or RunClock(phase), phase=phase)
        if A.START_PREEMPT_CLOCK in actions:
            clock = dataclasses.replace(clock, preempt_at=now)
        if A.SEND_SIGTERM in actions:
            clock = dataclasses.replace(clock, term_at=now)
            self.procs.signal(trial_id, signal.SIGTERM)
        if A.SEND_SIGKILL in actions:
            self.procs.signal(trial_id, signal.SIGKILL)
        self.clocks[trial_id] = clock

    def adopted(self, trial: Trial, phase: TrialPhase) -> None:
        """A process a previous master left running, now supervised in ``phase``."""
        self.clocks[trial.id] = RunClock(phase)

    def live_trials(self, experiment_id: int) -> list[Trial]:
        return [t for t in self.store.list_trials(experiment_id) if not t.state.ended]

    def settle(self, exp: Experiment, trials: list[Trial] | None = None) -> bool:
        """Act on the searcher's Close/Stop flags: preempt a stopped trial's process; complete a
        closed trial with nothing left to train (which may close others: repeat until calm).
        ``trials``: the experiment's trials, if just listed. Whether any trial ended."""
        ended = False
        while True:
            exp = self.store.get_experiment(exp.id)
            if exp.state not in (ExperimentState.ACTIVE, ExperimentState.PAUSED):
                return ended
            generation = self.searchers.generation(exp)
            moved = False
            for t in trials if trials is not None else self.store.list_trials(exp.id):
                if t.state.ended:
                    continue
                phase = self.phase(t)
                if t.searcher.stop_requested and phase is TrialPhase.RUNNING:
                    self.trial(t, TrialEvent.PREEMPT)
                # the phase, not the supervisor: a run just reaped is still RUNNING until its
                # exit is handled, and it is that exit that ends the trial
                elif policy.finished_idle(t, generation, phase.has_process):
                    self.trial(t, TrialEvent.IDLE_CLOSED)
                    moved = ended = True
            if not moved:  # each pass that moves ends a trial (terminal): this ends
                return ended
            trials = None

    # Experiments -------------------------------------------------------------------------------

    def searcher_said(self, exp: Experiment, error: str | None) -> Experiment:
        """After a searcher call: fail the experiment on its error, else act on its flags."""
        if error is not None:
            return self.experiment(self.store.get_experiment(exp.id), ExperimentEvent.FAILED, error)
        if self._to_settle is not None:
            self._to_settle[exp.id] = exp
        else:
            self.settle(exp)
        return exp

    @contextlib.contextmanager
    def settling_once(self) -> Iterator[None]:
        """Settle each experiment the searcher heard from once, at the end: many trials
        ending in one tick then cost one pass over each experiment's trials, not one per trial
        (200 trials ending together were 40,000 trials read and ~3 s of the master's GIL)."""
        if self._to_settle is not None:  # already inside one
            yield
            return
        self._to_settle = {}
        try:
            yield
        finally:
            to_settle, self._to_settle = self._to_settle, None
            for exp in to_settle.values():
                self.settle(exp)

    def could_not_start(self, exp: Experiment, error: str) -> Experiment:
        """An experiment whose search could not be loaded fails; with no trial to stop it ends
        at once (its end recorded, the searcher forgotten)."""
        exp = self.experiment(self.store.get_experiment(exp.id), ExperimentEvent.FAILED, error)
        if not self.live_trials(exp.id):
            exp = self.experiment(exp, ExperimentEvent.PROCESSES_GONE)
        return exp

    def experiment(
        self, exp: Experiment, event: ExperimentEvent, error: str | None = None
    ) -> Experiment:
        """Move an experiment on by ``event`` and carry out the actions."""
        new, actions = experiment_transition(exp.state, event)
        if not actions and new == exp.state:
            return exp
        if EA.FINISH in actions:
            return self._finish(exp, new)
        fields: dict[str, Any] = {"state": new}
        if EA.RECORD_ERROR in actions and error:
            fields["error"] = error
        exp = self.store.update_experiment(exp.id, **fields)
        trial_event = {
            EA.PAUSE_TRIALS: TrialEvent.PAUSE,
            EA.ACTIVATE_TRIALS: TrialEvent.ACTIVATE,
            EA.STOP_TRIALS: TrialEvent.STOP,
        }
        for action in actions:
            if action in trial_event:
                self.trials_of(exp, trial_event[action])
        return exp

    def trials_of(self, exp: Experiment, event: TrialEvent) -> None:
        for t in self.live_trials(exp.id):
            self.trial(t, event)

    def _finish(self, exp: Experiment, state: ExperimentState) -> Experiment:
        self.trials_of(exp, TrialEvent.STOP)  # none should be left; cancel any that are
        trials = self.store.list_trials(exp.id)
        progress = (
            1.0
            if state == ExperimentState.COMPLETED
            else min(exp.progress, trained_share(exp, trials))
        )
        fields: dict[str, Any] = {"state": state, "ended_at": time.time(), "progress": progress}
        if state == ExperimentState.ERROR and not exp.error:
            fields["error"] = policy.experiment_error(trials)
        exp = self.store.update_experiment(exp.id, **fields)
        self.searchers.forget(exp.id)
        logger.info("experiment %d: %s", exp.id, state.value)
        collect_garbage_after(self.store, exp.id)  # the save_* policy, as Determined at the end
        return exp


def trained_share(exp: Experiment, trials: list[Trial]) -> float:
    """How much of the search trained, for an experiment that did not complete: the searcher
    counts a failed or canceled trial as finished, which would show a failed search at 100 %."""
    expected = max(config_of(exp).searcher.max_trials or 0, len(trials), 1)
    done = sum(1.0 if t.state == TrialState.COMPLETED else (t.progress or 0.0) for t in trials)
    return min(done / expected, 1.0)
