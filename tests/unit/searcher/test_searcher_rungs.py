"""Rung bookkeeping shared by the ASHA variants: the ranked result list, the searcher-metric
errors, the initial trial count and the progress book."""

from __future__ import annotations

import bisect
import random
import types
from typing import Any

import pytest

from trialkit.searcher import DrivenMethod, SearcherError, ValidateAfter, make_search_method
from trialkit.searcher._ranked import RankedList
from trialkit.searcher._rungs import rung_targets
from trialkit.searcher._strategy import ProgressBook

from .test_searcher_asha import SPACE, asha

# -- the ranked list ----------------------------------------------------------------------------


def _check_every_index(ranked: RankedList, flat: list[tuple[float, str]]) -> None:
    assert list(ranked) == flat and len(ranked) == len(flat)
    assert ranked.values() == [v for v, _ in flat] and ranked.ids() == [i for _, i in flat]
    assert [ranked.id_at(i) for i in range(len(flat))] == [i for _, i in flat]


@pytest.mark.parametrize("load", [1, 2, 3, 5])
@pytest.mark.parametrize("order", ["ascending", "descending", "shuffled", "ties"])
def test_ranked_list_ranks_every_entry_across_many_blocks(load: int, order: str) -> None:
    """Enough entries for dozens of blocks, inserted at the front, the back, the middle and
    among equal values: each insert returns its rank, and every index finds its entry."""
    values = list(range(120))
    if order == "descending":
        values.reverse()
    elif order == "shuffled":
        random.Random(load).shuffle(values)
    elif order == "ties":
        values = [v % 7 for v in values]
    ranked, flat = RankedList(load=load), list[tuple[float, str]]()
    for n, value in enumerate(values):
        before = n % 2 == 0
        keys = [v for v, _ in flat]
        index = (bisect.bisect_left if before else bisect.bisect_right)(keys, value)
        flat.insert(index, (float(value), f"t{n}"))
        assert ranked.insert(float(value), f"t{n}", before_equals=before) == index
        if n % 10 == 9:
            _check_every_index(ranked, flat)
    _check_every_index(ranked, flat)


@pytest.mark.parametrize("load", [1, 2, 4])
def test_ranked_list_stays_ranked_through_removals_and_reinserts(load: int) -> None:
    picks = random.Random(load)
    ranked, flat = RankedList(load=load), list[tuple[float, str]]()
    for n in range(400):
        if flat and picks.random() < 0.3:
            victim = flat.pop(picks.randrange(len(flat)))[1]
            assert ranked.remove(victim)
            assert not ranked.remove(victim)
        else:
            value = float(picks.randrange(40))
            keys = [v for v, _ in flat]
            index = bisect.bisect_right(keys, value)
            flat.insert(index, (value, f"t{n}"))
            assert ranked.insert(value, f"t{n}", before_equals=False) == index
        if n % 20 == 0:
            _check_every_index(ranked, flat)
    _check_every_index(ranked, flat)
    copy = RankedList(load=load)
    copy.reset(ranked.values(), ranked.ids())
    _check_every_index(copy, flat)


def test_ranked_list_index_errors_name_the_index() -> None:
    ranked = RankedList(load=1)
    with pytest.raises(IndexError, match="^0$"):
        ranked.id_at(0)
    for n in range(5):
        ranked.insert(float(n), f"t{n}", before_equals=True)
    assert ranked.id_at(4) == "t4"
    with pytest.raises(IndexError, match="^5$"):
        ranked.id_at(5)
    with pytest.raises(IndexError, match="^-1$"):
        ranked.id_at(-1)


# -- the searcher metric ------------------------------------------------------------------------

LOSS_ASHA = asha(num_rungs=2, max_trials=2, max_length=16)


def _started() -> tuple[DrivenMethod, str, int]:
    """An ASHA search whose first trial was created; its id and outstanding length."""
    method = make_search_method(LOSS_ASHA, SPACE, 0)
    first = next(op for op in method.initial_operations() if isinstance(op, ValidateAfter))
    method.on_trial_created(first.request_id)
    return method, first.request_id, first.length


def _error(metrics: Any) -> str:
    """The SearcherError for the first trial's completion with ``metrics``."""
    method, rid, length = _started()
    with pytest.raises(SearcherError) as info:
        method.on_validation_completed(rid, metrics, length)
    return str(info.value)


def test_a_missing_or_non_numeric_metric_names_the_trial_the_value_and_the_reports() -> None:
    _, rid, _ = _started()  # the same search each time: the same first trial
    missing = _error({"acc": 0.5})
    assert missing == (
        f"trial {rid}: the searcher metric 'loss' must be a finite number for ASHA, got nothing"
        " (validation metrics reported: {'acc': 0.5})"
    )
    assert "got 'low' (validation metrics reported: {'loss': 'low'})" in _error({"loss": "low"})
    assert "got None (" in _error({"loss": None})
    assert "got True (" in _error({"loss": True})
    assert "got nan (" in _error({"loss": float("nan")})
    proxy = types.MappingProxyType({"acc": 1})
    assert _error(proxy).endswith("got nothing (validation metrics reported: {'acc': 1})")


def test_reported_metrics_are_shown_up_to_300_characters() -> None:
    def shown(message: str) -> str:
        return message.split("(validation metrics reported: ", 1)[1][:-1]

    fits = {"acc": "x" * (300 - len(repr({"acc": ""})))}
    assert len(repr(fits)) == 300
    assert shown(_error(fits)) == repr(fits)
    longer = {"acc": "x" * (301 - len(repr({"acc": ""})))}
    assert shown(_error(longer)) == repr(longer)[:297] + "..."


def test_metrics_that_are_not_a_mapping_are_a_searcher_error_and_change_nothing() -> None:
    """A trial reporting a bare number: a SearcherError (not a TypeError), and its operation
    stays in flight, so the corrected report is accepted."""
    method, rid, length = _started()
    with pytest.raises(SearcherError, match=r"got nothing \(validation metrics reported: 0.5\)"):
        method.on_validation_completed(rid, 0.5, length)  # type: ignore[arg-type]
    assert method.on_validation_completed(rid, {"loss": 0.5}, length) == []


# -- rung arithmetic ----------------------------------------------------------------------------


def test_a_one_unit_search_trains_every_rung_to_one_unit() -> None:
    assert rung_targets(1, 4, 3) == [1, 1, 1]


@pytest.mark.parametrize(
    ("num_rungs", "divisor", "max_trials", "count"),
    [(3, 4, 100, 16), (3, 4, 10, 10), (2, 3, 100, 3), (1, 4, 100, 1), (4, 2, 100, 8)],
)
def test_unlimited_concurrency_starts_enough_trials_for_one_to_reach_the_top(
    num_rungs: int, divisor: int, max_trials: int, count: int
) -> None:
    searcher = asha(num_rungs=num_rungs, divisor=divisor, max_trials=max_trials,
                    max_concurrent_trials=0, max_length=64)  # fmt: skip
    ops = make_search_method(searcher, SPACE, 0).initial_operations()
    assert sum(isinstance(op, ValidateAfter) for op in ops) == count


# -- the progress book --------------------------------------------------------------------------


def test_progress_book_counts_closed_trials_whole_and_running_ones_by_units() -> None:
    book = ProgressBook()
    for rid in ("a", "b", "c"):
        book.add(rid)
    book.update("a", 3.0)
    book.update("b", 1.0)
    book.close("b")
    book.close("c")
    assert book.fraction(4, 4.0) == (2 * 4.0 + 3.0) / (4.0 * 4)
    assert book.fraction(4, 1.0) == (2 + 3.0) / 4
    assert book.fraction(4, 0.0) == 2 / 4  # no unit: closed trials only
    assert book.fraction(0, 1.0) == 1.0  # nothing to run: done
    assert book.mean() == (2 + 3.0) / 3
