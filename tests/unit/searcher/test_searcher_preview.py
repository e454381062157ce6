"""preview(): a simulated search, as behind ``trialkit experiment preview``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from trialkit.searcher import Create, grid_points, make_search_method, preview

SPACE = {"lr": {"type": "log", "minval": -4.0, "maxval": -1.0, "base": 10.0}}
HPSEARCH = {
    "name": "adaptive_asha",
    "metric": "loss",
    "max_length": 100,
    "max_trials": 10,
    "mode": "standard",
    "divisor": 4,
    "max_rungs": 5,
    "max_concurrent_trials": 16,
}


def test_random_preview_matches_the_search_trials() -> None:
    searcher = {"name": "random", "metric": "loss", "max_trials": 5, "max_length": {"epochs": 2}}
    trials = preview(searcher, SPACE, 11)
    assert [t["lengths"] for t in trials] == [[2]] * 5
    creates = [op for op in make_search_method(searcher, SPACE, 11).initial_operations()]
    first = [op for op in creates if isinstance(op, Create)]
    assert [(t["request_id"], t["trial_seed"], t["hparams"]) for t in trials] == [
        (c.request_id, c.trial_seed, c.hparams) for c in first
    ]


def test_grid_preview_runs_points_from_the_end() -> None:
    space = {"x": {"type": "int", "minval": 0, "maxval": 4, "count": 3}, "y": {"a": 1}}
    trials = preview({"name": "grid", "metric": "loss", "max_concurrent_trials": 2}, space, 0)
    assert [t["hparams"] for t in trials] == grid_points(space)[::-1]
    assert all(t["lengths"] == [] for t in trials)  # 0.38: trials train to their own length


def test_3_hpsearch_preview_with_given_metrics() -> None:
    arrivals = [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.5, 0.5, 0.5]
    trials = preview(HPSEARCH, SPACE, 0, metric_fn=lambda n, length: arrivals[n - 1])
    assert [t["lengths"] for t in trials] == [
        [25], [25], [25], [25, 100], [25], [25, 100], [25], [100], [100], [100],
    ]  # fmt: skip


def test_038_preview_reports_at_the_rungs_of_the_trials_bracket() -> None:
    searcher = {k: v for k, v in HPSEARCH.items() if k != "max_length"}
    searcher.update(time_metric="batches", max_time=100)
    trials = preview(searcher, SPACE, 3)
    assert len(trials) == 10
    for t in trials:
        assert t["lengths"] in ([25], [25, 100], [100])


def test_default_metrics_are_deterministic_and_output_is_json() -> None:
    first = preview(HPSEARCH, SPACE, 5)
    assert first == preview(HPSEARCH, SPACE, 5)
    assert json.loads(json.dumps(first)) == first
    assert sum(t["lengths"] == [25, 100] for t in first) in range(1, 5)


def test_preview_refuses_a_custom_searcher() -> None:
    with pytest.raises(ValueError, match="^preview: a custom searcher's decisions are made by your"
                       " own code; there is nothing to simulate$"):  # fmt: skip
        preview({"name": "custom", "metric": "loss"}, SPACE, 0)


@pytest.mark.parametrize("seed", [0, 41, 2**32 - 1])
def test_default_metrics_come_from_the_seed_plus_one(seed: int) -> None:
    """The default metric of each event is the next draw of RandomState(seed + 1 mod 2**32)."""
    rng = np.random.RandomState((seed + 1) % 2**32)
    given = preview(HPSEARCH, SPACE, seed, metric_fn=lambda n, length: rng.random_sample())
    assert preview(HPSEARCH, SPACE, seed) == given


def test_metric_fn_gets_the_trial_number_and_length_of_each_result() -> None:
    """0.37: one call per completed operation, (trial number from 1, its ValidateAfter length)."""
    calls: list[tuple[int, int]] = []

    def metric(n: int, length: int) -> float:
        calls.append((n, length))
        return 1.0 / n

    trials = preview(HPSEARCH, SPACE, 0, metric_fn=metric)
    expected = [(n, length) for n, t in enumerate(trials, 1) for length in t["lengths"]]
    assert sorted(calls) == sorted(expected) and len(calls) == len(expected)
    assert {n for n, _ in calls} == set(range(1, len(trials) + 1))


def test_038_metric_fn_gets_the_trial_number_and_time_metric_value() -> None:
    searcher = {k: v for k, v in HPSEARCH.items() if k != "max_length"}
    searcher.update(time_metric="batches", max_time=100)
    calls: list[tuple[int, int]] = []

    def metric(n: int, t: int) -> float:
        calls.append((n, t))
        return float(n % 3)

    trials = preview(searcher, SPACE, 3, metric_fn=metric)
    expected = [(n, t) for n, trial in enumerate(trials, 1) for t in trial["lengths"]]
    assert sorted(calls) == sorted(expected)
    # bracket 0 (rungs 25, 100): trials 2, 4, 5 and 7 are stopped at 25 and report no more
    assert [t["lengths"] for t in trials] == [
        [25, 100], [25], [25, 100], [25], [25], [25, 100], [25], [100], [100], [100],
    ]  # fmt: skip


def test_a_trial_that_closes_makes_room_for_the_next() -> None:
    """Two at a time: the later trials are created only as earlier ones close."""
    searcher = {"name": "random", "metric": "loss", "max_trials": 5, "max_length": {"epochs": 2},
                "max_concurrent_trials": 2}  # fmt: skip
    assert [t["lengths"] for t in preview(searcher, SPACE, 11)] == [[2]] * 5
    searcher = {"name": "random", "metric": "loss", "max_trials": 5, "max_concurrent_trials": 2}
    assert len(preview(searcher, SPACE, 11)) == 5  # 0.38: each trains to its own length


@pytest.mark.parametrize(
    ("max_time", "lengths"), [(80, [10, 20, 40, 80]), (12, [1, 3, 6, 12]), (2, [1, 2])]
)
def test_optuna_038_preview_reports_at_fractions_of_max_time(
    max_time: int, lengths: list[int]
) -> None:
    """At max_time // 8, // 4, // 2 and max_time (whole units, at least 1, each once)."""
    pytest.importorskip("optuna")
    searcher = {"name": "optuna", "metric": "loss", "max_trials": 3, "pruner": "NopPruner",
                "time_metric": "batches", "max_time": max_time}  # fmt: skip
    trials = preview(searcher, SPACE, 0)
    assert [t["lengths"] for t in trials] == [lengths] * 3
    assert all(type(x) is int for t in trials for x in t["lengths"])


def test_max_events_bounds_the_simulation() -> None:
    """Random search of five trials: one event per trial's operation."""
    searcher = {"name": "random", "metric": "loss", "max_trials": 5, "max_length": 3}
    assert len(preview(searcher, SPACE, 0, max_events=5)) == 5
    with pytest.raises(
        RuntimeError, match="^preview: the search did not finish within max_events$"
    ):
        preview(searcher, SPACE, 0, max_events=4)
