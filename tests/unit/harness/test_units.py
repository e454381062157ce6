"""Training lengths and periods (``Batch``, ``Epoch``): equality and hashing by kind and value,
the records conversion, and the one-line errors for what cannot be a length."""

from __future__ import annotations

import sys

import pytest

from trialkit.harness import Batch, Epoch
from trialkit.harness._units import TrainUnit, in_batches


def test_units_are_equal_only_in_the_same_kind_and_value() -> None:
    assert Batch(3) == Batch(3) and hash(Batch(3)) == hash(Batch(3))
    assert Batch(3) != Batch(4) and Batch(3) != Epoch(3)
    assert len({Batch(3), Batch(3), Epoch(3), Batch([1, 2])}) == 3
    assert len({hash(Batch(n)) for n in range(8)} | {hash(Epoch(n)) for n in range(8)}) == 16


def test_a_unit_of_anything_but_an_int_or_a_container_is_refused_naming_it() -> None:
    with pytest.raises(
        TypeError, match=r"^Epoch\(value\): expected an int or a container, got 1.5$"
    ):
        Epoch(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^Batch\(value\): .* got True$"):
        Batch(True)


def test_records_convert_to_batches_and_never_stays_never() -> None:
    assert TrainUnit._from_values(records=100, global_batch_size=32) == Batch(3)
    assert TrainUnit._from_values(records=10, global_batch_size=32) == Batch(1)
    assert TrainUnit._from_values(records=0, global_batch_size=32) == Batch(sys.maxsize)
    assert Batch._from_records(sys.maxsize, 32) == Batch(sys.maxsize)


def test_in_batches_says_why_a_length_cannot_be_counted() -> None:
    assert in_batches(Epoch(2), 10.0) == 20 and in_batches(Batch(7), 10.0) == 7
    with pytest.raises(
        TypeError,
        match=r"^a training length must be Batch\(int\) or Epoch\(int\), got Batch\(\[4, 8\]\)$",
    ):
        in_batches(Batch([4, 8]), 10.0)
    with pytest.raises(
        ValueError,
        match=r"^a length in epochs: the training data has no length; give the length in batches$",
    ):
        in_batches(Epoch(1), float("inf"))


def test_a_period_fires_at_its_multiples_or_its_steps_and_below_one_always() -> None:
    assert [n for n in range(7) if Batch(3).should_stop(n)] == [3, 6]  # never at 0
    assert all(Batch(0).should_stop(n) for n in range(3))
    assert [n for n in range(3) if Batch(1).should_stop(n)] == [1, 2]  # every batch, not at 0
    assert [n for n in range(7) if Epoch({2, 5}).should_stop(n)] == [2, 5]


@pytest.mark.parametrize(
    ("config", "unit"),
    [
        ({"batches": 5}, Batch(5)),
        ({"batches": 1}, Batch(1)),  # every batch, not never
        ({"batches": "7"}, Batch(7)),
        ({"epochs": 2}, Epoch(2)),
        ({"epochs": 0}, Epoch(sys.maxsize)),  # below one: never
        ({"batches": -1}, Batch(sys.maxsize)),
        ({"records": 64}, Batch(2)),
    ],
)
def test_a_config_length_becomes_its_unit(config: dict[str, object], unit: TrainUnit) -> None:
    assert TrainUnit._from_config(config, global_batch_size=32) == unit


def test_a_config_length_that_is_not_one_unit_is_refused_saying_why() -> None:
    with pytest.raises(ValueError, match=r"^expected \{batches\|records\|epochs: N\}, got 5$"):
        TrainUnit._from_config(5, None)
    with pytest.raises(
        ValueError,
        match=r"^expected exactly one of batches, records, epochs; got \{'batches': 1, 'epochs': 2\}$",
    ):
        TrainUnit._from_values(batches=1, epochs=2)
    with pytest.raises(ValueError, match=r"; got \{'records': 64, 'epochs': 1\}$"):
        TrainUnit._from_values(records=64, epochs=1)
    with pytest.raises(ValueError, match=r"exactly one of .*; got \{\}$"):
        TrainUnit._from_values()
    with pytest.raises(
        ValueError,
        match=r"^a length in records needs hyperparameters.global_batch_size to convert to batches$",
    ):
        TrainUnit._from_values(records=64)
