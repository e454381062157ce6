"""adaptive_asha: several ASHA brackets with different early-stopping rates, run as a tournament."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from trialkit.searcher._ops import Create, ExitedReason, Operation
from trialkit.searcher._strategy import ProgressBook, Strategy, TrialSource


def effective_max_rungs(max_rungs: int, max_units: int, max_trials: int, divisor: float) -> int:
    """min(max_rungs, int(ln T / ln d) + 1, int(ln M / ln d) + 1), float ratios truncated."""
    ln_d = math.log(divisor)
    by_units = int(math.log(max_units) / ln_d) + 1
    by_trials = int(math.log(max_trials) / ln_d) + 1
    return min(max_rungs, by_units, by_trials)


def bracket_rungs(mode: str, max_rungs: int, explicit: Sequence[int] = ()) -> list[int]:
    """Rung counts per bracket, most early-stopping bracket first."""
    if explicit:
        counts = list(explicit)
    elif mode == "aggressive":
        counts = [max_rungs]
    elif mode == "conservative":
        counts = list(range(1, max_rungs + 1))
    else:  # standard
        counts = list(range((max_rungs - 1) // 2 + 1, max_rungs + 1))
    return sorted(counts, reverse=True)


def bracket_max_trials(max_trials: int, divisor: float, rungs: Sequence[int]) -> list[int]:
    """Trials per bracket by weight d^(R-1)/R (at least 1 each); the remainder to bracket 0."""
    weights = [float(divisor) ** (r - 1) / r for r in rungs]
    total = 0.0
    for weight in weights:  # plain left-to-right sum, as Go adds (Python's sum() compensates)
        total += weight
    trials = [max(int(weight / total * max_trials), 1) for weight in weights]
    leftover = max_trials - sum(trials)
    if leftover > 0:
        trials[0] += leftover
    return trials


def bracket_max_concurrent(max_concurrent: int, divisor: float, trials: Sequence[int]) -> list[int]:
    """Concurrency per bracket: max(last bracket's trials, int(d)) each when unlimited (0), else
    max(C, #brackets) split evenly with the first brackets taking the remainder."""
    n = len(trials)
    if max_concurrent == 0:
        return [max(trials[-1], int(divisor))] * n
    total = max(max_concurrent, n)
    return [total // n + (1 if i < total % n else 0) for i in range(n)]


class Tournament(Strategy):
    """Runs brackets side by side; each trial's events go to the bracket that created it."""

    def __init__(self, brackets: Sequence[Strategy]) -> None:
        self.brackets = list(brackets)
        self.route: dict[str, int] = {}

    def initial(self, trials: TrialSource) -> list[Operation]:
        ops: list[Operation] = []
        for index, bracket in enumerate(self.brackets):
            ops += self._routed(index, bracket.initial(trials))
        return ops

    def created(self, request_id: str) -> list[Operation]:
        index = self.route[request_id]
        return self._routed(index, self.brackets[index].created(request_id))

    def validation(
        self, trials: TrialSource, request_id: str, metrics: Mapping[str, Any]
    ) -> list[Operation]:
        index = self.route[request_id]
        return self._routed(index, self.brackets[index].validation(trials, request_id, metrics))

    def exited_early(
        self, trials: TrialSource, request_id: str, reason: ExitedReason
    ) -> list[Operation]:
        index = self.route[request_id]
        return self._routed(index, self.brackets[index].exited_early(trials, request_id, reason))

    def closed(self, trials: TrialSource, request_id: str) -> list[Operation]:
        index = self.route[request_id]
        return self._routed(index, self.brackets[index].closed(trials, request_id))

    def progress(self, book: ProgressBook) -> float:
        return sum(bracket.progress(book) for bracket in self.brackets) / len(self.brackets)

    def report_schedule(self, request_id: str) -> list[int]:
        return self.brackets[self.route[request_id]].report_schedule(request_id)

    def state(self) -> dict[str, Any]:
        return {"route": dict(self.route), "brackets": [b.state() for b in self.brackets]}

    def restore(self, state: Mapping[str, Any]) -> None:
        self.route = {str(k): int(v) for k, v in state["route"].items()}
        for bracket, saved in zip(self.brackets, state["brackets"], strict=True):
            bracket.restore(saved)

    def _routed(self, index: int, ops: list[Operation]) -> list[Operation]:
        for op in ops:
            if isinstance(op, Create):
                self.route[op.request_id] = index
        return ops
