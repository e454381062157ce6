"""Who runs next (pure): trials waiting for a process, in order, placed on free slots."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Request:
    """A trial that wants a process now: ``slots`` slots, not before ``not_before`` (back-off)."""

    trial_id: int
    experiment_id: int
    slots: int
    not_before: float = 0.0


@dataclass(frozen=True)
class Placement:
    trial_id: int
    experiment_id: int
    slots: list[int]


def place(free_slots: Sequence[int], queue: Sequence[Request], now: float) -> list[Placement]:
    """First come, first served: requests are placed in order on the lowest free slots; the first
    one that does not fit stops the placement (no small trial overtakes a big one, so a big one
    is never starved). A request backing off after a failure is skipped, not waited for."""
    free = sorted(free_slots)
    placed: list[Placement] = []
    for r in queue:
        if r.not_before > now:
            continue
        need = max(r.slots, 1)
        if len(free) < need:
            break
        placed.append(Placement(r.trial_id, r.experiment_id, free[:need]))
        free = free[need:]
    return placed
