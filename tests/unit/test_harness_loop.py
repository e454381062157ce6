"""The shared loop with no framework at all: a plain-Python strategy gets the same boundaries
(validation, checkpoint, report, stop) and resumes on the next batch from its checkpoint."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trialkit import core
from trialkit.harness import Batch, LoopSettings, Target, TrainLoop
from trialkit.store import Store


class CountingStrategy:
    """Learns the running mean of the batches it sees; records what the loop asked of it."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.total = 0.0
        self.trained: list[int] = []
        self.validated_at: list[int] = []
        self.stop_at = stop_at
        self.skip = -1

    def callbacks(self) -> dict[str, Any]:
        return {}

    def build_train_iterator(self, skip: int, seed: int) -> tuple[Iterator[Any], int]:
        self.skip = skip
        return iter(range(skip, 10**6)), 4  # batch i is the number i; 4 batches an epoch

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int) -> Any:
        assert batch == batch_idx  # the data position matches the loop's counter
        self.total += batch
        self.trained.append(batch_idx)
        return {"loss": float(batch)}

    def batch_length(self, batch: Any) -> int:
        return 2

    def reset_reducers(self) -> None:
        pass

    def training_reducer_metrics(self) -> dict[str, Any]:
        return {}

    def validate(self, test_mode: bool) -> dict[str, Any]:
        self.validated_at.append(len(self.trained))
        return {"total": self.total}

    def stop_requested(self) -> bool:
        return self.stop_at is not None and self.trained[-1] + 1 == self.stop_at

    def save(self, path: Path, rng_state: dict[str, Any]) -> None:
        (path / "state.json").write_text(json.dumps({"total": self.total, "rng": rng_state}))

    def load(self, path: Path) -> dict[str, Any] | None:
        state = json.loads((path / "state.json").read_text())
        self.total = state["total"]
        return dict(state["rng"])

    def training_started(self) -> None:
        pass

    def training_ended(self) -> None:
        pass

    def capture_rng(self) -> dict[str, Any]:
        return {"random": list(random.getstate()[1])}

    def restore_rng(self, state: dict[str, Any]) -> None:
        assert "random" in state

    def fresh_seed(self) -> int:
        return 5

    def checkpoint_metadata(self) -> dict[str, Any]:
        return {"framework": "plain-python", "format": "json"}


def _settings() -> LoopSettings:
    return LoopSettings(
        validation_period=Batch(4),
        checkpoint_period=Batch(5),
        reporting_period=Batch(3),
        checkpoint_policy="none",
    )


def test_a_framework_free_strategy_gets_the_loop_boundaries(trialkit_home: Path) -> None:
    strategy = CountingStrategy()
    with core.init() as ctx:
        loop = TrainLoop(ctx, strategy, _settings())
        loop.run([Target(Batch(10))])
    assert strategy.trained == list(range(10))
    assert strategy.validated_at == [4, 8, 10]
    p = loop.progress
    assert (p.batches_trained, p.epochs_trained, p.records_trained) == (10, 2, 20)
    store = Store.at(trialkit_home)
    try:
        [trial] = store.list_trials()
        training = store.list_metrics(trial.id, "training")
        checkpoints = store.list_checkpoints(trial_id=trial.id)
    finally:
        store.close()
    assert [m.steps_completed for m in training] == [3, 4, 5, 6, 8, 9, 10]
    assert training[0].values["loss"] == 1.0  # the mean of batches 0, 1, 2
    assert sorted(c.steps_completed for c in checkpoints) == [5, 10]


def test_a_stop_request_checkpoints_and_the_next_run_resumes_on_the_next_batch(
    trialkit_home: Path,
) -> None:
    first = CountingStrategy(stop_at=7)
    with core.init() as ctx:
        loop = TrainLoop(ctx, first, _settings())
        loop.run([Target(Batch(12))])
    assert first.trained == list(range(7)) and loop.last_checkpoint is not None
    second = CountingStrategy()
    with core.init() as ctx:
        resumed = TrainLoop(ctx, second, _settings())
        resumed.run([Target(Batch(12))], latest_checkpoint=loop.last_checkpoint)
    assert second.skip == 7 and second.trained == list(range(7, 12))
    assert second.total == sum(range(12))  # the saved state plus the remaining batches
    assert resumed.progress.batches_trained == 12 and resumed.progress.shuffle_seed == 5
