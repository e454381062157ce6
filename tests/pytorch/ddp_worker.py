"""One worker of the 2-process DDP test: ``python -m tests.pytorch.ddp_worker OUT`` with
torchrun-style RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT set."""

from __future__ import annotations

import sys

import torch

from tests.pytorch.trials import RegressionTrial
from trialkit import pytorch


class Averages(pytorch.PyTorchCallback):
    """Keeps the training averages each worker sees after every reporting period."""

    def __init__(self) -> None:
        self.seen: list[dict] = []

    def on_training_workload_end(self, avg_metrics: dict, batch_metrics: list) -> None:
        self.seen.append(dict(avg_metrics))


class Trial(RegressionTrial):
    def build_callbacks(self) -> dict[str, pytorch.PyTorchCallback]:
        self.averages = Averages()
        return {"recorder": self.callback, "averages": self.averages}


HPARAMS = {"global_batch_size": 16, "dropout": 0.0}


def fit(
    ctx: pytorch.PyTorchTrialContext, trial_cls: type[Trial] = Trial
) -> tuple[Trial, pytorch.Trainer]:
    """The run both sides of the comparison make: 6 batches, validate every 3, report every 2."""
    trial = trial_cls(ctx)
    trainer = pytorch.Trainer(trial, ctx)
    trainer.fit(
        max_length=pytorch.Batch(6),
        validation_period=pytorch.Batch(3),
        reporting_period=pytorch.Batch(2),
        checkpoint_policy="none",
    )
    return trial, trainer


def main(out: str) -> None:
    with pytorch.init(hparams=HPARAMS, seed=0) as ctx:
        assert ctx.distributed.size == 2
        trial, trainer = fit(ctx)
        assert trainer.loop is not None
        if ctx.distributed.rank == 0:
            torch.save(
                {
                    "weights": [p.detach() for p in trial.model.parameters()],
                    "validation": trainer.loop.last_validation,
                    "batches": trainer.loop.progress.batches_trained,
                    "averages": trial.averages.seen,
                },
                out,
            )
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
