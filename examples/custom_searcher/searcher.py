"""A custom search method (Determined 0.37's SearchMethod API): random search with one early
stop. Each trial trains to half the length; it goes on to the full length only if its metric is
the best seen so far at that point, otherwise it is closed."""

from __future__ import annotations

import json
import pathlib
import random
import uuid
from typing import Any

from trialkit import searcher


class HalfwayRandomSearch(searcher.SearchMethod):
    def __init__(self, max_trials: int = 6, max_length: int = 20, max_concurrent: int = 2,
                 seed: int = 0) -> None:  # fmt: skip
        self.max_trials = max_trials
        self.max_length = max_length
        self.max_concurrent = max_concurrent
        self.rng = random.Random(seed)
        self.created = 0
        self.best_halfway: float | None = None

    def _new_trial(self) -> list[searcher.Operation]:
        self.created += 1
        request_id = uuid.uuid4()
        hparams = {"lr": round(self.rng.uniform(0.0, 1.0), 4)}
        return [
            searcher.Create(request_id=request_id, hparams=hparams, checkpoint=None),
            searcher.ValidateAfter(request_id=request_id, length=self.max_length // 2),
        ]

    def initial_operations(self, searcher_state: searcher.SearcherState) -> list[Any]:
        return [op for _ in range(min(self.max_concurrent, self.max_trials))
                for op in self._new_trial()]  # fmt: skip

    def on_trial_created(self, searcher_state: searcher.SearcherState, request_id: uuid.UUID) -> list[Any]:  # fmt: skip
        return []

    def on_validation_completed(self, searcher_state: searcher.SearcherState,
                                request_id: uuid.UUID, metric: Any, train_length: int) -> list[Any]:  # fmt: skip
        if train_length < self.max_length and (
            self.best_halfway is None or metric < self.best_halfway
        ):
            self.best_halfway = metric
            return [searcher.ValidateAfter(request_id=request_id, length=self.max_length)]
        return [searcher.Close(request_id=request_id)]

    def on_trial_closed(self, searcher_state: searcher.SearcherState, request_id: uuid.UUID) -> list[Any]:  # fmt: skip
        if self.created < self.max_trials:
            return self._new_trial()
        if len(searcher_state.trials_closed) >= self.max_trials:
            return [searcher.Shutdown()]
        return []

    def on_trial_exited_early(self, searcher_state: searcher.SearcherState,
                              request_id: uuid.UUID, exited_reason: searcher.ExitedReason) -> list[Any]:  # fmt: skip
        return []  # on_trial_closed follows

    def progress(self, searcher_state: searcher.SearcherState) -> float:
        return len(searcher_state.trials_closed) / self.max_trials

    def save_method_state(self, path: pathlib.Path) -> None:
        state = {"created": self.created, "best_halfway": self.best_halfway,
                 "rng": self.rng.getstate()}  # fmt: skip
        (path / "method_state.json").write_text(json.dumps(state))

    def load_method_state(self, path: pathlib.Path) -> None:
        state = json.loads((path / "method_state.json").read_text())
        self.created = state["created"]
        self.best_halfway = state["best_halfway"]
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
