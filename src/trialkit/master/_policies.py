"""Pure supervision policies: what happens to a trial when its process exits, and whether a
trial wants a process. No I/O; unit-tested without processes."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..store import ExperimentState, TrialState


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
        return Outcome.RESTART if f.restarts < f.max_restarts else Outcome.ERROR
    if f.early_exit is not None or not f.acked or f.stop_requested:
        return Outcome.COMPLETED
    # An acknowledged exit: the trial expects to be resumed unless the searcher is done with it.
    if f.generation == "0.37":
        if not f.op_complete:
            return Outcome.RELAUNCH
        return Outcome.COMPLETED if f.closed else Outcome.WAITING
    return Outcome.RELAUNCH


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
    return not op_complete if generation == "0.37" else True


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
    return searcher_shutdown and all(s.terminal for s in trial_states)


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
