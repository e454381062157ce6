"""Trial and experiment lifecycles as explicit state machines (pure: no I/O, no clock).

``trial_transition(phase, event)`` and ``experiment_transition(state, event)`` give the next
state and the actions (data) the engine carries out. Every (state, event) pair is decided here:
either a transition, a no-op (the event changes nothing in that state: ``(state, ())``) or an
``InvalidTransition`` for pairs that cannot happen (e.g. a process exiting for a trial that has
none): those are engine bugs and are raised, never ignored silently.

A trial's phase is finer than its stored ``TrialState``: the stored ACTIVE is WAITING (no
process: queued for slots, backing off, or waiting for its next 0.37 operation), RUNNING, or one
of the ways a run is being ended (PREEMPTING: asked to checkpoint and exit; TERMINATING: SIGTERM
sent; KILLING: SIGKILL sent). Phases with a process live in the engine's memory only; a restarted
master re-derives them when it adopts the processes (see ``adopted_phase``).

Beside the phase, a trial row keeps facts of the search protocol, grouped on the domain trial as
``Trial.searcher`` (``store.SearcherFacts``; the columns are unchanged). Decided per flag, none
is a phase, so none is folded into this machine:

* ``closed`` (the searcher's Close), ``op_length``/``op_complete`` (the 0.37 operation and
  whether its metric was reported) and ``early_exit`` (an exit the trial reported) are what the
  search said or was told; they outlive any run, and the exit policy (``_policies.on_exit``)
  reads them to choose the event (IDLE_CLOSED, the outcome of an exit).
* ``stop_requested`` (the searcher's 0.38 Stop) is the searcher's decision, not the trial's
  state: its lifecycle meaning already is a phase, reached by an event (PREEMPT: RUNNING ->
  PREEMPTING, then TERMINATING/KILLING by escalation). The fact is kept because it must survive
  a master restart (``adopted_phase`` re-derives PREEMPTING from it) and applies to a trial
  with no process, which then never gets one.
* ``acked_run_id`` (which run acknowledged it exits to be resumed) tells an acknowledged exit
  from a crash; it belongs to one run's exchange with the master, not to the trial's phase.
"""

from __future__ import annotations

import enum

from ...store import ExperimentState, TrialState


class InvalidTransition(RuntimeError):
    """An event that cannot happen in the state it arrived in (an engine bug)."""


class TrialPhase(str, enum.Enum):
    WAITING = "WAITING"
    RUNNING = "RUNNING"
    PREEMPTING = "PREEMPTING"
    TERMINATING = "TERMINATING"
    KILLING = "KILLING"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"

    @property
    def has_process(self) -> bool:
        return self in _WITH_PROCESS

    @property
    def ended(self) -> bool:
        return self.stored.ended

    @property
    def stored(self) -> TrialState:
        """The state written to the store (and shown to users)."""
        return TrialState.ACTIVE if self in _STORED_ACTIVE else TrialState(self.value)

    @property
    def preempt_requested(self) -> bool:
        """Whether the trial's process is told to checkpoint and exit (should_preempt)."""
        return self in _ENDING


_ENDING = frozenset({TrialPhase.PREEMPTING, TrialPhase.TERMINATING, TrialPhase.KILLING})
_WITH_PROCESS = _ENDING | {TrialPhase.RUNNING}
_STORED_ACTIVE = _WITH_PROCESS | {TrialPhase.WAITING}


def phase_without_process(state: TrialState) -> TrialPhase:
    """The phase of a stored trial that has no process."""
    return TrialPhase.WAITING if state == TrialState.ACTIVE else TrialPhase(state.value)


def adopted_phase(experiment_state: ExperimentState, stop_requested: bool) -> TrialPhase:
    """The phase of a running process a restarted master adopts: told to exit again when the
    experiment no longer runs or the searcher had stopped the trial."""
    if experiment_state != ExperimentState.ACTIVE or stop_requested:
        return TrialPhase.PREEMPTING
    return TrialPhase.RUNNING


class TrialEvent(enum.Enum):
    LAUNCHED = "launched"  # a run's process started
    LAUNCH_FAILED = "launch failed"  # a run could not even start
    PREEMPT = "preempt"  # the searcher stopped the trial (0.38 Stop): checkpoint and exit
    PAUSE = "pause"  # the experiment paused
    ACTIVATE = "activate"  # the experiment was activated again
    STOP = "stop"  # the experiment is killed, failed or finished: end now
    PREEMPT_TIMED_OUT = "preempt timed out"  # ignored a pause for longer than its timeout
    KILL_GRACE_EXPIRED = "kill grace expired"  # still running long after SIGTERM
    IDLE_CLOSED = "idle closed"  # the searcher closed it and it has nothing left to train
    EXITED_ACTIVE = "exited, to run again"  # outcomes WAITING/RELAUNCH/RESTART
    EXITED_PAUSED = "exited for a pause"
    EXITED_COMPLETED = "exited completed"
    EXITED_CANCELED = "exited canceled"
    EXITED_ERROR = "exited with an error"


class TrialAction(enum.Enum):
    SIGNAL_PREEMPT = "signal preempt"  # nothing to send: the trial polls should_preempt
    START_PREEMPT_CLOCK = "start preempt clock"  # the preemption timeout starts now
    SEND_SIGTERM = "send SIGTERM"
    SEND_SIGKILL = "send SIGKILL"
    RECORD_RUN = "record run"  # store run id, pid, slots
    RELEASE_RUN = "release run"  # forget the process, free its slots
    RECORD_END = "record end"  # store ended_at
    TELL_SEARCHER = "tell searcher"  # the trial ended: exited early (if so) and closed
    FAIL_EXPERIMENT = "fail experiment"


_EXITS = {
    TrialEvent.EXITED_ACTIVE: TrialPhase.WAITING,
    TrialEvent.EXITED_PAUSED: TrialPhase.PAUSED,
    TrialEvent.EXITED_COMPLETED: TrialPhase.COMPLETED,
    TrialEvent.EXITED_CANCELED: TrialPhase.CANCELED,
    TrialEvent.EXITED_ERROR: TrialPhase.ERROR,
}

TrialStep = tuple[TrialPhase, tuple[TrialAction, ...]]
A = TrialAction
P = TrialPhase


def trial_transition(phase: TrialPhase, event: TrialEvent) -> TrialStep:
    """The phase after ``event`` and what to do about it."""
    if event in _EXITS:
        return _exited(phase, event)
    if phase.ended:
        if event in (TrialEvent.LAUNCHED, TrialEvent.LAUNCH_FAILED):
            raise InvalidTransition(f"a {phase.value} trial is never launched")
        return phase, ()  # an ended trial ignores the rest (e.g. a late kill)
    if event is TrialEvent.LAUNCHED:
        if phase is not P.WAITING:
            raise InvalidTransition(f"only a WAITING trial is launched, not a {phase.value} one")
        return P.RUNNING, (A.RECORD_RUN,)
    if event is TrialEvent.LAUNCH_FAILED:
        if phase is not P.WAITING:
            raise InvalidTransition(f"only a WAITING trial is launched, not a {phase.value} one")
        return P.ERROR, (A.RECORD_END, A.TELL_SEARCHER, A.FAIL_EXPERIMENT)
    return _TABLE[event](phase)


def _exited(phase: TrialPhase, event: TrialEvent) -> TrialStep:
    if not phase.has_process:
        raise InvalidTransition(f"a {phase.value} trial has no process that could exit")
    new = _EXITS[event]
    actions = (A.RELEASE_RUN, A.RECORD_END, A.TELL_SEARCHER) if new.ended else (A.RELEASE_RUN,)
    return new, actions


def _preempt(phase: TrialPhase) -> TrialStep:
    # Without a process the stop flag in the trial's row keeps it from starting again.
    return (P.PREEMPTING, (A.SIGNAL_PREEMPT,)) if phase is P.RUNNING else (phase, ())


def _pause(phase: TrialPhase) -> TrialStep:
    if phase is P.WAITING:
        return P.PAUSED, ()
    if phase in (P.RUNNING, P.PREEMPTING):
        return P.PREEMPTING, (A.SIGNAL_PREEMPT, A.START_PREEMPT_CLOCK)
    return phase, ()  # already being terminated, or paused


def _activate(phase: TrialPhase) -> TrialStep:
    # A process still ending for the pause exits PAUSED-less: its exit policy sees ACTIVE.
    return (P.WAITING, ()) if phase is P.PAUSED else (phase, ())


def _stop(phase: TrialPhase) -> TrialStep:
    if phase in (P.WAITING, P.PAUSED):
        return P.CANCELED, (A.RECORD_END,)
    if phase in (P.RUNNING, P.PREEMPTING):
        return P.TERMINATING, (A.SIGNAL_PREEMPT, A.SEND_SIGTERM)
    return phase, ()  # TERMINATING/KILLING: the signals are on their way


def _preempt_timed_out(phase: TrialPhase) -> TrialStep:
    return (P.TERMINATING, (A.SEND_SIGTERM,)) if phase is P.PREEMPTING else (phase, ())


def _kill_grace_expired(phase: TrialPhase) -> TrialStep:
    return (P.KILLING, (A.SEND_SIGKILL,)) if phase is P.TERMINATING else (phase, ())


def _idle_closed(phase: TrialPhase) -> TrialStep:
    # A trial with a process is closed in the search when that process exits.
    if phase in (P.WAITING, P.PAUSED):
        return P.COMPLETED, (A.RECORD_END, A.TELL_SEARCHER)
    return phase, ()


_TABLE = {
    TrialEvent.PREEMPT: _preempt,
    TrialEvent.PAUSE: _pause,
    TrialEvent.ACTIVATE: _activate,
    TrialEvent.STOP: _stop,
    TrialEvent.PREEMPT_TIMED_OUT: _preempt_timed_out,
    TrialEvent.KILL_GRACE_EXPIRED: _kill_grace_expired,
    TrialEvent.IDLE_CLOSED: _idle_closed,
}


# Experiments -----------------------------------------------------------------------------------


class ExperimentEvent(enum.Enum):
    PAUSE = "pause"
    ACTIVATE = "activate"
    KILL = "kill"
    FAILED = "failed"  # a searcher error, or a trial that could not start
    SEARCH_COMPLETED = "search completed"  # searcher shut down, every trial ended
    SEARCH_FAILED = "search failed"  # the same, but the searcher (or every trial) failed
    PROCESSES_GONE = "processes gone"  # a stopping experiment has no trial process left


class ExperimentAction(enum.Enum):
    PAUSE_TRIALS = "pause trials"
    ACTIVATE_TRIALS = "activate trials"
    STOP_TRIALS = "stop trials"
    RECORD_ERROR = "record error"
    FINISH = "finish"  # store the end, cancel what is left, forget the searcher


ES = ExperimentState
EA = ExperimentAction
ExperimentStep = tuple[ExperimentState, tuple[ExperimentAction, ...]]
_SEARCHING = (ES.ACTIVE, ES.PAUSED)
_STOPPING = {ES.STOPPING_CANCELED: ES.CANCELED, ES.STOPPING_ERROR: ES.ERROR}


def experiment_transition(state: ExperimentState, event: ExperimentEvent) -> ExperimentStep:
    """The experiment state after ``event`` and what to do about it. Events that change nothing
    in a state are no-ops: pausing a paused experiment, a searcher error once the experiment is
    already stopping (the first reason, or the user's kill, stands), anything once it ended."""
    if state.ended:
        return state, ()
    if event is ExperimentEvent.KILL:
        # also over STOPPING_ERROR: the user's kill ends it CANCELED, as Determined does
        if state is ES.STOPPING_CANCELED:
            return state, ()
        return ES.STOPPING_CANCELED, (EA.STOP_TRIALS,)
    if event is ExperimentEvent.FAILED:
        if state in _SEARCHING:
            return ES.STOPPING_ERROR, (EA.RECORD_ERROR, EA.STOP_TRIALS)
        return state, ()
    if event is ExperimentEvent.PAUSE:
        return (ES.PAUSED, (EA.PAUSE_TRIALS,)) if state is ES.ACTIVE else (state, ())
    if event is ExperimentEvent.ACTIVATE:
        return (ES.ACTIVE, (EA.ACTIVATE_TRIALS,)) if state is ES.PAUSED else (state, ())
    if event is ExperimentEvent.PROCESSES_GONE:
        return (_STOPPING[state], (EA.FINISH,)) if state in _STOPPING else (state, ())
    # SEARCH_COMPLETED / SEARCH_FAILED: only an ACTIVE experiment ends by its search (a paused
    # one ends once activated; a stopping one ends by PROCESSES_GONE).
    if state is not ES.ACTIVE:
        return state, ()
    final = ES.COMPLETED if event is ExperimentEvent.SEARCH_COMPLETED else ES.ERROR
    return final, (EA.FINISH,)
