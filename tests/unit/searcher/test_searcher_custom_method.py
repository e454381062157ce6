"""The master-run custom searcher adapter (CustomMethod) event by event, and what it saves: the
SearcherState in Determined's key names, the method's own files, the operations' JSON form."""

from __future__ import annotations

import json
import logging
import math
import pathlib
import uuid
from typing import Any

import pytest

from trialkit.searcher import (
    Close,
    Create,
    CustomMethod,
    ExitedReason,
    SearcherError,
    SearcherState,
    SearchMethod,
    Shutdown,
    Stop,
    ValidateAfter,
    decode_operation,
    encode_operation,
)


class _Log(SearchMethod):
    """Records every handler's arguments; its progress is a fraction of closed trials, and it
    keeps a nested file tree as its own state (``nested`` maps relative paths to contents)."""

    def __init__(self, progress: Any = None) -> None:
        self.rid = uuid.uuid4()
        self.calls: list[tuple[Any, ...]] = []
        self.fixed_progress = progress
        self.nested: dict[str, bytes] = {}
        self.dirs: list[pathlib.Path] = []

    def initial_operations(self, searcher_state: SearcherState) -> list[Any]:
        return [Create(self.rid, {"x": 1}), ValidateAfter(self.rid, 10)]

    def on_trial_created(self, searcher_state: SearcherState, request_id: uuid.UUID) -> list[Any]:
        self.calls.append(("created", request_id, dict(searcher_state.trial_progress)))
        return []

    def on_validation_completed(
        self, searcher_state: SearcherState, request_id: uuid.UUID, metric: Any, train_length: int
    ) -> list[Any]:
        self.calls.append(("validation", request_id, metric, train_length))
        return []

    def on_trial_closed(self, searcher_state: SearcherState, request_id: uuid.UUID) -> list[Any]:
        self.calls.append(("closed", request_id))
        return []

    def on_trial_exited_early(
        self, searcher_state: SearcherState, request_id: uuid.UUID, exited_reason: ExitedReason
    ) -> list[Any]:
        self.calls.append(("exited", request_id, exited_reason))
        return []

    def progress(self, searcher_state: SearcherState) -> float:
        if self.fixed_progress is not None:
            return float(self.fixed_progress)
        return len(searcher_state.trials_closed) / 4

    def save_method_state(self, path: pathlib.Path) -> None:
        self.dirs.append(path)
        assert list(path.iterdir()) == []  # a fresh directory every time
        for rel, data in self.nested.items():
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            (path / rel).write_bytes(data)

    def load_method_state(self, path: pathlib.Path) -> None:
        self.dirs.append(path)
        self.nested = {
            str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()
        }


def _started(user: _Log | None = None) -> tuple[CustomMethod, _Log, str]:
    """A CustomMethod whose one trial is created and has ValidateAfter(10) in flight."""
    user = user or _Log()
    m = CustomMethod(user, 0, "loss")
    m.initial_operations()
    rid = str(user.rid)
    m.on_trial_created(rid)
    return m, user, rid


# -- SearcherState ------------------------------------------------------------------------------


def test_searcher_state_uses_determined_key_names_and_round_trips() -> None:
    a, b = sorted([uuid.uuid4(), uuid.uuid4()], key=str)
    state = SearcherState(
        failures={b},
        trial_progress={a: 0.5, b: 1.0},
        trials_closed={b, a},
        trials_created={a, b},
        last_event_id=7,
        experiment_completed=True,
    )
    d = json.loads(json.dumps(state.to_dict()))
    assert d == {
        "failures": [str(b)],
        "trialProgress": {str(a): 0.5, str(b): 1.0},
        "trialsClosed": [str(a), str(b)],
        "trialsCreated": [str(a), str(b)],
        "lastEventId": 7,
        "experimentCompleted": True,
    }
    restored = SearcherState()
    restored.from_dict(d)
    assert restored == state


def test_searcher_state_from_an_empty_dict_is_the_initial_state() -> None:
    """A runner's state file from before a field existed loads with that field's default."""
    state = SearcherState(
        failures={uuid.uuid4()},
        trial_progress={uuid.uuid4(): 0.5},
        trials_closed={uuid.uuid4()},
        trials_created={uuid.uuid4()},
        last_event_id=3,
        experiment_completed=True,
    )
    state.from_dict({})
    assert state == SearcherState()
    assert state.last_event_id == 0 and state.experiment_completed is False


# -- CustomMethod: events -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "call"),
    [
        ("trial created", lambda m: m.on_trial_created("t-1")),
        ("validation completed", lambda m: m.on_validation_completed("t-1", {"loss": 1}, 10)),
        ("trial progress", lambda m: m.on_trial_progress("t-1", 1.0)),
        ("trial exited early", lambda m: m.on_trial_exited_early("t-1", ExitedReason.ERRORED)),
        ("trial closed", lambda m: m.on_trial_closed("t-1")),
    ],
)
def test_a_request_id_that_is_not_a_uuid_is_refused_naming_the_event(event: str, call: Any) -> None:
    m, _, _ = _started()
    with pytest.raises(SearcherError) as e:
        call(m)
    assert str(e.value) == f"{event}: request_id 't-1' is not a UUID"


def test_every_handler_receives_the_trials_uuid() -> None:
    m, user, rid = _started()
    m.on_validation_completed(rid, {"loss": 0.3}, 10)
    m.on_trial_exited_early(rid, ExitedReason.USER_CANCELED)
    m.on_trial_closed(rid)
    assert user.calls == [
        ("created", user.rid, {user.rid: 0.0}),  # a new trial starts at progress 0
        ("validation", user.rid, 0.3, 10),
        ("exited", user.rid, ExitedReason.USER_CANCELED),
        ("closed", user.rid),
    ]


def test_a_report_without_length_completes_the_operation_in_flight() -> None:
    m, user, rid = _started()
    m.on_validation_completed(rid, {"loss": 0.3, "acc": 0.9})
    other = str(uuid.uuid4())  # no operation in flight: length 0
    m.on_trial_created(other)
    m.on_validation_completed(other, 0.7)  # a bare value (not a dict) is the metric itself
    validations = [c for c in user.calls if c[0] == "validation"]
    assert validations == [
        ("validation", user.rid, 0.3, 10),
        ("validation", uuid.UUID(other), 0.7, 0),
    ]
    assert m.state.trial_progress[user.rid] == 1.0


def test_progress_reports_count_against_the_operation_in_flight_only() -> None:
    m, user, rid = _started()
    m.on_trial_progress(rid, 15.0)
    assert m.state.trial_progress[user.rid] == 1.0  # past the target: held to 1
    m.on_trial_progress(rid, -3.0)
    assert m.state.trial_progress[user.rid] == 0.0
    m.on_trial_progress(rid, 4.0)
    m.on_trial_progress(rid, math.nan)  # not a number: ignored
    assert m.state.trial_progress[user.rid] == 0.4
    m.on_validation_completed(rid, {"loss": 0.3}, 10)
    m.on_trial_progress(rid, 2.0)  # a late report once the operation completed changes nothing
    assert m.state.trial_progress[user.rid] == 1.0
    idle = str(uuid.uuid4())
    m.on_trial_created(idle)
    assert m.on_trial_progress(idle, 3.0) == []  # nothing in flight: nothing to measure against
    assert m.state.trial_progress[uuid.UUID(idle)] == 0.0


@pytest.mark.parametrize("end", ["exited", "closed"])
def test_a_trial_that_ended_no_longer_moves_its_progress(end: str) -> None:
    m, user, rid = _started()
    m.on_trial_progress(rid, 5.0)
    if end == "exited":
        m.on_trial_exited_early(rid, ExitedReason.ERRORED)
    else:
        m.on_trial_closed(rid)
    m.on_trial_progress(rid, 10.0)
    assert m.state.trial_progress[user.rid] == 0.5
    assert m.save()["inflight"] == {}


def test_the_user_method_errors_name_the_handler_and_the_expected_types() -> None:
    class Returns(_Log):
        def on_trial_closed(self, searcher_state: SearcherState, request_id: uuid.UUID) -> Any:
            return 5

        def on_trial_exited_early(self, *args: Any) -> Any:
            return [Close(self.rid), "done"]

    m, _, rid = _started(Returns())
    with pytest.raises(SearcherError) as e:
        m.on_trial_closed(rid)
    assert str(e.value) == "Returns.on_trial_closed returned 5; expected a list of operations"
    with pytest.raises(SearcherError) as e:
        m.on_trial_exited_early(rid, ExitedReason.ERRORED)
    assert str(e.value) == (
        "Returns.on_trial_exited_early returned 'done'; expected trialkit.searcher Create,"
        " ValidateAfter, Close, Stop or Shutdown"
    )


# -- CustomMethod: progress ---------------------------------------------------------------------


def test_progress_is_the_methods_own_held_to_0_1() -> None:
    m, _, rid = _started()
    assert m.progress() == 0.0
    m.on_trial_closed(rid)
    assert m.progress() == 0.25  # the method reads the SearcherState it is given
    for value, shown in ((0.4, 0.4), (-2, 0.0), (7, 1.0), (math.nan, 0.0), (math.inf, 0.0)):
        assert CustomMethod(_Log(progress=value), 0, "loss").progress() == shown


def test_a_progress_that_raises_shows_0_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(_Log):
        def progress(self, searcher_state: SearcherState) -> float:
            raise ValueError("no idea")

    m = CustomMethod(Broken(), 0, "loss")
    with caplog.at_level(logging.WARNING, logger="trialkit.searcher"):
        assert m.progress() == 0.0
        assert m.progress() == 0.0
    assert [r.getMessage() for r in caplog.records] == [
        "Broken.progress() raised ValueError: no idea; showing 0% progress"
    ]


# -- CustomMethod: save and load ----------------------------------------------------------------


def test_a_reloaded_method_keeps_the_operation_in_flight_and_its_files() -> None:
    m, user, rid = _started()
    user.nested = {"top.json": b"{}", "deep/er/weights.bin": b"\x00\x01"}
    saved = json.loads(json.dumps(m.save()))
    assert saved["searcher_state"]["trialsCreated"] == [rid]

    fresh = _Log()
    again = CustomMethod(fresh, 0, "loss")
    again.load(saved)
    assert fresh.nested == user.nested  # nested folders are recreated for load_method_state
    assert again.state == m.state
    again.on_trial_progress(rid, 2.5)
    assert again.state.trial_progress[uuid.UUID(rid)] == 0.25
    again.on_validation_completed(rid, {"loss": 0.1})
    assert fresh.calls == [("validation", uuid.UUID(rid), 0.1, 10)]


def test_the_methods_state_folder_is_a_private_temporary_one() -> None:
    """Each save and load gets a new empty ``trialkit-searcher-*`` folder, removed after."""
    m, user, _ = _started()
    user.nested = {"a/b/c": b"1"}
    other = _Log()
    CustomMethod(other, 0, "loss").load(m.save())
    m.save()
    dirs = user.dirs + other.dirs
    assert len(set(dirs)) == 3
    for d in dirs:
        assert d.name.startswith("trialkit-searcher-") and not d.exists()


def test_load_refuses_another_searchers_state() -> None:
    with pytest.raises(SearcherError) as e:
        CustomMethod(_Log(), 0, "loss").load({"kind": "remote"})
    assert str(e.value) == "searcher state: not a custom searcher's state"


# -- operations as JSON -------------------------------------------------------------------------


def test_operations_encode_to_their_fields_without_the_unused_checkpoint() -> None:
    rid = uuid.uuid4()
    assert encode_operation(Create(rid, {"a": 1}, "ckpt", 7)) == {
        "kind": "Create",
        "request_id": str(rid),
        "hparams": {"a": 1},
        "trial_seed": 7,
    }
    assert encode_operation(Stop(rid)) == {"kind": "Stop", "request_id": str(rid)}
    assert encode_operation(Shutdown(failure=True)) == {
        "kind": "Shutdown",
        "cancel": False,
        "failure": True,
    }


@pytest.mark.parametrize("bad", [["Create"], "Close", None, 3])
def test_decoding_something_that_is_not_an_operation_object_is_a_searcher_error(bad: Any) -> None:
    with pytest.raises(SearcherError, match="unknown searcher operation"):
        decode_operation(bad)


def test_decoding_an_operation_with_wrong_fields_names_it() -> None:
    with pytest.raises(
        SearcherError, match=r"searcher operation \{'kind': 'Close'\}: .*request_id"
    ):
        decode_operation({"kind": "Close"})
