"""The searcher's own bookkeeping around every strategy (``_searcher.Searcher``): late and repeated
events, the operation in flight, the Shutdown flags of a one-trial search, progress held to
[0, 1], and a saved state that reloads to the same state."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.unit.searcher.test_searcher_random import method, start
from trialkit.searcher import DrivenMethod, ExitedReason, SearcherError, Shutdown, Stop


def reloaded(m: DrivenMethod) -> DrivenMethod:
    """A random search built from the same config, loaded from ``m``'s saved state (via JSON)."""
    saved = json.loads(json.dumps(m.save()))
    again = method(**FIELDS["random"])
    again.load(saved)
    assert again.save() == saved  # the reload holds exactly what was saved
    return again


FIELDS: dict[str, dict[str, Any]] = {
    "random": {"max_trials": 2, "max_concurrent_trials": 2, "max_length": 10},
    "single": {"max_length": 10},
}


def test_a_second_completion_of_one_operation_says_none_is_in_flight() -> None:
    m = method(**FIELDS["random"])
    rid, _ = start(m)
    m.on_validation_completed(rid, {"loss": 1.0}, 10)
    with pytest.raises(SearcherError) as e:
        m.on_validation_completed(rid, {"loss": 1.0}, 10)
    assert str(e.value) == (
        f"trial {rid}: reported a completed operation (length 10) but has no operation in flight"
        " (already completed?)"
    )


def test_loading_another_searchers_state_says_what_differs_and_what_load_needs() -> None:
    saved = method("single", max_length=10).save()
    with pytest.raises(SearcherError) as e:
        method(**FIELDS["random"]).load(saved)
    assert str(e.value) == (
        "searcher state: got (version, searcher, generation) (1, 'single', '0.37'); expected"
        " (1, 'random', '0.37') (load() needs a search method built from the same config)"
    )


@pytest.mark.parametrize(
    ("reason", "shutdown"),
    [
        (ExitedReason.ERRORED, Shutdown(failure=True)),
        (ExitedReason.USER_CANCELED, Shutdown(cancel=True)),
    ],
)
def test_a_one_trial_search_whose_trial_failed_shuts_down_failed(
    reason: ExitedReason, shutdown: Shutdown
) -> None:
    m = method("single", max_length=10)
    (rid,) = start(m)
    m.on_trial_exited_early(rid, reason)
    assert m.on_trial_closed(rid) == [shutdown]


@pytest.mark.parametrize("end", ["exited", "closed"])
def test_a_trial_that_ended_has_no_operation_in_flight(end: str) -> None:
    m = method(**FIELDS["random"])
    rid, _ = start(m)
    assert m.outstanding(rid) == 10
    if end == "exited":
        m.on_trial_exited_early(rid, ExitedReason.ERRORED)
    else:
        m.on_trial_closed(rid)  # e.g. killed while training towards its target
    assert m.outstanding(rid) is None


def test_exits_told_again_after_a_close_or_a_reload_count_once() -> None:
    """The master may tell an exit twice (its reconciliation after a restart): only the first
    counts, so one errored trial of two does not fail the search."""
    m = method(**FIELDS["random"])
    a, b = start(m)
    m.on_trial_exited_early(a, ExitedReason.ERRORED)
    m = reloaded(m)
    assert m.on_trial_exited_early(a, ExitedReason.ERRORED) == []
    m.on_trial_closed(a)
    m.on_validation_completed(b, {"loss": 0.5}, 10)
    assert m.on_trial_closed(b) == [Shutdown()]

    m = method(**FIELDS["random"])
    a, b = start(m)
    m.on_validation_completed(a, {"loss": 0.5}, 10)
    m.on_trial_closed(a)
    assert m.on_trial_exited_early(a, ExitedReason.ERRORED) == []  # it had closed already
    m.on_trial_exited_early(b, ExitedReason.ERRORED)
    assert m.on_trial_closed(b) == [Shutdown()]


def test_a_saved_state_reloads_to_the_same_state_at_every_stage() -> None:
    m = reloaded(method(**FIELDS["random"]))  # saved before it started
    assert m.save()["started"] is False
    a, b = start(m)
    m.on_trial_progress(a, 4)
    m = reloaded(m)
    m.on_trial_exited_early(a, ExitedReason.USER_CANCELED)
    m = reloaded(m)
    assert m.save()["exited_early"] == {a: "USER_CANCELED"}
    m.on_trial_closed(a)
    m.on_validation_completed(b, {"loss": 0.5}, 10)
    assert m.on_trial_closed(b) == [Shutdown()]
    m = reloaded(m)
    assert m.save()["done"] is True
    assert m.on_validation_completed(b, {"loss": 0.1}, 10) == []  # the search is over


def test_only_a_replaced_invalid_hp_trial_leaves_the_progress() -> None:
    """random replaces an InvalidHP trial, so its progress goes; an errored one still counts,
    and single (never replacing) counts its InvalidHP trial as done."""
    m = method(**FIELDS["random"])
    a, b = start(m)
    m.on_trial_progress(a, 5)
    m.on_trial_progress(b, 5)
    m.on_trial_exited_early(a, ExitedReason.ERRORED)
    m.on_trial_closed(a)
    assert m.progress() == pytest.approx((10 + 5) / 20)
    m.on_trial_exited_early(b, ExitedReason.INVALID_HP)
    assert m.progress() == pytest.approx(10 / 20)

    m = method("single", max_length=10)
    (rid,) = start(m)
    m.on_trial_progress(rid, 5)
    m.on_trial_exited_early(rid, ExitedReason.INVALID_HP)
    assert m.progress() == pytest.approx(0.5)
    m.on_trial_closed(rid)
    assert m.progress() == 1.0


def test_progress_stays_within_0_and_1_whatever_trials_report() -> None:
    m = method(**FIELDS["random"])
    a, b = start(m)
    m.on_trial_progress(a, 50)  # five times its target
    m.on_trial_progress(b, 50)
    assert m.progress() == 1.0
    huge = sys.float_info.max
    m.on_trial_progress(a, huge)
    m.on_trial_progress(b, huge)  # the running sum overflows to inf
    m.on_trial_progress(a, -huge)  # inf - inf: not a number
    assert m.progress() == 0.0


@pytest.mark.parametrize("end", ["stop", "exited", "closed"])
def test_038_a_report_after_stop_exit_or_close_is_not_read(end: str) -> None:
    """Even one the strategy would refuse (no searcher metric): the trial is done with. (A
    trial that closed by itself, never stopped, is not done with as far as ASHA knows.)"""
    m = method(
        "async_halving",
        num_rungs=2,
        divisor=4,
        max_trials=2,
        max_concurrent_trials=2,
        time_metric="batches",
        max_time=100,
    )
    a, b = start(m)
    assert m.on_validation_completed(a, {"loss": 0.1, "batches": 25}) == []
    if end == "stop":
        assert m.on_validation_completed(b, {"loss": 0.9, "batches": 25}) == [Stop(b)]
        late = b
    elif end == "exited":
        m.on_trial_exited_early(a, ExitedReason.ERRORED)
        late = a
    else:
        m.on_trial_closed(a)
        late = a
    assert m.on_validation_completed(late, {"batches": 30}) == []
    with pytest.raises(SearcherError, match="searcher metric 'loss'"):
        m.on_validation_completed(b if late == a else a, {"batches": 30})
