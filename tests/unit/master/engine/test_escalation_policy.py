"""Runs slow to end (pure): preemption timeout -> SIGTERM, kill grace -> SIGKILL; and when a
closed trial without a process completes at once."""

from __future__ import annotations

import dataclasses

import pytest

from trialkit.master.engine._lifecycle import TrialEvent, TrialPhase
from trialkit.master.engine._policies import RunClock, escalation, finished_idle
from trialkit.store import ExperimentState, Trial, TrialState

P = TrialPhase
S = ExperimentState


def due(clock: RunClock, state: S = S.PAUSED, now: float = 100.0) -> TrialEvent | None:
    return escalation(clock, state, now, preemption_timeout=60.0, kill_grace=10.0)


def test_a_pause_ignored_past_the_timeout_is_terminated() -> None:
    clock = RunClock(P.PREEMPTING, preempt_at=40.0)
    assert due(clock, now=100.0) is None  # exactly 60 s: not yet
    assert due(clock, now=100.5) is TrialEvent.PREEMPT_TIMED_OUT


def test_the_preemption_timeout_applies_only_while_paused() -> None:
    clock = RunClock(P.PREEMPTING, preempt_at=0.0)
    for state in S:
        expected = TrialEvent.PREEMPT_TIMED_OUT if state is S.PAUSED else None
        assert due(clock, state) is expected, state


def test_a_searcher_stop_has_no_timeout() -> None:
    """A PREEMPTING run without a pause clock (a 0.38 Stop, or adopted) is waited for."""
    assert due(RunClock(P.PREEMPTING), now=1e9) is None


@pytest.mark.parametrize("state", list(S))
def test_sigterm_ignored_past_the_grace_is_killed_in_any_experiment_state(state: S) -> None:
    clock = RunClock(P.TERMINATING, preempt_at=0.0, term_at=90.0)
    assert due(clock, state, now=100.0) is None
    assert due(clock, state, now=100.1) is TrialEvent.KILL_GRACE_EXPIRED


@pytest.mark.parametrize("phase", [P.RUNNING, P.KILLING])
def test_running_and_killed_runs_are_never_escalated(phase: TrialPhase) -> None:
    assert due(RunClock(phase, preempt_at=0.0, term_at=0.0), now=1e9) is None


TRIAL = Trial(
    id=1, experiment_id=1, request_id="r", hparams={}, seed=0, state=TrialState.ACTIVE,
    restarts=0, run_id=1, op_length=8, op_complete=False, closed=True, stop_requested=False,
    acked_run_id=None, early_exit=None, progress=None,
    status=None, error=None, pid=None,
    pid_started=None, log_offset=0, slots=[], created_at=0.0, ended_at=None,
)  # fmt: skip


def trial(state: TrialState = TrialState.ACTIVE, **facts: object) -> Trial:
    """TRIAL in ``state`` with some of its searcher facts changed."""
    return dataclasses.replace(TRIAL, state=state, **facts)  # type: ignore[arg-type]


def test_a_stopped_trial_without_a_process_is_finished() -> None:
    assert finished_idle(trial(stop_requested=True), "0.38", has_process=False)
    assert finished_idle(trial(stop_requested=True, state=TrialState.PAUSED), "0.38", False)
    assert not finished_idle(trial(stop_requested=True), "0.38", has_process=True)


def test_a_closed_037_trial_is_finished_once_its_op_is_done() -> None:
    assert finished_idle(trial(op_complete=True), "0.37", has_process=False)
    assert not finished_idle(trial(op_complete=False), "0.37", has_process=False)
    assert not finished_idle(trial(op_complete=True), "0.38", has_process=False)


def test_an_open_or_ended_trial_is_not_finished_again() -> None:
    assert not finished_idle(trial(closed=False, stop_requested=True), "0.38", False)
    for state in (TrialState.COMPLETED, TrialState.CANCELED, TrialState.ERROR):
        assert not finished_idle(trial(stop_requested=True, state=state), "0.38", False)
