"""Pure supervision policies: a trial's fate when its process exits, whether it wants a process,
and when an experiment ends (reference §7.1, §7.6.4)."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from trialkit.master.engine._policies import (
    RESTART_DELAY_MAX,
    ExitFacts,
    Outcome,
    experiment_done,
    experiment_error,
    failure_reason,
    final_experiment_state,
    on_exit,
    restart_delay,
    trial_state_for,
    wants_process,
)
from trialkit.store import ExperimentState as E
from trialkit.store import Trial
from trialkit.store import TrialState as T

#: A clean, acknowledged exit of an active 0.38 trial with restarts to spare.
BASE = ExitFacts(
    exit_code=0,
    acked=True,
    early_exit=None,
    experiment_state=E.ACTIVE,
    generation="0.38",
    closed=False,
    op_complete=False,
    stop_requested=False,
    restarts=0,
    max_restarts=5,
)


def facts(**changes: object) -> ExitFacts:
    return dataclasses.replace(BASE, **changes)  # type: ignore[arg-type]


# on_exit ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("state", [E.STOPPING_CANCELED, E.CANCELED])
@pytest.mark.parametrize("code", [0, 1, -9])
def test_canceled_experiment_cancels_the_trial_whatever_the_exit(state: E, code: int) -> None:
    assert on_exit(facts(experiment_state=state, exit_code=code)) is Outcome.CANCELED


@pytest.mark.parametrize("state", [E.STOPPING_ERROR, E.ERROR])
def test_erroring_experiment_errors_failed_trials_and_cancels_clean_ones(state: E) -> None:
    assert on_exit(facts(experiment_state=state, exit_code=1)) is Outcome.ERROR
    assert on_exit(facts(experiment_state=state, exit_code=0)) is Outcome.CANCELED


@pytest.mark.parametrize("code", [0, 1])
def test_paused_experiment_pauses_the_trial(code: int) -> None:
    outcome = on_exit(facts(experiment_state=E.PAUSED, exit_code=code, restarts=5))
    assert outcome is Outcome.PAUSED


def test_crash_restarts_while_restarts_remain() -> None:
    assert on_exit(facts(exit_code=1, restarts=0)) is Outcome.RESTART
    assert on_exit(facts(exit_code=-9, restarts=4)) is Outcome.RESTART
    assert on_exit(facts(exit_code=1, restarts=5)) is Outcome.ERROR
    assert on_exit(facts(exit_code=1, restarts=0, max_restarts=0)) is Outcome.ERROR


def test_crash_restarts_even_if_it_had_acked() -> None:
    assert on_exit(facts(exit_code=2, acked=True)) is Outcome.RESTART
    assert on_exit(facts(exit_code=2, acked=True, generation="0.37")) is Outcome.RESTART


@pytest.mark.parametrize("acked", [True, False])
def test_crash_after_the_last_op_completed_keeps_the_result(acked: bool) -> None:
    """A 0.37 trial that fails after report_completed gets no op from a restart, so it would
    stay ACTIVE with no process: its result stands (issue 12 item 3)."""
    done = facts(exit_code=2, acked=acked, generation="0.37", op_complete=True, restarts=5)
    assert on_exit(dataclasses.replace(done, closed=True)) is Outcome.COMPLETED
    assert on_exit(dataclasses.replace(done, closed=False)) is Outcome.WAITING
    for f in (done, dataclasses.replace(done, closed=True)):
        outcome = on_exit(f)
        assert outcome is not Outcome.RESTART or wants_process(
            trial_state_for(outcome), E.ACTIVE, "0.37", f.op_complete, f.stop_requested
        )


@pytest.mark.parametrize("gen", ["0.37", "0.38"])
def test_crash_after_a_searcher_stop_completes_the_trial(gen: str) -> None:
    assert on_exit(facts(exit_code=-15, stop_requested=True, generation=gen)) is Outcome.COMPLETED


def test_every_restart_leads_to_a_new_process() -> None:
    """Whatever the facts, RESTART and RELAUNCH only happen to trials that want a process."""
    for code, gen, closed, done, stop, acked in itertools.product(
        [0, 1, -9], ["0.37", "0.38"], [True, False], [True, False], [True, False], [True, False]
    ):
        f = facts(exit_code=code, generation=gen, closed=closed, op_complete=done,
                  stop_requested=stop, acked=acked)  # fmt: skip
        if on_exit(f) in (Outcome.RESTART, Outcome.RELAUNCH):
            assert wants_process(T.ACTIVE, E.ACTIVE, gen, done, stop), f


def test_the_same_silent_failure_twice_is_not_restarted() -> None:
    """Issue 13 item 5: failing twice in a row the same way before reporting anything."""
    again = facts(exit_code=1, reported=False, failure="ModuleNotFoundError: x",
                  previous_silent_failure="ModuleNotFoundError: x")  # fmt: skip
    assert on_exit(again) is Outcome.ERROR
    assert on_exit(dataclasses.replace(again, previous_silent_failure=None)) is Outcome.RESTART
    assert on_exit(dataclasses.replace(again, previous_silent_failure="exit code 1")) is (
        Outcome.RESTART
    )
    assert on_exit(dataclasses.replace(again, reported=True)) is Outcome.RESTART


def test_restart_delay_doubles_from_one_second_up_to_a_minute() -> None:
    delays = [restart_delay(n) for n in range(10)]
    assert delays[:7] == [1, 2, 4, 8, 16, 32, 60]
    assert all(d == RESTART_DELAY_MAX == 60 for d in delays[6:])
    assert restart_delay(10**6) == 60


def test_failure_reason_is_the_exception_line_of_the_last_traceback() -> None:
    lines = [
        "step 1",
        "Traceback (most recent call last):",
        '  File "t.py", line 3, in <module>',
        "    raise KeyError('a')",
        "KeyError: 'a'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "t.py", line 5, in <module>',
        "    boom()",
        "    ^^^^^^",
        "ValueError: boom",
        "cleanup done",
    ]
    assert failure_reason(1, lines) == "ValueError: boom"


def test_failure_reason_of_a_multi_line_exception_carries_its_cause() -> None:
    # TensorFlow's: the first line only introduces the cause, told on the last indented line.
    lines = [
        "Traceback (most recent call last):",
        '  File "train.py", line 9, in <module>',
        "    model.fit(x, y)",
        "ValueError: in user code:",
        "",
        '    File "keras/engine/training.py", line 1160, in train_function  *',
        "        return step_function(self, iterator)",
        '    ValueError: Input 0 of layer "dense" is incompatible with the layer: expected '
        "axis -1 of input shape to have value 784, but received input with shape (None, 28)",
        "",
        "[trialkit] run 1 exited with code 1",
    ]
    reason = failure_reason(1, lines)
    assert reason.startswith("ValueError: in user code: … ValueError: Input 0 of layer"), reason
    assert "(None, 28)" in reason


def test_failure_reason_without_traceback_is_exit_code_or_signal_and_last_lines() -> None:
    lines = ["a", "", "b", "c", "d"]
    assert failure_reason(3, lines) == "exit code 3; last output: b | c | d"
    assert failure_reason(-9, []) == "killed by signal SIGKILL"
    lost = failure_reason(-9, ["Traceback (most recent call last):", "E: x"], supervisor_lost=True)
    assert lost == "its supervisor was killed (the run's processes were stopped)"


def test_experiment_error_names_the_first_failed_trial() -> None:
    def trial(id: int, state: T, error: str | None, restarts: int) -> Trial:
        return Trial(id=id, experiment_id=1, request_id="r", hparams={}, seed=0, state=state,
                     restarts=restarts, run_id=1, op_length=None, op_complete=False, closed=False,
                     stop_requested=False, acked_run_id=None, early_exit=None, progress=None,
                     status=None, error=error, pid=None, pid_started=None,
                     log_offset=0, slots=[], created_at=0.0, ended_at=None)  # fmt: skip

    one = [trial(3, T.ERROR, "ValueError: boom", 5), trial(4, T.COMPLETED, None, 0)]
    assert experiment_error(one) == "trial 3 failed: ValueError: boom (restarted 5 times)"
    two = [*one, trial(5, T.ERROR, "exit code 1", 0)]
    assert experiment_error(two) == (
        "2 trials failed; trial 3 failed: ValueError: boom (restarted 5 times)"
    )
    once = [trial(6, T.ERROR, "ValueError: boom", 1)]
    assert experiment_error(once) == "trial 6 failed: ValueError: boom (restarted once)"


def test_clean_exit_without_ack_completes_the_trial() -> None:
    """An un-acked exit 0 means 'trial finished' (reference §1.4)."""
    assert on_exit(facts(acked=False)) is Outcome.COMPLETED
    assert on_exit(facts(acked=False, generation="0.37", op_complete=False)) is Outcome.COMPLETED


def test_early_exit_completes_the_trial_even_when_acked() -> None:
    assert on_exit(facts(early_exit="INVALID_HP")) is Outcome.COMPLETED
    assert on_exit(facts(early_exit="USER_REQUESTED_STOP", generation="0.37")) is Outcome.COMPLETED


def test_acked_exit_after_a_searcher_stop_completes_the_trial() -> None:
    assert on_exit(facts(stop_requested=True)) is Outcome.COMPLETED
    assert on_exit(facts(stop_requested=True, generation="0.37")) is Outcome.COMPLETED


def test_acked_exit_in_0_38_relaunches() -> None:
    assert on_exit(facts()) is Outcome.RELAUNCH


def test_acked_exit_in_0_37_follows_the_op_and_close_flags() -> None:
    """§7.6.4: unfinished op → run again now; finished and closed → done; finished and not
    closed → wait (no process) for a promotion."""
    g = "0.37"
    assert on_exit(facts(generation=g, op_complete=False)) is Outcome.RELAUNCH
    assert on_exit(facts(generation=g, op_complete=False, closed=True)) is Outcome.RELAUNCH
    assert on_exit(facts(generation=g, op_complete=True, closed=True)) is Outcome.COMPLETED
    assert on_exit(facts(generation=g, op_complete=True, closed=False)) is Outcome.WAITING


def test_every_combination_has_an_outcome_with_a_trial_state() -> None:
    states = list(E)
    for state, code, acked, early, gen, closed, done, stop in itertools.product(
        states, [0, 1], [True, False], [None, "INVALID_HP"], ["0.37", "0.38"],
        [True, False], [True, False], [True, False],
    ):  # fmt: skip
        f = facts(experiment_state=state, exit_code=code, acked=acked, early_exit=early,
                  generation=gen, closed=closed, op_complete=done, stop_requested=stop)  # fmt: skip
        outcome = on_exit(f)
        assert isinstance(outcome, Outcome)
        if outcome is Outcome.WAITING:
            assert gen == "0.37" and done and not closed and (acked or code != 0)


def test_trial_state_for_each_outcome() -> None:
    assert trial_state_for(Outcome.COMPLETED) is T.COMPLETED
    assert trial_state_for(Outcome.PAUSED) is T.PAUSED
    assert trial_state_for(Outcome.ERROR) is T.ERROR
    assert trial_state_for(Outcome.CANCELED) is T.CANCELED
    for still_active in (Outcome.WAITING, Outcome.RELAUNCH, Outcome.RESTART):
        assert trial_state_for(still_active) is T.ACTIVE


# wants_process ---------------------------------------------------------------------------------


@pytest.mark.parametrize("gen", ["0.37", "0.38"])
def test_only_active_trials_of_active_experiments_want_a_process(gen: str) -> None:
    for exp_state, trial_state in itertools.product(E, T):
        wanted = wants_process(trial_state, exp_state, gen, op_complete=False, stop_requested=False)
        assert wanted == (exp_state is E.ACTIVE and trial_state is T.ACTIVE)


def test_stop_requested_trials_want_no_process() -> None:
    assert not wants_process(T.ACTIVE, E.ACTIVE, "0.38", op_complete=False, stop_requested=True)
    assert not wants_process(T.ACTIVE, E.ACTIVE, "0.37", op_complete=False, stop_requested=True)


def test_0_37_trials_want_a_process_only_for_an_unfinished_op() -> None:
    assert wants_process(T.ACTIVE, E.ACTIVE, "0.37", op_complete=False, stop_requested=False)
    assert not wants_process(T.ACTIVE, E.ACTIVE, "0.37", op_complete=True, stop_requested=False)


def test_0_38_trials_want_a_process_until_they_end() -> None:
    assert wants_process(T.ACTIVE, E.ACTIVE, "0.38", op_complete=True, stop_requested=False)
    assert wants_process(T.ACTIVE, E.ACTIVE, "0.38", op_complete=False, stop_requested=False)


# experiment_done / final_experiment_state ------------------------------------------------------


def test_experiment_is_done_once_the_searcher_shut_down_and_all_trials_ended() -> None:
    assert experiment_done(True, [T.COMPLETED, T.ERROR, T.CANCELED])
    assert experiment_done(True, [])
    assert not experiment_done(False, [T.COMPLETED])
    assert not experiment_done(True, [T.COMPLETED, T.ACTIVE])
    assert not experiment_done(True, [T.PAUSED])


def test_final_state_is_error_only_when_every_trial_errored_or_the_searcher_failed() -> None:
    assert final_experiment_state([T.ERROR, T.ERROR], searcher_failure=False) is E.ERROR
    assert final_experiment_state([T.ERROR, T.COMPLETED], searcher_failure=False) is E.COMPLETED
    assert final_experiment_state([T.COMPLETED], searcher_failure=True) is E.ERROR
    assert final_experiment_state([T.CANCELED, T.COMPLETED], searcher_failure=False) is E.COMPLETED
    assert final_experiment_state([], searcher_failure=False) is E.COMPLETED
    assert final_experiment_state([], searcher_failure=True) is E.ERROR
