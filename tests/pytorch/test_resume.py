"""Exact resume: stopping at any batch k and resuming gives bitwise the weights of an
uninterrupted run (shuffling, dropout, aggregation_frequency 2, an LR scheduler)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from trialkit import pytorch  # noqa: E402

from .trials import RegressionTrial, weights  # noqa: E402

N = 14
HP = {"global_batch_size": 8, "dropout": 0.3, "lr_mode": "STEP_EVERY_BATCH", "lr_freq": 3}


def _fit(
    seed: int, *, stop_at: int | None = None, latest: str | None = None, agg: int = 2
) -> tuple[RegressionTrial, pytorch.Trainer]:
    with pytorch.init(hparams=dict(HP), aggregation_frequency=agg, seed=seed) as ctx:
        trial = RegressionTrial(ctx, stop_at=stop_at)
        trainer = pytorch.Trainer(trial, ctx)
        trainer.fit(
            max_length=pytorch.Batch(N),
            validation_period=pytorch.Batch(5),
            reporting_period=pytorch.Batch(4),
            checkpoint_policy="none",
            latest_checkpoint=latest,
        )
    return trial, trainer


@pytest.mark.parametrize("k", [1, 5, 6, 9])
def test_preempt_at_k_and_resume_is_bitwise_identical(k: int) -> None:
    full, _ = _fit(seed=0)
    stopped, first = _fit(seed=0, stop_at=k)
    assert first.loop is not None and first.loop.progress.batches_trained == k
    uuid = first.loop.last_checkpoint
    assert uuid is not None
    # A different seed for the resumed process: everything must come from the checkpoint.
    resumed, second = _fit(seed=123, latest=uuid)
    assert second.loop is not None and second.loop.progress.batches_trained == N
    for a, b in zip(weights(full), weights(resumed), strict=True):
        assert torch.equal(a, b)
    # The stopped run really was behind: resuming did the work.
    assert not all(torch.equal(a, b) for a, b in zip(weights(full), weights(stopped), strict=True))
    # Callback state travelled in the checkpoint: validations at 5 and 10 (+ end) counted once.
    assert resumed.callback.validations == full.callback.validations


def test_resume_without_aggregation_and_epoch_scheduler() -> None:
    HP["lr_mode"] = "STEP_EVERY_EPOCH"
    try:
        full, _ = _fit(seed=4, agg=1)
        _, first = _fit(seed=4, agg=1, stop_at=7)
        assert first.loop is not None
        resumed, _ = _fit(seed=9, agg=1, latest=first.loop.last_checkpoint)
    finally:
        HP["lr_mode"] = "STEP_EVERY_BATCH"
    for a, b in zip(weights(full), weights(resumed), strict=True):
        assert torch.equal(a, b)
    assert full.opt.param_groups[0]["lr"] == resumed.opt.param_groups[0]["lr"]
