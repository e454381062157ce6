"""single and random search, the Shutdown rule and event guards (reference §7.1, §7.2, §7.6.5)."""

from __future__ import annotations

from typing import Any

import pytest

from trialkit.searcher import (
    Close,
    Create,
    DrivenMethod,
    ExitedReason,
    Operation,
    SearcherError,
    Shutdown,
    ValidateAfter,
    make_search_method,
)

SPACE = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}}


def method(name: str = "random", **fields: Any) -> DrivenMethod:
    return make_search_method({"name": name, "metric": "loss", **fields}, SPACE, 0)


def creates(ops: list[Operation]) -> list[str]:
    """Request ids of the Creates in ``ops``, each reported created to the method later."""
    return [op.request_id for op in ops if isinstance(op, Create)]


def start(m: DrivenMethod) -> list[str]:
    ids = creates(m.initial_operations())
    for rid in ids:
        m.on_trial_created(rid)
    return ids


def close(m: DrivenMethod, rid: str) -> list[Operation]:
    ops = m.on_trial_closed(rid)
    for new in creates(ops):
        m.on_trial_created(new)
    return ops


def test_single_037_is_one_triple_then_shutdown() -> None:
    m = method("single", max_length={"epochs": 3})
    ops = m.initial_operations()
    rid = ops[0].request_id  # type: ignore[union-attr]
    assert ops[1:] == [ValidateAfter(rid, 3), Close(rid)]
    m.on_trial_created(rid)
    assert m.on_validation_completed(rid, {"loss": 0.5}, 3) == []
    assert m.progress() == 0.0
    assert m.on_trial_closed(rid) == [Shutdown()]
    assert m.progress() == 1.0


def test_single_038_creates_only_and_never_replaces_invalid_hp() -> None:
    m = method("single")
    ops = m.initial_operations()
    assert len(ops) == 1 and isinstance(ops[0], Create)
    rid = ops[0].request_id
    m.on_trial_created(rid)
    assert m.on_trial_exited_early(rid, ExitedReason.INVALID_HP) == []
    assert m.on_trial_closed(rid) == [Shutdown()]


@pytest.mark.parametrize(("trials", "concurrency", "initial"), [(5, 2, 2), (5, 0, 5), (3, 16, 3)])
def test_random_initial_trials(trials: int, concurrency: int, initial: int) -> None:
    m = method(max_trials=trials, max_concurrent_trials=concurrency)
    assert len(start(m)) == initial


def test_random_creates_one_per_close_until_max_trials() -> None:
    m = method(max_trials=5, max_concurrent_trials=2, max_length=10)
    running = start(m)
    total = len(running)
    last: list[Operation] = []
    while running:
        last = close(m, running.pop(0))
        new = creates(last)
        if new:
            rid = new[0]
            assert last == [last[0], ValidateAfter(rid, 10), Close(rid)]
        running += new
        total += len(new)
    assert total == 5
    assert last == [Shutdown()]


def test_random_replaces_invalid_hp_when_that_trial_closes() -> None:
    m = method(max_trials=2, max_concurrent_trials=2)
    a, b = start(m)
    assert m.on_trial_exited_early(a, ExitedReason.INVALID_HP) == []
    replacement = creates(close(m, a))
    assert len(replacement) == 1  # the InvalidHP trial did not use up the budget
    assert creates(close(m, b)) == []
    assert close(m, replacement[0]) == [Shutdown()]


def test_errors_and_cancels_do_not_replace_and_set_shutdown_flags() -> None:
    m = method(max_trials=2, max_concurrent_trials=2)
    a, b = start(m)
    m.on_trial_exited_early(a, ExitedReason.ERRORED)
    m.on_trial_exited_early(a, ExitedReason.USER_CANCELED)  # a second report is ignored
    m.on_trial_exited_early(b, ExitedReason.ERRORED)
    assert close(m, a) == []
    assert close(m, b) == [Shutdown(cancel=False, failure=True)]

    m = method(max_trials=2, max_concurrent_trials=2)
    a, b = start(m)
    m.on_trial_exited_early(a, ExitedReason.USER_CANCELED)
    m.on_trial_exited_early(b, ExitedReason.USER_CANCELED)
    close(m, a)
    assert close(m, b) == [Shutdown(cancel=True, failure=False)]

    m = method(max_trials=2, max_concurrent_trials=2)
    a, b = start(m)
    m.on_trial_exited_early(a, ExitedReason.USER_CANCELED)
    m.on_trial_exited_early(b, ExitedReason.ERRORED)
    close(m, a)
    assert close(m, b) == [Shutdown()]


def test_random_progress_037_and_038() -> None:
    m = method(max_trials=2, max_concurrent_trials=2, max_length=10)
    a, b = start(m)
    m.on_trial_progress(a, 4)
    assert m.progress() == pytest.approx(4 / 20)
    m.on_trial_progress(b, float("inf"))  # NaN/Inf count as 0
    m.on_trial_progress(b, "soon")  # type: ignore[arg-type]  # so does a non-number
    assert m.progress() == pytest.approx(4 / 20)
    m.on_validation_completed(a, {"loss": 1.0}, 10)
    close(m, a)
    assert m.progress() == pytest.approx(10 / 20)

    m = method(max_trials=4, max_concurrent_trials=2)  # 0.38: mean over the trials so far
    assert m.progress() == 0.0
    a, b = start(m)
    m.on_trial_progress(a, 0.5)
    m.on_trial_progress(b, 0.25)
    assert m.progress() == pytest.approx(0.75 / 2)
    m.on_trial_exited_early(b, ExitedReason.INVALID_HP)  # removed: it will be replaced
    assert m.progress() == pytest.approx(0.5 / 1)
    creates(close(m, a))  # a new trial starts at 0
    assert m.progress() == pytest.approx((1.0 + 0.0) / 2)


def test_037_completion_must_match_the_outstanding_operation() -> None:
    m = method(max_trials=1, max_length=10)
    (rid,) = start(m)
    with pytest.raises(SearcherError, match="expected op ValidateAfter"):
        m.on_validation_completed(rid, {"loss": 1.0}, 5)
    m.on_validation_completed(rid, {"loss": 1.0}, 10)
    with pytest.raises(SearcherError, match=rid):
        m.on_validation_completed(rid, {"loss": 1.0}, 10)  # already completed


def test_unknown_trials_and_double_start_are_errors() -> None:
    m = method(max_trials=1)
    start(m)
    with pytest.raises(SearcherError, match="nope"):
        m.on_trial_closed("nope")
    with pytest.raises(SearcherError, match="nope"):
        m.on_validation_completed("nope", {"loss": 1.0})
    with pytest.raises(SearcherError):
        m.initial_operations()
    assert m.on_trial_progress("nope", 0.5) == []  # progress noise is ignored


def test_038_reports_are_ignored_by_random() -> None:
    m = method(max_trials=1)
    (rid,) = start(m)
    assert m.on_validation_completed(rid, {"anything": "NaN"}) == []


def test_config_errors_are_collected() -> None:
    with pytest.raises(ValueError) as info:
        make_search_method(
            {"name": "random", "max_trials": 0, "max_concurrent_trials": -1, "max_length": "x"},
            SPACE,
            0,
        )
    message = str(info.value)
    for field in ("max_trials", "max_concurrent_trials", "max_length"):
        assert f"searcher.{field}" in message
    with pytest.raises(ValueError, match="searcher.name"):
        make_search_method({"name": "bayes"}, SPACE, 0)
    with pytest.raises(ValueError, match="searcher: async_halving needs a training length"):
        make_search_method({"name": "async_halving", "num_rungs": 2, "max_trials": 4}, SPACE, 0)
    with pytest.raises(ValueError, match="searcher.max_length: adaptive_asha needs a length >= 1"):
        make_search_method(
            {"name": "adaptive_asha", "metric": "loss", "max_trials": 4, "max_length": 0}, SPACE, 0
        )


def test_each_invalid_hp_trial_is_replaced_once() -> None:
    m = method(max_trials=3, max_concurrent_trials=3)
    a, b, c = start(m)
    m.on_trial_exited_early(a, ExitedReason.INVALID_HP)
    replacement = creates(close(m, a))
    assert len(replacement) == 1
    assert creates(close(m, b)) == [] and creates(close(m, c)) == []
    assert close(m, replacement[0]) == [Shutdown()]


def test_events_about_a_trial_the_search_never_created_are_refused_by_name() -> None:
    m = method(max_trials=1)
    start(m)
    events = [
        ("trial created", lambda: m.on_trial_created("nope")),
        ("validation completed", lambda: m.on_validation_completed("nope", {"loss": 1.0})),
        ("trial exited early", lambda: m.on_trial_exited_early("nope", ExitedReason.ERRORED)),
        ("trial closed", lambda: m.on_trial_closed("nope")),
    ]
    for event, call in events:
        with pytest.raises(SearcherError) as err:
            call()
        assert str(err.value) == f"{event}: unknown trial request_id 'nope'"
    with pytest.raises(SearcherError) as err:
        m.initial_operations()
    assert str(err.value) == "initial_operations() was already called for this search"
