"""Run by the deepspeed launcher with two ranks (tests/deepspeed/test_two_ranks.py): for each
ZeRO stage given on the command line, an uninterrupted run, a run stopped at batch STOP and
its resumption ("pipe": two pipeline stages instead); each rank prints whether the final weights are equal, and what every rank saved."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.deepspeed.ds_trials import LinearTrial, PipelineTrial, gathered_weights  # noqa: E402
from trialkit import deepspeed as tkds  # noqa: E402

LENGTH, STOP = 12, 5


def fit(hparams: dict, latest: str | None = None) -> tuple[list[torch.Tensor], object]:
    with tkds.init(hparams=hparams, seed=11) as ctx:
        trial = PipelineTrial(ctx) if "stages" in hparams else LinearTrial(ctx)
        trainer = tkds.Trainer(trial, ctx)
        trainer.fit(
            max_length=tkds.Batch(LENGTH),
            validation_period=tkds.Batch(4),
            checkpoint_policy="none",
            latest_checkpoint=latest,
        )
        return gathered_weights(trial), trainer.loop


for stage in sys.argv[1:]:
    if stage == "pipe":  # two pipeline stages, one per rank
        hp: dict = {"stages": 2, "ds": {"gradient_accumulation_steps": 2}}
    else:
        zero = {"stage": int(stage), "stage3_param_persistence_threshold": 0}
        hp = {"ds": {"zero_optimization": zero, "gradient_accumulation_steps": 2}}
    straight, loop = fit(hp)
    _, stopped = fit({**hp, "stop_at": STOP})
    resumed, loop2 = fit(hp, stopped.last_checkpoint)
    equal = all(torch.equal(a, b) for a, b in zip(straight, resumed, strict=True))
    rank = stopped.dist.rank
    print(
        f"STAGE {stage} rank {rank} of {stopped.dist.size}: resumed equals uninterrupted: "
        f"{equal}; stopped at {stopped.progress.batches_trained}; "
        f"val_loss {loop.last_validation.get('val_loss')}; ckpt {stopped.last_checkpoint}",
        flush=True,
    )
