"""Custom searchers without processes: the 0.37 SearchMethod API through CustomMethod (in the
master) and EventQueueMethod (events for a runner in the user's process)."""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

import numpy as np
import pytest

from tests import paths
from trialkit.searcher import (
    Close,
    Create,
    CustomMethod,
    EventQueueMethod,
    ExitedReason,
    SearcherError,
    SearcherState,
    SearchMethod,
    Shutdown,
    ValidateAfter,
    decode_operation,
    encode_operation,
)

sys.path.insert(0, str(paths.EXAMPLES / "custom_searcher"))
from searcher import HalfwayRandomSearch  # noqa: E402


def play(method: CustomMethod, reload_at: int | None, metrics: list[float]) -> list[Any]:
    """Run the search to Shutdown, feeding metrics in order; optionally save/JSON/load midway."""
    log: list[Any] = []
    inflight: dict[str, int] = {}
    pending = list(method.initial_operations())
    step = 0
    while True:
        while pending:
            op = pending.pop(0)
            log.append(op if not isinstance(op, Create) else ("create", op.hparams, op.trial_seed))
            if isinstance(op, Create):
                pending += method.on_trial_created(op.request_id)
            elif isinstance(op, ValidateAfter):
                inflight[op.request_id] = op.length
            elif isinstance(op, Close):
                pending += method.on_trial_closed(op.request_id)
            elif isinstance(op, Shutdown):
                return [x if not hasattr(x, "request_id") else type(x).__name__ for x in log]
        if step == reload_at:
            saved = json.loads(json.dumps(method.save()))
            method = CustomMethod(HalfwayRandomSearch(max_trials=8, seed=3), 99, "loss")
            method.load(saved)
        rid = next(iter(inflight))
        length = inflight.pop(rid)
        pending += method.on_validation_completed(
            rid, {"loss": metrics[step % len(metrics)]}, length
        )
        step += 1


def test_custom_method_runs_the_example_to_shutdown_and_resumes_identically() -> None:
    metrics = [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.9, 0.1, 0.55, 0.45]

    def fresh() -> CustomMethod:
        return CustomMethod(HalfwayRandomSearch(max_trials=8, seed=3), 99, "loss")

    full = play(fresh(), None, metrics)
    assert isinstance(full[-1], Shutdown)
    assert sum(1 for x in full if isinstance(x, tuple)) == 8
    # Creates without a trial_seed get seeds drawn from the experiment seed: deterministic.
    assert all(isinstance(x[2], int) for x in full if isinstance(x, tuple))
    for reload_at in (0, 3, 7):
        assert play(fresh(), reload_at, metrics) == full


class _Recorder(SearchMethod):
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.rid = uuid.uuid4()

    def initial_operations(self, searcher_state: SearcherState) -> list[Any]:
        return [Create(self.rid, {"x": 1}, None), ValidateAfter(self.rid, 5)]

    def on_trial_created(self, searcher_state: SearcherState, request_id: uuid.UUID) -> list[Any]:
        self.calls.append(("created", set(searcher_state.trials_created)))
        return []

    def on_validation_completed(
        self, searcher_state: SearcherState, request_id: uuid.UUID, metric: Any, train_length: int
    ) -> list[Any]:
        self.calls.append(("validation", (request_id, metric, train_length)))
        if metric == "bad":
            return ["not an op"]  # type: ignore[list-item]
        if metric == "raise":
            raise ZeroDivisionError("division by zero")
        return [Close(request_id)]

    def on_trial_closed(self, searcher_state: SearcherState, request_id: uuid.UUID) -> list[Any]:
        self.calls.append(("closed", set(searcher_state.trials_closed)))
        return [Shutdown()]

    def on_trial_exited_early(
        self, searcher_state: SearcherState, request_id: uuid.UUID, exited_reason: ExitedReason
    ) -> list[Any]:
        self.calls.append(("exited", (set(searcher_state.failures), exited_reason)))
        return []

    def progress(self, searcher_state: SearcherState) -> float:
        return 2.0  # out of range: clamped


def test_custom_method_passes_state_uuid_metric_and_length() -> None:
    user = _Recorder()
    m = CustomMethod(user, 0, "loss")
    create, validate = m.initial_operations()
    assert isinstance(create, Create) and create.request_id == str(user.rid)
    assert create.trial_seed is not None and validate == ValidateAfter(str(user.rid), 5)
    m.on_trial_created(str(user.rid))
    m.on_trial_progress(str(user.rid), 2.5)
    assert m.state.trial_progress[user.rid] == 0.5  # raw units ÷ the op's length
    assert m.on_validation_completed(str(user.rid), {"loss": 0.25}, 5) == [Close(str(user.rid))]
    m.on_trial_exited_early(str(user.rid), ExitedReason.ERRORED)
    assert m.on_trial_closed(str(user.rid)) == [Shutdown()]
    assert user.calls == [
        ("created", {user.rid}),
        ("validation", (user.rid, 0.25, 5)),
        ("exited", ({user.rid}, ExitedReason.ERRORED)),
        ("closed", {user.rid}),
    ]
    assert m.progress() == 1.0 and m.state.experiment_completed


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ("bad", "_Recorder.on_validation_completed returned 'not an op'; expected trialkit"),
        ("raise", "custom searcher _Recorder.on_validation_completed raised ZeroDivisionError"),
    ],
)
def test_custom_method_errors_name_the_handler(metric: str, message: str) -> None:
    user = _Recorder()
    m = CustomMethod(user, 0, "loss")
    m.initial_operations()
    with pytest.raises(SearcherError, match=message):
        m.on_validation_completed(str(user.rid), {"loss": metric}, 5)


def test_event_queue_acknowledges_once_and_seeds_creates() -> None:
    q = EventQueueMethod("loss", 5)
    q.initial_operations()
    rid = str(uuid.uuid4())
    ops = q.record([Create(rid, {"x": 1}), ValidateAfter(rid, 10)])
    assert isinstance(ops[0], Create) and isinstance(ops[0].trial_seed, int)
    q.on_trial_created(rid)
    q.on_validation_completed(rid, {"loss": 0.5, "other": 1})
    assert [e["kind"] for e in q.events_after(0)] == [
        "initial_operations",
        "trial_created",
        "validation_completed",
    ]
    assert q.events_after(2)[0] == {
        "id": 3, "kind": "validation_completed", "request_id": rid, "metric": 0.5, "length": 10,
    }  # fmt: skip
    assert q.acknowledge(2, 0.25) is True
    assert q.acknowledge(2, 0.9) is False  # a runner re-sending after its own restart
    assert q.progress() == 0.25
    with pytest.raises(SearcherError, match="latest event is 3"):
        q.acknowledge(7, None)
    restored = EventQueueMethod("loss", 5)
    restored.load(json.loads(json.dumps(q.save())))
    assert restored.events_after(0) == q.events_after(0) and restored.acked == 2


def test_operations_round_trip_as_json() -> None:
    rid = uuid.uuid4()
    for op in (Create(rid, {"a": [1, 2]}, None, 7), ValidateAfter(rid, 3), Close(rid), Shutdown()):
        assert decode_operation(json.loads(json.dumps(encode_operation(op)))) == op
    with pytest.raises(SearcherError, match="unknown searcher operation"):
        decode_operation({"kind": "Explode"})


def test_validate_after_lengths_are_plain_ints() -> None:
    """A custom searcher may compute a length as a float or a numpy integer."""
    for length in (7.0, np.int64(7), "7"):
        op = ValidateAfter(uuid.uuid4(), length)  # type: ignore[arg-type]
        assert op.length == 7 and type(op.length) is int
        assert json.dumps(encode_operation(op))


def test_custom_methods_leave_crash_repair_to_their_own_state() -> None:
    """They keep no per-trial book: the master's reconcile asks and gets "unknown" (False)."""
    q = EventQueueMethod("loss", 5)
    q.initial_operations()
    rid = str(uuid.uuid4())
    q.record([Create(rid, {"x": 1}), ValidateAfter(rid, 10)])
    q.on_trial_created(rid)
    q.on_trial_closed(rid)
    assert q.knows(rid) is False and q.is_closed(rid) is False and q.outstanding(rid) is None
