"""One worker of the 2-process DDP test: ``python -m tests.pytorch.ddp_worker OUT`` with
torchrun-style RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT set."""

from __future__ import annotations

import sys

import torch

from tests.pytorch.trials import RegressionTrial
from trialkit import pytorch


def main(out: str) -> None:
    with pytorch.init(hparams={"global_batch_size": 16, "dropout": 0.0}, seed=0) as ctx:
        assert ctx.distributed.size == 2
        trial = RegressionTrial(ctx)
        trainer = pytorch.Trainer(trial, ctx)
        trainer.fit(
            max_length=pytorch.Batch(6),
            validation_period=pytorch.Batch(3),
            checkpoint_policy="none",
        )
        assert trainer.loop is not None
        if ctx.distributed.rank == 0:
            torch.save(
                {
                    "weights": [p.detach() for p in trial.model.parameters()],
                    "validation": trainer.loop.last_validation,
                    "batches": trainer.loop.progress.batches_trained,
                },
                out,
            )
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
