"""The shared loop on two ranks (threads with real collectives, local mode): a stop one rank asks
for stops both at the same batch, training metrics are averaged over the ranks batch by batch,
and records count every rank's batches."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tests.local_runs import ingested_store
from tests.unit.core.test_distributed_contexts import on_ranks
from tests.unit.harness.test_harness_loop import CountingStrategy, _only_trial, _settings
from trialkit import core
from trialkit.core import DistributedContext
from trialkit.harness import Batch, Target, TrainLoop


class RankStrategy(CountingStrategy):
    """Rank r's loss is its batch number plus 10 r; rank 1 asks to stop after 3 batches."""

    def __init__(self, rank: int) -> None:
        super().__init__(stop_at=3 if rank == 1 else None)
        self.rank = rank

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int, epoch_len: int) -> Any:
        metrics = super().train_batch(batch, epoch_idx, batch_idx, epoch_len)
        return {"loss": metrics["loss"] + 10 * self.rank}


def test_two_ranks_stop_together_and_report_the_average_of_their_batches(
    trialkit_home: Path,
) -> None:
    def rank(d: DistributedContext) -> tuple[list[int], int]:
        strategy = RankStrategy(d.rank)
        with core.init(distributed=d) as ctx:
            loop = TrainLoop(ctx, strategy, _settings())
            loop.run([Target(Batch(12))])
        return strategy.trained, loop.progress.records_trained

    # both stop after batch 2; 2 records a batch on each of 2 ranks
    assert on_ranks(2, rank) == [([0, 1, 2], 12), ([0, 1, 2], 12)]
    store = ingested_store(trialkit_home)
    try:
        [trial] = store.list_trials()
        [report] = store.list_metrics(trial.id, "training")
        [per_batch] = store.list_batch_metrics(trial.id)
    finally:
        store.close()
    assert per_batch.batch_metrics == [{"loss": 5.0}, {"loss": 6.0}, {"loss": 7.0}]
    assert report.steps_completed == 3 and report.values["loss"] == 6.0


class ShardStrategy(RankStrategy):
    """Each rank saves its own file (as DeepSpeed's engines save their shards)."""

    def save(self, path: Path, rng_state: dict[str, Any]) -> None:
        super().save(path, rng_state)
        (path / f"rank{self.rank}.bin").write_bytes(bytes([self.rank]))


def test_sharded_checkpoints_hold_every_ranks_files(trialkit_home: Path) -> None:
    settings = dataclasses.replace(_settings(), shard_checkpoints=True)

    def rank(d: DistributedContext) -> str | None:
        with core.init(distributed=d) as ctx:
            loop = TrainLoop(ctx, ShardStrategy(d.rank), settings)
            loop.run([Target(Batch(12))])
        return loop.last_checkpoint

    first, second = on_ranks(2, rank)
    assert first == second is not None  # every rank knows the checkpoint
    _, [checkpoint] = _only_trial(trialkit_home)
    assert {"rank0.bin", "rank1.bin"} <= set(checkpoint.resources)
