"""Rung arithmetic and sorted rung results shared by the ASHA variants."""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trialkit.searcher._ops import SearcherError
from trialkit.searcher._ranked import RankedList

#: an early-exited trial's result: worse than anything (lower is better internally)
WORST = sys.float_info.max


def rung_targets(max_units: int, divisor: float, num_rungs: int) -> list[int]:
    """Per-rung lengths: ``max(trunc(max_units / divisor^(R-1-k)), 1)``; the top rung is max_units."""
    targets = [
        max(int(max_units / float(divisor) ** (num_rungs - 1 - k)), 1) for k in range(num_rungs)
    ]
    targets[-1] = max(max_units, 1)
    return targets


def asha_initial_count(max_trials: int, max_concurrent: int, divisor: float, num_rungs: int) -> int:
    """min(C, M) when C > 0, else clamp(1, int(d^(R-1)), M): enough for one trial to reach the top."""
    if max_concurrent > 0:
        return min(max_concurrent, max_trials)
    return max(min(int(float(divisor) ** (num_rungs - 1)), max_trials), 1)


def asha_progress(rung0_results: int, closed: int, invalid: int, max_trials: int) -> float:
    """rung-0 results ÷ 1.2 M; once rung 0 holds M results, at least (closed − invalid) ÷ M."""
    progress = rung0_results / (1.2 * max_trials)
    if rung0_results >= max_trials:
        progress = max(progress, (closed - invalid) / max_trials)
    return progress


def read_number(
    metrics: Mapping[str, Any], key: str, request_id: str, what: str, method: str = "ASHA"
) -> float:
    """``metrics[key]`` as a finite float, else a SearcherError naming the trial and the value."""
    is_mapping = isinstance(metrics, Mapping)
    value = metrics.get(key) if is_mapping else None
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not math.isfinite(float(value)):  # type: ignore[arg-type]
        reported = repr(value) if is_mapping and key in metrics else "nothing"
        raise SearcherError(
            f"trial {request_id}: the {what} {key!r} must be a finite number for {method}, got"
            f" {reported} (validation metrics reported: {_brief(metrics)})"
        )
    return float(value)  # type: ignore[arg-type]


def _brief(metrics: Mapping[str, Any], limit: int = 300) -> str:
    text = repr(dict(metrics)) if isinstance(metrics, Mapping) else repr(metrics)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Rung:
    """Results at one rung, ascending (lower is better), with the trial of each result."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries = RankedList()

    def __len__(self) -> int:
        return len(self.entries)

    def insert_before_equals(self, value: float, request_id: str) -> int:
        """Insert ahead of equal values (stopping ASHA); return the index."""
        return self.entries.insert(value, request_id, before_equals=True)

    def insert_after_equals(self, value: float, request_id: str) -> int:
        """Insert behind equal values (promotion ASHA); return the index."""
        return self.entries.insert(value, request_id, before_equals=False)

    def id_at(self, index: int) -> str:
        """The trial whose result is at ``index`` (0 = best)."""
        return self.entries.id_at(index)

    def remove(self, request_id: str) -> bool:
        """Drop the trial's result (InvalidHP; O(n), rare)."""
        return self.entries.remove(request_id)

    def state(self) -> dict[str, Any]:
        """JSON-serializable state."""
        return {"values": self.entries.values(), "ids": self.entries.ids()}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Inverse of ``state()``."""
        self.entries.reset([float(v) for v in state["values"]], [str(i) for i in state["ids"]])


@dataclass(frozen=True)
class AshaParams:
    """One async-halving search; ``time_metric`` None means the 0.37 generation (operations)."""

    metric: str
    smaller_is_better: bool
    divisor: float
    num_rungs: int
    max_trials: int
    max_concurrent: int
    max_units: int  # max_length (0.37) or max_time (0.38)
    time_metric: str | None = None

    @property
    def targets(self) -> list[int]:
        """Rung targets / units needed, bottom to top."""
        return rung_targets(self.max_units, self.divisor, self.num_rungs)

    def signed(self, value: float) -> float:
        """Lower is better internally: negate when larger is better."""
        return value if self.smaller_is_better else -value

    def shown(self, signed: float) -> float | None:
        """The value as reported, from its signed form (None: the worst, an early exit)."""
        if signed == WORST:
            return None
        return signed if self.smaller_is_better else -signed
