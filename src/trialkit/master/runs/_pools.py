"""Resource pools: which pool an experiment runs on (checked at create), and the slots of each
pool the scheduler places trials on. The local pool spawns processes on this machine; a Ray pool
(``_ray_pool``) starts them on a Ray cluster's nodes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ...config import (
    LOCAL_POOL,
    CheckpointStorage,
    DirectoryStorage,
    ExperimentConfig,
    MasterConfig,
    RayPoolConfig,
    Resources,
    SharedFSStorage,
)
from ...contract import ClusterInfo
from ._processes import TrialProcess

#: Checkpoint storage types every node reaches over the network.


@dataclass(frozen=True)
class RunLaunch:
    """Everything a pool needs to start one run of a trial (built by ``_run_dir``)."""

    trial_id: int
    experiment_id: int
    run_id: int
    log_offset: int
    argv: list[str]
    env: dict[str, str]
    workdir: Path
    trial_dir: Path
    exit_file: Path
    log_file: Path
    tag: str
    slots: list[int]
    model_def: bytes | None
    info: ClusterInfo


class Pool(Protocol):
    """What the engine needs of a pool: its free slots, and starting a run on some of them.
    A run is watched as a TrialProcess (alive, exit code, signals, log), wherever it runs."""

    name: str
    gpus: bool

    def capacity(self) -> int: ...

    def free_slots(self, taken: set[int]) -> list[int]: ...

    def spawn(self, launch: RunLaunch) -> TrialProcess: ...

    def describe(self) -> dict[str, Any]: ...


class LocalPool:
    """This machine's slots: ``slots`` numbered 0..slots-1; runs are local process groups."""

    def __init__(self, slots: int, gpus: bool) -> None:
        self.name = LOCAL_POOL
        self.gpus = gpus
        self.slots = slots

    def capacity(self) -> int:
        return self.slots

    def free_slots(self, taken: set[int]) -> list[int]:
        return [s for s in range(self.slots) if s not in taken]

    def describe(self) -> dict[str, Any]:
        """The pool as ``master status`` shows it (fields of ``rest.PoolInfo``)."""
        return {"type": "local", "slots": self.slots}

    def spawn(self, launch: RunLaunch) -> TrialProcess:
        return TrialProcess.spawn(
            trial_id=launch.trial_id,
            experiment_id=launch.experiment_id,
            run_id=launch.run_id,
            log_offset=launch.log_offset,
            argv=launch.argv,
            env=launch.env,
            cwd=launch.workdir,
            exit_file=launch.exit_file,
            log_file=launch.log_file,
            tag=launch.tag,
        )


def _storage_paths(storage: CheckpointStorage | None) -> list[str]:
    """The host paths a shared_fs/directory storage writes to."""
    if isinstance(storage, SharedFSStorage):
        base = Path(storage.host_path)
        sub = storage.storage_path
        return [str(base / sub if sub else base)]
    if isinstance(storage, DirectoryStorage):
        return [storage.container_path]
    return []


def check_resource_pool(cfg: ExperimentConfig, master: MasterConfig) -> tuple[list[str], str]:
    """At create: errors with the experiment's pool, and the pool its config resolves to."""
    given = cfg.resources.resource_pool
    name = master.resolve(given)
    pools = master.pools()
    if name not in pools:
        return [
            f"resources.resource_pool: {given!r} is not a resource pool of this master; use "
            f"one of {', '.join(pools)} (pools are declared in the master config, master.yaml)"
        ], given
    pool = pools[name]
    if isinstance(pool, RayPoolConfig):
        return _storage_errors(cfg.checkpoint_storage, name, pool), name
    return [], name


def capacity_errors(
    resources: Resources, master: MasterConfig, capacity: Callable[[str], int | None]
) -> list[str]:
    """At create: a trial on a Ray pool asking for more slots than its cluster has now would
    wait for a placement that never comes (``capacity`` None: the cluster did not answer)."""
    name = resources.resource_pool
    pool = master.pools().get(name)
    if not isinstance(pool, RayPoolConfig):
        return []  # the local pool's size is checked with the rest of the config
    need, have = max(resources.slots_per_trial, 1), capacity(name)
    if have is None or need <= have:
        return []
    kind = pool.slot_type.upper()
    return [
        f"resources.slots_per_trial: {need} is more than resource pool {name!r} has ({have} "
        f"{kind} slots on its Ray cluster now); lower it or add nodes to the cluster"
    ]


def _storage_errors(storage: CheckpointStorage | None, name: str, pool: RayPoolConfig) -> list[str]:
    """Checkpoints of a trial on a Ray pool must be reachable from every node."""
    for path in _storage_paths(storage):
        if not pool.covers(path):
            shared = ", ".join(pool.shared_paths) or "none declared"
            return [
                f"checkpoint_storage: {path} is not shared with every node of resource pool "
                f"{name!r} (its shared_paths: {shared}); use a path under one of them, an "
                "object store (s3, gcs, azure), or add the path to the pool's shared_paths"
            ]
    return []
