"""Core contexts over a real multi-rank DistributedContext (ranks as threads): preemption
reaches every rank through the chief per PreemptMode, sharded checkpoints gather every rank's
files, conflicting shards are refused, searcher operations reach the workers."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trialkit.config import SearcherConfig
from trialkit.core import (
    CheckpointContext,
    DistributedContext,
    PreemptContext,
    PreemptMode,
    SearcherContext,
)
from trialkit.core._backend import TrialBackend
from trialkit.rendezvous import free_port
from trialkit.storage import MANIFEST_NAME, SharedFSStorageManager


class Backend(TrialBackend):
    """The master's trial endpoints, in memory, shared by all ranks of one trial."""

    def __init__(self) -> None:
        self.trial_id, self.experiment_id, self.run_id = 1, 1, 1
        self.preempt = threading.Event()
        self.acks = 0
        self.checkpoints: dict[str, dict[str, Any]] = {}
        self.ops = [4]
        self.completed: list[tuple[int, Any]] = []

    def ship_metrics(self, reports: list[dict[str, Any]]) -> None:
        pass

    def report_checkpoint(self, record: dict[str, Any]) -> None:
        self.checkpoints[record["uuid"]] = record

    def checkpoint_metadata(self, uuid: str) -> dict[str, Any] | None:
        return None

    def delete_checkpoint(self, uuid: str) -> None:
        pass

    def preemption_requested(self, timeout: float) -> bool:
        self.preempt.wait(timeout)
        return self.preempt.is_set()

    def ack_preemption(self) -> None:
        self.acks += 1

    def searcher_operation(self) -> tuple[int | None, bool]:
        return (self.ops[0], False) if self.ops else (None, True)

    def complete_operation(self, length: int, metric: Any) -> None:
        self.completed.append((length, metric))
        self.ops.pop(0)

    def report_progress(self, value: float, *, raw: bool) -> None:
        pass

    def set_status(self, status: str) -> None:
        pass

    def report_early_exit(self, reason: str) -> None:
        pass

    def best_validation(self) -> float | None:
        return None

    def last_validation(self) -> int | None:
        return None

    def close(self, exc: BaseException | None = None) -> None:
        pass


def on_ranks(size: int, body: Callable[[DistributedContext], Any]) -> list[Any]:
    port = free_port()
    out: list[Any] = [None] * size

    def run(rank: int) -> None:
        d = DistributedContext(
            rank=rank, size=size, local_rank=rank, local_size=size, cross_rank=0,
            cross_size=1, pub_port=port, timeout=10, connect_timeout=10,
        )  # fmt: skip
        try:
            out[rank] = body(d)
        except Exception as e:  # noqa: BLE001 - handed to the test
            out[rank] = e
        finally:
            d.close()

    threads = [threading.Thread(target=run, args=(r,), daemon=True) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
        assert not t.is_alive(), "a rank hung"
    return out


@pytest.mark.parametrize("mode", [PreemptMode.WorkersAskChief, PreemptMode.WorkersAskMaster])
def test_preemption_reaches_every_rank(mode: PreemptMode) -> None:
    backend = Backend()

    def body(d: DistributedContext) -> list[bool]:
        p = PreemptContext(backend, d, mode, poll_timeout=0.05)
        p._install_sigterm_handler = lambda: None  # type: ignore[method-assign]  # threads
        p.start()
        try:
            seen = [p.should_preempt()]
            d.allgather(None)
            if d.rank == 0:
                backend.preempt.set()
            d.allgather(None)
            # The request reaches a rank through its watcher thread, some time after the set():
            # every rank waits for its own watcher, or in WorkersAskChief the chief for its
            # (the workers have none: they hear it from the chief's broadcast below).
            if mode == PreemptMode.WorkersAskMaster or d.rank == 0:
                assert p.wait_for_signal(5), "the watcher never saw the request"
            seen.append(p.should_preempt())
            return seen
        finally:
            p.close()

    out = on_ranks(3, body)
    assert out == [[False, True]] * 3
    assert backend.acks == 1  # the chief acknowledges, once


def test_chief_only_mode_refuses_workers() -> None:
    backend = Backend()

    def body(d: DistributedContext) -> Any:
        p = PreemptContext(backend, d, PreemptMode.ChiefOnly, watch_master=False)
        p._install_sigterm_handler = lambda: None  # type: ignore[method-assign]
        p.start()
        try:
            return p.should_preempt()
        except RuntimeError as e:
            return str(e)
        finally:
            p.close()

    out = on_ranks(2, body)
    assert out[0] is False
    assert "may only be called by the chief" in out[1]


def test_sharded_store_path_and_upload_gather_every_rank(tmp_path: Path) -> None:
    backend = Backend()
    storage = SharedFSStorageManager(tmp_path / "ck")
    cfg = {"type": "shared_fs", "host_path": str(tmp_path / "ck")}

    def body(d: DistributedContext) -> Any:
        ckpt = CheckpointContext(d, storage, cfg, backend)
        with ckpt.store_path({"steps_completed": 3, f"r{d.rank}": d.rank}, shard=True) as (
            path,
            sid,
        ):
            (path / f"shard{d.rank}").write_text(str(d.rank))
            (path / "common").write_text("same")
        src = tmp_path / f"src{d.rank}"
        src.mkdir()
        (src / f"part{d.rank}").write_text("p")
        sid2 = ckpt.upload(src if d.rank != 1 else None, {"steps_completed": 4}, shard=True)
        return sid, sid2

    out = on_ranks(3, body)
    sid, sid2 = out[0]
    assert all(o == (sid, sid2) for o in out)
    files = sorted(p.name for p in (tmp_path / "ck" / sid).iterdir())
    assert files == [MANIFEST_NAME, "common", "metadata.json", "shard0", "shard1", "shard2"]
    meta = backend.checkpoints[sid]["metadata"]
    assert (meta["r0"], meta["r1"], meta["r2"], meta["steps_completed"]) == (0, 1, 2, 3)
    files2 = sorted(p.name for p in (tmp_path / "ck" / sid2).iterdir())
    assert files2 == [MANIFEST_NAME, "metadata.json", "part0", "part2"]
    assert set(backend.checkpoints[sid2]["resources"]) == {"metadata.json", "part0", "part2"}


def test_conflicting_shards_are_refused(tmp_path: Path) -> None:
    backend = Backend()
    storage = SharedFSStorageManager(tmp_path / "ck")

    def body(d: DistributedContext) -> Any:
        ckpt = CheckpointContext(d, storage, {"type": "shared_fs"}, backend)
        with ckpt.store_path({"steps_completed": 1}, shard=True) as (path, _):
            (path / "weights").write_text(f"rank {d.rank}")
        return None

    out = on_ranks(2, body)
    for o in out:
        assert isinstance(o, RuntimeError)
        assert "refusing to upload with files conflicts: weights (ranks [0, 1])" in str(o)
    assert backend.checkpoints == {}


def test_searcher_operations_reach_the_workers() -> None:
    backend = Backend()

    def body(d: DistributedContext) -> Any:
        s = SearcherContext(
            backend, d, SearcherConfig.model_validate({"name": "single", "max_length": 4})
        )
        lengths = []
        for op in s.operations():
            lengths.append(op.length)
            if d.rank == 0:
                op.report_completed(0.5)
        return lengths

    assert on_ranks(2, body) == [[4], [4]]
    assert backend.completed == [(4, 0.5)]


def shared_fs_checkpoints(
    tmp_path: Path,
) -> tuple[Backend, Callable[[DistributedContext], CheckpointContext]]:
    """One trial's backend, and each rank's CheckpointContext on one shared_fs storage."""
    backend = Backend()
    storage = SharedFSStorageManager(tmp_path / "ck")
    return backend, lambda d: CheckpointContext(d, storage, {"type": "shared_fs"}, backend)


def test_a_chief_without_a_directory_still_writes_the_merged_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """upload(shard=True) with ckpt_dir=None on the chief only: the workers' files and the
    merged metadata.json (staged in a temporary directory, removed after) make the checkpoint."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    backend, checkpoint_context = shared_fs_checkpoints(tmp_path)

    def body(d: DistributedContext) -> Any:
        ckpt = checkpoint_context(d)
        src = None
        if d.rank != 0:
            src = tmp_path / f"src{d.rank}"
            src.mkdir()
            (src / f"part{d.rank}").write_text("p")
        return ckpt.upload(src, {"steps_completed": 5, f"r{d.rank}": d.rank}, shard=True)

    out = on_ranks(2, body)
    sid = out[0]
    assert out == [sid, sid]
    files = sorted(p.name for p in (tmp_path / "ck" / sid).iterdir())
    assert files == [MANIFEST_NAME, "metadata.json", "part1"]
    expected = {"steps_completed": 5, "r0": 0, "r1": 1}
    assert json.loads((tmp_path / "ck" / sid / "metadata.json").read_text()) == expected
    assert backend.checkpoints[sid]["metadata"] == expected
    assert list((tmp_path / "tmp").iterdir()) == []  # the staging directory is gone
    assert sorted(p.name for p in (tmp_path / "src1").iterdir()) == ["part1"]  # untouched


def test_sharded_metadata_file_is_the_merged_metadata(tmp_path: Path) -> None:
    """The metadata.json a sharded save stores is every rank's metadata merged (what
    get_metadata returns when the master has none)."""
    backend, checkpoint_context = shared_fs_checkpoints(tmp_path)

    def body(d: DistributedContext) -> Any:
        ckpt = checkpoint_context(d)
        with ckpt.store_path({"steps_completed": 2, f"r{d.rank}": d.rank}, shard=True) as (
            path,
            sid,
        ):
            (path / f"shard{d.rank}").write_text(str(d.rank))
        return ckpt.get_metadata(sid)

    out = on_ranks(2, body)
    assert out == [{"steps_completed": 2, "r0": 0, "r1": 1}] * 2


def test_a_directory_shared_with_a_selecting_rank_is_uploaded_whole(tmp_path: Path) -> None:
    """Ranks sharing one directory upload it once, unless a lower rank chose only some of its
    files with a selector: then a rank without one uploads all of them."""
    backend, checkpoint_context = shared_fs_checkpoints(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "a").write_text("a")
    (shared / "b").write_text("b")

    def body(d: DistributedContext) -> Any:
        ckpt = checkpoint_context(d)
        selector = (lambda p: p == "a") if d.rank == 0 else None
        return ckpt.upload(shared, {"steps_completed": 1}, shard=True, selector=selector)

    out = on_ranks(2, body)
    sid = out[0]
    assert out == [sid, sid]
    assert set(backend.checkpoints[sid]["resources"]) == {"a", "b", "metadata.json"}


def test_a_sharded_upload_keeps_only_what_each_ranks_selector_chose(tmp_path: Path) -> None:
    backend, checkpoint_context = shared_fs_checkpoints(tmp_path)

    def body(d: DistributedContext) -> Any:
        ckpt = checkpoint_context(d)
        src = tmp_path / f"src{d.rank}"
        src.mkdir()
        (src / f"keep{d.rank}").write_text("k")
        (src / f"skip{d.rank}").write_text("s")
        keep = f"keep{d.rank}"
        return ckpt.upload(src, {"steps_completed": 1}, shard=True, selector=lambda p: p == keep)

    sid = on_ranks(2, body)[0]
    assert set(backend.checkpoints[sid]["resources"]) == {"keep0", "keep1", "metadata.json"}


def test_identical_files_and_directories_of_several_ranks_are_stored_once(tmp_path: Path) -> None:
    """Ranks whose directories hold the same subdirectory and the same file contents store
    them once; files that differ are all named with their ranks."""
    backend, checkpoint_context = shared_fs_checkpoints(tmp_path)

    def body(d: DistributedContext) -> Any:
        ckpt = checkpoint_context(d)
        src = tmp_path / f"src{d.rank}"
        (src / "sub").mkdir(parents=True)
        (src / "sub" / "same").write_text("same")
        return ckpt.upload(src, {"steps_completed": 1}, shard=True)

    sid = on_ranks(2, body)[0]
    assert set(backend.checkpoints[sid]["resources"]) >= {"sub/same", "metadata.json"}

    def clashing(d: DistributedContext) -> Any:
        ckpt = checkpoint_context(d)
        src = tmp_path / f"clash{d.rank}"
        src.mkdir()
        for name in ("x", "y"):
            (src / name).write_text(f"{name} of rank {d.rank}")
        return ckpt.upload(src, {"steps_completed": 1}, shard=True)

    out = on_ranks(2, clashing)
    assert all(isinstance(o, RuntimeError) for o in out)
    assert (
        str(out[0]) == "refusing to upload with files conflicts: x (ranks [0, 1]), y (ranks [0, 1])"
    )


def test_a_chief_only_save_leaves_the_workers_collectives_in_step(tmp_path: Path) -> None:
    """An unsharded save is the chief's alone: it sends the workers nothing, so the next
    collective all ranks make still pairs up."""
    backend, checkpoint_context = shared_fs_checkpoints(tmp_path)

    def body(d: DistributedContext) -> Any:
        if d.rank == 0:
            ckpt = checkpoint_context(d)
            with ckpt.store_path({"steps_completed": 1}) as (path, _):
                (path / "w").write_text("w")
        return d.broadcast("after the save" if d.rank == 0 else None)

    assert on_ranks(2, body) == ["after the save", "after the save"]
