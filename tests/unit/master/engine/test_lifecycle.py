"""The trial and experiment state machines, every state x event pair: each pair's expected
result is written out below, so a new state or event fails here until it is decided."""

from __future__ import annotations

import itertools

import pytest

from trialkit.master.engine._lifecycle import (
    ExperimentAction,
    ExperimentEvent,
    InvalidTransition,
    TrialAction,
    TrialEvent,
    TrialPhase,
    adopted_phase,
    experiment_transition,
    phase_without_process,
    trial_transition,
)
from trialkit.store import ExperimentState, TrialState

P = TrialPhase
E = TrialEvent
A = TrialAction
INVALID = "invalid"
SAME = "same"  # a no-op: the phase stays, nothing to do

RUNNING_PHASES = (P.RUNNING, P.PREEMPTING, P.TERMINATING, P.KILLING)
TERMINAL = (P.COMPLETED, P.CANCELED, P.ERROR)
ENDED = (A.RELEASE_RUN, A.RECORD_END, A.TELL_SEARCHER)


def _row(default: object, **by_phase: object) -> dict[TrialPhase, object]:
    return {p: by_phase.get(p.name, default) for p in TrialPhase}


def _exit_row(to: TrialPhase) -> dict[TrialPhase, object]:
    result = (to, ENDED if to.ended else (A.RELEASE_RUN,))
    return _row(INVALID, **{p.name: result for p in RUNNING_PHASES})


#: event -> phase -> (new phase, actions) | SAME | INVALID
TRIAL_TABLE: dict[TrialEvent, dict[TrialPhase, object]] = {
    E.LAUNCHED: _row(INVALID, WAITING=(P.RUNNING, (A.RECORD_RUN,))),
    E.LAUNCH_FAILED: _row(
        INVALID, WAITING=(P.ERROR, (A.RECORD_END, A.TELL_SEARCHER, A.FAIL_EXPERIMENT))
    ),
    E.PREEMPT: _row(SAME, RUNNING=(P.PREEMPTING, (A.SIGNAL_PREEMPT,))),
    E.PAUSE: _row(
        SAME,
        WAITING=(P.PAUSED, ()),
        RUNNING=(P.PREEMPTING, (A.SIGNAL_PREEMPT, A.START_PREEMPT_CLOCK)),
        PREEMPTING=(P.PREEMPTING, (A.SIGNAL_PREEMPT, A.START_PREEMPT_CLOCK)),
    ),
    E.ACTIVATE: _row(SAME, PAUSED=(P.WAITING, ())),
    E.STOP: _row(
        SAME,
        WAITING=(P.CANCELED, (A.RECORD_END,)),
        PAUSED=(P.CANCELED, (A.RECORD_END,)),
        RUNNING=(P.TERMINATING, (A.SIGNAL_PREEMPT, A.SEND_SIGTERM)),
        PREEMPTING=(P.TERMINATING, (A.SIGNAL_PREEMPT, A.SEND_SIGTERM)),
    ),
    E.PREEMPT_TIMED_OUT: _row(SAME, PREEMPTING=(P.TERMINATING, (A.SEND_SIGTERM,))),
    E.KILL_GRACE_EXPIRED: _row(SAME, TERMINATING=(P.KILLING, (A.SEND_SIGKILL,))),
    E.IDLE_CLOSED: _row(
        SAME,
        WAITING=(P.COMPLETED, (A.RECORD_END, A.TELL_SEARCHER)),
        PAUSED=(P.COMPLETED, (A.RECORD_END, A.TELL_SEARCHER)),
    ),
    E.EXITED_ACTIVE: _exit_row(P.WAITING),
    E.EXITED_PAUSED: _exit_row(P.PAUSED),
    E.EXITED_COMPLETED: _exit_row(P.COMPLETED),
    E.EXITED_CANCELED: _exit_row(P.CANCELED),
    E.EXITED_ERROR: _exit_row(P.ERROR),
}


def test_the_trial_table_decides_every_event() -> None:
    assert set(TRIAL_TABLE) == set(TrialEvent), "decide the new event's row in TRIAL_TABLE"


@pytest.mark.parametrize(("phase", "event"), list(itertools.product(TrialPhase, TrialEvent)))
def test_trial_transition(phase: TrialPhase, event: TrialEvent) -> None:
    expected = TRIAL_TABLE[event][phase]
    if expected == INVALID:
        with pytest.raises(InvalidTransition):
            trial_transition(phase, event)
        return
    got = trial_transition(phase, event)
    assert got == ((phase, ()) if expected == SAME else expected)


@pytest.mark.parametrize(("phase", "event"), list(itertools.product(TERMINAL, TrialEvent)))
def test_an_ended_trial_never_changes(phase: TrialPhase, event: TrialEvent) -> None:
    try:
        assert trial_transition(phase, event) == (phase, ())
    except InvalidTransition:
        pass


@pytest.mark.parametrize("phase", list(TrialPhase))
def test_stored_state_and_process(phase: TrialPhase) -> None:
    stored = phase.stored
    if phase in (P.WAITING, *RUNNING_PHASES):
        assert stored is TrialState.ACTIVE
    else:
        assert stored.value == phase.value and phase_without_process(stored) is phase
    assert phase.has_process == (phase in RUNNING_PHASES)
    assert phase.preempt_requested == (phase in (P.PREEMPTING, P.TERMINATING, P.KILLING))
    assert phase.ended == (phase in TERMINAL)


def test_every_stored_trial_state_has_a_phase() -> None:
    for state in TrialState:
        phase = phase_without_process(state)
        assert phase.stored is state and not phase.has_process


@pytest.mark.parametrize("state", list(ExperimentState))
@pytest.mark.parametrize("stop_requested", [False, True])
def test_adopted_process_is_told_to_exit_unless_it_may_run_on(
    state: ExperimentState, stop_requested: bool
) -> None:
    keep = state is ExperimentState.ACTIVE and not stop_requested
    assert adopted_phase(state, stop_requested) is (P.RUNNING if keep else P.PREEMPTING)


# Experiments -----------------------------------------------------------------------------------

S = ExperimentState
X = ExperimentEvent
EA = ExperimentAction


def _erow(default: object, **by_state: object) -> dict[ExperimentState, object]:
    return {s: by_state.get(s.name, default) for s in ExperimentState}


#: event -> state -> (new state, actions) | SAME (an ended experiment ignores everything)
EXPERIMENT_TABLE: dict[ExperimentEvent, dict[ExperimentState, object]] = {
    X.PAUSE: _erow(SAME, ACTIVE=(S.PAUSED, (EA.PAUSE_TRIALS,))),
    X.ACTIVATE: _erow(SAME, PAUSED=(S.ACTIVE, (EA.ACTIVATE_TRIALS,))),
    X.KILL: _erow(
        SAME,
        ACTIVE=(S.STOPPING_CANCELED, (EA.STOP_TRIALS,)),
        PAUSED=(S.STOPPING_CANCELED, (EA.STOP_TRIALS,)),
        STOPPING_ERROR=(S.STOPPING_CANCELED, (EA.STOP_TRIALS,)),
    ),
    X.FAILED: _erow(
        SAME,
        ACTIVE=(S.STOPPING_ERROR, (EA.RECORD_ERROR, EA.STOP_TRIALS)),
        PAUSED=(S.STOPPING_ERROR, (EA.RECORD_ERROR, EA.STOP_TRIALS)),
    ),
    X.SEARCH_COMPLETED: _erow(SAME, ACTIVE=(S.COMPLETED, (EA.FINISH,))),
    X.SEARCH_FAILED: _erow(SAME, ACTIVE=(S.ERROR, (EA.FINISH,))),
    X.PROCESSES_GONE: _erow(
        SAME,
        STOPPING_CANCELED=(S.CANCELED, (EA.FINISH,)),
        STOPPING_ERROR=(S.ERROR, (EA.FINISH,)),
    ),
}


def test_the_experiment_table_decides_every_event() -> None:
    assert set(EXPERIMENT_TABLE) == set(ExperimentEvent)


@pytest.mark.parametrize(
    ("state", "event"), list(itertools.product(ExperimentState, ExperimentEvent))
)
def test_experiment_transition(state: ExperimentState, event: ExperimentEvent) -> None:
    expected = EXPERIMENT_TABLE[event][state]
    got = experiment_transition(state, event)
    assert got == ((state, ()) if expected == SAME else expected)


def test_every_experiment_ends_and_an_ended_one_stays_ended() -> None:
    """From any live state some sequence of events reaches a terminal state; none leaves one."""
    for state in ExperimentState:
        reachable = {state}
        frontier = [state]
        while frontier:
            s = frontier.pop()
            for event in ExperimentEvent:
                nxt, _ = experiment_transition(s, event)
                if s.ended:
                    assert nxt is s
                if nxt not in reachable:
                    reachable.add(nxt)
                    frontier.append(nxt)
        assert any(s.ended for s in reachable), state


@pytest.mark.parametrize(
    ("phase", "event", "why"),
    [
        (P.COMPLETED, E.LAUNCHED, "a COMPLETED trial is never launched"),
        (P.RUNNING, E.LAUNCHED, "only a WAITING trial is launched, not a RUNNING one"),
        (P.PAUSED, E.LAUNCH_FAILED, "only a WAITING trial is launched, not a PAUSED one"),
        (P.WAITING, E.EXITED_ERROR, "a WAITING trial has no process that could exit"),
    ],
)
def test_an_invalid_transition_says_why(phase: TrialPhase, event: TrialEvent, why: str) -> None:
    with pytest.raises(InvalidTransition, match=f"^{why}$"):
        trial_transition(phase, event)
