"""The rungs the web UI shows, derived from an ASHA searcher's saved state: a real search
method is driven through a simulated sequence of results (the operations it issues answered
in order), and what ``asha_rungs`` reads back is checked against the operations themselves."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.inprocess_master import inprocess_master
from trialkit.config import parse_config
from trialkit.searcher import (
    Close,
    Create,
    ExitedReason,
    Operation,
    Shutdown,
    Stop,
    ValidateAfter,
    asha_rungs,
    make_search_method,
)

SPACE = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}}
PROMOTION = {
    "name": "async_halving",
    "metric": "loss",
    "num_rungs": 3,
    "divisor": 3,
    "max_trials": 12,
    "max_length": {"batches": 90},
}
STOP_ONCE = {**PROMOTION, "stop_once": True, "metric": "acc", "smaller_is_better": False}
ADAPTIVE = {
    "name": "adaptive_asha",
    "metric": "loss",
    "max_trials": 20,
    "max_rungs": 4,
    "divisor": 3,
    "mode": "standard",
    "max_length": {"batches": 81},
}


@dataclass
class Trace:
    """What the search asked for and what each trial reported, answered in issue order."""

    order: list[str] = field(default_factory=list)  # request ids by creation
    lengths: dict[str, list[int]] = field(default_factory=dict)  # ValidateAfter lengths asked
    results: dict[tuple[str, int], float] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)
    exited: set[str] = field(default_factory=set)


def value_of(trace: Trace, request_id: str, length: int, larger_is_better: bool) -> float:
    """Trial k's curve: a floor by k (some good, some bad), improving with length."""
    k = trace.order.index(request_id)
    loss = 0.1 + (k * 7 % 11) / 10 + 1.0 / length
    return round(1.0 - loss if larger_is_better else loss, 6)


def drive(config: dict[str, Any], results: int, *, exit_trial: int | None = None) -> tuple:
    """Run the search until ``results`` validations were reported (or it shut down)."""
    method = make_search_method(config, SPACE, 7)
    larger = config.get("smaller_is_better") is False
    trace = Trace()
    queue: collections.deque[Operation] = collections.deque(method.initial_operations())
    reported = 0
    while queue and reported < results:
        op = queue.popleft()
        if isinstance(op, Create):
            trace.order.append(op.request_id)
            trace.lengths[op.request_id] = []
            queue.extend(method.on_trial_created(op.request_id))
        elif isinstance(op, ValidateAfter):
            trace.lengths[op.request_id].append(op.length)
            if exit_trial is not None and trace.order.index(op.request_id) == exit_trial:
                trace.exited.add(op.request_id)
                queue.extend(method.on_trial_exited_early(op.request_id, ExitedReason.ERRORED))
                queue.extend(method.on_trial_closed(op.request_id))
                continue
            value = value_of(trace, op.request_id, op.length, larger)
            trace.results[(op.request_id, op.length)] = value
            reported += 1
            metrics = {config["metric"]: value}
            queue.extend(method.on_validation_completed(op.request_id, metrics, op.length))
        elif isinstance(op, (Close, Stop)):
            trace.closed.add(op.request_id)
            queue.extend(method.on_trial_closed(op.request_id))
        else:
            assert isinstance(op, Shutdown)
    # Left in the queue: ValidateAfters issued and not yet answered (trials training now).
    training = {(op.request_id, op.length) for op in queue if isinstance(op, ValidateAfter)}
    return asha_rungs(config, method.save()), trace, training


def check_against_trace(
    brackets: list, trace: Trace, training: set, *, larger: bool = False
) -> collections.Counter:
    """Every result and operation of the trace is where the rungs say, with its status."""
    statuses: collections.Counter[str] = collections.Counter()
    seen: set[tuple[str, int]] = set()
    for bracket in brackets:
        top = len(bracket.rungs) - 1
        for rung in bracket.rungs:
            values = [e.value for e in rung.entries if e.value is not None]
            assert values == sorted(values, reverse=larger)  # best first
            for entry in rung.entries:
                statuses[entry.status] += 1
                asked = trace.lengths[entry.request_id]
                if entry.status == "exited":
                    assert entry.request_id in trace.exited and entry.value is None
                    continue
                key = (entry.request_id, rung.length)
                assert entry.value == trace.results[key]
                seen.add(key)
                went_on = asked.index(rung.length) + 1 < len(asked) or any(
                    i == entry.request_id and length > rung.length for i, length in training
                )
                if rung.index == top:
                    assert entry.status == "completed"
                elif entry.status == "promoted":
                    assert went_on
                elif entry.status == "stopped":
                    assert not went_on and entry.request_id in trace.closed
                else:
                    assert entry.status == "waiting"
                    assert not went_on and entry.request_id not in trace.closed
            for request_id in rung.training:
                assert (request_id, rung.length) in training
    assert seen == set(trace.results)  # every reported result is in a rung
    assert {(i, r.length) for b in brackets for r in b.rungs for i in r.training} == training
    return statuses


def test_promotion_asha_rungs_finished_and_midway() -> None:
    brackets, trace, training = drive(PROMOTION, results=10**6)
    assert [len(b.rungs) for b in brackets] == [3]
    assert [r.length for r in brackets[0].rungs] == [10, 30, 90]
    statuses = check_against_trace(brackets, trace, training)
    assert statuses["promoted"] > 0 and statuses["stopped"] > 0 and statuses["completed"] > 0
    assert statuses["waiting"] == 0 and not training  # closed out at the end
    assert len(brackets[0].rungs[0].entries) == PROMOTION["max_trials"]

    brackets, trace, training = drive(PROMOTION, results=6)
    statuses = check_against_trace(brackets, trace, training)
    assert statuses["waiting"] > 0 and training  # mid-search: some wait, some train


def test_stop_once_asha_larger_is_better_with_an_early_exit() -> None:
    brackets, trace, training = drive(STOP_ONCE, results=10**6, exit_trial=1)
    statuses = check_against_trace(brackets, trace, training, larger=True)
    assert statuses["exited"] == 1 and statuses["promoted"] > 0 and statuses["stopped"] > 0
    best = brackets[0].rungs[0].entries[0]
    assert best.value == max(v for (_, length), v in trace.results.items() if length == 10)


def test_adaptive_asha_has_a_bracket_per_early_stopping_rate() -> None:
    brackets, trace, training = drive(ADAPTIVE, results=10**6)
    # max_rungs 4 capped at int(ln 20 / ln 3) + 1 = 3; "standard": brackets of 3 and 2 rungs
    assert [len(b.rungs) for b in brackets] == [3, 2]
    assert [r.length for r in brackets[0].rungs] == [9, 27, 81]
    assert [r.length for r in brackets[1].rungs] == [27, 81]
    assert sum(b.max_trials for b in brackets) == ADAPTIVE["max_trials"]
    check_against_trace(brackets, trace, training)


def test_not_started_and_not_asha() -> None:
    brackets = asha_rungs(PROMOTION, None)
    assert brackets is not None and all(not r.entries for r in brackets[0].rungs)
    random_search = {"name": "random", "metric": "loss", "max_trials": 3, "max_length": 10}
    assert asha_rungs(random_search, None) is None


@pytest.mark.parametrize("config", [PROMOTION, ADAPTIVE])
def test_statuses_are_known(config: dict[str, Any]) -> None:
    from trialkit.searcher._rung_state import STATUSES

    brackets, _, _ = drive(config, results=15)
    assert {e.status for b in brackets for r in b.rungs for e in r.entries} <= set(STATUSES)


def test_stopping_asha_of_reports_stops_trials_at_their_rung() -> None:
    """0.38 (time_metric): each trial reports at every rung target until the search stops it."""
    config = {
        "name": "async_halving",
        "metric": "loss",
        "num_rungs": 3,
        "divisor": 3,
        "max_trials": 9,
        "time_metric": "batches",
        "max_time": 90,
    }
    method = make_search_method(config, SPACE, 7)
    order: list[str] = []
    reached: dict[str, list[int]] = {}
    stopped: set[str] = set()
    queue = collections.deque(method.initial_operations())
    while queue:
        op = queue.popleft()
        if isinstance(op, Create):
            order.append(op.request_id)
            reached[op.request_id] = []
            queue.extend(method.on_trial_created(op.request_id))
            for t in method.report_schedule(op.request_id):
                if op.request_id in stopped:
                    break
                reached[op.request_id].append(t)
                loss = 0.1 + (len(order) * 7 % 11) / 10 + 1.0 / t
                ops = method.on_validation_completed(op.request_id, {"loss": loss, "batches": t})
                stopped |= {o.request_id for o in ops if isinstance(o, Stop)}
                queue.extend(o for o in ops if not isinstance(o, Stop))
            queue.extend(method.on_trial_closed(op.request_id))
    brackets = asha_rungs(config, method.save())
    assert brackets is not None
    rungs = brackets[0].rungs
    assert [r.length for r in rungs] == [10, 30, 90]
    for rung in rungs:
        for entry in rung.entries:
            went_on = reached[entry.request_id][-1] > rung.length
            expected = "completed" if rung.index == 2 else ("promoted" if went_on else "stopped")
            assert entry.status == expected
    assert len(rungs[0].entries) == 9 and rungs[1].entries and rungs[2].entries


def test_the_route_reads_the_saved_state_and_survives_one_it_cannot_read(tmp_path: Path) -> None:
    with inprocess_master(tmp_path) as api:
        full = parse_config({"searcher": PROMOTION, "entrypoint": "python3 train.py"}).as_dict()
        exp = api.store.create_experiment(name="rungs", config=full).id
        method = make_search_method(PROMOTION, SPACE, 7)
        for op in method.initial_operations():
            if isinstance(op, Create):
                method.on_trial_created(op.request_id)
                api.store.create_trial(
                    experiment_id=exp, request_id=op.request_id, hparams=op.hparams, seed=1
                )
        first = next(iter(api.store.list_trials(exp)))
        method.on_validation_completed(first.request_id, {"loss": 0.5}, 10)
        api.store.update_experiment(exp, searcher_state={"method": method.save()})
        route = f"/api/v1/experiments/{exp}/searcher/rungs"
        got = api.call("GET", route).json()
        assert (got["searcher"], got["unit"], got["metric"]) == ("async_halving", "batches", "loss")
        rung0 = got["brackets"][0]["rungs"][0]
        assert rung0["trials"] == [{"trial_id": first.id, "value": 0.5, "status": "waiting"}]
        assert first.id not in rung0["training"] and len(rung0["training"]) >= 1
        api.store.update_experiment(exp, searcher_state={"method": {"strategy": {"rungs": 3}}})
        resp = api.call("GET", route)
        assert resp.status_code == 200 and resp.json()["brackets"] == []
