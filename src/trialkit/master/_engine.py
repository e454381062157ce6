"""The engine: schedules trials onto slots, supervises their processes, applies the exit
policies, and advances experiment states. One thread ticks; API handlers call in under a lock."""

from __future__ import annotations

import logging
import shutil
import signal
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import _modeldir
from ..searcher import ExitedReason, SearcherError
from ..storage import build as build_storage
from ..store import Experiment, ExperimentState, Store, Trial, TrialState
from . import _policies as policy
from ._journal import register_journaled_checkpoints
from ._launch import build_launch, describe_argv
from ._processes import TrialProcess, run_tag
from ._searcher_driver import SearcherDriver
from ._warm_start import warm_start_checkpoint

logger = logging.getLogger("trialkit.master")

_SEARCHING = (ExperimentState.ACTIVE, ExperimentState.PAUSED)
_LIVE_EXPERIMENT_STATES = (
    ExperimentState.ACTIVE,
    ExperimentState.PAUSED,
    ExperimentState.STOPPING_CANCELED,
    ExperimentState.STOPPING_ERROR,
    ExperimentState.STOPPING_COMPLETED,
)


@dataclass
class EngineSettings:
    home: Path
    slots: int
    gpus: bool = False
    kill_grace: float = 10.0
    #: How long a paused trial may take to checkpoint and exit before it is terminated, when
    #: the config sets no preemption_timeout (Determined's 3600 s is long for one machine).
    preemption_timeout: float = 60.0
    #: How often trial processes are checked for exit and their logs tailed (cheap: no queries).
    tick: float = 0.1
    #: How often experiments are advanced and trials scheduled without an event asking for it
    #: (API calls that change anything wake the engine at once; a trial exiting does too).
    full_tick: float = 1.0


class Engine:
    """Owns every running trial process of this master."""

    def __init__(
        self, store: Store, settings: EngineSettings, master_url: str, token: str, master_file: Path
    ) -> None:
        self.store = store
        self.settings = settings
        self.master_url = master_url
        self.token = token
        self.master_file = master_file
        self.lock = threading.RLock()
        self._procs: dict[int, TrialProcess] = {}
        self._preempt: set[int] = set()
        #: trial id -> monotonic time before which a failed trial is not restarted (back-off).
        self._restart_at: dict[int, float] = {}
        #: trial id -> (run id, reason) of its last run that failed before reporting anything.
        self._silent_failures: dict[int, tuple[int, str]] = {}
        self._drivers: dict[int, SearcherDriver] = {}
        self._free_slots = list(range(settings.slots))
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="trialkit-engine", daemon=True)

    # Life cycle --------------------------------------------------------------------------------

    def start(self) -> None:
        with self.lock:
            self._recover()
        self._thread.start()

    def stop(self) -> None:
        """Stop supervising; trial processes keep running and the next master adopts them."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        # A full tick lists every trial of each live experiment: 6 ms of CPU for one search of
        # 200 trials, 6 % of a core at ten ticks a second, taken from the trials on the same
        # cores. Only process exits and logs are polled that often now.
        full_due = 0.0
        woken = True
        while not self._stop.is_set():
            try:
                with self.lock:
                    exited = self._reap_and_tail()
                    now = time.monotonic()
                    if woken or exited or now >= full_due:
                        self._tick()
                        full_due = now + self.settings.full_tick
            except Exception:
                logger.exception("engine tick failed")
            woken = self._wake.wait(self.settings.tick)
            self._wake.clear()

    def _tick(self) -> None:
        for exp in self.store.list_experiments(states=_LIVE_EXPERIMENT_STATES):
            if not exp.unmanaged:
                self._advance(exp)
        self._schedule()

    def _recover(self) -> None:
        """Adopt trial processes a previous master left running; reload searchers."""
        for exp in self.store.list_experiments(states=_LIVE_EXPERIMENT_STATES):
            if exp.unmanaged:
                continue
            self._searcher_guard(exp, lambda exp=exp: self._driver(exp))
            self._remove_stale_partials(exp)
            for trial in self.store.list_trials(exp.id):
                self._register_journal(trial)
                if trial.pid is None or trial.state.terminal:
                    continue
                d = self._trial_dir(trial.id)
                proc = TrialProcess(
                    trial.id,
                    exp.id,
                    trial.run_id,
                    trial.pid,
                    trial.pid_started or 0.0,
                    d / f"run-{trial.run_id}.exit",
                    d / "output.log",
                    run_tag(self.settings.home, trial.id, trial.run_id),
                    trial.log_offset,
                )
                self._procs[trial.id] = proc
                for s in trial.slots:
                    if s in self._free_slots:
                        self._free_slots.remove(s)
                if exp.state != ExperimentState.ACTIVE or trial.stop_requested:
                    self._preempt.add(trial.id)
                logger.info("trial %d: adopted running process %d", trial.id, trial.pid)

    # Queries from the API ----------------------------------------------------------------------

    def has_process(self, trial_id: int) -> bool:
        return trial_id in self._procs

    def running_trial_ids(self) -> list[int]:
        """Trials with a live process, for ``master status`` and idle shutdown."""
        with self.lock:
            return sorted(self._procs)

    def should_preempt(self, trial_id: int) -> bool:
        return trial_id in self._preempt

    def driver(self, experiment_id: int) -> SearcherDriver | None:
        return self._drivers.get(experiment_id)

    def _driver(self, exp: Experiment) -> SearcherDriver:
        drv = self._drivers.get(exp.id)
        if drv is None:
            drv = SearcherDriver(
                self.store, exp, has_process=self.has_process, request_stop=self._preempt.add
            )
            self._drivers[exp.id] = drv
        return drv

    # Commands ----------------------------------------------------------------------------------

    def start_experiment(self, exp: Experiment) -> None:
        with self.lock:
            self._searcher_guard(exp, lambda: self._driver(exp))
        self.wake()

    def pause(self, exp: Experiment) -> Experiment:
        with self.lock:
            if exp.state != ExperimentState.ACTIVE:
                return exp
            exp = self.store.update_experiment(exp.id, state=ExperimentState.PAUSED)
            for t in self._live_trials(exp.id):
                if t.id in self._procs:
                    self._preempt.add(t.id)
                    self._procs[t.id].preempt_sent_at = time.monotonic()
                else:
                    self.store.update_trial(t.id, state=TrialState.PAUSED)
        self.wake()
        return exp

    def activate(self, exp: Experiment) -> Experiment:
        with self.lock:
            if exp.state != ExperimentState.PAUSED:
                return exp
            exp = self.store.update_experiment(exp.id, state=ExperimentState.ACTIVE)
            for t in self._live_trials(exp.id):
                if t.state == TrialState.PAUSED:
                    self.store.update_trial(t.id, state=TrialState.ACTIVE)
                if not t.stop_requested and t.id not in self._procs:
                    self._preempt.discard(t.id)
        self.wake()
        return exp

    def kill(self, exp: Experiment) -> Experiment:
        with self.lock:
            if exp.state.terminal:
                return exp
            exp = self.store.update_experiment(exp.id, state=ExperimentState.STOPPING_CANCELED)
            self._stop_trials(exp)
        self.wake()
        return exp

    def _live_trials(self, experiment_id: int) -> list[Trial]:
        return [t for t in self.store.list_trials(experiment_id) if not t.state.terminal]

    # Reports from trials -----------------------------------------------------------------------

    def validation_reported(self, trial: Trial, metrics: Mapping[str, Any]) -> None:
        """0.38: every validation report goes to the searcher."""
        exp = self.store.get_experiment(trial.experiment_id)
        drv = self._drivers.get(exp.id)
        if drv is None or drv.generation != "0.38" or exp.state not in _SEARCHING:
            return  # after a searcher error (STOPPING_ERROR) later reports change nothing
        self._searcher_guard(exp, lambda: drv.validation_completed(trial, metrics, None), trial)
        self.wake()

    def operation_completed(self, trial: Trial, length: int, metric: Any) -> None:
        """0.37: the chief finished its op; the searcher decides before the answer goes back."""
        if trial.op_complete or trial.op_length != length:
            raise ValueError(
                f"trial {trial.id}: expected completion of op length {trial.op_length} "
                f"(completed={trial.op_complete}) but received length {length}"
            )
        exp = self.store.get_experiment(trial.experiment_id)
        trial = self.store.update_trial(trial.id, op_complete=True, progress=1.0)
        drv = self._driver(exp)
        metrics = {drv.metric: metric} if drv.metric else {}
        self._searcher_guard(exp, lambda: drv.validation_completed(trial, metrics, length), trial)
        self.wake()

    def progress_reported(self, trial: Trial, value: float, raw: bool) -> None:
        if raw and trial.op_length:
            self.store.update_trial(trial.id, progress=min(max(value / trial.op_length, 0.0), 1.0))
            drv = self._drivers.get(trial.experiment_id)
            if drv is not None:
                exp = self.store.get_experiment(trial.experiment_id)
                self._searcher_guard(exp, lambda: drv.progress_reported(trial, value), trial)
                self.wake()
        else:
            self.store.update_trial(trial.id, progress=value)

    def remote_searcher_operations(
        self, exp: Experiment, ops: list[Any], last_event_id: int, progress: float | None
    ) -> bool:
        """Operations from a custom searcher run in the user's process (see _searcher_driver)."""
        drv = self._drivers.get(exp.id)
        if drv is None:
            return False
        applied = [False]

        def apply() -> None:
            applied[0] = drv.remote_operations(ops, last_event_id, progress)

        self._searcher_guard(exp, apply)
        self.wake()
        return applied[0]

    def ack(self, trial: Trial, run_id: int) -> None:
        self.store.update_trial(trial.id, acked_run_id=run_id)
        self.wake()

    def _searcher_guard(self, exp: Experiment, action: Any, trial: Trial | None = None) -> None:
        """Run a searcher action; a SearcherError fails the experiment with a clear message."""
        try:
            action()
        except SearcherError as e:
            who = f"trial {trial.id}: " if trial is not None else ""
            message = (
                f"searcher error: {e}" if str(e).startswith(who) else f"searcher error: {who}{e}"
            )
            logger.error("experiment %d: %s", exp.id, message)
            exp = self.store.update_experiment(
                exp.id, state=ExperimentState.STOPPING_ERROR, error=message
            )
            self._stop_trials(exp)

    # Ticks -------------------------------------------------------------------------------------

    def _stop_trials(self, exp: Experiment) -> None:
        for t in self._live_trials(exp.id):
            proc = self._procs.get(t.id)
            if proc is None:
                self.store.update_trial(t.id, state=TrialState.CANCELED, ended_at=time.time())
            else:
                self._preempt.add(t.id)
                if proc.term_sent_at is None:
                    proc.signal_group(signal.SIGTERM)
                    proc.term_sent_at = time.monotonic()

    def _advance(self, exp: Experiment) -> None:
        if exp.state in (ExperimentState.STOPPING_CANCELED, ExperimentState.STOPPING_ERROR):
            self._stop_trials(exp)
            self._escalate(exp)
            if not any(p for p in self._procs.values() if p.experiment_id == exp.id):
                final = (
                    ExperimentState.CANCELED
                    if exp.state == ExperimentState.STOPPING_CANCELED
                    else ExperimentState.ERROR
                )
                self._finish(exp, final)
            return
        if exp.state == ExperimentState.PAUSED:
            self._terminate_slow_preemptions(exp)
            return
        if exp.state == ExperimentState.ACTIVE:
            drv = self._drivers.get(exp.id)
            states = [t.state for t in self.store.list_trials(exp.id)]
            if drv is not None and policy.experiment_done(drv.shutdown, states):
                self._finish(exp, policy.final_experiment_state(states, drv.failure))

    def _terminate_slow_preemptions(self, exp: Experiment) -> None:
        """Trials that ignore a pause for longer than preemption_timeout get SIGTERM, then SIGKILL."""
        timeout = float(exp.config.get("preemption_timeout") or self.settings.preemption_timeout)
        now = time.monotonic()
        for p in self._procs.values():
            if p.experiment_id != exp.id or p.preempt_sent_at is None:
                continue
            if p.term_sent_at is None and now - p.preempt_sent_at > timeout:
                logger.info(
                    "trial %d ignored the pause for %.0fs: terminating", p.trial_id, timeout
                )
                p.signal_group(signal.SIGTERM)
                p.term_sent_at = now
        self._escalate(exp)

    def _escalate(self, exp: Experiment) -> None:
        for p in self._procs.values():
            if p.experiment_id == exp.id and p.term_sent_at is not None and not p.kill_sent:
                if time.monotonic() - p.term_sent_at > self.settings.kill_grace:
                    p.signal_group(signal.SIGKILL)
                    p.kill_sent = True

    def _finish(self, exp: Experiment, state: ExperimentState) -> None:
        for t in self._live_trials(exp.id):
            self.store.update_trial(t.id, state=TrialState.CANCELED, ended_at=time.time())
        progress = (
            1.0
            if state == ExperimentState.COMPLETED
            else min(exp.progress, _trained_share(exp, self.store.list_trials(exp.id)))
        )
        fields: dict[str, Any] = {"state": state, "ended_at": time.time(), "progress": progress}
        if state == ExperimentState.ERROR and not exp.error:
            fields["error"] = policy.experiment_error(self.store.list_trials(exp.id))
        self.store.update_experiment(exp.id, **fields)
        self._drivers.pop(exp.id, None)
        logger.info("experiment %d: %s", exp.id, state.value)

    def _reap_and_tail(self) -> bool:
        """Tail every trial's log and handle the runs that ended; whether any did. A run is
        handled once its processes are all gone and its whole log is stored, which for a long
        log takes a few ticks (a chunk each, so the engine is never held up for long)."""
        exited = False
        for trial_id, proc in list(self._procs.items()):
            if not proc.ended:
                proc.ended = proc.finished()
            drained = self._tail(proc, final=proc.ended)
            if proc.ended and drained:
                del self._procs[trial_id]
                self._on_exit(proc)
                exited = True
        return exited

    def _tail(self, proc: TrialProcess, final: bool) -> bool:
        """Store the next chunk of the run's log; whether the end of the log was reached."""
        lines, offset, at_end = proc.read_chunk(proc.log_offset, final=final)
        if lines:
            self.store.add_logs(proc.trial_id, proc.run_id, lines)
            proc.recent_lines.extend(lines)
        if offset != proc.log_offset:
            proc.log_offset = offset
            self.store.update_trial(proc.trial_id, log_offset=offset)
        return at_end

    def _on_exit(self, proc: TrialProcess) -> None:
        code = proc.exit_code()
        trial = self.store.get_trial(proc.trial_id)
        exp = self.store.get_experiment(trial.experiment_id)
        self._free_slots.extend(trial.slots)
        self._free_slots.sort()
        drv = self._drivers.get(exp.id)
        generation = (
            drv.generation
            if drv
            else ("0.37" if exp.config["searcher"].get("max_length") else "0.38")
        )
        failure = (
            policy.failure_reason(
                code, list(proc.recent_lines), proc.supervisor_lost and not proc.kill_sent
            )
            if code != 0
            else None
        )
        reported = self._run_reported(trial.id, proc.run_id)
        silent = self._silent_failures.pop(trial.id, None)
        facts = policy.ExitFacts(
            exit_code=code,
            acked=trial.acked_run_id == proc.run_id,
            early_exit=trial.early_exit,
            experiment_state=exp.state,
            generation=generation,
            closed=trial.closed,
            op_complete=trial.op_complete,
            stop_requested=trial.stop_requested,
            restarts=trial.restarts,
            max_restarts=int(exp.config.get("max_restarts", 5)),
            reported=reported,
            failure=failure,
            previous_silent_failure=silent[1] if silent and silent[0] == proc.run_id - 1 else None,
        )
        outcome = policy.on_exit(facts)
        logger.info(
            "trial %d run %d exited with %d: %s", trial.id, proc.run_id, code, outcome.value
        )
        if not trial.stop_requested:
            self._preempt.discard(trial.id)
        updates: dict[str, Any] = {
            "pid": None,
            "slots": [],
            "state": policy.trial_state_for(outcome),
        }
        if failure is not None and outcome not in (policy.Outcome.CANCELED, policy.Outcome.PAUSED):
            updates["error"] = failure
            if not reported:
                self._silent_failures[trial.id] = (proc.run_id, failure)
            if outcome == policy.Outcome.ERROR and policy.repeats_silent_failure(facts):
                updates["error"] = f"{failure} (twice in a row before reporting anything)"
        if outcome == policy.Outcome.RESTART:
            updates["restarts"] = trial.restarts + 1
            delay = policy.restart_delay(trial.restarts)
            self._restart_at[trial.id] = time.monotonic() + delay
            logger.info("trial %d: restarting in %.0f s (%s)", trial.id, delay, failure)
        if policy.trial_state_for(outcome).terminal:
            updates["ended_at"] = time.time()
        trial = self.store.update_trial(trial.id, **updates)
        self.store.forget_metric_batches(trial.id, proc.run_id)  # an exited run cannot resend
        if drv is not None:
            self._tell_searcher(exp, drv, trial, outcome)

    def _run_reported(self, trial_id: int, run_id: int) -> bool:
        """Whether run ``run_id`` of the trial reported a metric or a checkpoint."""
        for group in ("training", "validation"):
            m = self.store.latest_metrics(trial_id, group)
            if m is not None and m.run_id == run_id:
                return True
        return any(c.run_id == run_id for c in self.store.list_checkpoints(trial_id=trial_id))

    def _tell_searcher(
        self, exp: Experiment, drv: SearcherDriver, trial: Trial, outcome: policy.Outcome
    ) -> None:
        reason = {
            policy.Outcome.ERROR: ExitedReason.ERRORED,
            policy.Outcome.CANCELED: ExitedReason.USER_CANCELED,
        }.get(outcome)
        if trial.early_exit == "INVALID_HP":
            reason = ExitedReason.INVALID_HP
        if not trial.state.terminal:
            return

        def events() -> None:
            if reason is not None:
                drv.exited_early(trial, reason)
            drv.closed(trial)

        self._searcher_guard(exp, events, trial)

    def _schedule(self) -> None:
        for exp in self.store.list_experiments(states=[ExperimentState.ACTIVE]):
            drv = self._drivers.get(exp.id)
            if exp.unmanaged or drv is None:
                continue
            need = max(int(exp.config.get("resources", {}).get("slots_per_trial", 1)), 1)
            for t in self.store.list_trials(exp.id):
                if t.id in self._procs:
                    continue
                if not policy.wants_process(
                    t.state, exp.state, drv.generation, t.op_complete, t.stop_requested
                ):
                    continue
                if self._restart_at.get(t.id, 0.0) > time.monotonic():
                    continue  # backing off after a failure
                self._restart_at.pop(t.id, None)
                if len(self._free_slots) < need:
                    return
                if not self._launch(exp, t, need):
                    break  # the experiment is stopping; its other trials wait for nothing

    def _trial_dir(self, trial_id: int) -> Path:
        return self.settings.home / "trials" / str(trial_id)

    def _launch(self, exp: Experiment, trial: Trial, need: int) -> bool:
        """Start the trial's next run on ``need`` free slots; whether it started. A failure to
        prepare or spawn it gives the slots back and fails the trial and its experiment."""
        slots, self._free_slots = self._free_slots[:need], self._free_slots[need:]
        run_id = trial.run_id + 1
        try:
            proc = self._start_run(exp, trial, run_id, slots)
        except Exception as e:  # whatever it is, it must not cost the slots or the engine
            self._free_slots = sorted(self._free_slots + slots)
            self._launch_failed(exp, trial, run_id, e)
            return False
        self._procs[trial.id] = proc
        if trial.stop_requested:
            self._preempt.add(trial.id)
        self.store.update_trial(
            trial.id,
            run_id=run_id,
            pid=proc.pid,
            pid_started=proc.started,
            slots=slots,
            early_exit=None,
        )
        logger.info("trial %d run %d started (pid %d, slots %s)", trial.id, run_id, proc.pid, slots)
        return True

    def _start_run(
        self, exp: Experiment, trial: Trial, run_id: int, slots: list[int]
    ) -> TrialProcess:
        """Unpack the model definition into a fresh working copy and spawn the run."""
        tdir = self._trial_dir(trial.id)
        workdir = tdir / "model"
        shutil.rmtree(workdir, ignore_errors=True)
        archive = self.store.get_model_def(exp.id)
        if archive:
            _modeldir.unpack(archive, workdir)
        else:
            workdir.mkdir(parents=True, exist_ok=True)
        self._remove_stale_partials(exp)  # e.g. this trial's previous run, killed mid-save
        self._register_journal(trial)  # saved while the master was away: resume from them
        latest = self.store.latest_checkpoint(trial.id)
        spec = build_launch(
            experiment=exp,
            trial=trial,
            run_id=run_id,
            workdir=workdir,
            info_file=tdir / "cluster_info.json",
            master_url=self.master_url,
            token=self.token,
            master_file=self.master_file,
            home=self.settings.home,
            slot_ids=slots,
            gpus=self.settings.gpus,
            latest_checkpoint=latest.uuid if latest else warm_start_checkpoint(exp.config),
            steps_completed=latest.steps_completed if latest else 0,
        )
        with open(tdir / "output.log", "ab") as log:
            log.write(f"[trialkit] run {run_id}: {describe_argv(spec.argv)}\n".encode())
        return TrialProcess.spawn(
            trial_id=trial.id,
            experiment_id=exp.id,
            run_id=run_id,
            log_offset=trial.log_offset,
            argv=spec.argv,
            env=spec.env,
            cwd=workdir,
            exit_file=tdir / f"run-{run_id}.exit",
            log_file=tdir / "output.log",
            tag=run_tag(self.settings.home, trial.id, run_id),
        )

    def _remove_stale_partials(self, exp: Experiment) -> None:
        """Delete checkpoint directories that runs killed mid-save left half-written in the
        experiment's storage (never one a live process is writing)."""
        try:
            removed = build_storage(exp.config["checkpoint_storage"]).remove_stale_partials()
        except Exception as e:  # a cleanup must never stop a launch
            logger.warning("experiment %d: partial checkpoints not cleaned: %s", exp.id, e)
            return
        for path in removed:
            logger.info("experiment %d: removed partial checkpoint %s", exp.id, path)

    def _register_journal(self, trial: Trial) -> None:
        """Register the checkpoints the trial saved but could not report (master away)."""
        try:
            register_journaled_checkpoints(self.store, trial, self._trial_dir(trial.id))
        except Exception as e:  # never stops a launch or a recovery; retried next time
            logger.warning("trial %d: journaled checkpoints not registered: %s", trial.id, e)

    def _launch_failed(self, exp: Experiment, trial: Trial, run_id: int, exc: Exception) -> None:
        """A run that could not even start would fail the same way again (the model definition
        and config are the experiment's): the trial errors, and so does the experiment."""
        reason = policy.launch_failure_reason(exc)
        logger.error("trial %d run %d could not start: %s", trial.id, run_id, reason)
        self.store.add_logs(
            trial.id, run_id, [f"[trialkit] run {run_id} could not start: {reason}"]
        )
        trial = self.store.update_trial(
            trial.id,
            state=TrialState.ERROR,
            error=reason,
            pid=None,
            slots=[],
            ended_at=time.time(),
        )
        drv = self._drivers.get(exp.id)
        if drv is not None:
            self._tell_searcher(exp, drv, trial, policy.Outcome.ERROR)
        exp = self.store.get_experiment(exp.id)
        if exp.state in _SEARCHING:
            exp = self.store.update_experiment(
                exp.id,
                state=ExperimentState.STOPPING_ERROR,
                error=f"trial {trial.id} could not start: {reason}",
            )
            self._stop_trials(exp)


def _trained_share(exp: Experiment, trials: list[Trial]) -> float:
    """How much of the search trained, for an experiment that did not complete: the searcher
    counts a failed or canceled trial as finished, which would show a failed search at 100 %."""
    searcher = exp.config.get("searcher") or {}
    expected = max(int(searcher.get("max_trials") or 0), len(trials), 1)
    done = sum(1.0 if t.state == TrialState.COMPLETED else (t.progress or 0.0) for t in trials)
    return min(done / expected, 1.0)
