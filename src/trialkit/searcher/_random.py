"""single and random search: independent samples, a new one each time a trial closes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trialkit.searcher._ops import Close, ExitedReason, Operation, ValidateAfter
from trialkit.searcher._strategy import ProgressBook, Strategy, TrialSource, is_invalid


def initial_count(max_trials: int, max_concurrent: int) -> int:
    """All trials when concurrency is unlimited (0), else min(max_trials, max_concurrent)."""
    return max_trials if max_concurrent == 0 else min(max_trials, max_concurrent)


def trial_ops(trials: TrialSource, length: int | None, hparams: Any = None) -> list[Operation]:
    """One trial: Create, plus ValidateAfter(length) and Close in the 0.37 generation."""
    create = trials.create(hparams)
    if length is None:
        return [create]
    return [create, ValidateAfter(create.request_id, length), Close(create.request_id)]


class RandomSearch(Strategy):
    """``random`` (InvalidHP trials are replaced) or ``single`` (max_trials 1, never replaced)."""

    def __init__(
        self, max_trials: int, max_concurrent: int, length: int | None, replace_invalid: bool
    ) -> None:
        self.max_trials = max_trials
        self.max_concurrent = max_concurrent
        self.length = length
        self.drops_invalid_progress = replace_invalid
        self.created_count = 0  # Creates that still count against max_trials

    def initial(self, trials: TrialSource) -> list[Operation]:
        ops: list[Operation] = []
        for _ in range(initial_count(self.max_trials, self.max_concurrent)):
            ops += self._new_trial(trials)
        return ops

    def validation(
        self, trials: TrialSource, request_id: str, metrics: Mapping[str, Any]
    ) -> list[Operation]:
        return []  # the metric value plays no part in random search

    def exited_early(
        self, trials: TrialSource, request_id: str, reason: ExitedReason
    ) -> list[Operation]:
        if self.drops_invalid_progress and is_invalid(reason):
            self.created_count -= 1  # a replacement follows when the trial closes
        return []

    def closed(self, trials: TrialSource, request_id: str) -> list[Operation]:
        if self.created_count < self.max_trials:
            return self._new_trial(trials)
        return []

    def progress(self, book: ProgressBook) -> float:
        if self.length is None:
            return book.mean()  # 0.38: mean over trials, as Determined 0.38 computes it
        return book.fraction(self.max_trials, float(self.length))  # 0.37: units / (L × trials)

    def state(self) -> dict[str, Any]:
        return {"created": self.created_count}

    def restore(self, state: Mapping[str, Any]) -> None:
        self.created_count = int(state["created"])

    def _new_trial(self, trials: TrialSource) -> list[Operation]:
        self.created_count += 1
        return trial_ops(trials, self.length)
