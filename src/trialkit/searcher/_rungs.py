"""Rung arithmetic and sorted rung results shared by the ASHA variants."""

from __future__ import annotations

import bisect
import math
import numbers
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trialkit.searcher._ops import SearcherError

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


def read_number(metrics: Mapping[str, Any], key: str, request_id: str, what: str) -> float:
    """``metrics[key]`` as a finite float, else a SearcherError naming the trial and the value."""
    value = metrics.get(key) if isinstance(metrics, Mapping) else None
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not math.isfinite(float(value)):  # type: ignore[arg-type]
        reported = repr(value) if key in metrics else "nothing"
        raise SearcherError(
            f"trial {request_id}: the {what} {key!r} must be a finite number for ASHA, got"
            f" {reported} (validation metrics reported: {_brief(metrics)})"
        )
    return float(value)  # type: ignore[arg-type]


def _brief(metrics: Mapping[str, Any], limit: int = 300) -> str:
    text = repr(dict(metrics)) if isinstance(metrics, Mapping) else repr(metrics)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Rung:
    """Results at one rung, ascending (lower is better), with the trial of each result."""

    __slots__ = ("values", "ids")

    def __init__(self) -> None:
        self.values: list[float] = []
        self.ids: list[str] = []

    def __len__(self) -> int:
        return len(self.values)

    def insert_before_equals(self, value: float, request_id: str) -> int:
        """Insert ahead of equal values (stopping ASHA); return the index."""
        return self._insert(bisect.bisect_left(self.values, value), value, request_id)

    def insert_after_equals(self, value: float, request_id: str) -> int:
        """Insert behind equal values (promotion ASHA); return the index."""
        return self._insert(bisect.bisect_right(self.values, value), value, request_id)

    def remove(self, request_id: str) -> bool:
        """Drop the trial's result (InvalidHP; O(n), rare)."""
        try:
            index = self.ids.index(request_id)
        except ValueError:
            return False
        del self.values[index], self.ids[index]
        return True

    def state(self) -> dict[str, Any]:
        """JSON-serializable state."""
        return {"values": list(self.values), "ids": list(self.ids)}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Inverse of ``state()``."""
        self.values = [float(v) for v in state["values"]]
        self.ids = [str(i) for i in state["ids"]]

    def _insert(self, index: int, value: float, request_id: str) -> int:
        self.values.insert(index, value)
        self.ids.insert(index, request_id)
        return index


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
