"""The master's side of a custom searcher run in the user's process (EventQueueMethod): the events
a runner polls, the acknowledgement of its operations, trial progress, and its saved state."""

from __future__ import annotations

import json
import math
import uuid

import pytest

from trialkit.searcher import (
    Create,
    EventQueueMethod,
    ExitedReason,
    SearcherError,
    ValidateAfter,
)

RID = str(uuid.uuid4())


def _queue(length: int = 10) -> EventQueueMethod:
    """A queue whose trial RID was created with ValidateAfter(length) in flight (events 1, 2)."""
    q = EventQueueMethod("loss", 5)
    q.initial_operations()
    q.record([Create(RID, {"x": 1}), ValidateAfter(RID, length)])
    q.on_trial_created(RID)
    return q


def test_each_event_is_queued_with_its_fields_in_order() -> None:
    q = _queue()
    other = str(uuid.uuid4())
    q.on_validation_completed(RID, {"loss": 0.5, "acc": 0.1})
    q.on_trial_exited_early(RID, ExitedReason.INVALID_HP)
    q.on_trial_closed(RID)
    q.on_validation_completed(other, 0.25, 7)  # a bare value is the metric; no op in flight
    q.on_trial_exited_early(other, "USER_CANCELED")  # type: ignore[arg-type]
    q.on_trial_closed(other)
    assert q.events_after(0) == [
        {"id": 1, "kind": "initial_operations"},
        {"id": 2, "kind": "trial_created", "request_id": RID},
        {"id": 3, "kind": "validation_completed", "request_id": RID, "metric": 0.5, "length": 10},
        {"id": 4, "kind": "trial_exited_early", "request_id": RID, "reason": "INVALID_HP"},
        {"id": 5, "kind": "trial_closed", "request_id": RID},
        {"id": 6, "kind": "validation_completed", "request_id": other, "metric": 0.25, "length": 7},
        {"id": 7, "kind": "trial_exited_early", "request_id": other, "reason": "USER_CANCELED"},
        {"id": 8, "kind": "trial_closed", "request_id": other},
    ]
    assert q.events_after(7) == [{"id": 8, "kind": "trial_closed", "request_id": other}]


def test_a_report_without_length_is_for_the_operation_in_flight_else_0() -> None:
    q = _queue(length=12)
    q.on_validation_completed(RID, {"loss": 0.5})
    q.on_validation_completed(RID, {"loss": 0.4})  # the operation was completed already
    assert [(e["length"], e["metric"]) for e in q.events_after(2)] == [(12, 0.5), (0, 0.4)]


def test_trial_progress_is_raw_units_over_the_operation_in_flight() -> None:
    q = _queue(length=10)
    assert q.trial_progress == {RID: 0.0}  # a created trial starts at 0
    seen = []
    for raw in (2.5, 25.0, -4.0, 6.0, math.nan, math.inf):
        assert q.on_trial_progress(RID, raw) == []
        seen.append(q.trial_progress[RID])
    assert seen == [0.25, 1.0, 0.0, 0.6, 0.6, 0.6]  # held to [0, 1]; not a number: ignored
    idle = str(uuid.uuid4())
    q.on_trial_created(idle)
    q.on_trial_progress(idle, 3.0)  # nothing in flight: nothing to measure against
    assert q.trial_progress[idle] == 0.0
    assert [e["kind"] for e in q.events_after(2)] == ["trial_created"]  # progress: no event


@pytest.mark.parametrize("end", ["validation", "exited", "closed"])
def test_a_trial_whose_operation_ended_no_longer_moves_its_progress(end: str) -> None:
    q = _queue(length=10)
    q.on_trial_progress(RID, 5.0)
    if end == "validation":
        q.on_validation_completed(RID, {"loss": 0.1})
    elif end == "exited":
        q.on_trial_exited_early(RID, ExitedReason.ERRORED)
    else:
        q.on_trial_closed(RID)
    expected = 1.0 if end == "validation" else 0.5
    assert q.trial_progress[RID] == expected
    q.on_trial_progress(RID, 8.0)
    assert q.trial_progress[RID] == expected
    assert q.save()["inflight"] == {}


def test_a_trial_with_nothing_in_flight_can_exit_and_close() -> None:
    q = EventQueueMethod("loss", 5)
    q.on_trial_created(RID)
    q.on_trial_exited_early(RID, ExitedReason.ERRORED)
    q.on_trial_closed(RID)
    assert [e["kind"] for e in q.events_after(0)] == [
        "trial_created",
        "trial_exited_early",
        "trial_closed",
    ]


def test_acknowledging_drops_the_answered_events_and_sets_the_progress() -> None:
    q = _queue()
    q.on_trial_closed(RID)  # event 3
    assert q.progress() == 0.0  # nothing reported yet
    assert q.acknowledge(1, None) is True  # the first event can be acknowledged
    assert q.progress() == 0.0
    assert q.acknowledge(2, 0.4) is True
    assert [e["id"] for e in q.events_after(0)] == [3]
    assert q.acknowledge(3, None) is True and q.progress() == 0.4  # no progress: kept
    assert q.events_after(0) == []
    with pytest.raises(SearcherError) as e:
        q.acknowledge(4, 0.5)  # one past the latest event
    assert str(e.value) == "searcher operations for event 4, but the latest event is 3"


@pytest.mark.parametrize(("reported", "shown"), [(1.5, 1.0), (-1.0, 0.0), (math.nan, 0.3)])
def test_the_reported_progress_is_held_to_0_1_and_not_a_number_is_ignored(
    reported: float, shown: float
) -> None:
    q = _queue()
    q.acknowledge(1, 0.3)
    q.acknowledge(2, reported)
    assert q.progress() == shown


def test_creates_get_seeds_from_the_experiment_seed() -> None:
    def seeds(q: EventQueueMethod) -> list[int | None]:
        ops = q.record([Create(uuid.uuid4(), {}), Create(uuid.uuid4(), {}, None, 42)])
        return [op.trial_seed for op in ops if isinstance(op, Create)]

    first = seeds(EventQueueMethod("loss", 5))
    assert first == seeds(EventQueueMethod("loss", 5)) and first[1] == 42
    assert first[0] != seeds(EventQueueMethod("loss", 6))[0]


def test_a_reloaded_queue_continues_where_the_saved_one_was() -> None:
    q = _queue(length=10)
    q.on_trial_progress(RID, 4.0)
    q.acknowledge(1, 0.7)
    restored = EventQueueMethod("loss", 5)
    restored.load(json.loads(json.dumps(q.save())))
    assert restored.progress() == 0.7
    assert restored.trial_progress == {RID: 0.4}
    assert restored.events_after(0) == q.events_after(0)
    # the operation in flight, the event ids and the seed draws continue
    for queue in (q, restored):
        queue.on_trial_progress(RID, 5.0)
        queue.on_validation_completed(RID, {"loss": 0.2})
        queue.record([Create(RID, {})])
    assert restored.trial_progress == q.trial_progress == {RID: 1.0}
    assert restored.events_after(2) == q.events_after(2)
    assert restored.events_after(2)[0]["id"] == 3 and restored.events_after(2)[0]["length"] == 10
    assert restored.save() == q.save()


def test_load_refuses_another_searchers_state() -> None:
    with pytest.raises(SearcherError) as e:
        EventQueueMethod("loss", 5).load({"kind": "custom"})
    assert str(e.value) == "searcher state: not a remote custom searcher's state"
