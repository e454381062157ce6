"""DistributedContext: ranks and small object collectives for coordinating workers.

With one worker every collective returns immediately. With more, building the context is itself
a collective: rank 0 (the chief) listens on the job's port and every other rank connects (see
``_transport``). Where the port comes from, first found wins: the ``pub_port`` argument,
``TRIALKIT_CHIEF_PORT`` (set per trial by the master and the launchers, picked free, never a
constant), ``INTER_TRAIN_PROCESS_COMM_PORT_1`` (Determined's name), ``MASTER_PORT + 1`` (plain
torchrun). Collectives time out after ``TRIALKIT_DIST_TIMEOUT`` seconds (default 3600); a rank
that exits makes every other rank raise ``PeerLostError`` naming it. Ranks prove to each other
that they know the job's ``TRIALKIT_DIST_TOKEN`` before anything is unpickled; on one machine
without one, the user's private key in the trialkit home stands in for it.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from .._home import PRIVATE_FILE, trialkit_home
from ..rendezvous import CHIEF_PORT_ENV, TOKEN_ENV
from ._transport import DistributedError, PeerLostError, Star, listen_any

TIMEOUT_ENV = "TRIALKIT_DIST_TIMEOUT"
CONNECT_TIMEOUT_ENV = "TRIALKIT_DIST_CONNECT_TIMEOUT"

__all__ = ["DistributedContext", "DistributedError", "DummyDistributedContext", "PeerLostError"]


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not a number") from None


LOCAL_KEY_FILE = "dist.key"


def _local_key(home: Path) -> str:
    """A per-user secret in the (0700) home, for ranks on this machine started with no token:
    a process of another user cannot read it, so cannot pose as a rank or the chief."""
    path = home / LOCAL_KEY_FILE
    if not path.exists():
        tmp = home / f"{LOCAL_KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
        try:
            os.link(tmp, path)  # atomic and never replaces: concurrent ranks agree on one key
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return path.read_text().strip()


def _chief_port(explicit: int | None) -> int:
    if explicit is not None:
        return int(explicit)
    for name in (CHIEF_PORT_ENV, "INTER_TRAIN_PROCESS_COMM_PORT_1"):
        if os.environ.get(name):
            return int(os.environ[name])
    if os.environ.get("MASTER_PORT"):
        return int(os.environ["MASTER_PORT"]) + 1
    raise RuntimeError(
        "DistributedContext: no port for the chief; launch with python -m "
        "trialkit.launch.torch_distributed (or set TRIALKIT_CHIEF_PORT to a free port, the same "
        "on every rank)"
    )


def tf_config_ranks(raw: str | None) -> dict[str, Any] | None:
    """DistributedContext's arguments for a ``TF_CONFIG`` with several workers (None for one):
    rank = the task's index; workers with the same host are one node. Sets the chief's port to
    one past the highest worker port when no launcher set it."""
    cfg = json.loads(raw) if raw else {}
    workers = [str(w) for w in (cfg.get("cluster") or {}).get("worker") or []]
    if len(workers) < 2:
        return None
    task = cfg.get("task") or {}
    if task.get("type") != "worker":
        raise RuntimeError(
            f"TF_CONFIG task type {task.get('type')!r} is not supported; use 'worker'"
        )
    index = int(task.get("index", 0))
    if not 0 <= index < len(workers):
        raise RuntimeError(f"TF_CONFIG task index {index} is not one of its {len(workers)} workers")
    hosts = [w.rpartition(":")[0] for w in workers]
    nodes = list(dict.fromkeys(hosts))  # in order of first appearance
    mine = [i for i, h in enumerate(hosts) if h == hosts[index]]
    ports = [int(p) for p in (w.rpartition(":")[2] for w in workers) if p.isdigit()]
    if ports:
        os.environ.setdefault(CHIEF_PORT_ENV, str(max(ports) + 1))
    return {
        "rank": index,
        "size": len(workers),
        "local_rank": mine.index(index),
        "local_size": len(mine),
        "cross_rank": nodes.index(hosts[index]),
        "cross_size": len(nodes),
        "chief_ip": hosts[0],
    }


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
        pub_port: int | None = None,
        pull_port: int | None = None,
        port_offset: int = 0,
        force_tcp: bool = False,
        timeout: float | None = None,
        connect_timeout: float | None = None,
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
        self._chief_ip = "127.0.0.1" if self.local_size == self.size else str(chief_ip)
        self._global: Star | None = None
        self._local: Star | None = None
        if self.size > 1:
            self._connect(pub_port, timeout, connect_timeout)

    def _connect(
        self, port: int | None, timeout: float | None, connect_timeout: float | None
    ) -> None:
        timeout = timeout if timeout is not None else _env_float(TIMEOUT_ENV, 3600.0)
        connect_timeout = (
            connect_timeout
            if connect_timeout is not None
            else _env_float(CONNECT_TIMEOUT_ENV, 300.0)
        )
        token = os.environ.get(TOKEN_ENV, "")
        multi_node = self.local_size != self.size
        if multi_node and not token:
            # Across hosts the chief listens on every interface: only peers that share a
            # secret may join, and the home's key is not on the other nodes.
            raise RuntimeError(
                f"DistributedContext across {self.cross_size} nodes: set {TOKEN_ENV} to the same "
                "secret on every node"
            )
        token = token or _local_key(trialkit_home())
        self._global = Star(
            rank=self.rank,
            size=self.size,
            host=self._chief_ip,
            port=_chief_port(port),
            token=token,
            timeout=timeout,
            connect_timeout=connect_timeout,
            bind_host="0.0.0.0" if multi_node else "127.0.0.1",
        )
        if not multi_node:
            return
        # Each node's local chief listens on a port the OS picks; the addresses travel by one
        # global allgather (every rank takes part, as in Determined).
        listener = listen_any("127.0.0.1") if self.local_rank == 0 and self.local_size > 1 else None
        mine = listener.getsockname()[1] if listener is not None else None
        ports = self._global.allgather((self.cross_rank, mine))
        if self.local_size == 1:
            return
        node_port = next(p for c, p in ports if c == self.cross_rank and p is not None)
        self._local = Star(
            rank=self.local_rank,
            size=self.local_size,
            host="127.0.0.1",
            port=node_port,
            token=token,
            timeout=timeout,
            connect_timeout=connect_timeout,
            label=f"node {self.cross_rank} local group: ",
            listener=listener,
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
            chief_ip=chief_ip or os.environ.get("DET_CHIEF_IP") or os.environ.get("MASTER_ADDR"),
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

    @classmethod
    def from_tf_config(cls) -> tuple[DistributedContext, Any]:
        """``(context, tf.distribute.Strategy)`` from ``TF_CONFIG``: MultiWorkerMirroredStrategy
        when it lists several workers (workers on one host share a node), else one worker."""
        try:
            import tensorflow as tf
        except ImportError:
            raise RuntimeError(
                "DistributedContext.from_tf_config() needs tensorflow: pip install tensorflow-cpu"
            ) from None
        ranks = tf_config_ranks(os.environ.get("TF_CONFIG"))
        if ranks is not None:
            ctx = cls(**ranks)
            return ctx, tf.distribute.MultiWorkerMirroredStrategy()
        ctx = cls(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)
        if len(tf.config.list_physical_devices("GPU")) > 1:
            return ctx, tf.distribute.MirroredStrategy()
        return ctx, tf.distribute.get_strategy()

    @classmethod
    def from_launcher_env(cls) -> DistributedContext | None:
        """The context a trialkit/Determined launcher's environment describes, if any."""
        env = os.environ
        tf_ranks = tf_config_ranks(env.get("TF_CONFIG"))
        if tf_ranks is not None:
            return cls(**tf_ranks)
        if "RANK" in env and "LOCAL_WORLD_SIZE" in env:
            return cls.from_torch_distributed()
        if "RANK" in env and "LOCAL_SIZE" in env and "CROSS_RANK" in env:
            return cls.from_deepspeed()
        if "HOROVOD_RANK" in env:
            e = cls._env_int
            return cls(
                rank=e("HOROVOD_RANK"),
                size=e("HOROVOD_SIZE"),
                local_rank=e("HOROVOD_LOCAL_RANK"),
                local_size=e("HOROVOD_LOCAL_SIZE"),
                cross_rank=e("HOROVOD_CROSS_RANK"),
                cross_size=e("HOROVOD_CROSS_SIZE"),
                chief_ip=env.get("DET_CHIEF_IP"),
            )
        return None

    # Getters -----------------------------------------------------------------------------------

    def get_rank(self) -> int:
        return self.rank

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_size(self) -> int:
        return self.size

    def get_num_agents(self) -> int:
        return self.cross_size

    # Collectives -------------------------------------------------------------------------------

    def _local_star(self) -> Star | None:
        return self._global if self.local_size == self.size else self._local

    def gather(self, stuff: Any) -> list[Any] | None:
        """The chief gets every rank's ``stuff`` in rank order; workers get None."""
        return [stuff] if self._global is None else self._global.gather(stuff)

    def gather_local(self, stuff: Any) -> list[Any] | None:
        """Like gather() among the workers of this node; the local chief gets the list."""
        star = self._local_star()
        return [stuff] if star is None else star.gather(stuff)

    def allgather(self, stuff: Any) -> list[Any]:
        """Every rank gets every rank's ``stuff`` in rank order."""
        return [stuff] if self._global is None else self._global.allgather(stuff)

    def allgather_local(self, stuff: Any) -> list[Any]:
        star = self._local_star()
        return [stuff] if star is None else star.allgather(stuff)

    def broadcast(self, stuff: Any) -> Any:
        """Every rank gets the chief's ``stuff``."""
        return stuff if self._global is None else self._global.broadcast(stuff)

    def broadcast_local(self, stuff: Any = None) -> Any:
        star = self._local_star()
        return stuff if star is None else star.broadcast(stuff)

    def close(self) -> None:
        """Close the connections (other ranks see a clean goodbye, not a lost peer)."""
        for star in (self._local, self._global):
            if star is not None:
                star.close()


class DummyDistributedContext(DistributedContext):
    """Rank 0 of 1."""

    def __init__(self) -> None:
        super().__init__(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)
