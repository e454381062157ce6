"""Who runs next (pure): first come first served on the lowest free slots, back-off skipped."""

from __future__ import annotations

from trialkit.master.engine._scheduling import Placement, Request, place


def test_requests_are_placed_in_order_on_the_lowest_free_slots() -> None:
    queue = [Request(1, 10, 1), Request(2, 10, 2), Request(3, 11, 1)]
    assert place([3, 0, 1, 2], queue, now=0.0) == [
        Placement(1, 10, [0]),
        Placement(2, 10, [1, 2]),
        Placement(3, 11, [3]),
    ]


def test_the_first_request_that_does_not_fit_stops_placement() -> None:
    """A big trial is never overtaken by smaller ones behind it (it would starve)."""
    queue = [Request(1, 10, 1), Request(2, 10, 3), Request(3, 11, 1)]
    assert place([0, 1], queue, now=0.0) == [Placement(1, 10, [0])]


def test_a_request_backing_off_is_skipped_not_waited_for() -> None:
    queue = [Request(1, 10, 1, not_before=5.0), Request(2, 10, 1)]
    assert place([0], queue, now=4.0) == [Placement(2, 10, [0])]
    assert place([0], queue, now=5.0) == [Placement(1, 10, [0])]


def test_nothing_free_or_nothing_queued_places_nothing() -> None:
    assert place([], [Request(1, 10, 1)], now=0.0) == []
    assert place([0, 1], [], now=0.0) == []


def test_a_request_for_zero_slots_takes_one() -> None:
    assert place([4], [Request(1, 10, 0)], now=0.0) == [Placement(1, 10, [4])]
