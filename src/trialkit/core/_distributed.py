"""DistributedContext: ranks and small object collectives for coordinating workers.

With one worker every collective returns immediately. Multi-worker transport arrives with the
launchers (issue F3); until then a context with size > 1 refuses to be built rather than hang.
"""

from __future__ import annotations

import os
from typing import Any


class DistributedContext:
    """Rank information plus gather / allgather / broadcast (and their ``_local`` variants)."""

    def __init__(
        self,
        *,
        rank: int | None = None,
        size: int | None = None,
        local_rank: int | None = None,
        local_size: int | None = None,
        cross_rank: int | None = None,
        cross_size: int | None = None,
        chief_ip: str | None = None,
        pub_port: int = 12360,
        pull_port: int = 12376,
        port_offset: int = 0,
        force_tcp: bool = False,
    ) -> None:
        given = [rank, size, local_rank, local_size, cross_rank, cross_size]
        if any(v is None for v in given) and not all(v is None for v in given):
            raise ValueError(
                "DistributedContext: give all of rank, size, local_rank, local_size, cross_rank, "
                "cross_size, or none of them"
            )
        self.rank = int(rank or 0)
        self.size = int(size or 1)
        self.local_rank = int(local_rank or 0)
        self.local_size = int(local_size or 1)
        self.cross_rank = int(cross_rank or 0)
        self.cross_size = int(cross_size or 1)
        self._check_ranks()
        if self.local_size != self.size and chief_ip is None:
            raise ValueError("DistributedContext: chief_ip is required when workers span nodes")
        self._chief_ip = "127.0.0.1" if self.local_size == self.size else chief_ip
        if self.size > 1:
            raise NotImplementedError(
                f"DistributedContext with size={self.size}: multi-worker coordination is not "
                "available in this trialkit version yet; run with one worker (slots_per_trial: 1)"
            )

    def _check_ranks(self) -> None:
        for name, r, n in (
            ("rank", self.rank, self.size),
            ("local_rank", self.local_rank, self.local_size),
            ("cross_rank", self.cross_rank, self.cross_size),
        ):
            if not 0 <= r < n:
                raise ValueError(f"DistributedContext: {name}={r} is outside [0, {n})")

    # Constructors from launcher environments ---------------------------------------------------

    @staticmethod
    def _env_int(name: str, default: int | None = None) -> int:
        value = os.environ.get(name)
        if value is None:
            if default is None:
                raise RuntimeError(
                    f"environment variable {name} is not set; was this process started by the launcher?"
                )
            return default
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"environment variable {name}={value!r} is not an integer") from None

    @classmethod
    def from_torch_distributed(cls, chief_ip: str | None = None) -> DistributedContext:
        """Ranks from torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK…"""
        e = cls._env_int
        size = e("WORLD_SIZE")
        local_size = e("LOCAL_WORLD_SIZE")
        return cls(
            rank=e("RANK"),
            size=size,
            local_rank=e("LOCAL_RANK"),
            local_size=local_size,
            cross_rank=e("GROUP_RANK", 0),
            cross_size=e("GROUP_WORLD_SIZE", max(size // max(local_size, 1), 1)),
            chief_ip=chief_ip or os.environ.get("DET_CHIEF_IP"),
        )

    @classmethod
    def from_deepspeed(cls, chief_ip: str | None = None) -> DistributedContext:
        """Ranks from DeepSpeed's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_SIZE, CROSS_RANK, CROSS_SIZE."""
        e = cls._env_int
        return cls(
            rank=e("RANK"),
            size=e("WORLD_SIZE"),
            local_rank=e("LOCAL_RANK"),
            local_size=e("LOCAL_SIZE"),
            cross_rank=e("CROSS_RANK"),
            cross_size=e("CROSS_SIZE"),
            chief_ip=chief_ip or os.environ.get("DET_CHIEF_IP"),
        )

    @classmethod
    def from_horovod(cls, hvd: Any, chief_ip: str | None = None) -> DistributedContext:
        """Ranks from an initialized horovod module."""
        return cls(
            rank=hvd.rank(),
            size=hvd.size(),
            local_rank=hvd.local_rank(),
            local_size=hvd.local_size(),
            cross_rank=hvd.cross_rank(),
            cross_size=hvd.cross_size(),
            chief_ip=chief_ip or os.environ.get("DET_CHIEF_IP"),
        )

    # Getters -----------------------------------------------------------------------------------

    def get_rank(self) -> int:
        return self.rank

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_size(self) -> int:
        return self.size

    def get_num_agents(self) -> int:
        return self.cross_size

    # Collectives (single worker: immediate) ----------------------------------------------------

    def gather(self, stuff: Any) -> list[Any] | None:
        """The chief gets every rank's ``stuff`` in rank order; workers get None."""
        return [stuff]

    def gather_local(self, stuff: Any) -> list[Any] | None:
        return [stuff]

    def allgather(self, stuff: Any) -> list[Any]:
        """Every rank gets every rank's ``stuff`` in rank order."""
        return [stuff]

    def allgather_local(self, stuff: Any) -> list[Any]:
        return [stuff]

    def broadcast(self, stuff: Any) -> Any:
        """Every rank gets the chief's ``stuff``."""
        return stuff

    def broadcast_local(self, stuff: Any = None) -> Any:
        return stuff

    def close(self) -> None:
        pass


class DummyDistributedContext(DistributedContext):
    """Rank 0 of 1."""

    def __init__(self) -> None:
        super().__init__(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)
