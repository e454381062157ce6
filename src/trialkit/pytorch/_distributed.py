"""A DistributedContext whose collectives run over an initialized torch.distributed process
group; used by ``pytorch.init()`` under a torch launcher when the core DistributedContext has
no multi-worker transport of its own (before issue F3)."""

from __future__ import annotations

import os
from typing import Any

import torch.distributed as dist

from .. import core


class ProcessGroupDistributedContext(core.DistributedContext):
    """Ranks from torch.distributed; gather / allgather / broadcast as object collectives."""

    def __init__(self) -> None:  # noqa: D107 - the base constructor refuses size > 1 before F3
        if not dist.is_initialized():
            raise RuntimeError("torch.distributed is not initialized")
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()
        self.local_rank = int(os.environ.get("LOCAL_RANK", self.rank))
        self.local_size = int(os.environ.get("LOCAL_WORLD_SIZE", self.size))
        self.cross_rank = int(os.environ.get("GROUP_RANK", 0))
        self.cross_size = max(self.size // max(self.local_size, 1), 1)
        self._chief_ip = os.environ.get("MASTER_ADDR", "127.0.0.1")

    def allgather(self, stuff: Any) -> list[Any]:
        out: list[Any] = [None] * self.size
        dist.all_gather_object(out, stuff)
        return out

    def gather(self, stuff: Any) -> list[Any] | None:
        out = self.allgather(stuff)
        return out if self.rank == 0 else None

    def broadcast(self, stuff: Any) -> Any:
        box = [stuff if self.rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def allgather_local(self, stuff: Any) -> list[Any]:
        if self.local_size != self.size:
            raise NotImplementedError("allgather_local across several nodes")
        return self.allgather(stuff)

    def gather_local(self, stuff: Any) -> list[Any] | None:
        return self.gather(stuff)

    def broadcast_local(self, stuff: Any = None) -> Any:
        return self.broadcast(stuff)

    def close(self) -> None:
        pass
