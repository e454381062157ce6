"""async_halving and adaptive_asha: worked examples of reference §7.4-§7.6 and properties."""

from __future__ import annotations

import bisect
import json
import random
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trialkit.searcher import (
    Close,
    Create,
    DrivenMethod,
    ExitedReason,
    Operation,
    SearcherError,
    Shutdown,
    Stop,
    ValidateAfter,
    make_search_method,
)
from trialkit.searcher._adaptive import (
    bracket_max_concurrent,
    bracket_max_trials,
    bracket_rungs,
    effective_max_rungs,
)
from trialkit.searcher._ranked import RankedList
from trialkit.searcher._rungs import rung_targets

SPACE = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}}
WORST = sys.float_info.max


class Driver:
    """Plays the master: creates trials, runs their operations, feeds results back."""

    def __init__(self, method: DrivenMethod, metric: str = "loss") -> None:
        self.method = method
        self.metric = metric
        self.order: list[str] = []  # request ids in creation order
        self.number: dict[str, int] = {}  # request id -> trial number (from 1)
        self.lengths: dict[str, list[int]] = {}  # what each trial trained to / reported at
        self.inflight: dict[str, int] = {}  # FIFO: insertion order = when the op arrived
        self.finishing: set[str] = set()
        self.exited: set[str] = set()
        self.log: list[Operation] = []
        self.shutdown: Shutdown | None = None

    def start(self) -> list[Operation]:
        return self.apply(self.method.initial_operations())

    def rid(self, trial: int | str) -> str:
        return self.order[trial - 1] if isinstance(trial, int) else trial

    def apply(self, ops: list[Operation]) -> list[Operation]:
        for op in ops:
            self.log.append(op)
            if isinstance(op, Create):
                self.order.append(op.request_id)
                self.number[op.request_id] = len(self.order)
                self.lengths[op.request_id] = []
                self.apply(self.method.on_trial_created(op.request_id))
            elif isinstance(op, ValidateAfter):
                self.inflight[op.request_id] = op.length
            elif isinstance(op, (Close, Stop)):
                self.finishing.add(op.request_id)
                self.maybe_exit(op.request_id)
            elif isinstance(op, Shutdown):
                self.shutdown = op
        return ops

    def complete(self, trial: int | str, value: float) -> list[Operation]:
        """0.37: the trial finished its outstanding ValidateAfter with ``value``."""
        rid = self.rid(trial)
        length = self.inflight.pop(rid)
        self.lengths[rid].append(length)
        ops = self.apply(self.method.on_validation_completed(rid, {self.metric: value}, length))
        self.maybe_exit(rid)
        return ops

    def report(self, trial: int | str, value: float, t: int) -> list[Operation]:
        """0.38: one validation report at time-metric value ``t``."""
        rid = self.rid(trial)
        self.lengths[rid].append(t)
        return self.apply(
            self.method.on_validation_completed(rid, {self.metric: value, "batches": t})
        )

    def fail(self, trial: int | str, reason: ExitedReason) -> list[Operation]:
        rid = self.rid(trial)
        self.inflight.pop(rid, None)
        ops = self.apply(self.method.on_trial_exited_early(rid, reason))
        return ops + self.exit(rid)

    def exit(self, rid: str) -> list[Operation]:
        if rid in self.exited:
            return []
        self.exited.add(rid)
        return self.apply(self.method.on_trial_closed(rid))

    def maybe_exit(self, rid: str) -> None:
        if rid in self.finishing and rid not in self.inflight:
            self.exit(rid)

    def run_fifo(self, metric_of: Callable[[int, int], float]) -> None:
        """0.37: complete outstanding operations in arrival order; metric_of(trial number, length)."""
        while self.inflight and self.shutdown is None:
            rid = next(iter(self.inflight))
            self.complete(rid, metric_of(self.number[rid], self.inflight[rid]))

    def trained(self, trial: int) -> list[int]:
        return self.lengths[self.rid(trial)]


def asha(**fields: Any) -> dict[str, Any]:
    """async_halving takes only a unit length: a bare int here means that many batches."""
    if isinstance(fields.get("max_length"), int):
        fields["max_length"] = {"batches": fields["max_length"]}
    return {"name": "async_halving", "metric": "loss", "divisor": 4, **fields}


def adaptive(**fields: Any) -> dict[str, Any]:
    base = {"name": "adaptive_asha", "metric": "loss", "mode": "standard", "divisor": 4}
    return {**base, "max_rungs": 5, "max_concurrent_trials": 16, **fields}


def driver(searcher: dict[str, Any], seed: int = 0) -> Driver:
    d = Driver(make_search_method(searcher, SPACE, seed))
    d.start()
    return d


# -- rung and bracket arithmetic ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("length", "divisor", "rungs", "targets"),
    [
        (100, 4, 2, [25, 100]),
        (9000, 3, 3, [1000, 3000, 9000]),
        (576000, 3, 3, [64000, 192000, 576000]),
        (12, 3, 3, [1, 4, 12]),
        (937, 4, 3, [58, 234, 937]),
        (4, 4, 3, [1, 1, 4]),
    ],
)
def test_rung_targets(length: int, divisor: int, rungs: int, targets: list[int]) -> None:
    assert rung_targets(length, divisor, rungs) == targets


def test_effective_max_rungs_truncates_the_float_log_ratio() -> None:
    assert effective_max_rungs(5, 1000, 100000, 10) == 3  # ln 1000 / ln 10 = 2.9999999999999996
    assert effective_max_rungs(5, 100, 10, 4) == 2
    assert effective_max_rungs(5, 937, 16, 4) == 3


def test_bracket_functions_match_determined_tests() -> None:
    assert bracket_max_trials(100, 4, [4, 3, 2]) == [70, 22, 8]
    assert bracket_max_trials(20, 3, [3, 2, 1]) == [12, 5, 3]
    assert bracket_max_concurrent(0, 3, [9, 3, 1]) == [3, 3, 3]
    assert bracket_max_concurrent(11, 3, [9, 3, 1]) == [4, 4, 3]
    assert bracket_max_concurrent(0, 4, [40, 10]) == [10, 10]
    assert bracket_rungs("standard", 5) == [5, 4, 3]
    assert bracket_rungs("conservative", 3) == [3, 2, 1]
    assert bracket_rungs("aggressive", 4) == [4]
    assert bracket_rungs("standard", 5, [1, 3, 2]) == [3, 2, 1]


def brackets_of(searcher: dict[str, Any]) -> list[tuple[list[int], int]]:
    """(ValidateAfter target, how many) groups of the initial operations, in order."""
    groups: list[tuple[list[int], int]] = []
    for op in make_search_method(searcher, SPACE, 0).initial_operations():
        if isinstance(op, ValidateAfter):
            if groups and groups[-1][0] == [op.length]:
                groups[-1] = (groups[-1][0], groups[-1][1] + 1)
            else:
                groups.append(([op.length], 1))
    return groups


def test_bracket_tuples_from_adaptive_asha_test() -> None:
    rungs = bracket_rungs("standard", effective_max_rungs(5, 100, 10, 4))
    trials = bracket_max_trials(10, 4, rungs)
    assert list(zip(rungs, trials, bracket_max_concurrent(2, 4, trials), strict=True)) == [
        (2, 7, 1),
        (1, 3, 1),
    ]
    rungs = bracket_rungs("conservative", effective_max_rungs(5, 1000, 10, 3))
    trials = bracket_max_trials(10, 3, rungs)
    assert list(zip(rungs, trials, bracket_max_concurrent(5, 3, trials), strict=True)) == [
        (3, 7, 2),
        (2, 2, 2),
        (1, 1, 1),
    ]
    # through the public factory: T=100, M=10, C=2 -> one initial trial per bracket
    assert brackets_of(adaptive(max_length=100, max_trials=10, max_concurrent_trials=2)) == [
        ([25], 1),
        ([100], 1),
    ]


def test_mnist_adaptive_brackets() -> None:
    d = driver(adaptive(max_length={"batches": 937}, max_trials=16, max_concurrent_trials=16))
    assert brackets_of(adaptive(max_length=937, max_trials=16)) == [([58], 8), ([234], 4)]
    d.run_fifo(lambda n, length: float(n))
    creates_a = [rid for rid in d.order if d.lengths[rid][0] == 58]
    assert len(creates_a) == 12 and len(d.order) == 16
    assert {tuple(d.lengths[rid]) for rid in d.order if d.lengths[rid][0] == 234} <= {
        (234,),
        (234, 937),
    }
    assert all(length in (58, 234, 937) for rid in creates_a for length in d.lengths[rid])


# -- 0.37 promotion-based ASHA (asha_test.go) ---------------------------------------------------


@pytest.mark.parametrize(
    ("length", "targets"),
    [
        ({"batches": 9000}, [1000, 3000, 9000]),
        ({"records": 576000}, [64000, 192000, 576000]),
        ({"epochs": 12}, [1, 4, 12]),
    ],
)
def test_promotion_equal_metrics(length: dict[str, int], targets: list[int]) -> None:
    d = driver(
        asha(num_rungs=3, divisor=3, max_trials=12, max_concurrent_trials=16, max_length=length)
    )
    assert len(d.order) == 12
    d.run_fifo(lambda n, length: 1.0)
    sequences = sorted(tuple(d.lengths[rid]) for rid in d.order)
    assert sequences.count(tuple(targets[:1])) == 8
    assert sequences.count(tuple(targets[:2])) == 3
    assert sequences.count(tuple(targets)) == 1
    assert d.shutdown == Shutdown()


def test_promotion_smaller_is_better_in_creation_order() -> None:
    d = driver(asha(num_rungs=3, divisor=3, max_trials=12, max_length=9000))
    d.run_fifo(lambda n, length: n / 100)
    assert d.trained(1) == [1000, 3000, 9000]
    assert [d.trained(n) for n in (2, 3, 4)] == [[1000, 3000]] * 3
    assert all(d.trained(n) == [1000] for n in range(5, 13))


def test_promotion_async_promotions_count_the_early_exit_as_worst() -> None:
    d = driver(asha(num_rungs=3, divisor=3, max_trials=12, max_length=9000))
    assert d.complete(1, 0.10) == []
    assert d.complete(2, 0.11) == []
    ops = d.fail(3, ExitedReason.ERRORED)
    assert ValidateAfter(d.rid(1), 3000) in ops  # third rung-0 result promotes trial 1
    for n, value in zip(range(4, 13), [0.01 * k for k in range(1, 10)], strict=True):
        d.complete(n, value)
    d.run_fifo(lambda n, length: [0.10, 0.11, 1.0, *[0.01 * k for k in range(1, 10)]][n - 1])
    assert d.trained(4) == [1000, 3000, 9000]  # the best trial (0.01) reaches the top
    assert d.trained(1)[:2] == [1000, 3000]
    assert d.shutdown == Shutdown()


def test_promotion_top_rung_closes_and_close_out_closes_waiting_trials() -> None:
    d = driver(asha(num_rungs=2, divisor=4, max_trials=4, max_length=100))
    for n in (1, 2, 3):
        assert d.complete(n, 0.5) == []  # waiting; nothing promoted yet
    ops = d.complete(4, 0.1)  # promoted at once; rung 0 is full with nothing in flight
    waiting = [Close(d.rid(n)) for n in (1, 2, 3)]
    assert ops == [ValidateAfter(d.rid(4), 100), *waiting]  # close-out of rung 0
    assert d.complete(4, 0.1) == [Close(d.rid(4))]
    assert d.shutdown == Shutdown()


def test_promotion_invalid_hp_is_closed_forgotten_and_replaced() -> None:
    d = driver(asha(num_rungs=2, divisor=4, max_trials=2, max_concurrent_trials=2, max_length=100))
    ops = d.fail(1, ExitedReason.INVALID_HP)
    assert ops[0] == Close(d.rid(1))
    assert isinstance(ops[1], Create) and ops[2] == ValidateAfter(ops[1].request_id, 25)
    assert len(d.order) == 3


def test_promotion_metric_must_be_a_finite_number() -> None:
    d = driver(asha(num_rungs=2, max_trials=2, max_length=100))
    rid = d.rid(1)
    for bad in ("NaN", "Infinity", None, "0.5", float("nan"), float("inf"), True):
        with pytest.raises(SearcherError, match=rid) as info:
            d.method.on_validation_completed(rid, {"loss": bad}, 25)
        assert repr(bad) in str(info.value)
    with pytest.raises(SearcherError, match="nothing"):
        d.method.on_validation_completed(rid, {"accuracy": 0.5}, 25)


# -- stopping-based ASHA ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("length", "targets"),
    [
        ({"batches": 9000}, [1000, 3000, 9000]),
        ({"records": 576000}, [64000, 192000, 576000]),
        ({"epochs": 12}, [1, 4, 12]),
    ],
)
def test_stopping_037_metric_increasing_with_trial_id(
    length: dict[str, int], targets: list[int]
) -> None:
    d = driver(
        asha(num_rungs=3, divisor=3, max_trials=12, max_concurrent_trials=2, max_length=length,
             stop_once=True)
    )  # fmt: skip
    d.run_fifo(lambda n, length: float(n))
    assert d.trained(1) == targets
    assert len(d.order) == 12
    assert all(d.trained(n) == targets[:1] for n in range(2, 13))
    assert d.shutdown == Shutdown()


def test_stopping_038_one_report_can_pass_several_rungs() -> None:
    d = driver(asha(num_rungs=3, divisor=3, max_trials=3, max_concurrent_trials=1,
                    time_metric="batches", max_time=9000))  # fmt: skip
    assert d.report(1, 0.5, 999) == []  # below rung 0's units: nothing happens
    ops = d.report(1, 0.5, 9000)  # first result in every rung: passes 0 and 1, top rung stops
    assert ops[0] == Stop(d.rid(1)) and isinstance(ops[1], Create) and len(ops) == 2
    assert d.report(2, 0.4, 1000) == []  # better than 0.5: continues
    ops = d.report(2, 0.6, 3000)  # rung 1: [0.5, 0.6] -> index 1 >= max(int(2/3), 1)
    assert ops[0] == Stop(d.rid(2)) and isinstance(ops[1], Create)
    assert d.report(2, 0.1, 9000) == []  # a report after Stop is ignored
    ops = d.report(3, 0.5, 1000)  # ties: the newcomer goes before equals -> index 1 of 3
    assert ops == [Stop(d.rid(3))]  # budget used up: no Create


def test_stopping_038_larger_is_better_and_errors() -> None:
    d = driver(asha(num_rungs=2, divisor=4, max_trials=3, max_concurrent_trials=2,
                    time_metric="batches", max_time=100, smaller_is_better=False))  # fmt: skip
    assert d.report(1, 0.5, 25) == []
    assert d.report(2, 0.9, 25) == []  # larger is better: 0.9 ranks first and continues
    ops = d.fail(1, ExitedReason.ERRORED)  # worst result into trial 1's current rung (1)
    assert [type(op) for op in ops] == [Create]
    with pytest.raises(SearcherError, match="batches"):
        d.method.on_validation_completed(d.rid(3), {"loss": 0.1, "batches": "NaN"})
    with pytest.raises(SearcherError, match=d.rid(3)):
        d.method.on_validation_completed(d.rid(3), {"loss": None, "batches": 5})


def test_stopping_038_invalid_hp_removes_results_and_replaces_over_budget() -> None:
    d = driver(asha(num_rungs=2, divisor=4, max_trials=2, max_concurrent_trials=2,
                    time_metric="batches", max_time=100))  # fmt: skip
    assert d.report(1, 0.1, 25) == []
    ops = d.fail(1, ExitedReason.INVALID_HP)
    assert ops[0] == Stop(d.rid(1)) and isinstance(ops[1], Create)
    assert d.report(2, 0.9, 25) == []  # 0.1 is gone: 0.9 is now the best at rung 0
    assert len(d.order) == 3


def test_stopping_progress() -> None:
    d = driver(asha(num_rungs=2, divisor=4, max_trials=2, max_concurrent_trials=2,
                    time_metric="batches", max_time=100))  # fmt: skip
    d.report(1, 0.1, 25)
    assert d.method.progress() == pytest.approx(1 / 2.4)
    d.report(2, 0.2, 25)  # stopped: rung 0 holds max_trials results
    assert d.method.progress() == pytest.approx(max(2 / 2.4, 1 / 2))
    d.report(1, 0.1, 100)
    assert d.method.progress() == pytest.approx(1.0)
    assert d.shutdown == Shutdown()


# -- adaptive_asha worked examples --------------------------------------------------------------


def test_adaptive_037_l900_promotion_and_stopping() -> None:
    searcher = adaptive(max_length={"batches": 900}, max_trials=5, max_rungs=2, divisor=3)
    assert brackets_of(searcher) == [([300], 3), ([900], 2)]
    d = driver(searcher)
    d.run_fifo(lambda n, length: n / 10)
    assert [d.trained(n) for n in range(1, 6)] == [[300, 900], [300], [300], [900], [900]]
    assert d.shutdown == Shutdown()

    d = driver({**searcher, "stop_once": True, "smaller_is_better": False})
    d.run_fifo(lambda n, length: n / 10)
    assert [d.trained(n) for n in (1, 2, 3)] == [[300, 900]] * 3


HPSEARCH = adaptive(max_length=100, max_trials=10)  # 3_hpsearch.yaml


def test_3_hpsearch_launch() -> None:
    ops = make_search_method(HPSEARCH, SPACE, 0).initial_operations()
    assert len(ops) == 20
    for i, op in enumerate(ops):
        if i % 2 == 0:
            assert isinstance(op, Create)
        else:
            assert op == ValidateAfter(ops[i - 1].request_id, 25 if i < 14 else 100)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("arrivals", "promoted"),
    [
        ([0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8], [4, 6]),
        ([0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1], [4, 5, 6, 7]),
        ([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], [1]),
    ],
)
def test_3_hpsearch_promotions(arrivals: list[float], promoted: list[int]) -> None:
    d = driver(HPSEARCH)
    values = [*arrivals, 0.5, 0.5, 0.5]
    closes_after_seventh: list[Operation] = []
    for n in range(1, 8):
        ops = d.complete(n, values[n - 1])
        if n == 7:
            closes_after_seventh = [op for op in ops if isinstance(op, Close)]
    assert {op.request_id for op in closes_after_seventh} == {  # type: ignore[union-attr]
        d.rid(n) for n in range(1, 8) if n not in promoted
    }
    d.run_fifo(lambda n, length: values[n - 1])
    assert [n for n in range(1, 8) if d.trained(n) == [25, 100]] == promoted
    assert all(d.trained(n) == [100] for n in (8, 9, 10))
    assert len(d.order) == 10 and d.shutdown == Shutdown()


def test_3_hpsearch_stop_once_and_038_continue_only_the_best_so_far() -> None:
    arrivals = [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8]
    d = driver({**HPSEARCH, "stop_once": True})
    d.run_fifo(lambda n, length: ([*arrivals, 0, 0, 0])[n - 1])
    assert [n for n in range(1, 8) if d.trained(n) == [25, 100]] == [1, 2, 4, 6]

    searcher = {k: v for k, v in HPSEARCH.items() if k != "max_length"}
    d = driver({**searcher, "time_metric": "batches", "max_time": 100})
    assert len(d.order) == 10
    continued = []
    for n in range(1, 8):
        if d.report(n, arrivals[n - 1], 25) == []:
            continued.append(n)
    assert continued == [1, 2, 4, 6]


# -- properties ---------------------------------------------------------------------------------


def stopping_oracle(rung: list[float], value: float, divisor: float) -> bool:
    """Continue iff the newcomer (placed before equals) ranks in the top max(int(n/d), 1)."""
    return bisect.bisect_left(rung, value) < max(int((len(rung) + 1) / divisor), 1)


@settings(max_examples=60, deadline=None)
@given(
    divisor=st.sampled_from([2, 3, 4]),
    max_trials=st.integers(1, 25),
    concurrency=st.integers(0, 5),
    metrics=st.lists(st.integers(0, 6), min_size=1, max_size=200),
    seed=st.integers(0, 2**32 - 1),
)
def test_stopping_037_continues_only_the_top_fraction(
    divisor: int, max_trials: int, concurrency: int, metrics: list[int], seed: int
) -> None:
    picks = random.Random(seed)
    targets = rung_targets(100, divisor, 3)  # distinct for these divisors
    d = driver(asha(num_rungs=3, divisor=divisor, max_trials=max_trials, stop_once=True,
                    max_concurrent_trials=concurrency, max_length=100))  # fmt: skip
    rungs: list[list[float]] = [[], [], []]
    step = 0
    while d.inflight and d.shutdown is None:
        rid = list(d.inflight)[picks.randrange(len(d.inflight))]
        r = targets.index(d.inflight[rid])
        value = float(metrics[step % len(metrics)])
        step += 1
        expect = r < 2 and stopping_oracle(rungs[r], value, divisor)
        ops = d.complete(rid, value)
        if r < 2:
            assert (ValidateAfter(rid, targets[r + 1]) in ops) == expect
        assert (Close(rid) in ops) == (not expect)
        bisect.insort_left(rungs[r], value)
    assert d.shutdown == Shutdown()
    assert len(d.order) == max_trials


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(["random", "promotion", "stopping", "adaptive", "adaptive-stop"]),
    max_trials=st.integers(1, 20),
    concurrency=st.integers(0, 4),
    events=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 99)), min_size=1, max_size=50),
    seed=st.integers(0, 2**32 - 1),
)
def test_creates_stay_within_budget_plus_invalid_and_search_ends(
    name: str, max_trials: int, concurrency: int, events: list[tuple[int, int]], seed: int
) -> None:
    picks = random.Random(seed)
    searcher = {
        "random": {"name": "random", "metric": "loss"},
        "promotion": asha(num_rungs=3),
        "stopping": asha(num_rungs=3, stop_once=True),
        "adaptive": adaptive(),
        "adaptive-stop": adaptive(stop_once=True),
    }[name]
    d = driver({**searcher, "max_trials": max_trials, "max_concurrent_trials": concurrency,
                "max_length": {"batches": 64}})  # fmt: skip
    invalid, step = 0, 0
    while d.inflight and d.shutdown is None:
        kind, value = events[step % len(events)]
        step += 1
        rid = list(d.inflight)[picks.randrange(len(d.inflight))]
        if kind == 0 and step < 40:  # bounded: every InvalidHP trial is replaced
            invalid += 1
            d.fail(rid, ExitedReason.INVALID_HP)
        elif kind == 1:
            d.fail(rid, picks.choice([ExitedReason.ERRORED, ExitedReason.USER_CANCELED]))
        else:
            promotions_before = sum(isinstance(op, ValidateAfter) for op in d.log)
            ops = d.complete(rid, value / 10)
            fresh = {op.request_id for op in ops if isinstance(op, Create)}
            promotions = [op for op in ops if isinstance(op, ValidateAfter)]
            assert len([op for op in promotions if op.request_id not in fresh]) <= 1
            assert sum(isinstance(op, ValidateAfter) for op in d.log) >= promotions_before
        assert len(d.order) <= max_trials + invalid
    assert d.shutdown is not None
    assert d.exited == set(d.order)


# -- save / load --------------------------------------------------------------------------------

RESUMABLE = {
    "single": {"name": "single", "metric": "loss", "max_length": 5},
    "random-037": {"name": "random", "metric": "loss", "max_trials": 12,
                   "max_concurrent_trials": 3, "max_length": 5},
    "random-038": {"name": "random", "metric": "loss", "max_trials": 12,
                   "max_concurrent_trials": 3},
    "grid": {"name": "grid", "metric": "loss", "max_concurrent_trials": 2, "max_length": 5},
    "promotion": asha(num_rungs=3, divisor=2, max_trials=12, max_concurrent_trials=3,
                      max_length=64),
    "stopping-037": asha(num_rungs=3, divisor=2, max_trials=12, max_concurrent_trials=3,
                         max_length=64, stop_once=True),
    "stopping-038": asha(num_rungs=3, divisor=2, max_trials=12, max_concurrent_trials=3,
                         time_metric="batches", max_time=64),
    "adaptive-037": adaptive(max_trials=12, max_length=64, divisor=2, max_concurrent_trials=4),
    "adaptive-038": adaptive(max_trials=12, time_metric="batches", max_time=64, divisor=2,
                             max_concurrent_trials=4),
}  # fmt: skip
GRID_SPACE = {"x": {"type": "int", "minval": 0, "maxval": 5, "count": 6}}


def play(searcher: dict[str, Any], reload_at: int | None) -> tuple[list[Operation], list[float]]:
    """Drive a search with seeded random events; optionally save/JSON/load into a fresh method."""
    space = GRID_SPACE if searcher["name"] == "grid" else SPACE
    d = Driver(make_search_method(searcher, space, 1234))
    d.start()
    rng = random.Random(5)
    reports: dict[str, int] = {}
    progress: list[float] = []
    step = 0
    while d.shutdown is None:
        if step == reload_at:
            fresh = make_search_method(searcher, space, 1234)
            fresh.load(json.loads(json.dumps(d.method.save())))
            d.method = fresh
        step += 1
        live = [rid for rid in d.order if rid not in d.exited and rid not in d.finishing]
        if "max_length" in searcher:
            rid = list(d.inflight)[rng.randrange(len(d.inflight))]
            if rng.random() < 0.1:
                d.fail(rid, rng.choice(list(ExitedReason)))
            else:
                d.method.on_trial_progress(rid, rng.random() * 5)
                d.complete(rid, rng.random())
        else:
            rid = live[rng.randrange(len(live))]
            reports[rid] = reports.get(rid, 0) + 16
            if reports[rid] > 64 or rng.random() < 0.05:
                d.exit(rid)  # trained to its own end
            else:
                d.report(rid, rng.random(), reports[rid])
        progress.append(d.method.progress())
    return d.log, progress


@pytest.mark.parametrize("name", sorted(RESUMABLE))
def test_save_load_round_trip_continues_identically(name: str) -> None:
    uninterrupted = play(RESUMABLE[name], None)
    assert isinstance(uninterrupted[0][-1], Shutdown)
    for reload_at in (0, 3, len(uninterrupted[1]) // 2):
        assert play(RESUMABLE[name], reload_at) == uninterrupted


def test_load_rejects_state_from_another_searcher() -> None:
    state = make_search_method(RESUMABLE["random-038"], SPACE, 0).save()
    with pytest.raises(SearcherError, match="same config"):
        make_search_method(RESUMABLE["stopping-038"], SPACE, 0).load(state)


@pytest.mark.parametrize("stop_once", [True, False], ids=["stopping", "promotion"])
def test_load_rejects_state_with_another_number_of_rungs(stop_once: bool) -> None:
    three = asha(num_rungs=3, max_trials=4, max_length=100, stop_once=stop_once)
    state = make_search_method(three, SPACE, 0).save()
    with pytest.raises(ValueError, match="zip"):  # not silently two rungs of three restored
        make_search_method({**three, "num_rungs": 2}, SPACE, 0).load(state)


# -- throughput (counts only; not timed) --------------------------------------------------------


def test_ten_thousand_trials_validations_complete() -> None:
    d = driver(asha(num_rungs=3, divisor=4, max_trials=10_000, max_concurrent_trials=0,
                    max_length=16, stop_once=True))  # fmt: skip
    d.run_fifo(lambda n, length: (n * 7919 % 10_007) / 10_007)
    assert len(d.order) == 10_000 and d.shutdown == Shutdown()
    assert sum(len(lengths) for lengths in d.lengths.values()) >= 10_000

    d = driver({"name": "random", "metric": "loss", "max_trials": 10_000,
                "max_concurrent_trials": 0})  # fmt: skip
    for rid in list(d.order):
        d.report(rid, 0.5, 1)
        d.exit(rid)
    assert len(d.order) == 10_000 and d.shutdown == Shutdown()


# -- the rung container -------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["left", "right", "remove", "at"]), st.integers(0, 8)),
        max_size=120,
    )
)
def test_ranked_list_matches_a_flat_sorted_list(ops: list[tuple[str, int]]) -> None:
    ranked, flat = (
        RankedList(load=2),
        list[tuple[int, str]](),
    )  # tiny blocks: splits and empty blocks get exercised
    for n, (kind, value) in enumerate(ops):
        if kind in ("left", "right"):
            find = bisect.bisect_left if kind == "left" else bisect.bisect_right
            index = find([v for v, _ in flat], value)
            flat.insert(index, (value, f"t{n}"))
            assert ranked.insert(value, f"t{n}", before_equals=kind == "left") == index
        elif kind == "remove" and flat:
            victim = flat.pop(value % len(flat))[1]
            assert ranked.remove(victim)
        elif kind == "at" and flat:
            assert ranked.id_at(value % len(flat)) == flat[value % len(flat)][1]
        assert list(ranked) == flat and len(ranked) == len(flat)
    assert not ranked.remove("missing")
    copy = RankedList(load=2)
    copy.reset(ranked.values(), ranked.ids())
    assert list(copy) == flat


@settings(max_examples=60, deadline=None)
@given(
    divisor=st.sampled_from([2, 3, 4]),
    max_trials=st.integers(1, 30),
    concurrency=st.integers(0, 6),
    metrics=st.lists(st.integers(0, 9), min_size=1, max_size=100),
    seed=st.integers(0, 2**32 - 1),
)
def test_promotion_keeps_the_best_fraction_of_every_rung_promoted(
    divisor: int, max_trials: int, concurrency: int, metrics: list[int], seed: int
) -> None:
    """Promotion ASHA, any arrival order: a completion promotes at most one trial, and after
    every completion the best int(n/d) results of each rung (ties: earlier arrival first) have
    all been promoted; it may promote more (reference §7.6.5), never fewer."""
    picks = random.Random(seed)
    targets = rung_targets(100, divisor, 3)
    d = driver(asha(num_rungs=3, divisor=divisor, max_trials=max_trials,
                    max_concurrent_trials=concurrency, max_length=100))  # fmt: skip
    rungs: list[list[tuple[float, int, str]]] = [[], [], []]
    promoted: list[set[str]] = [set(), set(), set()]
    arrival = 0
    while d.inflight and d.shutdown is None:
        rid = list(d.inflight)[picks.randrange(len(d.inflight))]
        r = targets.index(d.inflight[rid])
        value = float(metrics[arrival % len(metrics)])
        arrival += 1
        ops = d.complete(rid, value)
        rungs[r].append((value, arrival, rid))
        fresh = {op.request_id for op in ops if isinstance(op, Create)}
        moves = [op for op in ops if isinstance(op, ValidateAfter) and op.request_id not in fresh]
        assert len(moves) <= 1
        for op in moves:
            promoted[targets.index(op.length) - 1].add(op.request_id)
        for k in range(2):
            best = sorted(rungs[k])[: int(len(rungs[k]) / divisor)]
            assert {i for _, _, i in best} <= promoted[k]
    assert d.shutdown is not None


def test_stopping_invalid_hp_after_a_stop_removes_the_result_from_its_rung() -> None:
    # Trial 2 is stopped at rung 0 and then raises InvalidHP: its 0.5 leaves rung 0 (§7.4: its
    # results are removed from rungs 0..its rung, the rung it was stopped at included).
    # rungs at 50, 100
    d = driver(asha(num_rungs=2, divisor=2, max_trials=10, max_concurrent_trials=4,
                    time_metric="batches", max_time=100))  # fmt: skip
    assert d.report(1, 0.1, 50) == []  # rung 0: [0.1] continues
    rid = d.rid(2)
    stop = d.method.on_validation_completed(rid, {"loss": 0.5, "batches": 50})
    assert stop[0] == Stop(rid)  # [0.1, 0.5]: index 1 >= max(int(2/2), 1)
    d.apply(stop[1:])
    ops = d.apply(d.method.on_trial_exited_early(rid, ExitedReason.INVALID_HP))  # before exiting
    assert [type(op) for op in ops] == [Create]  # a replacement; no second Stop
    d.exit(rid)
    assert d.report(3, 0.3, 50)[0] == Stop(d.rid(3))  # [0.1, 0.3]
    # with 0.5 still in rung 0, 0.2 would be index 1 of four results and continue
    assert d.report(4, 0.2, 50)[0] == Stop(d.rid(4))  # [0.1, 0.2, 0.3]: index 1 >= 1


def test_promotion_close_out_stops_at_the_first_rung_with_trials_in_flight() -> None:
    # Four rungs (targets 1, 2, 4, 8): rung 0 fills while trials 5 and 3 still train towards
    # rung 1, so close-out closes rung 0's waiting trials and stops there (§7.6.4). Trial 1,
    # waiting in rung 2, must stay open: a worse rung-2 result later promotes it to the top.
    d = driver(asha(num_rungs=4, divisor=2, max_trials=8, max_concurrent_trials=8, max_length=8))
    assert d.complete(1, 0.1) == []
    assert d.complete(2, 0.2) == [ValidateAfter(d.rid(1), 2)]
    assert d.complete(1, 0.1) == []  # waiting in rung 1
    assert d.complete(3, 0.3) == []
    assert d.complete(4, 0.4) == [ValidateAfter(d.rid(2), 2)]
    assert d.complete(2, 0.2) == [ValidateAfter(d.rid(1), 4)]
    assert d.complete(1, 0.1) == []  # waiting in rung 2
    assert d.complete(5, 0.05) == [ValidateAfter(d.rid(5), 2)]  # in flight towards rung 1
    d.complete(6, 0.6)
    d.complete(7, 0.7)
    ops = d.complete(8, 0.8)  # rung 0 holds 8 = max_trials results: close-out runs
    assert ValidateAfter(d.rid(3), 2) in ops  # a second trial in flight towards rung 1
    closed = {op.request_id for op in ops if isinstance(op, Close)}
    assert closed == {d.rid(n) for n in (4, 6, 7, 8)}  # rung 0's waiting trials only
    assert d.complete(5, 0.05) == [ValidateAfter(d.rid(5), 4)]
    assert d.complete(5, 0.5) == [ValidateAfter(d.rid(1), 8)]  # trial 1 is promoted to the top


def rung_entries(d: Driver) -> list[list[tuple[str, str]]]:
    """Each rung's (trial number, status) entries, as the web UI shows them."""
    states = d.method._strategy.rung_states()  # type: ignore[attr-defined]
    return [[(str(d.number[e.request_id]), e.status) for e in s.entries] for s in states]


def test_stopping_invalid_hp_trials_do_not_use_up_the_budget() -> None:
    d = driver(asha(num_rungs=2, divisor=2, max_trials=3, max_concurrent_trials=2,
                    time_metric="batches", max_time=100))  # fmt: skip
    ops = d.fail(1, ExitedReason.INVALID_HP) + d.fail(2, ExitedReason.INVALID_HP)
    assert [type(op) for op in ops] == [Stop, Create, Stop, Create]  # replaced: 4 created
    ops = d.report(3, 0.1, 100)  # passes both rungs: finished; 4 created - 2 invalid < 3
    assert ops[0] == Stop(d.rid(3)) and isinstance(ops[1], Create) and len(ops) == 2
    assert d.report(4, 0.2, 100) == [Stop(d.rid(4))]  # 5 created - 2 invalid: budget used


def test_stopping_exits_go_into_the_rung_the_trial_was_at() -> None:
    # 0.37, rungs at 25, 50, 100
    d = driver(asha(num_rungs=3, divisor=2, max_trials=10, max_concurrent_trials=3,
                    max_length=100, stop_once=True))  # fmt: skip
    assert d.complete(1, 0.1) == [ValidateAfter(d.rid(1), 50)]
    d.fail(1, ExitedReason.ERRORED)  # at rung 1: the worst result goes there, not into rung 0
    d.complete(2, 0.5)
    assert rung_entries(d) == [[("1", "promoted"), ("2", "stopped")], [("1", "exited")], []]


def test_stopping_metric_errors_name_the_trial_and_the_metric() -> None:
    d = driver(asha(num_rungs=2, max_trials=2, time_metric="batches", max_time=100))
    rid = d.rid(1)
    with pytest.raises(SearcherError, match=f"^trial {rid}: the searcher metric 'loss' must"):
        d.method.on_validation_completed(rid, {"loss": "x", "batches": 5})
    with pytest.raises(SearcherError, match=f"^trial {rid}: the time metric 'batches' must"):
        d.method.on_validation_completed(rid, {"loss": 0.1, "batches": None})


def test_promotion_metric_errors_name_the_trial_and_the_metric() -> None:
    d = driver(asha(num_rungs=2, max_trials=2, max_length=100))
    rid = d.rid(1)
    with pytest.raises(SearcherError, match=f"^trial {rid}: the searcher metric 'loss' must"):
        d.method.on_validation_completed(rid, {"loss": "x"}, 25)


def test_promotion_an_exited_waiting_trial_chosen_for_promotion_fails_the_next_rung() -> None:
    d = driver(asha(num_rungs=3, divisor=2, max_trials=8, max_concurrent_trials=2, max_length=4))
    assert [type(op) for op in d.complete(1, 0.1)] == [Create, ValidateAfter]  # 1 waits
    assert d.fail(1, ExitedReason.ERRORED) == []  # nothing in flight: it stays waiting
    ops = d.complete(2, 0.2)  # chooses trial 1, which fails rung 1 with the worst result
    assert [type(op) for op in ops] == [Create, ValidateAfter] and ops[1].length == 1
    assert rung_entries(d)[1] == [("1", "exited")]


def test_promotion_invalid_hp_of_a_trial_in_flight_to_rung_1() -> None:
    d = driver(asha(num_rungs=2, divisor=2, max_trials=3, max_concurrent_trials=3, max_length=4))
    assert d.complete(1, 0.1) == []
    assert d.complete(2, 0.2) == [ValidateAfter(d.rid(1), 4)]  # trial 1 in flight to rung 1
    ops = d.fail(1, ExitedReason.INVALID_HP)
    assert ops[0] == Close(d.rid(1)) and isinstance(ops[1], Create)  # replaced
    assert rung_entries(d) == [[("2", "waiting")], []]  # its rung-0 result is gone
    d.complete(3, 0.3)  # rung 0: [0.2, 0.3]
    ops = d.complete(4, 0.4)  # 3 results = max_trials with nothing in flight: close-out
    assert {op.request_id for op in ops if isinstance(op, Close)} == {d.rid(3), d.rid(4)}
    assert d.method.progress() == pytest.approx(max(3 / 3.6, (3 - 1) / 3))


def test_promotion_an_invalid_hp_trial_leaves_the_others_in_flight_to_its_rung_counted() -> None:
    # Trials 4 and 6 train towards rung 1, where trial 2 waits. Trial 6 turns out InvalidHP:
    # trial 4 is still in flight, so close-out must leave trial 2 open (4's result there may
    # promote it) when the replacement's result fills rung 0 again.
    d = driver(asha(num_rungs=3, divisor=2, max_trials=6, max_concurrent_trials=6, max_length=8))
    d.complete(1, 0.5)
    assert d.complete(2, 0.4) == [ValidateAfter(d.rid(2), 4)]
    assert d.complete(2, 0.4) == []  # waiting in rung 1
    d.complete(3, 0.6)
    assert d.complete(4, 0.3) == [ValidateAfter(d.rid(4), 4)]
    d.complete(5, 0.7)
    ops = d.complete(6, 0.2)  # rung 0 is full: close-out closes its waiting trials
    assert ops[0] == ValidateAfter(d.rid(6), 4)
    assert {op.request_id for op in ops if isinstance(op, Close)} == {d.rid(n) for n in (1, 3, 5)}
    ops = d.fail(6, ExitedReason.INVALID_HP)
    assert ops[0] == Close(d.rid(6)) and isinstance(ops[1], Create)
    assert d.complete(7, 0.9) == [Close(d.rid(7))]  # rung 0 full again; trial 2 stays open
    ops = d.complete(4, 0.5)  # a worse rung-1 result: trial 2 goes on, and 4 is closed out
    assert ops == [ValidateAfter(d.rid(2), 8), Close(d.rid(4))]


def test_promotion_progress_counts_closed_trials_once_rung_0_is_full() -> None:
    d = driver(asha(num_rungs=2, divisor=4, max_trials=4, max_length=100))
    for n in (1, 2, 3):
        d.complete(n, 0.5)
    assert d.method.progress() == pytest.approx(3 / 4.8)
    d.complete(4, 0.1)  # closes 1, 2 and 3
    assert d.method.progress() == pytest.approx(max(4 / 4.8, 3 / 4))


def test_promotion_never_promotes_a_trial_close_out_closed() -> None:
    d = driver(asha(num_rungs=2, divisor=2, max_trials=4, max_concurrent_trials=4, max_length=4))
    d.complete(1, 0.1)
    assert d.complete(2, 0.2) == [ValidateAfter(d.rid(1), 4)]
    d.complete(3, 0.3)
    ops = d.complete(4, 0.4)  # promotes 2; rung 0 is full: close-out closes 3 and 4
    assert ops == [ValidateAfter(d.rid(2), 4), Close(d.rid(3)), Close(d.rid(4))]
    ops = d.fail(1, ExitedReason.INVALID_HP)  # in flight to rung 1: replaced by trial 5
    assert ops[0] == Close(d.rid(1)) and ops[2] == ValidateAfter(d.rid(5), 2)
    # rung 0 is [0.2, 0.3, 0.4, 0.5]: trial 3 is the one to promote, but it was closed
    assert d.complete(5, 0.5) == [Close(d.rid(5))]


def test_stopping_invalid_hp_removes_its_results_from_every_rung_it_passed() -> None:
    # rungs at 25, 50, 100
    d = driver(asha(num_rungs=3, divisor=2, max_trials=4, max_concurrent_trials=2,
                    time_metric="batches", max_time=100))  # fmt: skip
    assert d.report(1, 0.1, 50) == []  # passes rungs 0 and 1, trains on towards rung 2
    d.report(2, 0.2, 25)
    assert rung_entries(d) == [[("1", "promoted"), ("2", "stopped")], [("1", "promoted")], []]
    training = [s.training for s in d.method._strategy.rung_states()]  # type: ignore[attr-defined]
    assert training == [[d.rid(3)], [], [d.rid(1)]]  # 2 was stopped (3 replaced it)
    d.fail(1, ExitedReason.INVALID_HP)
    assert rung_entries(d) == [[("2", "stopped")], [], []]


def test_promotion_progress_is_closed_trials_over_max_trials_once_that_is_more() -> None:
    d = driver(asha(num_rungs=2, divisor=4, max_trials=8, max_concurrent_trials=8, max_length=100))
    for n in range(1, 9):
        d.complete(n, n / 10)  # promotes 1 and 2; close-out closes 3..8
    assert d.method.progress() == pytest.approx(8 / 9.6)  # 6 closed: 6/8 is less
    assert d.complete(1, 0.1) == [Close(d.rid(1))]  # 7 closed, trial 2 still training
    assert d.method.progress() == pytest.approx(7 / 8)


def test_promotion_a_completion_that_promotes_creates_no_trial() -> None:
    d = driver(asha(num_rungs=2, divisor=2, max_trials=8, max_concurrent_trials=2, max_length=4))
    assert [type(op) for op in d.complete(1, 0.1)] == [Create, ValidateAfter]  # none promoted
    assert d.complete(2, 0.05) == [ValidateAfter(d.rid(2), 4)]  # promoted at once: no Create
