"""Preview a search (like ``det preview-search``): simulate it with deterministic fake metrics.

Trials train in round-robin order; each operation or report gets a metric from ``metric_fn`` or,
by default, from a RandomState seeded with ``experiment_seed + 1`` (separate from the searcher's).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from trialkit.config import Generation, SearcherConfig
from trialkit.searcher._factory import make_search_method, searcher_config
from trialkit.searcher._ops import Close, Create, Operation, Shutdown, Stop, ValidateAfter
from trialkit.searcher._searcher import Searcher

MetricFn = Callable[[int, int], float]  # (trial number from 1 in creation order, length) -> metric
#: the simulated metric's name when the searcher names none (single and grid need none)
_UNNAMED_METRIC = "metric"


def preview(
    searcher: SearcherConfig | Mapping[str, Any],
    hyperparameters: Mapping[str, Any],
    experiment_seed: int,
    *,
    metric_fn: MetricFn | None = None,
    max_events: int = 1_000_000,
) -> list[dict[str, Any]]:
    """Per trial, in creation order: ``request_id``, ``trial_seed``, ``hparams`` and ``lengths``.

    ``lengths`` are the ValidateAfter targets it trains to (0.37) or the time-metric values it
    reports at before it stops or ends (0.38; empty for non-ASHA searchers, whose trials train to
    their own length).
    """
    cfg = searcher_config(searcher)
    if cfg.name == "custom":
        raise ValueError(
            "preview: a custom searcher's decisions are made by your own code; there is nothing"
            " to simulate"
        )
    metric, time_metric = cfg.metric or _UNNAMED_METRIC, cfg.time_metric
    method = make_search_method(cfg, hyperparameters, experiment_seed)
    assert isinstance(method, Searcher)
    if metric_fn is None:
        rng = np.random.RandomState((int(experiment_seed) + 1) % 2**32)
        metric_fn = lambda _trial, _length: float(rng.random_sample())  # noqa: E731
    sim = _Simulation(method, metric, time_metric, metric_fn, max_events)
    return sim.run()


class _Simulation:
    """Drives a search method the way the master would, with instant, in-order training."""

    def __init__(
        self,
        method: Searcher,
        metric: str,
        time_metric: str | None,
        metric_fn: MetricFn,
        max_events: int,
    ) -> None:
        self.method = method
        self.metric = metric
        self.time_metric = time_metric
        self.metric_fn = metric_fn
        self.budget = max_events
        self.trials: dict[str, dict[str, Any]] = {}
        self.number: dict[str, int] = {}
        self.inflight: dict[str, int] = {}
        self.schedule: dict[str, collections.deque[int]] = {}
        self.finishing: set[str] = set()
        self.exited: set[str] = set()
        self.queue: collections.deque[str] = collections.deque()
        self.done = False

    def run(self) -> list[dict[str, Any]]:
        self.apply(self.method.initial_operations())
        while self.queue and not self.done:
            self.budget -= 1
            if self.budget < 0:
                raise RuntimeError("preview: the search did not finish within max_events")
            self.step(self.queue.popleft())
        return list(self.trials.values())

    def step(self, request_id: str) -> None:
        if request_id in self.exited:
            return
        if self.method.generation is Generation.OPS:
            self.complete_op(request_id)
        else:
            self.report(request_id)

    def complete_op(self, request_id: str) -> None:
        length = self.inflight.pop(request_id, None)
        if length is None:
            return
        self.trials[request_id]["lengths"].append(length)
        value = self.metric_fn(self.number[request_id], length)
        self.apply(self.method.on_validation_completed(request_id, {self.metric: value}, length))
        self.maybe_exit(request_id)

    def report(self, request_id: str) -> None:
        pending = self.schedule[request_id]
        if not pending or self.time_metric is None:
            self.finishing.add(request_id)  # trained to its own length
            self.maybe_exit(request_id)
            return
        t = pending.popleft()
        self.trials[request_id]["lengths"].append(t)
        metrics = {self.metric: self.metric_fn(self.number[request_id], t), self.time_metric: t}
        self.apply(self.method.on_validation_completed(request_id, metrics))
        if request_id not in self.exited:
            self.queue.append(request_id)

    def apply(self, ops: list[Operation]) -> None:
        for op in ops:
            if isinstance(op, Create):
                self.add_trial(op)
            elif isinstance(op, ValidateAfter):
                self.inflight[op.request_id] = op.length
                self.queue.append(op.request_id)
            elif isinstance(op, (Close, Stop)):
                self.finishing.add(op.request_id)
                self.maybe_exit(op.request_id)
            elif isinstance(op, Shutdown):
                self.done = True

    def add_trial(self, create: Create) -> None:
        rid = create.request_id
        self.number[rid] = len(self.trials) + 1
        self.trials[rid] = {
            "request_id": rid,
            "trial_seed": create.trial_seed,
            "hparams": create.hparams,
            "lengths": [],
        }
        if self.method.generation is Generation.REPORTS:
            self.schedule[rid] = collections.deque(self.method.report_schedule(rid))
            self.queue.append(rid)
        self.apply(self.method.on_trial_created(rid))

    def maybe_exit(self, request_id: str) -> None:
        """A trial exits once it was told to finish and has no operation left."""
        if request_id in self.finishing and request_id not in self.inflight:
            if request_id not in self.exited:
                self.exited.add(request_id)
                self.apply(self.method.on_trial_closed(request_id))
