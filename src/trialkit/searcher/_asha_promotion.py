"""Promotion-based ASHA (0.37, ``stop_once: false``): trials wait at a rung until promoted.

A result at rung k < top with n earlier results is ranked behind equal values; with
``before = int(n/d)`` and ``after = int((n+1)/d)`` it is promoted at once if its index < after,
else the entry at index ``before`` is promoted when ``after > before`` (unless it already was).
Once rung 0 holds max_trials results, rungs with nothing in flight are closed out from the bottom.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trialkit.searcher._ops import Close, ExitedReason, Operation, ValidateAfter
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


class PromotionRung(Rung):
    """A rung that also tracks promotions, trials in flight and results awaiting close-out."""

    __slots__ = ("promoted", "outstanding", "unresolved")

    def __init__(self) -> None:
        super().__init__()
        self.promoted: dict[str, None] = {}
        self.outstanding = 0  # trials training towards this rung
        self.unresolved: list[tuple[float, int, str]] = []  # (value, arrival, id): close-out queue

    def record(self, value: float, request_id: str, arrival: int, divisor: float) -> str | None:
        """Insert a result; return the trial to promote, if any (at most one)."""
        n = len(self)
        before, after = int(n / divisor), int((n + 1) / divisor)
        index = self.insert_after_equals(value, request_id)
        if index < after:
            self.promoted[request_id] = None
            return request_id
        self.unresolved.append((value, arrival, request_id))
        if after > before:
            candidate = self.id_at(before)
            if candidate not in self.promoted:
                self.promoted[candidate] = None
                return candidate
        return None

    def remove(self, request_id: str) -> bool:
        self.promoted.pop(request_id, None)
        return super().remove(request_id)

    def take_unresolved(self) -> list[str]:
        """Results added since the last close-out, in rung order (value, then arrival)."""
        taken = [request_id for _, _, request_id in sorted(self.unresolved)]
        self.unresolved.clear()
        return taken

    def state(self) -> dict[str, Any]:
        return {
            **super().state(),
            "promoted": list(self.promoted),
            "outstanding": self.outstanding,
            "unresolved": [list(entry) for entry in self.unresolved],
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        super().restore(state)
        self.promoted = dict.fromkeys(state["promoted"])
        self.outstanding = int(state["outstanding"])
        self.unresolved = [(float(v), int(a), str(i)) for v, a, i in state["unresolved"]]


class PromotionAsha(Strategy):
    """Asynchronous successive halving with promotions and close-out (0.37 default)."""

    def __init__(self, params: AshaParams) -> None:
        self.params = params
        self.targets = params.targets
        self.rungs = [PromotionRung() for _ in self.targets]
        self.trial_rung: dict[str, int] = {}
        self.in_flight: dict[str, None] = {}  # trials with a ValidateAfter outstanding
        self.early_exit: dict[str, None] = {}
        self.closed_ids: dict[str, None] = {}  # Close issued, or exited
        self.created_count = 0
        self.invalid = 0
        self.completed = 0
        self.arrivals = 0

    def initial(self, trials: TrialSource) -> list[Operation]:
        p = self.params
        count = asha_initial_count(p.max_trials, p.max_concurrent, p.divisor, p.num_rungs)
        return [op for _ in range(count) for op in self._new_trial(trials)]

    def created(self, request_id: str) -> list[Operation]:
        self.rungs[0].outstanding += 1
        return []

    def validation(
        self, trials: TrialSource, request_id: str, metrics: Mapping[str, Any]
    ) -> list[Operation]:
        p = self.params
        value = p.signed(read_number(metrics, p.metric, request_id, "searcher metric"))
        if request_id not in self.in_flight:
            return []
        del self.in_flight[request_id]
        return self._complete(trials, request_id, value)

    def exited_early(
        self, trials: TrialSource, request_id: str, reason: ExitedReason
    ) -> list[Operation]:
        if is_invalid(reason):
            return self._drop_invalid(trials, request_id)
        self.early_exit[request_id] = None
        self.closed_ids[request_id] = None
        if request_id in self.in_flight:  # it fails its rung with the worst result
            del self.in_flight[request_id]
            return self._complete(trials, request_id, WORST)
        return []  # a waiting trial: if promoted later, it fails the next rung at once

    def closed(self, trials: TrialSource, request_id: str) -> list[Operation]:
        self.completed += 1
        self.closed_ids[request_id] = None
        return []

    def progress(self, book: ProgressBook) -> float:
        return asha_progress(
            len(self.rungs[0]), self.completed, self.invalid, self.params.max_trials
        )

    def state(self) -> dict[str, Any]:
        return {
            "rungs": [rung.state() for rung in self.rungs],
            "trial_rung": dict(self.trial_rung),
            "in_flight": list(self.in_flight),
            "early_exit": list(self.early_exit),
            "closed": list(self.closed_ids),
            "created": self.created_count,
            "invalid": self.invalid,
            "completed": self.completed,
            "arrivals": self.arrivals,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        for rung, saved in zip(self.rungs, state["rungs"], strict=True):
            rung.restore(saved)
        self.trial_rung = {str(k): int(v) for k, v in state["trial_rung"].items()}
        self.in_flight = dict.fromkeys(state["in_flight"])
        self.early_exit = dict.fromkeys(state["early_exit"])
        self.closed_ids = dict.fromkeys(state["closed"])
        self.created_count = int(state["created"])
        self.invalid = int(state["invalid"])
        self.completed = int(state["completed"])
        self.arrivals = int(state["arrivals"])

    def rung_states(self) -> list[RungState]:
        """Each rung's results (promoted, closed there: stopped, or waiting for a promotion)
        and the trials training towards it. Read-only."""
        top = len(self.rungs) - 1
        out = []
        for r, rung in enumerate(self.rungs):
            state = rung.state()
            entries = [
                RungEntry(i, self.params.shown(v), self._status(r, r == top, i, v))
                for v, i in zip(state["values"], state["ids"], strict=True)
            ]
            training = [i for i in self.in_flight if self.trial_rung.get(i) == r]
            out.append(RungState(r, self.targets[r], entries, training))
        return out

    def _status(self, r: int, top: bool, request_id: str, value: float) -> str:
        # A rung's ``promoted`` also marks a trial chosen after it was closed (not promoted):
        # the trial's own rung says whether it went on.
        if value == WORST:
            return "exited"
        if top:
            return "completed"
        if self.trial_rung.get(request_id, r) > r:
            return "promoted"
        return "stopped" if request_id in self.closed_ids else "waiting"

    # -- decisions ----------------------------------------------------------------------------

    def _complete(self, trials: TrialSource, request_id: str, value: float) -> list[Operation]:
        """The trial finished its rung with ``value``: close, promote, refill, close out."""
        r = self.trial_rung[request_id]
        rung = self.rungs[r]
        rung.outstanding -= 1
        ops: list[Operation] = []
        promoted_someone = False
        if r == len(self.rungs) - 1:
            rung.insert_after_equals(value, request_id)
            if request_id not in self.early_exit:
                ops.append(self._close(request_id))
        else:
            self.arrivals += 1
            chosen = rung.record(value, request_id, self.arrivals, self.params.divisor)
            if chosen is not None and self._promotable(chosen):
                self.trial_rung[chosen] = r + 1
                self.rungs[r + 1].outstanding += 1
                if chosen in self.early_exit:
                    return self._complete(trials, chosen, WORST)
                ops.append(ValidateAfter(chosen, self.targets[r + 1]))
                self.in_flight[chosen] = None
                promoted_someone = True
        if not promoted_someone and self._within_budget():
            ops += self._new_trial(trials)
        if len(self.rungs[0]) >= self.params.max_trials:
            ops += self._close_out()
        return ops

    def _promotable(self, request_id: str) -> bool:
        """Early-exited trials are promoted (to fail at once); trials already Closed are not."""
        return request_id in self.early_exit or request_id not in self.closed_ids

    def _close_out(self) -> list[Operation]:
        """Close every waiting, unpromoted trial in the bottom rungs that have nothing in flight."""
        ops: list[Operation] = []
        for rung in self.rungs:
            if rung.outstanding > 0:
                break
            for request_id in rung.take_unresolved():
                if request_id not in rung.promoted and request_id not in self.closed_ids:
                    ops.append(self._close(request_id))
        return ops

    def _drop_invalid(self, trials: TrialSource, request_id: str) -> list[Operation]:
        """InvalidHP: close it, forget its results, replace it whatever the budget."""
        self.invalid += 1
        self.early_exit[request_id] = None
        ops: list[Operation] = []
        if request_id not in self.closed_ids:
            ops.append(self._close(request_id))
        r = self.trial_rung.get(request_id, 0)
        if request_id in self.in_flight:
            del self.in_flight[request_id]
            self.rungs[r].outstanding -= 1
        for rung in self.rungs[: r + 1]:
            rung.remove(request_id)
        return ops + self._new_trial(trials)

    def _close(self, request_id: str) -> Close:
        self.closed_ids[request_id] = None
        return Close(request_id)

    def _within_budget(self) -> bool:
        return self.created_count - self.invalid < self.params.max_trials

    def _new_trial(self, trials: TrialSource) -> list[Operation]:
        create = trials.create()
        self.created_count += 1
        self.trial_rung[create.request_id] = 0
        self.in_flight[create.request_id] = None
        return [create, ValidateAfter(create.request_id, self.targets[0])]
