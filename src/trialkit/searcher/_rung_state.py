"""The read-only picture of an ASHA bracket's rungs that the strategies give (``rung_states``)."""

from __future__ import annotations

from dataclasses import dataclass

#: A rung result's status: ``promoted`` (went on to the next rung), ``stopped`` (the search
#: closed or stopped it there), ``waiting`` (promotion ASHA: may still be promoted),
#: ``completed`` (finished the top rung), ``exited`` (it exited early: worst result).
STATUSES = ("promoted", "stopped", "waiting", "completed", "exited")


@dataclass(frozen=True)
class RungEntry:
    """One trial's result at a rung; ``value`` as reported (None: it exited early)."""

    request_id: str
    value: float | None
    status: str


@dataclass(frozen=True)
class RungState:
    """A rung: the length trained to, results best first, trials training towards it."""

    index: int
    length: int
    entries: list[RungEntry]
    training: list[str]


@dataclass(frozen=True)
class BracketState:
    """One ASHA bracket (adaptive_asha runs several; async_halving is one)."""

    index: int
    max_trials: int
    rungs: list[RungState]
