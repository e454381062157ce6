"""The engine's periodic work: handle runs that exited (exit policy), advance experiments
(escalation, the searcher's flags, the end of a search) and start the trials that wait for a
process (scheduling policy). State changes go through ``Transitions``; callers hold the lock."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ...store import Experiment, ExperimentState, Store, Trial
from ..runs._process_table import Supervisor
from ..runs._processes import TrialProcess
from ..runs._run_dir import RunStarter
from ..search._experiment_config import config_of
from ..search._router import SearcherRouter
from . import _policies as policy
from ._lifecycle import ExperimentEvent, TrialEvent, TrialPhase
from ._scheduling import Request, place
from ._transitions import Transitions

if TYPE_CHECKING:
    from ._engine import EngineSettings

logger = logging.getLogger("trialkit.master")

_STOPPING = (ExperimentState.STOPPING_CANCELED, ExperimentState.STOPPING_ERROR)
_EXIT_EVENTS = {
    policy.Outcome.COMPLETED: TrialEvent.EXITED_COMPLETED,
    policy.Outcome.PAUSED: TrialEvent.EXITED_PAUSED,
    policy.Outcome.WAITING: TrialEvent.EXITED_ACTIVE,
    policy.Outcome.RELAUNCH: TrialEvent.EXITED_ACTIVE,
    policy.Outcome.RESTART: TrialEvent.EXITED_ACTIVE,
    policy.Outcome.ERROR: TrialEvent.EXITED_ERROR,
    policy.Outcome.CANCELED: TrialEvent.EXITED_CANCELED,
}


class TrialSupervision:
    def __init__(
        self,
        store: Store,
        settings: EngineSettings,
        procs: Supervisor,
        searchers: SearcherRouter,
        states: Transitions,
        runs: RunStarter,
    ) -> None:
        self.store = store
        self.settings = settings
        self.procs = procs
        self.searchers = searchers
        self.states = states
        self.runs = runs
        #: trial id -> monotonic time before which a failed trial is not restarted (back-off).
        self._restart_at: dict[int, float] = {}
        #: trial id -> (run id, reason) of its last run that failed before reporting anything.
        self._silent_failures: dict[int, tuple[int, str]] = {}

    # Exits -------------------------------------------------------------------------------------

    def reap(self) -> bool:
        """Handle the runs that ended; whether any did."""
        ended = self.procs.reap()
        with self.states.settling_once():
            for proc in ended:
                self._on_exit(proc)
                self.procs.exit_handled(proc)  # not if it failed: the next tick tries again
        return bool(ended)

    def _on_exit(self, proc: TrialProcess) -> None:
        code = proc.exit_code()
        trial = self.store.get_trial(proc.trial_id)
        exp = self.store.get_experiment(trial.experiment_id)
        killed = self.states.phase(trial) is TrialPhase.KILLING
        failure = (
            proc.failure
            or policy.failure_reason(
                code, list(proc.recent_lines), proc.supervisor_lost and not killed
            )
            if code != 0
            else None
        )
        reported = self._run_reported(trial.id, proc.run_id)
        silent = self._silent_failures.pop(trial.id, None)
        facts = policy.ExitFacts(
            exit_code=code,
            acked=trial.searcher.acked_run_id == proc.run_id,
            early_exit=trial.searcher.early_exit,
            experiment_state=exp.state,
            generation=self.searchers.generation(exp),
            closed=trial.searcher.closed,
            op_complete=trial.searcher.op_complete,
            stop_requested=trial.searcher.stop_requested,
            restarts=trial.restarts,
            max_restarts=config_of(exp).max_restarts,
            reported=reported,
            failure=failure,
            previous_silent_failure=silent[1] if silent and silent[0] == proc.run_id - 1 else None,
        )
        outcome = policy.on_exit(facts)
        logger.info(
            "trial %d run %d exited with %d: %s", trial.id, proc.run_id, code, outcome.value
        )
        fields: dict[str, Any] = {}
        if failure is not None and outcome not in (policy.Outcome.CANCELED, policy.Outcome.PAUSED):
            fields["error"] = failure
            if not reported:
                self._silent_failures[trial.id] = (proc.run_id, failure)
            if outcome == policy.Outcome.ERROR and policy.repeats_silent_failure(facts):
                fields["error"] = f"{failure} (twice in a row before reporting anything)"
        if outcome == policy.Outcome.RESTART:
            fields["restarts"] = trial.restarts + 1
            delay = policy.restart_delay(trial.restarts)
            self._restart_at[trial.id] = time.monotonic() + delay
            fields["status"] = policy.restart_status(
                trial.restarts + 1, facts.max_restarts, time.time() + delay
            )
            logger.info("trial %d: restarting in %.0f s (%s)", trial.id, delay, failure)
        self.store.forget_metric_batches(trial.id, proc.run_id)  # an exited run cannot resend
        self.states.trial(trial, _EXIT_EVENTS[outcome], fields)

    def _run_reported(self, trial_id: int, run_id: int) -> bool:
        """Whether run ``run_id`` of the trial reported a metric or a checkpoint."""
        for group in ("training", "validation"):
            m = self.store.latest_metrics(trial_id, group)
            if m is not None and m.run_id == run_id:
                return True
        return any(c.run_id == run_id for c in self.store.list_checkpoints(trial_id=trial_id))

    # Experiments -------------------------------------------------------------------------------

    def advance(self, exp: Experiment) -> None:
        if exp.state in _STOPPING:
            self.states.trials_of(exp, TrialEvent.STOP)  # also trials created meanwhile
            self._escalate(exp)
            if not self.procs.experiment_has_processes(exp.id):
                self.states.experiment(exp, ExperimentEvent.PROCESSES_GONE)
            return
        self._escalate(exp)
        trials = self.store.list_trials(exp.id)
        if self.states.settle(exp, trials):  # the searcher heard of it: may have failed
            trials = self.store.list_trials(exp.id)
            exp = self.store.get_experiment(exp.id)
        drv = self.searchers.driver(exp.id)
        if exp.state != ExperimentState.ACTIVE or drv is None or drv.busy:
            return  # busy: the search has yet to hear of trials that ended, say
        states = [t.state for t in trials]
        if policy.experiment_done(drv.shutdown, states):
            final = policy.final_experiment_state(states, drv.failure)
            done = ExperimentEvent.SEARCH_COMPLETED
            if final == ExperimentState.ERROR:
                done = ExperimentEvent.SEARCH_FAILED
            self.states.experiment(exp, done)

    def _escalate(self, exp: Experiment) -> None:
        """Runs slow to end: terminate those ignoring a pause, kill those ignoring SIGTERM."""
        timeout = float(config_of(exp).preemption_timeout or self.settings.preemption_timeout)
        now = time.monotonic()
        for trial_id in self.procs.trials_of(exp.id):
            clock = self.states.clocks.get(trial_id)
            if clock is None:
                continue
            event = policy.escalation(
                clock,
                exp.state,
                now,
                preemption_timeout=timeout,
                kill_grace=self.settings.kill_grace,
            )
            if event is None:
                continue
            trial = self.store.get_trial(trial_id)
            if event is TrialEvent.PREEMPT_TIMED_OUT:
                logger.info("trial %d ignored the pause for %.0fs: terminating", trial_id, timeout)
            self.states.trial(trial, event)

    # Scheduling --------------------------------------------------------------------------------

    def schedule(self) -> None:
        """Start the trials that want a process, first come first served, on the free slots of
        each resource pool."""
        for pool in self.procs.pools:
            try:
                self._schedule_pool(pool)
            except Exception:  # e.g. a Ray cluster gone: the other pools still schedule
                logger.exception("scheduling on resource pool %r failed", pool)

    def _schedule_pool(self, pool: str) -> None:
        free = self.procs.free_slots(pool)
        if not free:
            return
        queue: list[Request] = []
        experiments: dict[int, Experiment] = {}
        trials: dict[int, Trial] = {}
        for exp in self.store.list_experiments(states=[ExperimentState.ACTIVE]):
            drv = self.searchers.driver(exp.id)
            if exp.unmanaged or drv is None or self._pool_of(exp) != pool:
                continue
            experiments[exp.id] = exp
            need = max(config_of(exp).resources.slots_per_trial, 1)
            for t in self.store.list_trials(exp.id):
                if self.procs.has(t.id) or not policy.wants_process(
                    t.state,
                    exp.state,
                    drv.generation,
                    t.searcher.op_complete,
                    t.searcher.stop_requested,
                ):
                    continue
                trials[t.id] = t
                queue.append(Request(t.id, exp.id, need, self._restart_at.get(t.id, 0.0)))
        failed: set[int] = set()
        for p in place(free, queue, time.monotonic()):
            if p.experiment_id in failed:
                continue  # the experiment is stopping; its other trials wait for nothing
            exp = experiments[p.experiment_id]
            if not self._launch(exp, trials[p.trial_id], p.slots, pool):
                failed.add(p.experiment_id)

    def _pool_of(self, exp: Experiment) -> str:
        return self.settings.master_config.resolve(config_of(exp).resources.resource_pool)

    def _launch(self, exp: Experiment, trial: Trial, slots: list[int], pool: str) -> bool:
        """Start the trial's next run on ``slots`` of ``pool``; whether it started. A failure to
        prepare or spawn it gives the slots back and fails the trial and its experiment."""
        self.procs.take_slots(slots, pool)
        self._restart_at.pop(trial.id, None)
        run_id = trial.run_id + 1
        try:
            proc = self.runs.start(exp, trial, run_id, slots, self.procs.pools[pool])
        except Exception as e:  # whatever it is, it must not cost the slots or the engine
            self.procs.release_slots(slots, pool)
            self._launch_failed(trial, run_id, e)
            return False
        self.procs.add(proc, slots, pool)
        fields: dict[str, Any] = dict(
            run_id=run_id, pid=proc.pid, pid_started=proc.started, slots=slots
        )
        if (trial.status or "").startswith(policy.RESTARTING):
            fields["status"] = None  # the back-off is over
        self.states.trial(trial, TrialEvent.LAUNCHED, {**fields, "early_exit": None})
        logger.info("trial %d run %d started (pid %s, slots %s)", trial.id, run_id, proc.pid, slots)
        return True

    def _launch_failed(self, trial: Trial, run_id: int, exc: Exception) -> None:
        """A run that could not even start would fail the same way again (the model definition
        and config are the experiment's): the trial errors, and so does the experiment."""
        reason = policy.launch_failure_reason(exc)
        logger.error("trial %d run %d could not start: %s", trial.id, run_id, reason)
        self.procs.logs.note(trial.id, run_id, f"[trialkit] run {run_id} could not start: {reason}")
        self.states.trial(
            trial,
            TrialEvent.LAUNCH_FAILED,
            {"error": reason, "pid": None, "slots": []},
            failure=f"trial {trial.id} could not start: {reason}",
        )
