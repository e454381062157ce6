"""Stopping-based ASHA: each rung result either continues the trial or stops it for good.

0.38 (``async_halving``, every report) and 0.37 with ``stop_once: true`` (one rung per
ValidateAfter). A newcomer is ranked ahead of equal results and continues iff its index is below
``max(int(n / divisor), 1)`` for the n results now in the rung; the top rung always finishes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trialkit.searcher._ops import Close, ExitedReason, Operation, Stop, ValidateAfter
from trialkit.searcher._rung_state import RungEntry, RungState
from trialkit.searcher._rungs import (
    WORST,
    AshaParams,
    Rung,
    asha_initial_count,
    asha_progress,
    read_number,
)
from trialkit.searcher._strategy import ProgressBook, Strategy, TrialSource, is_invalid


def continues(index: int, rung_size: int, divisor: float) -> bool:
    """Whether the result at ``index`` is in the top ``max(int(n / d), 1)`` of the rung."""
    return index < max(int(rung_size / divisor), 1)


class StoppingAsha(Strategy):
    """Asynchronous successive halving that stops (never promotes) trials."""

    def __init__(self, params: AshaParams) -> None:
        self.params = params
        self.targets = params.targets
        self.rungs = [Rung() for _ in self.targets]
        self.trial_rung: dict[str, int] = {}
        self.early_exit: dict[str, None] = {}
        self.finished: dict[str, None] = {}  # stopped/closed by this search, or exited early
        self.created_count = 0
        self.invalid = 0
        self.completed = 0

    @property
    def uses_operations(self) -> bool:
        """0.37 generation: ValidateAfter/Close instead of Stop."""
        return self.params.time_metric is None

    def initial(self, trials: TrialSource) -> list[Operation]:
        p = self.params
        count = asha_initial_count(p.max_trials, p.max_concurrent, p.divisor, p.num_rungs)
        return [op for _ in range(count) for op in self._new_trial(trials)]

    def created(self, request_id: str) -> list[Operation]:
        self.trial_rung.setdefault(request_id, 0)
        return []

    def validation(
        self, trials: TrialSource, request_id: str, metrics: Mapping[str, Any]
    ) -> list[Operation]:
        if request_id in self.finished:
            return []
        p = self.params
        value = p.signed(read_number(metrics, p.metric, request_id, "searcher metric"))
        if p.time_metric is None:
            ops = self._complete_rung(request_id, value)
        else:
            t = read_number(metrics, p.time_metric, request_id, "time metric")
            ops = self._pass_rungs(request_id, int(t), value)
        if request_id in self.finished and self._within_budget():
            ops += self._new_trial(trials)
        return ops

    def exited_early(
        self, trials: TrialSource, request_id: str, reason: ExitedReason
    ) -> list[Operation]:
        self.early_exit[request_id] = None
        if is_invalid(reason):
            return self._drop_invalid(trials, request_id)
        if request_id in self.finished:
            return []  # the search was already done with it
        self.finished[request_id] = None
        self.rungs[self.trial_rung.get(request_id, 0)].insert_before_equals(WORST, request_id)
        return self._new_trial(trials) if self._within_budget() else []

    def closed(self, trials: TrialSource, request_id: str) -> list[Operation]:
        self.completed += 1
        return []

    def progress(self, book: ProgressBook) -> float:
        return asha_progress(
            len(self.rungs[0]), self.completed, self.invalid, self.params.max_trials
        )

    def report_schedule(self, request_id: str) -> list[int]:
        return list(self.targets)

    def state(self) -> dict[str, Any]:
        return {
            "rungs": [rung.state() for rung in self.rungs],
            "trial_rung": dict(self.trial_rung),
            "early_exit": list(self.early_exit),
            "finished": list(self.finished),
            "created": self.created_count,
            "invalid": self.invalid,
            "completed": self.completed,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        for rung, saved in zip(self.rungs, state["rungs"], strict=True):
            rung.restore(saved)
        self.trial_rung = {str(k): int(v) for k, v in state["trial_rung"].items()}
        self.early_exit = dict.fromkeys(state["early_exit"])
        self.finished = dict.fromkeys(state["finished"])
        self.created_count = int(state["created"])
        self.invalid = int(state["invalid"])
        self.completed = int(state["completed"])

    def rung_states(self) -> list[RungState]:
        """Each rung's results (promoted: the trial went on; stopped: it was finished there)
        and the trials training towards it. Read-only."""
        top = len(self.rungs) - 1
        out = []
        for r, rung in enumerate(self.rungs):
            state = rung.state()
            entries = [
                RungEntry(i, self.params.shown(v), self._status(r, top, i, v))
                for v, i in zip(state["values"], state["ids"], strict=True)
            ]
            ranked = set(state["ids"])
            training = [
                i
                for i, at in self.trial_rung.items()
                if at == r and i not in self.finished and i not in ranked
            ]
            out.append(RungState(r, self.targets[r], entries, training))
        return out

    def _status(self, r: int, top: int, request_id: str, value: float) -> str:
        if value == WORST:
            return "exited"
        if r == top:
            return "completed"
        return "promoted" if self.trial_rung.get(request_id, r) > r else "stopped"

    # -- decisions ----------------------------------------------------------------------------

    def _pass_rungs(self, request_id: str, t: int, value: float) -> list[Operation]:
        """0.38: one report can pass several rungs; stop at the first rung it fails."""
        top = len(self.rungs) - 1
        for r in range(self.trial_rung[request_id], top + 1):
            self.trial_rung[request_id] = r
            if t < self.targets[r]:
                return []
            index = self.rungs[r].insert_before_equals(value, request_id)
            if r == top or not continues(index, len(self.rungs[r]), self.params.divisor):
                return self._finish(request_id)
        return []

    def _complete_rung(self, request_id: str, value: float) -> list[Operation]:
        """0.37: the trial finished its current rung's ValidateAfter."""
        r = self.trial_rung[request_id]
        index = self.rungs[r].insert_before_equals(value, request_id)
        if r < len(self.rungs) - 1 and continues(index, len(self.rungs[r]), self.params.divisor):
            self.trial_rung[request_id] = r + 1
            return [ValidateAfter(request_id, self.targets[r + 1])]
        return self._finish(request_id)

    def _drop_invalid(self, trials: TrialSource, request_id: str) -> list[Operation]:
        """InvalidHP: finish it, forget its results, replace it whatever the budget."""
        self.invalid += 1
        ops = [] if request_id in self.finished else self._finish(request_id)
        for r in range(self.trial_rung.get(request_id, 0) + 1):
            self.rungs[r].remove(request_id)
        return ops + self._new_trial(trials)

    def _finish(self, request_id: str) -> list[Operation]:
        self.finished[request_id] = None
        return [Close(request_id)] if self.uses_operations else [Stop(request_id)]

    def _within_budget(self) -> bool:
        return self.created_count - self.invalid < self.params.max_trials

    def _new_trial(self, trials: TrialSource) -> list[Operation]:
        create = trials.create()
        self.created_count += 1
        self.trial_rung[create.request_id] = 0
        if self.uses_operations:
            return [create, ValidateAfter(create.request_id, self.targets[0])]
        return [create]
