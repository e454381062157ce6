"""The web UI's chart query on SQLite and PostgreSQL: one metric of every trial, aggregated per
trial by the database, in report order, digit for digit, after a given row."""

from __future__ import annotations

import uuid

from trialkit.store import NewMetric, Store, TrialPoints


def _trial(store: Store, experiment_id: int) -> int:
    t = store.create_trial(
        experiment_id=experiment_id, request_id=uuid.uuid4().hex, hparams={}, seed=0
    )
    return int(t.id)


def test_points_per_trial_in_report_order_exact_and_numbers_only(store: Store) -> None:
    exp = store.create_experiment(name="e", config={}).id
    other = store.create_experiment(name="other", config={}).id
    a, b, c = _trial(store, exp), _trial(store, exp), _trial(store, other)
    key = "val.loss"  # a key that needs quoting in a JSON path
    # Interleaved trials; a restart reports a lower step after a higher one (report order
    # is row order, not step order); values that are not JSON numbers give None.
    store.add_metrics(
        [
            NewMetric(a, "validation", 10, {key: 0.1 + 0.2}),
            NewMetric(b, "validation", 10, {key: 3}),
            NewMetric(a, "training", 10, {key: 99.0}),
            NewMetric(a, "validation", 20, {key: "NaN"}),
            NewMetric(b, "validation", 20, {"other": 1.0}),
            NewMetric(a, "validation", 15, {key: 1e-300}),
            NewMetric(b, "validation", 30, {key: True}),
            NewMetric(c, "validation", 10, {key: 5.0}),
        ]
    )
    points = store.metric_points(exp, "validation", key)
    assert [(p.trial_id, p.steps, p.values) for p in points] == [
        (a, [10, 20, 15], [0.30000000000000004, None, 1e-300]),
        (b, [10, 20, 30], [3.0, None, None]),
    ]
    assert all(isinstance(v, float) for p in points for v in p.values if v is not None)
    last = max(p.last_id for p in points)
    assert last < store.newest_metric_id()  # the other experiment's row came last
    # After a row: only the newer ones.
    store.add_metrics([NewMetric(a, "validation", 30, {key: 0.5})])
    newer = store.metric_points(exp, "validation", key, after_id=last)
    assert [(p.trial_id, p.steps, p.values) for p in newer] == [(a, [30], [0.5])]
    assert newer[0].last_id == store.last_metric_id(exp)
    assert store.metric_points(exp, "validation", key, after_id=newer[0].last_id) == []


def test_points_of_a_metric_whose_name_holds_a_double_quote(store: Store) -> None:
    # SQLite's JSON paths cannot name such a key (they read no escapes): it is looked up among
    # the report's members instead, so the chart is not empty.
    exp = store.create_experiment(name="e", config={}).id
    a = _trial(store, exp)
    key = 'val "acc"'
    store.add_metrics(
        [
            NewMetric(a, "validation", 1, {key: 0.5}),
            NewMetric(a, "validation", 2, {key: "NaN"}),
            NewMetric(a, "validation", 3, {key: 2}),
        ]
    )
    (points,) = store.metric_points(exp, "validation", key)
    assert (points.steps, points.values) == ([1, 2, 3], [0.5, None, 2.0])


def test_many_points_come_back_in_order(store: Store) -> None:
    exp = store.create_experiment(name="e", config={}).id
    trials = [_trial(store, exp) for _ in range(3)]
    store.add_metrics(
        [NewMetric(t, "validation", s, {"loss": 1.0 / s}) for s in range(1, 501) for t in trials]
    )
    points = store.metric_points(exp, "validation", "loss")
    assert [p.trial_id for p in points] == trials
    for p in points:
        assert isinstance(p, TrialPoints)
        assert p.steps == list(range(1, 501))
        assert p.values == [1.0 / s for s in range(1, 501)]
