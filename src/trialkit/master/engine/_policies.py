"""Pure supervision policies: what happens to a trial when its process exits, whether a trial
wants a process, when a run being ended is escalated (preemption timeout -> SIGTERM -> SIGKILL)
and the restart back-off. No I/O, no clock (``now`` is an input); unit-tested without processes."""

from __future__ import annotations

import enum
import signal
from collections.abc import Sequence
from dataclasses import dataclass

from ..._messages import summary_line
from ...config import Generation
from ...store import ExperimentState, Trial, TrialState
from ._lifecycle import TrialEvent, TrialPhase


class Outcome(enum.Enum):
    COMPLETED = "COMPLETED"  # the trial is finished
    PAUSED = "PAUSED"  # stopped for a pause; resumes on activate
    WAITING = "WAITING"  # 0.37: done with its op, may be promoted later (no process meanwhile)
    RELAUNCH = "RELAUNCH"  # start again now without counting a restart
    RESTART = "RESTART"  # failed; start again from the latest checkpoint, counting a restart
    ERROR = "ERROR"  # failed and out of restarts
    CANCELED = "CANCELED"  # killed


@dataclass(frozen=True)
class ExitFacts:
    exit_code: int
    acked: bool
    early_exit: str | None
    experiment_state: ExperimentState
    generation: str
    closed: bool
    op_complete: bool
    stop_requested: bool
    restarts: int
    max_restarts: int
    #: Whether this run reported anything (a metric or a checkpoint) before it exited.
    reported: bool = True
    #: Why this run failed (see failure_reason), and why the previous one did if it failed
    #: without reporting anything: the same reason twice in a row is not worth a third try.
    failure: str | None = None
    previous_silent_failure: str | None = None


_CANCELING = {ExperimentState.STOPPING_CANCELED, ExperimentState.CANCELED}
_ERRORING = {ExperimentState.STOPPING_ERROR, ExperimentState.ERROR}


def on_exit(f: ExitFacts) -> Outcome:
    """Decide a trial's fate from how its process ended."""
    if f.experiment_state in _CANCELING:
        return Outcome.CANCELED
    if f.experiment_state in _ERRORING:
        return Outcome.ERROR if f.exit_code != 0 else Outcome.CANCELED
    if f.experiment_state == ExperimentState.PAUSED:
        return Outcome.PAUSED
    if f.exit_code != 0:
        if f.stop_requested:
            return Outcome.COMPLETED  # the searcher was done with it: no run would follow
        if f.generation == Generation.OPS and f.op_complete:
            # Failed after reporting its op: the result stands (a restart would get no op).
            return Outcome.COMPLETED if f.closed else Outcome.WAITING
        if repeats_silent_failure(f):
            return Outcome.ERROR
        return Outcome.RESTART if f.restarts < f.max_restarts else Outcome.ERROR
    if f.early_exit is not None or not f.acked or f.stop_requested:
        return Outcome.COMPLETED
    # An acknowledged exit: the trial expects to be resumed unless the searcher is done with it.
    if f.generation == Generation.OPS:
        if not f.op_complete:
            return Outcome.RELAUNCH
        return Outcome.COMPLETED if f.closed else Outcome.WAITING
    return Outcome.RELAUNCH


def repeats_silent_failure(f: ExitFacts) -> bool:
    """A run that failed before reporting anything, exactly as the run before it did."""
    return not f.reported and f.failure is not None and f.failure == f.previous_silent_failure


#: Restart back-off: the first restart waits RESTART_DELAY_BASE seconds, each next one twice
#: as long, up to RESTART_DELAY_MAX.
RESTART_DELAY_BASE = 1.0
RESTART_DELAY_MAX = 60.0


def restart_delay(restarts_so_far: int) -> float:
    """Seconds to wait before restarting a trial that has already been restarted this often."""
    return min(RESTART_DELAY_BASE * 2.0 ** min(restarts_so_far, 32), RESTART_DELAY_MAX)


RESTARTING = "restarting"
"""How a trial's status begins during its restart back-off (the CLI counts it under this)."""


def restart_status(restart: int, max_restarts: int, at: float) -> str:
    """``restarting at 23:15:04, restart 2 of 5``: a trial's status while its restart back-off
    runs, ``at`` the wall-clock time the back-off ends."""
    import datetime

    when = datetime.datetime.fromtimestamp(at).strftime("%H:%M:%S")
    return f"{RESTARTING} at {when}, restart {restart} of {max_restarts}"


_TRACEBACK = "Traceback (most recent call last):"
#: How many of a run's last log lines a failure reason quotes when there is no traceback.
REASON_LINES = 3
_REASON_LINE_CHARS = 200
_OWN_LINES = "[trialkit] "  # lines the master itself writes into a trial's log


def failure_reason(exit_code: int, last_lines: Sequence[str], supervisor_lost: bool = False) -> str:
    """Why a run failed, in one line: its supervisor killed, else the exception line of the
    last Python traceback it printed, else its exit code or signal and last few log lines."""
    if supervisor_lost:
        return "its supervisor was killed (the run's processes were stopped)"
    exception = _last_exception_line(last_lines)
    if exception is not None:
        return exception[: _REASON_LINE_CHARS * 2]
    if exit_code < 0:
        try:
            how = f"killed by signal {signal.Signals(-exit_code).name}"
        except ValueError:
            how = f"killed by signal {-exit_code}"
    else:
        how = f"exit code {exit_code}"
    output = [ln.strip() for ln in last_lines if ln.strip() and not ln.startswith(_OWN_LINES)]
    tail = [ln[:_REASON_LINE_CHARS] for ln in output[-REASON_LINES:]]
    return f"{how}; last output: {' | '.join(tail)}" if tail else how


def _last_exception_line(lines: Sequence[str]) -> str | None:
    """``SomeError: msg`` closing the last traceback: its first unindented line after the
    traceback header (frames and carets are indented). A message that goes on over indented
    lines and only introduces them (TensorFlow's ``ValueError: in user code:``) is told with
    its last line, where the cause is (see ``summary_line``)."""
    starts = [i for i, ln in enumerate(lines) if ln.strip() == _TRACEBACK]
    if not starts:
        return None
    rest = lines[starts[-1] + 1 :]
    for i, ln in enumerate(rest):
        if ln.strip() and not ln[0].isspace():
            message = [ln]
            for more in rest[i + 1 :]:
                if more.strip() and not more[0].isspace():
                    break  # output after the traceback
                message.append(more)
            return summary_line(message)
    return None


def wants_process(
    trial_state: TrialState,
    experiment_state: ExperimentState,
    generation: str,
    op_complete: bool,
    stop_requested: bool,
) -> bool:
    """Whether a trial without a process should be started now: in 0.37 while it has an
    unfinished operation, in 0.38 until it ends by itself or the searcher stops it."""
    if experiment_state != ExperimentState.ACTIVE or trial_state != TrialState.ACTIVE:
        return False
    if stop_requested:
        return False
    return not op_complete if generation == Generation.OPS else True


def trial_state_for(outcome: Outcome) -> TrialState:
    """The trial state an outcome leaves the trial in."""
    return {
        Outcome.COMPLETED: TrialState.COMPLETED,
        Outcome.PAUSED: TrialState.PAUSED,
        Outcome.ERROR: TrialState.ERROR,
        Outcome.CANCELED: TrialState.CANCELED,
    }.get(outcome, TrialState.ACTIVE)


def experiment_done(searcher_shutdown: bool, trial_states: list[TrialState]) -> bool:
    """An experiment ends once the searcher shut down and every trial is terminal."""
    return searcher_shutdown and all(s.ended for s in trial_states)


def final_experiment_state(
    trial_states: list[TrialState], searcher_failure: bool
) -> ExperimentState:
    """COMPLETED unless every trial errored (or the searcher reported failure)."""
    if searcher_failure or (trial_states and all(s == TrialState.ERROR for s in trial_states)):
        return ExperimentState.ERROR
    return ExperimentState.COMPLETED


def launch_failure_reason(exc: BaseException) -> str:
    """One line saying why a run could not be started."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def experiment_error(trials: Sequence[Trial]) -> str:
    """Why an experiment ended ERROR, naming its first failed trial and that trial's reason."""
    failed = [t for t in trials if t.state == TrialState.ERROR]
    if not failed:
        return "the searcher reported a failure"
    first = failed[0]
    times = "once" if first.restarts == 1 else f"{first.restarts} times"
    restarted = f" (restarted {times})" if first.restarts else ""
    why = f"trial {first.id} failed: {first.error or 'no reason recorded'}{restarted}"
    return why if len(failed) == 1 else f"{len(failed)} trials failed; {why}"


@dataclass(frozen=True)
class RunClock:
    """When the engine asked a trial's run to end, in monotonic seconds."""

    phase: TrialPhase
    #: when a pause asked it to checkpoint and exit (starts the preemption timeout)
    preempt_at: float | None = None
    #: when SIGTERM was sent
    term_at: float | None = None


def escalation(
    clock: RunClock,
    experiment_state: ExperimentState,
    now: float,
    *,
    preemption_timeout: float,
    kill_grace: float,
) -> TrialEvent | None:
    """The event a run that is slow to end is due, if any: a trial that ignores a pause for
    longer than ``preemption_timeout`` is terminated (only while its experiment is paused: an
    activated experiment waits for it); one still running ``kill_grace`` after SIGTERM is killed."""
    if clock.phase is TrialPhase.TERMINATING and clock.term_at is not None:
        return TrialEvent.KILL_GRACE_EXPIRED if now - clock.term_at > kill_grace else None
    if (
        clock.phase is TrialPhase.PREEMPTING
        and clock.preempt_at is not None
        and experiment_state == ExperimentState.PAUSED
        and now - clock.preempt_at > preemption_timeout
    ):
        return TrialEvent.PREEMPT_TIMED_OUT
    return None


def finished_idle(trial: Trial, generation: str, has_process: bool) -> bool:
    """A trial the searcher closed that has no process and nothing left to train: complete now
    (stopped by the searcher, or 0.37 with its last operation done)."""
    if trial.state.ended or has_process or not trial.searcher.closed:
        return False
    return trial.searcher.stop_requested or (
        generation == Generation.OPS and trial.searcher.op_complete
    )
