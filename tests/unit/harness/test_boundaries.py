"""``Boundaries``: the one rule for what is due after a batch and at an epoch end."""

from __future__ import annotations

import pytest

from trialkit.harness import (
    EVERY_BATCH,
    NEVER,
    NOTHING,
    Batch,
    Boundaries,
    Due,
    Epoch,
    in_batches,
    report_unit,
)


def _fired(boundaries: Boundaries, batches: int, field: str) -> list[int]:
    return [n for n in range(1, batches + 1) if getattr(boundaries.after_batch(n), field)]


def test_batch_periods_fire_on_their_multiples_and_epoch_periods_only_at_epoch_ends() -> None:
    b = Boundaries(validation=Batch(3), checkpoint=Epoch(2), report=Batch(2), target=7)
    assert _fired(b, 9, "validate") == [3, 6, 9]
    assert _fired(b, 9, "report") == [2, 4, 6, 8]
    assert _fired(b, 9, "checkpoint") == []  # counted in epochs
    assert _fired(b, 9, "target") == [7, 8, 9]
    assert [e for e in range(1, 7) if b.at_epoch_end(e).checkpoint] == [2, 4, 6]
    assert not b.at_epoch_end(2).validate and not b.at_epoch_end(2).report


def test_a_container_period_fires_at_its_steps_and_a_period_below_one_always() -> None:
    b = Boundaries(validation=Batch([2, 5]), report=Batch(0))
    assert _fired(b, 6, "validate") == [2, 5]
    assert _fired(b, 3, "report") == [1, 2, 3]
    assert [
        e for e in range(1, 5) if Boundaries(checkpoint=Epoch({3})).at_epoch_end(e).checkpoint
    ] == [3]


def test_nothing_is_due_without_periods_or_target_and_demands_combine() -> None:
    b = Boundaries()
    assert b.after_batch(10**6) is NOTHING and b.at_epoch_end(5) is NOTHING
    assert not b.reached(10**9)
    stop = Boundaries(stop_check=EVERY_BATCH, checkpoint=Epoch(1))
    both = stop.after_batch(4) | stop.at_epoch_end(1)
    assert both == Due(checkpoint=True, stop_check=True)
    assert Boundaries(checkpoint=NEVER).at_epoch_end(1) is NOTHING


def test_report_unit_and_in_batches_convert_lengths() -> None:
    assert report_unit("epoch") == Epoch(1) and report_unit(50) == Batch(50)
    with pytest.raises(ValueError, match="train_metrics_report_period"):
        report_unit(0)
    assert in_batches(Epoch(3), 4) == 12 and in_batches(Batch(7), float("inf")) == 7
    with pytest.raises(ValueError, match="no length"):
        in_batches(Epoch(1), float("inf"))
    with pytest.raises(TypeError, match="Batch\\(int\\)"):
        in_batches(Batch([1, 2]), 4)


def test_periods_that_fire_together_are_all_due() -> None:
    every = Boundaries(validation=Batch(1), report=Batch(0), stop_check=EVERY_BATCH, target=2)
    assert every.after_batch(1) == Due(validate=True, report=True, stop_check=True)
    assert every.after_batch(2) == Due(validate=True, report=True, target=True, stop_check=True)
    epochs = Boundaries(validation=Epoch(2), checkpoint=Epoch(1), report=Epoch(2))
    assert epochs.at_epoch_end(2) == Due(validate=True, checkpoint=True, report=True)
    assert Due(checkpoint=True) | Due(report=True) == Due(checkpoint=True, report=True)
