"""A simulated cluster for search methods: W workers train trials one unit at a time.

Used by the searcher benchmarks. It plays the master's part for a pure ``DrivenMethod``: creates
trials, trains them (one unit per worker per tick), feeds validations, carries out ValidateAfter /
Close / Stop, and resumes a waiting (0.37 promotion) trial from where it stopped, as a trial that
resumes from its checkpoint would. It counts the units trained and the time spent inside the
search method's calls ("searcher time").
"""

from __future__ import annotations

import collections
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trialkit.searcher import (
    Close,
    Create,
    DrivenMethod,
    Operation,
    Shutdown,
    Stop,
    ValidateAfter,
    make_search_method,
)

Curve = Callable[[Mapping[str, Any], int], float]


def learning_curve(hparams: Mapping[str, Any], units: int) -> float:
    """Synthetic validation loss with a known optimum (lr = 10^-2.5, wd = 0.3, loss → 0.05).

    Each trial decays towards its asymptote f(h) + 0.05 at a rate that also depends on lr (very
    small lr learns slowly), so curves cross: early ranks are informative but not exact.
    """
    x = math.log10(hparams["lr"])
    asymptote = 0.05 + 0.4 * (x + 2.5) ** 2 + 2.0 * (hparams["wd"] - 0.3) ** 2
    rate = 0.3 / (1.0 + math.exp(-(x + 3.5) * 2))  # learns slower below lr ~ 3e-4
    return asymptote + 2.0 * math.exp(-rate * math.sqrt(units))


SPACE = {
    "lr": {"type": "log", "base": 10, "minval": -5, "maxval": -1},
    "wd": {"type": "double", "minval": 0.0, "maxval": 1.0},
}

#: the best loss any trial can reach at ``units``: the curve at the known optimum
OPTIMUM = {"lr": 10**-2.5, "wd": 0.3}


@dataclass
class _Trial:
    rid: str
    hparams: dict[str, Any]
    trained: int = 0
    goal: int | None = None  # 0.37: the op's length; 0.38: the trial's own max length
    closed: bool = False
    exited: bool = False


@dataclass
class SimResult:
    """What a simulated search did."""

    units_total: int = 0
    searcher_seconds: float = 0.0
    validations: int = 0
    trials: int = 0
    #: (cumulative units trained when it arrived, loss) for every validation, in arrival order
    history: list[tuple[int, float]] = field(default_factory=list)

    def units_to_reach(self, target: float) -> int | None:
        """Cumulative units trained when a validation first reached ``target`` (or better)."""
        return next((u for u, loss in self.history if loss <= target), None)

    def best(self) -> float:
        return min(loss for _, loss in self.history)


class Simulation:
    """Run one search to its Shutdown on ``workers`` simulated workers."""

    def __init__(
        self,
        searcher: Mapping[str, Any],
        *,
        seed: int,
        workers: int,
        curve: Curve = learning_curve,
        space: Mapping[str, Any] = SPACE,
        report_every: int = 1,
        max_units: int | None = None,
    ) -> None:
        self.method: DrivenMethod = make_search_method(searcher, space, seed)
        self.metric = str(searcher.get("metric") or "validation_loss")
        self.time_metric = searcher.get("time_metric")
        self.generation_037 = searcher.get("max_length") is not None
        self.max_units = max_units or int(searcher.get("max_time") or 0)
        self.workers = workers
        self.curve = curve
        self.report_every = report_every
        self.trials: dict[str, _Trial] = {}
        self.runnable: collections.OrderedDict[str, None] = collections.OrderedDict()
        self.result = SimResult()
        self.done = False

    def _call(self, fn: Callable[[], list[Operation]]) -> None:
        start = time.perf_counter()
        ops = fn()
        self.result.searcher_seconds += time.perf_counter() - start
        self._apply(ops)

    def _apply(self, ops: list[Operation]) -> None:
        queue = collections.deque(ops)
        while queue:
            op = queue.popleft()
            start = time.perf_counter()
            more: list[Operation] = []
            if isinstance(op, Create):
                self.trials[op.request_id] = _Trial(op.request_id, op.hparams)
                self.result.trials += 1
                more = self.method.on_trial_created(op.request_id)
                if not self.generation_037:
                    self.trials[op.request_id].goal = self.max_units
                    self.runnable[op.request_id] = None
            elif isinstance(op, ValidateAfter):
                self.trials[op.request_id].goal = op.length
                self.runnable[op.request_id] = None
            elif isinstance(op, Close):
                t = self.trials[op.request_id]
                t.closed = True
                if op.request_id not in self.runnable:
                    more = self._exit(t)
            elif isinstance(op, Stop):
                t = self.trials[op.request_id]
                t.closed = True
                self.runnable.pop(op.request_id, None)
                more = self._exit(t)
            elif isinstance(op, Shutdown):
                self.done = True
            self.result.searcher_seconds += time.perf_counter() - start
            queue.extend(more)

    def _exit(self, t: _Trial) -> list[Operation]:
        if t.exited:
            return []
        t.exited = True
        return self.method.on_trial_closed(t.rid)

    def _validate(self, t: _Trial) -> None:
        loss = self.curve(t.hparams, t.trained)
        self.result.validations += 1
        self.result.history.append((self.result.units_total, loss))
        if self.generation_037:
            length = t.goal
            self.runnable.pop(t.rid, None)  # done with its op: waits unless given another
            self._call(
                lambda: self.method.on_validation_completed(t.rid, {self.metric: loss}, length)
            )
            if t.rid not in self.runnable and t.closed:
                self._call(lambda: self._exit(t))
            return
        metrics = {self.metric: loss, str(self.time_metric): t.trained}
        self._call(lambda: self.method.on_validation_completed(t.rid, metrics))

    def run(self) -> SimResult:
        self._call(self.method.initial_operations)
        while not self.done:
            active = list(self.runnable)[: self.workers]
            if not active:
                raise RuntimeError("simulated search stalled: no runnable trial and no Shutdown")
            for rid in active:
                t = self.trials[rid]
                if rid not in self.runnable:
                    continue  # stopped by an earlier trial's validation this tick
                t.trained += 1
                self.result.units_total += 1
                assert t.goal is not None
                if self.generation_037:
                    if t.trained >= t.goal:
                        self._validate(t)
                    continue
                if t.trained % self.report_every == 0 or t.trained >= t.goal:
                    self._validate(t)
                if t.trained >= t.goal and rid in self.runnable:
                    self.runnable.pop(rid)  # trained to its own end
                    self._call(lambda t=t: self._exit(t))
        return self.result
