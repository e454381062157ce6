"""The store's metric hot path (``store/_metric_writes.py``) where the ingest tests leave it
unchecked: an empty call, a batch with no reports, a delivery for a trial that is gone, and
the check that the hot path's column lists still match the tables (issue 31 item 11)."""

from __future__ import annotations

from typing import cast

import pytest
from sqlalchemy import Table

from trialkit.store import Delivered, MetricBatch, MetricDelivery, NewMetric, Store, StoreError
from trialkit.store._metric_writes import (
    BATCH_COLUMNS,
    METRIC_COLUMNS,
    _check_columns,
)
from trialkit.store._models import MetricBatchRow, MetricRow


def new_trial_id(store: Store) -> int:
    exp = store.create_experiment(name="e", config={"searcher": {"name": "single"}})
    return store.create_trial(experiment_id=exp.id, request_id="r", hparams={}, seed=1).id


def test_nothing_to_store_is_answered_stored(store: Store) -> None:
    trial = new_trial_id(store)
    assert store.add_metrics([]) is True
    assert store.count_metrics(trial) == 0


def test_a_batch_without_reports_is_still_stored_once(store: Store) -> None:
    """An empty batch is a batch: its key is kept, so its resend is answered as a duplicate."""
    trial = new_trial_id(store)
    batch = MetricBatch(trial, run_id=1, sender="s", seq=1)
    assert store.add_metrics([], batch) is True
    assert store.metric_batch_stored(batch)
    assert store.add_metrics([], batch) is False
    assert store.count_metrics(trial) == 0


def test_a_delivery_for_a_trial_that_is_gone_is_stale_not_an_error(store: Store) -> None:
    """A run's reports for a trial no longer in the store (its experiment was deleted) are
    refused like those of an ended run; the other deliveries of the group are stored."""
    trial = new_trial_id(store)
    store.update_trial(trial, run_id=1)
    gone = MetricDelivery(
        [NewMetric(999, "training", 1, {"loss": 1.0}, run_id=1)],
        MetricBatch(999, 1, "s", 1),
        trial_id=999,
        run_id=1,
    )
    kept = MetricDelivery(
        [NewMetric(trial, "training", 2, {"loss": 0.5}, run_id=1)],
        MetricBatch(trial, 1, "s", 1),
        trial_id=trial,
        run_id=1,
    )
    assert store.add_metric_deliveries([gone, kept]) == [Delivered.STALE, Delivered.STORED]
    assert [m.steps_completed for m in store.list_metrics(trial, "training")] == [2]
    assert store.count_metrics(999) == 0
    assert not store.metric_batch_stored(MetricBatch(999, 1, "s", 1))


@pytest.mark.parametrize(
    ("table", "columns"),
    [
        (cast(Table, MetricRow.__table__), METRIC_COLUMNS),
        (cast(Table, MetricBatchRow.__table__), BATCH_COLUMNS),
    ],
)
def test_the_hot_path_columns_must_be_the_tables(table: Table, columns: tuple[str, ...]) -> None:
    """A model change the hot path's column list does not follow stops the store at start
    (its rows would go into the wrong columns), naming the table and both lists."""
    _check_columns(table, columns)  # today's lists match
    with pytest.raises(RuntimeError) as err:
        _check_columns(table, columns[:-1])
    message = str(err.value)
    assert message.startswith(f"{table.name} has columns (")
    assert f"the metric writes use {columns[:-1]}" in message
    assert "'id'" not in message  # the database's own key is not the hot path's to write
    with pytest.raises(RuntimeError):
        _check_columns(table, (*columns, "extra"))


def test_reports_already_encoded_are_stored_as_given(store: Store) -> None:
    """The master's request validation encodes a report's values once: the store writes that
    text as it is instead of encoding ``values`` / ``batch_metrics`` again."""
    trial = new_trial_id(store)
    report = NewMetric(
        trial,
        "training",
        1,
        {"loss": 0.5},
        batch_metrics=[{"loss": 0.5}],
        values_json='{"loss": 0.25}',
        batch_metrics_json='[{"loss": 0.25}]',
    )
    store.add_metrics([report])
    (stored,) = store.list_metrics(trial)
    assert stored.values == {"loss": 0.25}
    assert [b.batch_metrics for b in store.list_batch_metrics(trial)] == [[{"loss": 0.25}]]


def test_reports_not_encoded_yet_are_encoded_by_the_store(store: Store) -> None:
    trial = new_trial_id(store)
    with_batches = NewMetric(trial, "training", 1, {"loss": 0.5}, batch_metrics=[{"loss": 0.7}])
    without = NewMetric(trial, "training", 2, {"loss": 0.4})
    store.add_metrics([with_batches, without])
    assert [m.values for m in store.list_metrics(trial)] == [{"loss": 0.5}, {"loss": 0.4}]
    (batches,) = store.list_batch_metrics(trial)  # only the report that carried them
    assert (batches.steps_completed, batches.batch_metrics) == (1, [{"loss": 0.7}])


def test_a_failed_write_names_the_databases_reason(store: Store) -> None:
    """A batch for a trial that never existed breaks the transaction: the StoreError says why
    (the driver's reason), not only that the store failed."""
    with pytest.raises(StoreError) as err:
        store.add_metrics([NewMetric(999, "training", 1, {})], MetricBatch(999, 1, "s", 1))
    assert "foreign key constraint" in str(err.value).lower()
