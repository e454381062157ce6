"""A resource pool on a Ray cluster: the master is a Ray driver; each run of a trial is a
placement group with one bundle per slot (a CPU or a GPU each) and, on each bundle, a NodeRunner
actor (``_ray_node``) that runs the same argv and environment a local run gets, in a copy of
the model directory shipped to its node. The run's log is copied back into the trial's log file
on the master, where log capture stores it as for a local run. ``ray`` is imported only here,
and only when a Ray pool is configured."""

from __future__ import annotations

import json
import logging
import secrets
import signal
import socket
import time
from typing import Any

from ...config import MasterConfigError, RayPoolConfig
from ...rendezvous import CHIEF_PORT_ENV, TOKEN_ENV
from ._pools import RunLaunch
from ._processes import TrialProcess

logger = logging.getLogger("trialkit.master")

#: Environment variable the torch_distributed launcher reads its --rdzv-endpoint default from.
RDZV_ENV = "TRIALKIT_RDZV_ENDPOINT"
#: Seconds a Ray call the engine waits on may take (log reads at the end of a run, node table).
_CALL_TIMEOUT = 30.0
#: Seconds to wait for the head's port to accept a connection when the master starts.
_PROBE_TIMEOUT = 5.0
#: How long Ray calls about a run may keep failing before the run counts as lost.
_UNREACHABLE_S = 60.0
#: How long the cluster's size is reused before asking the cluster again.
_CAPACITY_TTL = 1.0
#: Seconds an ended run waits for its actors to remove their copies of the run (which hold the
#: trial's token) before its placement group is removed, which ends the actors.
_CLEANUP_TIMEOUT = 30.0


def connect(cfg: RayPoolConfig, name: str) -> None:
    """Join the pool's cluster as a driver (once per master); a clear error if it is not there."""
    import ray

    if ray.is_initialized():
        return
    _probe(cfg.address, name)
    try:
        ray.init(
            address=cfg.address,
            log_to_driver=False,
            logging_level=logging.WARNING,
            configure_logging=False,
        )
    except Exception as e:  # ConnectionError, or whatever ray.init raises for a bad address
        raise MasterConfigError(
            f"resource_pools.{name}.address: cannot connect to Ray at {cfg.address!r} ({e}); "
            "start the cluster (ray start --head) or fix the address"
        ) from None
    nodes, slots = cluster_size(cfg.slot_type == "gpu")
    logger.info(
        "resource pool %s: joined the Ray cluster at %s (%d nodes, %d %s slots)",
        name,
        cfg.address,
        nodes,
        slots,
        cfg.slot_type.upper(),
    )


def cluster_size(gpus: bool) -> tuple[int, int]:
    """(alive nodes, CPUs or GPUs) of the cluster the master joined."""
    import ray

    nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
    return nodes, int(ray.cluster_resources().get("GPU" if gpus else "CPU", 0))


def _probe(address: str, name: str) -> None:
    """Fail fast on a head that does not answer (ray.init would retry for minutes)."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=_PROBE_TIMEOUT):
            pass
    except (OSError, ValueError) as e:
        raise MasterConfigError(
            f"resource_pools.{name}.address: nothing answers at {address!r} ({e}); start the "
            "cluster (ray start --head) or fix the address"
        ) from None


class RayPool:
    """Slots of one kind (CPU or GPU) on the Ray cluster the master joined."""

    def __init__(self, name: str, cfg: RayPoolConfig) -> None:
        self.name = name
        self.cfg = cfg
        self.gpus = cfg.slot_type == "gpu"
        self._capacity = 0
        self._checked = 0.0

    def capacity(self) -> int:
        """Slots the cluster has now (alive nodes' CPUs or GPUs)."""
        import ray

        now = time.monotonic()
        if now - self._checked >= _CAPACITY_TTL:
            resources = ray.cluster_resources()
            self._capacity = int(resources.get("GPU" if self.gpus else "CPU", 0))
            self._checked = now
        return self._capacity

    def free_slots(self, taken: set[int]) -> list[int]:
        return [s for s in range(self.capacity()) if s not in taken]

    def spawn(self, launch: RunLaunch) -> RayRun:
        return RayRun(self, launch)

    def describe(self) -> dict[str, Any]:
        """The pool as ``master status`` shows it (fields of ``rest.PoolInfo``): its cluster's
        address, alive nodes and slots now (None where the cluster does not answer)."""
        shown: dict[str, Any] = {"type": "ray", "address": self.cfg.address}
        try:
            shown["nodes"], shown["slots"] = cluster_size(self.gpus)
        except Exception as e:  # the cluster is unreachable: say so rather than fail status
            logger.warning("resource pool %s: cluster size unknown: %s", self.name, e)
            shown["nodes"] = shown["slots"] = None
        return shown


class RayRun(TrialProcess):
    """One run on the cluster. ``finished()`` (called every tick) moves it on: placement group
    ready (or timed out) -> actors created -> (several bundles) the chief's node picks the
    rendezvous ports -> runs started -> log copied back -> every actor done (or lost).
    It has no process on the master's machine: its pid is None, and the log's "placed on"
    line names each bundle's node and actor (``ray list actors`` finds its pid there)."""

    def __init__(self, pool: RayPool, launch: RunLaunch) -> None:
        from ray.util.placement_group import placement_group

        import ray

        super().__init__(
            launch.trial_id,
            launch.experiment_id,
            launch.run_id,
            None,
            time.time(),
            launch.exit_file,
            launch.log_file,
            launch.tag,
            launch.log_offset,
        )
        self._ray = ray
        self._pool = pool
        self._launch = launch
        resource = "GPU" if pool.gpus else "CPU"
        bundles = [{resource: 1.0} for _ in launch.slots]
        self._pg = placement_group(bundles, strategy=pool.cfg.placement_strategy)
        self._ready = self._pg.ready()
        self._placing_since = time.monotonic()
        self._actors: list[Any] = []
        self._ports: Any = None  # the chief's rendezvous_ports() call, while it is pending
        self._runs: list[Any] = []
        self._codes: dict[int, int] = {}
        self._reads: dict[int, Any] = {}
        self._nodes: list[tuple[str, str]] = []
        self._offsets: list[int] = []
        self._code: int | None = None
        self._failing_since: float | None = None
        self._cleanups: list[Any] | None = None  # the actors' cleanup() calls, once it ended
        self._ending: tuple[int, float] = (0, 0.0)  # (exit code, monotonic time it ended)
        launch.log_file.parent.mkdir(parents=True, exist_ok=True)

    # The supervisor's view -----------------------------------------------------------------

    def alive(self) -> bool:
        return self._code is None

    def finished(self, scan: Any = None) -> bool:
        """Whether the run on Ray is over (``scan``, this machine's processes, is not needed)."""
        if self._code is None:
            try:
                if self._cleanups is None:
                    self._advance()
                else:
                    self._release_when_clean()
                self._failing_since = None
            except Exception as e:  # the cluster is unwell: keep trying, then give the run up
                self._give_up_after_errors(e)
        return self._code is not None

    def _give_up_after_errors(self, error: Exception) -> None:
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
            logger.warning("trial %d: Ray run not reachable: %s", self.trial_id, error)
        elif now - self._failing_since > _UNREACHABLE_S:
            self.supervisor_lost = True
            why = (str(error).splitlines() or [type(error).__name__])[0][:200]
            self.failure = f"Ray cluster unreachable for {_UNREACHABLE_S:.0f}s ({why})"
            self._append(f"[trialkit] run {self.run_id}: {self.failure}\n".encode())
            self._code = -int(signal.SIGKILL)

    def exit_code(self) -> int:
        return self._code if self._code is not None else -int(signal.SIGKILL)

    def signal_group(self, sig: signal.Signals) -> None:
        if not self._runs:  # still waiting for a place or for ports: nothing runs yet
            if sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGINT) and self._cleanups is None:
                self._end(-int(sig))
            return
        for actor in self._actors:  # the actor signals its run's processes (then cleans up)
            actor.signal.remote(int(sig))

    # Moving on -----------------------------------------------------------------------------

    def _advance(self) -> None:
        ray = self._ray
        if not self._actors:
            if ray.wait([self._ready], timeout=0)[0]:
                self._create_actors()
            elif time.monotonic() - self._placing_since > self._pool.cfg.placement_timeout:
                self._fail_placement()
            return
        if not self._runs:
            if ray.wait([self._ports], timeout=0)[0]:
                self._start_with_chief_ports()
            return
        self._copy_logs(wait=False)
        for i, ref in enumerate(self._runs):
            if i in self._codes or not ray.wait([ref], timeout=0)[0]:
                continue
            self._codes[i] = self._result(i, ref)
            if self._codes[i] != 0:  # one bundle failed: the others cannot go on
                for j, actor in enumerate(self._actors):
                    if j not in self._codes:
                        actor.signal.remote(int(signal.SIGKILL))
        if len(self._codes) == len(self._runs):
            self._copy_logs(wait=True)
            failed = [c for c in self._codes.values() if c != 0]
            self._end(failed[0] if failed else 0)

    def _result(self, i: int, ref: Any) -> int:
        try:
            return int(self._ray.get(ref, timeout=_CALL_TIMEOUT))
        except Exception as e:  # RayActorError: the actor or its node is gone
            self._lost(i, e)
            return -int(signal.SIGKILL)

    def _lost(self, i: int, error: Exception) -> None:
        """Bundle ``i``'s actor or node is gone: that is the run's failure (the first such),
        shown as the trial's error, not only in its log."""
        self.supervisor_lost = True
        addr, node = self._nodes[i] if i < len(self._nodes) else ("?", "?")
        lost = (
            f"Ray worker {i} lost ({type(error).__name__}): its node {addr} (node {node[:8]}) "
            "or its actor died"
        )
        self.failure = self.failure or lost
        self._append(f"[trialkit] run {self.run_id}: {lost}\n".encode())
        logger.warning("trial %d: %s", self.trial_id, lost)

    def _end(self, code: int) -> None:
        """Ask each actor to remove its copy of the run; the run ends once they did."""
        self._ending = (code, time.monotonic())
        self._cleanups = [actor.cleanup.remote() for actor in self._actors]
        self._release_when_clean()

    def _release_when_clean(self) -> None:
        """Remove the placement group (which ends the actors) once every cleanup is done, or
        after _CLEANUP_TIMEOUT (a lost actor never answers; its janitor removes its copy)."""
        cleanups = self._cleanups or []
        code, since = self._ending
        done = self._ray.wait(cleanups, num_returns=len(cleanups), timeout=0)[0] if cleanups else []
        if len(done) < len(cleanups) and time.monotonic() - since < _CLEANUP_TIMEOUT:
            return
        from ray.util.placement_group import remove_placement_group

        try:
            remove_placement_group(self._pg)
        except Exception as e:  # the cluster may be gone with the node
            logger.warning("trial %d: placement group not removed: %s", self.trial_id, e)
        self._code = code

    def _fail_placement(self) -> None:
        """The cluster never found room for the placement group: the run fails, saying why."""
        cfg = self._pool.cfg
        kind = "GPU" if self._pool.gpus else "CPU"
        self.failure = (
            f"Ray could not place {len(self._launch.slots)} one-{kind} bundle(s) "
            f"({cfg.placement_strategy}) within {cfg.placement_timeout:g}s (resource_pools."
            f"{self._pool.name}.placement_timeout); the cluster has {self._pool.capacity()} "
            f"{kind}s: lower resources.slots_per_trial, change placement_strategy or add nodes"
        )
        self._append(f"[trialkit] run {self.run_id}: {self.failure}\n".encode())
        logger.warning("trial %d: %s", self.trial_id, self.failure)
        self._end(1)

    def _create_actors(self) -> None:
        """One actor per bundle; a run of several bundles asks its chief's node for ports."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from ._ray_node import NodeRunner

        runner = self._ray.remote(NodeRunner)
        opts = {"num_gpus": 1} if self._pool.gpus else {"num_cpus": 1}
        self._nodes = self._bundle_nodes()
        for i in range(len(self._nodes)):
            actor = runner.options(  # type: ignore[attr-defined]
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=self._pg, placement_group_bundle_index=i
                ),
                max_concurrency=4,
                **opts,
            ).remote()
            self._actors.append(actor)
            self._offsets.append(0)
        where = ", ".join(
            f"{addr} (node {node[:8]}, actor {actor._actor_id.hex()[:12]})"
            for (addr, node), actor in zip(self._nodes, self._actors, strict=True)
        )
        line = f"[trialkit] run {self.run_id}: placed on Ray node(s) {where}"
        self._append(line.encode() + b"\n")
        logger.info("trial %d: %s", self.trial_id, line)
        if len(self._actors) > 1:
            self._ports = self._actors[0].rendezvous_ports.remote()
        else:
            self._start_runs({})

    def _start_with_chief_ports(self) -> None:
        """Start every bundle once the chief's node has picked the ports (lost if it died)."""
        try:
            picked = self._ray.get(self._ports, timeout=_CALL_TIMEOUT)
        except Exception as e:  # RayActorError: the chief's actor or node is gone
            self._lost(0, e)
            self._end(-int(signal.SIGKILL))
            return
        self._start_runs(self._chief_env(picked))

    def _chief_env(self, picked: tuple[str, list[int]]) -> dict[str, str]:
        """The rendezvous environment from the ports the chief's node picked (bundle 0's)."""
        node, (rdzv_port, chief_port) = picked
        chief = self._nodes[0][0]
        line = (
            f"[trialkit] run {self.run_id}: rendezvous at {chief}:{rdzv_port}, ports chosen on "
            f"the chief's node {node[:8]}"
        )
        self._append(line.encode() + b"\n")
        return {
            "DET_CHIEF_IP": chief,
            RDZV_ENV: f"{chief}:{rdzv_port}",
            CHIEF_PORT_ENV: str(chief_port),
            TOKEN_ENV: secrets.token_hex(16),
        }

    def _start_runs(self, per_node_env: dict[str, str]) -> None:
        launch = self._launch
        addrs = [addr for addr, _ in self._nodes]
        for i, (actor, addr) in enumerate(zip(self._actors, addrs, strict=True)):
            env = {**launch.env, **per_node_env, "DET_SLOT_IDS": json.dumps([launch.slots[i]])}
            env["DET_AGENT_ID"] = addr
            files = _run_files(launch, addrs, i)
            ref = actor.run.remote(files, launch.model_def, str(launch.trial_dir), launch.argv, env)
            self._runs.append(ref)

    def _bundle_nodes(self) -> list[tuple[str, str]]:
        """Each bundle's (node address, node id): one container per bundle, for the rendezvous."""
        ray = self._ray
        table = ray.util.placement_group_table(self._pg)
        by_node = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes()}
        nodes = table.get("bundles_to_node_id", {})
        return [
            (by_node.get(nodes.get(i), "127.0.0.1"), str(nodes.get(i, "?")))
            for i in range(len(self._launch.slots))
        ]

    def _copy_logs(self, *, wait: bool) -> None:
        """Append what each actor's run wrote since the last look to the master's log file."""
        ray = self._ray
        for i, actor in enumerate(self._actors):
            while True:
                ref = self._reads.pop(i, None) or actor.read_log.remote(self._offsets[i])
                if not wait and not ray.wait([ref], timeout=0)[0]:
                    self._reads[i] = ref
                    break
                try:
                    data = ray.get(ref, timeout=_CALL_TIMEOUT)
                except Exception:  # the actor is gone: its log ends here
                    break
                if not data:
                    break
                self._offsets[i] += len(data)
                self._append(data)
                if not wait:
                    break

    def _append(self, data: bytes) -> None:
        with open(self.log_file, "ab") as f:
            f.write(data)


def _run_files(launch: RunLaunch, addrs: list[str], rank: int) -> dict[str, tuple[bytes, int]]:
    """The files of the master's trial directory a node needs: the cluster-info file (this
    bundle's rank among the containers) and the interpreter shims."""
    info = launch.info._to_json()
    info["container_addrs"] = addrs
    info["container_rank"] = rank
    info["slot_ids"] = [launch.slots[rank]]
    files = {"cluster_info.json": (json.dumps(info).encode(), 0o600)}
    bin_dir = launch.trial_dir / "bin"
    for shim in bin_dir.glob("*") if bin_dir.is_dir() else []:
        files[f"bin/{shim.name}"] = (shim.read_bytes(), 0o700)
    return files
