"""preview(): a simulated search, as behind ``trialkit experiment preview``."""

from __future__ import annotations

import json

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
