"""DistributedContext over its real transport: ranks as threads (as Determined's harness tests
do) and as processes, for results, lost ranks, timeouts, misuse and port handling."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import paths
from trialkit.core import DistributedContext, DistributedError
from trialkit.rendezvous import CHIEF_PORT_ENV, TOKEN_ENV, free_port

SRC = str(paths.SRC)


def _run_ranks(
    size: int,
    body: Callable[[DistributedContext], Any],
    *,
    local_size: int | None = None,
    timeout: float = 10.0,
    port: int | None = None,
) -> list[Any]:
    """Run ``body`` on ``size`` ranks (threads), each with its own real DistributedContext."""
    port = port or free_port()
    local_size = local_size or size
    results: list[Any] = [None] * size

    def rank_main(rank: int) -> None:
        try:
            ctx = DistributedContext(
                rank=rank,
                size=size,
                local_rank=rank % local_size,
                local_size=local_size,
                cross_rank=rank // local_size,
                cross_size=size // local_size,
                chief_ip="127.0.0.1",
                pub_port=port,
                timeout=timeout,
                connect_timeout=timeout,
            )
            try:
                results[rank] = body(ctx)
            finally:
                ctx.close()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            results[rank] = e

    threads = [threading.Thread(target=rank_main, args=(r,), daemon=True) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 20)
        assert not t.is_alive(), "a rank hung"
    return results


def test_collectives_on_three_ranks() -> None:
    def body(d: DistributedContext) -> Any:
        return (
            d.allgather({"r": d.rank}),
            d.gather(d.rank * 2),
            d.broadcast("from chief" if d.rank == 0 else "ignored"),
            d.allgather_local(d.local_rank),
            d.gather_local(d.rank),
            d.broadcast_local(d.rank + 100),
            [d.get_rank(), d.get_local_rank(), d.get_size(), d.get_num_agents()],
        )

    out = _run_ranks(3, body)
    for rank, (ag, g, b, agl, gl, bl, getters) in enumerate(out):
        assert ag == [{"r": 0}, {"r": 1}, {"r": 2}]
        assert g == ([0, 2, 4] if rank == 0 else None)
        assert b == "from chief"
        assert agl == [0, 1, 2]
        assert gl == ([0, 1, 2] if rank == 0 else None)
        assert bl == 100
        assert getters == [rank, rank, 3, 1]


def test_local_variants_stay_within_a_node(monkeypatch: pytest.MonkeyPatch) -> None:
    # 4 ranks as 2 "nodes" of 2: the local groups get their own (exchanged) ports.
    monkeypatch.setenv(TOKEN_ENV, "shared-secret")

    def body(d: DistributedContext) -> Any:
        return d.allgather(d.rank), d.allgather_local(d.rank), d.broadcast_local(d.rank)

    out = _run_ranks(4, body, local_size=2)
    for rank, (ag, agl, bl) in enumerate(out):
        node = rank // 2
        assert ag == [0, 1, 2, 3]
        assert agl == [2 * node, 2 * node + 1]
        assert bl == 2 * node


def test_ranks_across_nodes_need_a_shared_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    out = _run_ranks(4, lambda d: d.rank, local_size=2, timeout=2.0)
    assert all(
        isinstance(e, RuntimeError) and f"set {TOKEN_ENV} to the same secret" in str(e) for e in out
    ), out


def test_many_rounds_keep_order() -> None:
    def body(d: DistributedContext) -> Any:
        return [d.allgather((i, d.rank))[1] for i in range(300)]

    out = _run_ranks(2, body)
    assert out[0] == out[1] == [(i, 1) for i in range(300)]


def test_a_rank_that_skips_a_collective_times_out_with_a_clear_error() -> None:
    def body(d: DistributedContext) -> Any:
        if d.rank == 0:
            return d.allgather(1)
        time.sleep(1.5)  # never joins
        return None

    t0 = time.monotonic()
    out = _run_ranks(2, body, timeout=1.0)
    assert isinstance(out[0], DistributedError)
    assert "timed out after 1s in allgather waiting for rank 1" in str(out[0])
    assert time.monotonic() - t0 < 10


def test_mismatched_collectives_are_named() -> None:
    def body(d: DistributedContext) -> Any:
        return d.allgather(1) if d.rank == 0 else d.gather(1)

    out = _run_ranks(2, body, timeout=3.0)
    assert isinstance(out[0], DistributedError)
    assert "out of step" in str(out[0]) and "gather" in str(out[0])


def test_constructor_checks() -> None:
    with pytest.raises(ValueError, match="give all of rank"):
        DistributedContext(rank=0, size=2)
    with pytest.raises(ValueError, match=r"rank=2 is outside \[0, 2\)"):
        DistributedContext(rank=2, size=2, local_rank=0, local_size=2, cross_rank=0, cross_size=1)
    with pytest.raises(ValueError, match="chief_ip is required"):
        DistributedContext(rank=0, size=4, local_rank=0, local_size=2, cross_rank=0, cross_size=2)
    d = DistributedContext()
    assert (d.rank, d.size, d.allgather(5), d.gather(5), d.broadcast(5)) == (0, 1, [5], [5], 5)


def test_no_port_anywhere_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (CHIEF_PORT_ENV, "INTER_TRAIN_PROCESS_COMM_PORT_1", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RuntimeError, match="trialkit.launch.torch_distributed"):
        DistributedContext(rank=0, size=2, local_rank=0, local_size=2, cross_rank=0, cross_size=1)


def test_port_taken_is_a_clear_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        with pytest.raises(DistributedError, match=f"cannot listen on 127.0.0.1:{port}"):
            DistributedContext(
                rank=0,
                size=2,
                local_rank=0,
                local_size=2,
                cross_rank=0,
                cross_size=1,
                pub_port=port,
                connect_timeout=1,
            )


# Real processes ----------------------------------------------------------------------------

WORKER = """
import os, sys, time
from trialkit.core import DistributedContext
rank = int(sys.argv[1])
d = DistributedContext(rank=rank, size=2, local_rank=rank, local_size=2, cross_rank=0,
                       cross_size=1, timeout=30, connect_timeout=10)
print("ready", d.allgather(rank), flush=True)
if sys.argv[2] == "die":
    os._exit(9)
if sys.argv[2] == "sleep":
    time.sleep(60)
try:
    d.allgather("again")
except Exception as e:
    print(type(e).__name__ + ": " + str(e), flush=True)
    sys.exit(3)
d.close()
print("ok", flush=True)
"""


def _spawn(
    tmp_path: Path, rank: int, mode: str, port: int, token: str = "t"
) -> subprocess.Popen[str]:
    script = tmp_path / "w.py"
    script.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": SRC, CHIEF_PORT_ENV: str(port), TOKEN_ENV: token}
    return subprocess.Popen(
        [sys.executable, str(script), str(rank), mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.integration
@pytest.mark.parametrize("dead", [0, 1])
def test_a_dead_process_is_named_promptly_in_the_other(tmp_path: Path, dead: int) -> None:
    port = free_port()
    procs = [_spawn(tmp_path, r, "die" if r == dead else "on", port) for r in range(2)]
    t0 = time.monotonic()
    outs = [p.communicate(timeout=30)[0] for p in procs]
    assert time.monotonic() - t0 < 10  # not the 30 s collective timeout
    survivor = 1 - dead
    assert procs[survivor].returncode == 3, outs
    who = "chief (rank 0)" if dead == 0 else "rank 1"
    assert f"PeerLostError: worker {who} exited/disconnected" in outs[survivor]


@pytest.mark.integration
def test_processes_complete_and_close_cleanly(tmp_path: Path) -> None:
    port = free_port()
    procs = [_spawn(tmp_path, r, "on", port) for r in range(2)]
    outs = [p.communicate(timeout=30)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all("ready [0, 1]" in o and "ok" in o for o in outs)


@pytest.mark.integration
def test_a_rank_of_another_job_is_refused(tmp_path: Path) -> None:
    port = free_port()
    chief = _spawn(tmp_path, 0, "sleep", port, token="job-a")
    intruder = _spawn(tmp_path, 1, "on", port, token="job-b")
    out = intruder.communicate(timeout=30)[0]
    chief.kill()
    chief.communicate(timeout=10)
    assert intruder.returncode != 0
    assert "is not this job's chief: it did not prove it knows the job token" in out


# Constructors from launcher environments ---------------------------------------------------


def test_from_torch_distributed_and_launcher_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in {
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "1",
    }.items():
        monkeypatch.setenv(k, v)
    d = DistributedContext.from_torch_distributed()
    assert (d.rank, d.size, d.cross_rank, d.cross_size) == (0, 1, 0, 1)
    assert DistributedContext.from_launcher_env() is not None
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    assert DistributedContext.from_launcher_env() is None
    monkeypatch.setenv("WORLD_SIZE", "x")
    with pytest.raises(ValueError, match="WORLD_SIZE='x' is not an integer"):
        DistributedContext.from_torch_distributed()


def test_from_deepspeed_and_horovod(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
        "LOCAL_SIZE": "1",
        "CROSS_RANK": "0",
        "CROSS_SIZE": "1",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert DistributedContext.from_deepspeed().size == 1

    class Hvd:
        def rank(self) -> int:
            return 0

        def size(self) -> int:
            return 1

        def local_rank(self) -> int:
            return 0

        def local_size(self) -> int:
            return 1

        def cross_rank(self) -> int:
            return 0

        def cross_size(self) -> int:
            return 1

    assert DistributedContext.from_horovod(Hvd()).get_num_agents() == 1
    monkeypatch.delenv("LOCAL_SIZE")
    with pytest.raises(RuntimeError, match="LOCAL_SIZE is not set"):
        DistributedContext.from_deepspeed()


def test_a_worker_without_a_chief_gives_up_at_its_connect_timeout() -> None:
    port = free_port()
    t0 = time.monotonic()
    with pytest.raises(
        DistributedError, match=f"rank 1 could not reach the chief at 127.0.0.1:{port}"
    ):
        DistributedContext(
            rank=1, size=2, local_rank=1, local_size=2, cross_rank=0, cross_size=1,
            pub_port=port, connect_timeout=0.5,
        )  # fmt: skip
    assert time.monotonic() - t0 < 5


def test_a_chief_without_workers_names_the_missing_ranks() -> None:
    with pytest.raises(DistributedError, match=r"waiting for ranks \[1, 2\] to connect"):
        DistributedContext(
            rank=0, size=3, local_rank=0, local_size=3, cross_rank=0, cross_size=1,
            pub_port=free_port(), connect_timeout=0.5,
        )  # fmt: skip


def test_a_stranger_on_the_port_is_not_unpickled_and_does_not_block_the_job(
    tmp_path: Path,
) -> None:
    port, marker = free_port(), tmp_path / "pwned"
    out: dict[int, Any] = {}

    def rank_main(rank: int) -> None:
        d = DistributedContext(
            rank=rank, size=2, local_rank=rank, local_size=2, cross_rank=0, cross_size=1,
            pub_port=port, timeout=10, connect_timeout=10,
        )  # fmt: skip
        out[rank] = d.allgather(rank)
        d.close()

    chief = threading.Thread(target=rank_main, args=(0,), daemon=True)
    chief.start()
    deadline = time.monotonic() + 10
    while True:  # the stranger gets in first, with a pickle that would run a command
        try:
            s = socket.create_connection(("127.0.0.1", port))
            break
        except ConnectionRefusedError:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    with s:
        evil = f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()
        s.sendall(len(evil).to_bytes(8, "big") + evil)
        assert s.recv(100) == b""  # dropped without an answer
    worker = threading.Thread(target=rank_main, args=(1,), daemon=True)
    worker.start()
    for t in (chief, worker):
        t.join(20)
    assert out == {0: [0, 1], 1: [0, 1]}
    assert not marker.exists()


def test_tf_config_ranks_group_workers_by_host(monkeypatch: pytest.MonkeyPatch) -> None:
    from trialkit.core._distributed import tf_config_ranks

    def config(index: int, workers: list[str], kind: str = "worker") -> str:
        return json.dumps({"cluster": {"worker": workers}, "task": {"type": kind, "index": index}})

    monkeypatch.delenv(CHIEF_PORT_ENV, raising=False)
    assert tf_config_ranks(None) is None
    assert tf_config_ranks(config(0, ["127.0.0.1:2000"])) is None  # one worker: not distributed
    two_nodes = ["10.0.0.1:2000", "10.0.0.1:2001", "10.0.0.2:2000", "10.0.0.2:2001"]
    assert tf_config_ranks(config(3, two_nodes)) == {
        "rank": 3,
        "size": 4,
        "local_rank": 1,
        "local_size": 2,
        "cross_rank": 1,
        "cross_size": 2,
        "chief_ip": "10.0.0.1",
    }
    assert os.environ[CHIEF_PORT_ENV] == "2002"  # past every worker's port
    one_node = tf_config_ranks(config(1, ["127.0.0.1:2000", "127.0.0.1:2001"]))
    assert one_node is not None and (one_node["local_size"], one_node["cross_size"]) == (2, 1)
    with pytest.raises(RuntimeError, match="task type 'ps' is not supported"):
        tf_config_ranks(config(0, two_nodes, kind="ps"))
    with pytest.raises(RuntimeError, match="task index 4 is not one of its 4 workers"):
        tf_config_ranks(config(4, two_nodes))
