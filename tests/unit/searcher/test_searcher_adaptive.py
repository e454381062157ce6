"""adaptive_asha's tournament: a one-bracket tournament is that bracket, events reach the bracket
that created the trial, progress is the brackets' mean, and the bracket split matches Go's."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from trialkit.searcher import ExitedReason, Operation, make_search_method
from trialkit.searcher._adaptive import bracket_max_trials, effective_max_rungs
from trialkit.searcher._rung_view import asha_rungs

from .test_searcher_asha import SPACE, Driver, adaptive, asha

ONE_BRACKET: dict[str, dict[str, Any]] = {
    "promotion-037": {"max_length": 64},
    "stopping-037": {"max_length": 64, "stop_once": True},
    "stopping-038": {"time_metric": "batches", "max_time": 64},
}


def _play(searcher: dict[str, Any]) -> tuple[list[Operation], list[float], Driver]:
    """Drive a search with seeded random events (every kind of early exit included)."""
    d = Driver(make_search_method(searcher, SPACE, 99))
    d.start()
    rng, reports, progress = random.Random(3), dict[str, int](), list[float]()
    while d.shutdown is None:
        if "max_length" in searcher:
            rid = list(d.inflight)[rng.randrange(len(d.inflight))]
            if rng.random() < 0.15:
                d.fail(rid, rng.choice(list(ExitedReason)))
            else:
                d.complete(rid, rng.random())
        else:
            live = [rid for rid in d.order if rid not in d.exited and rid not in d.finishing]
            rid = live[rng.randrange(len(live))]
            reports[rid] = reports.get(rid, 0) + 16
            if rng.random() < 0.1:
                d.exit(rid) if rng.random() < 0.5 else d.fail(rid, ExitedReason.INVALID_HP)
            else:
                d.report(rid, rng.random(), reports[rid])
        progress.append(d.method.progress())
    return d.log, progress, d


@pytest.mark.parametrize("kind", sorted(ONE_BRACKET))
def test_a_one_bracket_tournament_is_that_async_halving_search(kind: str) -> None:
    """Same events, same operations, progress and saved bracket state as async_halving."""
    common = {"divisor": 2, "max_trials": 12, "max_concurrent_trials": 3, **ONE_BRACKET[kind]}
    log, progress, single = _play(asha(num_rungs=3, **common))
    tournament_log, tournament_progress, tournament = _play(
        adaptive(bracket_rungs=[3], max_rungs=3, **common)
    )
    assert tournament_log == log and tournament_progress == progress
    bracket = tournament.method.save()["strategy"]["brackets"][0]
    assert json.loads(json.dumps(bracket)) == json.loads(
        json.dumps(single.method.save()["strategy"])
    )
    assert bracket == single.method.save()["strategy"]


def test_progress_is_the_mean_of_the_brackets() -> None:
    """Rung-0 results in the first of three brackets only: its progress over three."""
    searcher = adaptive(max_trials=30, max_length=64, mode="conservative", max_rungs=3)
    d = Driver(make_search_method(searcher, SPACE, 0))
    d.start()
    brackets = asha_rungs(searcher, None)
    assert brackets is not None and len(brackets) == 3
    first = brackets[0].max_trials
    done = 0
    for rid in [rid for rid in d.order if d.inflight.get(rid) == 4][:3]:  # bracket 0: 4, 16, 64
        d.complete(rid, 0.5)
        done += 1
        assert d.method.progress() == pytest.approx(done / (1.2 * first) / 3)
    assert done == 3


def test_rung_views_number_the_brackets() -> None:
    brackets = asha_rungs(adaptive(max_trials=30, max_length=64, mode="conservative"), None)
    assert brackets is not None
    assert [b.index for b in brackets] == [0, 1, 2]
    assert [len(b.rungs) for b in brackets] == [3, 2, 1]


def test_load_rejects_state_with_another_number_of_brackets() -> None:
    three = adaptive(max_trials=12, max_length=64, mode="conservative", max_rungs=3)
    state = make_search_method(three, SPACE, 0).save()
    with pytest.raises(ValueError, match="zip"):  # not silently two brackets of three restored
        make_search_method({**three, "mode": "aggressive"}, SPACE, 0).load(state)


def test_bracket_split_rounds_as_go_does() -> None:
    """Each share is int(weight / total * M) with weight d^(R-1)/R: cases where another power
    of d (the same ratios) rounds differently."""
    assert bracket_max_trials(569, 3, [5, 4, 3, 2, 1]) == [324, 135, 60, 30, 20]
    assert bracket_max_trials(55, 3, [3, 2, 1]) == [31, 14, 10]


def test_max_rungs_caps_the_rung_count() -> None:
    assert effective_max_rungs(2, 1000, 1000, 4) == 2
    assert effective_max_rungs(9, 1000, 1000, 4) == 5
