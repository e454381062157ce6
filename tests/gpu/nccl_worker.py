"""One rank under ``python -m trialkit.launch.torch_distributed``: NCCL collectives on CUDA
tensors (torch.distributed and trialkit's DistributedContext), then tests/pytorch/ddp_worker's
DDP run, recording the records each rank trained on. Rank 0 writes the results to argv[1]."""

from __future__ import annotations

import os
import sys
from typing import Any

import torch
import torch.distributed as dist

from tests.pytorch import ddp_worker
from trialkit import core, pytorch


class ShardTrial(ddp_worker.Trial):
    """Records the first feature of every record it trains on (they are distinct floats)."""

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        self.__dict__.setdefault("rows", []).append(batch[0][:, 0].tolist())
        assert batch[0].device.type == "cuda"
        return super().train_batch(batch, epoch_idx, batch_idx)


def collectives(d: core.DistributedContext, local_rank: int) -> dict[str, Any]:
    dev = torch.device("cuda", local_rank)
    t = torch.full((3,), float(d.rank + 1), device=dev)
    dist.all_reduce(t)  # NCCL on a CUDA tensor
    gathered = d.allgather(torch.tensor([d.rank], device=dev))  # trialkit's, CUDA tensors
    sent = d.broadcast(torch.arange(4, device=dev) if d.rank == 0 else None)
    return {
        "backend": dist.get_backend(),
        "allreduce": t.tolist(),
        "allgather": [int(g.item()) for g in gathered],
        "allgather_devices": sorted({g.device.type for g in gathered}),
        "broadcast": sent.tolist(),
    }


def main(out: str) -> None:
    if int(os.environ.get("WORLD_SIZE", "1")) == 1:
        dist.init_process_group("nccl")  # one rank: trialkit would not join a group by itself
    with pytorch.init(hparams=dict(ddp_worker.HPARAMS), seed=0) as ctx:
        d = ctx.distributed
        assert ctx.device == torch.device("cuda", d.local_rank), ctx.device
        result = collectives(d, d.local_rank) if d.size > 1 else {}
        if d.size == 1:
            t = torch.ones(2, device=ctx.device)
            dist.all_reduce(t)
            result = {"backend": dist.get_backend(), "allreduce": t.tolist()}
        trial, trainer = ddp_worker.fit(ctx, ShardTrial)
        rows = d.allgather(trial.rows)
        if d.rank == 0:
            torch.save(
                {
                    **result,
                    "size": d.size,
                    "rows": rows,
                    "batches": trainer.loop.progress.batches_trained,
                    "weights": [p.detach().cpu() for p in trial.model.parameters()],
                },
                out,
            )
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
