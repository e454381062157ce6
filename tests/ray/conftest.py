"""A real local Ray cluster for the Ray pool tests: a head (no CPUs, so trials land on the
workers) and two worker nodes, each a separate ``ray start --block`` process on its own loopback
address (127.0.1.x: with 127.0.0.1 Ray advertises the machine's network address) with its own
temp dir and a small object store, stopped by process id at the end; and a master whose ``ray``
pool joins it."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

pytest.importorskip("ray", reason="the ray extra is not installed (tox -e ray runs these)")

from tests.integration.conftest import Master, _run_master  # noqa: E402

#: No usage stats; no OOM killer. (Several nodes on one Linux machine need no setting.)
RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    # Ray's memory monitor kills workers when the machine is over 95 % full, which a shared CI
    # machine often is (for other processes' memory): off, so the tests see only their faults.
    "RAY_memory_monitor_refresh_ms": "0",
}
RAY = str(Path(sys.executable).with_name("ray"))
#: Each node's object store (Ray's default is 30 % of the machine's memory per node).
OBJECT_STORE_BYTES = 100_000_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RayNode:
    name: str
    proc: subprocess.Popen[bytes]

    def tree(self) -> list[psutil.Process]:
        """The node's processes: ``ray start``, its raylet and the workers under it."""
        try:
            root = psutil.Process(self.proc.pid)
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return []

    def kill(self) -> None:
        """Lose the node at once: SIGKILL to every process of it (as a machine going away)."""
        for p in self.tree():
            with contextlib.suppress(psutil.Error):
                p.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


@dataclass
class RayCluster:
    address: str
    root: Path
    nodes: list[RayNode] = field(default_factory=list)
    started: int = 0  # nodes started so far: the next one's loopback address is 127.0.1.N+1

    def start_node(self, name: str, *args: str) -> RayNode:
        self.started += 1
        tmp = self.root / name
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115 (the node writes it)
        proc = subprocess.Popen(
            [
                RAY,
                "start",
                "--block",
                f"--node-ip-address=127.0.1.{self.started}",
                f"--object-store-memory={OBJECT_STORE_BYTES}",
                f"--temp-dir={tmp}",
                "--disable-usage-stats",
                *args,
            ],
            # The runs' working copies (tempfile) go under the cluster's directory too.
            env={**os.environ, **RAY_ENV, "TMPDIR": str(self.root)},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        node = RayNode(name, proc)
        self.nodes.append(node)
        return node

    def add_worker(self, name: str) -> RayNode:
        return self.start_node(name, f"--address={self.address}", "--num-cpus=1")

    def wait_cpus(self, n: int, timeout: float = 120) -> None:
        """Until the cluster counts ``n`` CPUs (its worker nodes joined)."""
        probe = (
            "import ray,sys; ray.init(address=sys.argv[1], log_to_driver=False, "
            "logging_level='ERROR'); print('CPUS', int(ray.cluster_resources().get('CPU', 0)))"
        )
        deadline = time.monotonic() + timeout
        got = None
        while time.monotonic() < deadline:
            try:
                out = subprocess.run(
                    [sys.executable, "-c", probe, self.address],
                    env={**os.environ, **RAY_ENV},
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
            except subprocess.TimeoutExpired:  # joined a head still starting (loaded machine)
                continue
            # Ray may print warnings (a lost node's lagging heartbeats) around the count.
            counts = [ln.split()[1] for ln in out.stdout.splitlines() if ln.startswith("CPUS ")]
            got = counts[-1:] if out.returncode == 0 else None
            if got and int(got[0]) >= n:
                return
            time.sleep(1)
        raise AssertionError(f"the Ray cluster has {got} CPUs after {timeout}s, not {n}")

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.kill()


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    # Short: Ray's unix sockets live under the temp dir (108 bytes at most for their path).
    root = Path(tempfile.mkdtemp(prefix="tkray-", dir="/tmp"))
    port = _free_port()
    cluster = RayCluster(f"127.0.1.1:{port}", root)
    try:
        cluster.start_node(
            "head", "--head", f"--port={port}", "--num-cpus=0", "--include-dashboard=false"
        )
        cluster.add_worker("worker1")
        cluster.add_worker("worker2")
        cluster.wait_cpus(2)
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


def run_copies(cluster: RayCluster) -> list[Path]:
    """The runs' working copies on the cluster's nodes (``trialkit-run-*``, with the trial's
    token): each one goes with its run."""
    return sorted(cluster.root.glob("trialkit-run-*"))


def assert_no_run_copies(cluster: RayCluster, timeout: float = 20) -> None:
    """Within ``timeout`` of the runs' end, no run's copy is left on any node."""
    deadline = time.monotonic() + timeout
    while run_copies(cluster) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = run_copies(cluster)
    assert not left, f"run copies left on the Ray nodes: {left}"


def write_master_config(home: Path, cluster: RayCluster, shared: Path, **pool: object) -> None:
    home.mkdir(parents=True, exist_ok=True)
    lines = [
        "resource_pools:",
        "  ray:",
        "    type: ray",
        f"    address: {cluster.address}",
        "    slot_type: cpu",
        f"    shared_paths: [{shared}]",
    ] + [f"    {k}: {v}" for k, v in pool.items()]
    (home / "master.yaml").write_text("\n".join(lines) + "\n")


@pytest.fixture
def ray_master(
    ray_cluster: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Master]:
    """A master with a ``ray`` pool on the test cluster (checkpoints under tmp_path: shared)."""
    for k, v in RAY_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("TRIALKIT_DB", raising=False)
    write_master_config(
        tmp_path / "home", ray_cluster, tmp_path, placement_strategy="STRICT_SPREAD"
    )
    yield from _run_master(tmp_path / "home", monkeypatch)


@pytest.fixture
def packed_ray_master(
    ray_cluster: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Master]:
    """A master whose ``ray`` pool packs a trial's bundles onto one node (each worker of the
    test cluster has one CPU, so a 2-slot trial never fits) and gives a placement 5 s."""
    for k, v in RAY_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("TRIALKIT_DB", raising=False)
    write_master_config(
        tmp_path / "home",
        ray_cluster,
        tmp_path,
        placement_strategy="STRICT_PACK",
        placement_timeout=5,
    )
    yield from _run_master(tmp_path / "home", monkeypatch)
