"""collect_garbage and the deletes on a real store (SQLite, PostgreSQL) with real checkpoint files: files go,
rows become DELETED, latest_checkpoint never names a deleted one, warm-start sources stay; the
deletes a stopped master left (rows DELETING) are finished by finish_pending_deletes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from tests.inprocess_master import MODEL_DEF, SINGLE, inprocess_master
from trialkit.config import parse_config
from trialkit.master.housekeeping._gc import (
    DeleteRefused,
    best_checkpoints,
    collect_garbage,
    delete_checkpoints,
    delete_checkpoints_by_uuid,
    delete_experiment,
    finish_pending_deletes,
)
from trialkit.master.search._warm_start import resolve_warm_start
from trialkit.storage import CheckpointStorageError, SharedFSStorageManager, StorageConfigError
from trialkit.store import Experiment, ExperimentState, NewMetric, Store, Trial, TrialState


def _experiment(store: Store, root: Path, **policy: int) -> Experiment:
    config = {
        "searcher": {"name": "grid", "metric": "loss", "smaller_is_better": True},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(root), **policy},
    }
    return store.create_experiment(name="gc", config=config)


def _save(
    store: Store, root: Path, trial: Trial, uuid: str, steps: int, size: int, **val: Any
) -> None:
    """A checkpoint of ``size`` bytes on disk and in the store, with a validation at its steps."""
    with SharedFSStorageManager(root).store_path(uuid) as path:
        (path / "weights.bin").write_bytes(b"x" * size)
    store.add_checkpoint(
        uuid=uuid,
        trial_id=trial.id,
        experiment_id=trial.experiment_id,
        run_id=1,
        steps_completed=steps,
        metadata={},
        resources={"weights.bin": size},
        storage={"type": "shared_fs", "host_path": str(root)},
    )
    if val:
        store.add_metrics(
            [NewMetric(trial_id=trial.id, group="validation", steps_completed=steps, values=val)]
        )


def _trial(store: Store, exp: Experiment, state: TrialState = TrialState.COMPLETED) -> Trial:
    t = store.create_trial(experiment_id=exp.id, request_id=f"r{exp.id}", hparams={}, seed=1)
    return store.update_trial(t.id, state=state)


def _two_trials(store: Store, root: Path, **policy: int) -> Experiment:
    exp = _experiment(store, root, **policy)
    a, b = _trial(store, exp), _trial(store, exp)
    _save(store, root, a, "a1", 1, 100, loss=0.5)
    _save(store, root, a, "a2", 2, 200, loss=0.1)
    _save(store, root, a, "a3", 3, 300, loss=0.4)
    _save(store, root, b, "b1", 1, 1000, loss=0.3)
    _save(store, root, b, "b2", 2, 2000)  # no validation at its steps
    _save(store, root, b, "b3", 3, 3000, loss="NaN")  # not a number: no metric
    return store.update_experiment(exp.id, state=ExperimentState.COMPLETED)


def test_default_policy_deletes_files_and_marks_rows(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "ckpts"
    exp = _two_trials(store, root)
    result = collect_garbage(store, exp)
    # a: best a2, latest a3 -> a1 goes. b: best b1 (only metric), latest b3 -> b2 goes.
    assert sorted(result.deleted) == ["a1", "b2"]
    assert result.bytes_freed == 100 + 2000
    assert sorted(p.name for p in root.iterdir()) == ["a2", "a3", "b1", "b3"]
    assert store.get_checkpoint("a1").state == "DELETED"
    assert collect_garbage(store, exp).deleted == []  # nothing left to collect


def test_latest_checkpoint_never_names_a_deleted_one(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "ckpts"
    exp = _two_trials(store, root, save_trial_latest=0, save_trial_best=1)
    result = collect_garbage(store, exp)
    assert sorted(result.deleted) == ["a1", "a3", "b2", "b3"]
    trials = store.list_trials(exp.id)
    latest = [store.latest_checkpoint(t.id) for t in trials]
    assert [c.uuid if c else None for c in latest] == ["a2", "b1"]


def test_warm_start_source_survives_gc_and_delete(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "ckpts"
    exp = _two_trials(store, root, save_trial_best=0, save_trial_latest=0)
    store.create_experiment(
        name="warm", config={"searcher": {"name": "single", "source_checkpoint_uuid": "a1"}}
    )
    assert "a1" not in collect_garbage(store, exp).deleted
    assert (root / "a1" / "weights.bin").exists()
    with pytest.raises(DeleteRefused, match="a1 is the warm-start source of experiment 2"):
        delete_checkpoints_by_uuid(store, ["a1"])
    with pytest.raises(DeleteRefused, match="warm-start source of experiment 2"):
        delete_experiment(store, exp, tmp_path / "trials")


def test_checkpoint_delete_is_all_or_none(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "ckpts"
    exp = _experiment(store, root)
    done, live = _trial(store, exp), _trial(store, exp, TrialState.ACTIVE)
    _save(store, root, done, "d1", 1, 10)
    _save(store, root, live, "l1", 1, 10)
    with pytest.raises(DeleteRefused, match=f"trial {live.id}, which is ACTIVE"):
        delete_checkpoints_by_uuid(store, ["d1", "l1"])
    assert store.get_checkpoint("d1").state == "COMPLETED" and (root / "d1").is_dir()
    result = delete_checkpoints_by_uuid(store, ["d1", "d1"])
    assert (result.deleted, result.bytes_freed) == (["d1"], 10)
    assert not (root / "d1").exists()
    assert delete_checkpoints_by_uuid(store, ["d1"]).deleted == []  # already deleted


def test_delete_experiment_removes_files_dirs_and_rows(store: Store, tmp_path: Path) -> None:
    root, trials_dir = tmp_path / "ckpts", tmp_path / "trials"
    exp = _two_trials(store, root)
    for t in store.list_trials(exp.id):
        (trials_dir / str(t.id)).mkdir(parents=True)
        (trials_dir / str(t.id) / "output.log").write_text("log\n")
        store.add_logs(t.id, 1, ["a line"])
    result = delete_experiment(store, exp, trials_dir)
    assert result.bytes_freed == 100 + 200 + 300 + 1000 + 2000 + 3000
    assert list(root.iterdir()) == [] and list(trials_dir.iterdir()) == []
    assert store.list_experiments() == [] and store.list_trials() == []
    assert store.list_checkpoints() == []


def test_delete_experiment_refuses_a_running_one(store: Store, tmp_path: Path) -> None:
    exp = _experiment(store, tmp_path / "ckpts")
    with pytest.raises(DeleteRefused, match=r"experiment 1 is ACTIVE; only a finished"):
        delete_experiment(store, exp, tmp_path / "trials")


def test_best_checkpoints_rank_by_the_searcher_metric(store: Store, tmp_path: Path) -> None:
    exp = _two_trials(store, tmp_path / "ckpts")
    ranked = [(c.uuid, v) for c, v in best_checkpoints(store, exp, 4)]
    assert ranked == [("a2", 0.1), ("b1", 0.3), ("a3", 0.4), ("a1", 0.5)]
    assert [c.uuid for c, _ in best_checkpoints(store, exp, 10)][4:] == ["b2", "b3"]


def test_an_experiment_without_checkpoint_storage_is_one_clear_error(store: Store) -> None:
    exp = store.create_experiment(name="old", config={"searcher": {"metric": "loss"}})
    trial = _trial(store, exp)
    store.add_checkpoint(
        uuid="u1", trial_id=trial.id, experiment_id=exp.id, run_id=1, steps_completed=1,
        metadata={}, resources={}, storage={},
    )  # fmt: skip
    with pytest.raises(StorageConfigError, match="experiment 1 has no checkpoint_storage"):
        delete_checkpoints_by_uuid(store, ["u1"])
    assert store.get_checkpoint("u1").state == "COMPLETED"


class _StuckStorage(SharedFSStorageManager):
    """Storage whose deletes remove nothing, as when the directory's permissions forbid it
    (SharedFSStorageManager.delete then fails quietly; root, which runs CI here, is never
    refused, so the permission case itself cannot be set up)."""

    def delete(self, storage_id: str) -> None:
        pass


def test_files_that_cannot_be_deleted_keep_their_record(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "ckpts"
    exp = _experiment(store, root)
    _save(store, root, _trial(store, exp), "u1", 1, 10)
    with pytest.raises(CheckpointStorageError, match="u1: its files could not all be deleted"):
        delete_checkpoints(store, _StuckStorage(root), [store.get_checkpoint("u1")])
    assert store.get_checkpoint("u1").state == "COMPLETED"


def test_a_source_trial_id_warm_start_protects_its_checkpoint_across_experiments(
    store: Store, tmp_path: Path
) -> None:
    root = tmp_path / "ckpts"
    exp = _two_trials(store, root, save_trial_best=0, save_trial_latest=0)
    a = store.list_trials(exp.id)[0]
    config: dict[str, Any] = {
        "searcher": {"name": "single", "source_trial_id": a.id},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(root)},
    }
    # as experiment create does: the trial's latest, a3
    resolved = resolve_warm_start(parse_config(config), store).as_dict()
    warm = store.create_experiment(name="warm", config=resolved)
    deleted = collect_garbage(store, exp).deleted
    assert "a3" not in deleted and sorted(deleted) == ["a1", "a2", "b1", "b2", "b3"]
    assert (root / "a3" / "weights.bin").is_file()
    with pytest.raises(DeleteRefused, match=f"a3 is the warm-start source of experiment {warm.id}"):
        delete_checkpoints_by_uuid(store, ["a3"])


def _completed_warm_start(
    store: Store, root: Path, source: str | None = None, path: Path | None = None
) -> Experiment:
    """A finished experiment in ``root`` that warm-started from ``source`` or ``path``."""
    config: dict[str, Any] = {
        "searcher": {"name": "single"},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(root)},
    }
    if source:
        config["searcher"]["source_checkpoint_uuid"] = source
    resolved = resolve_warm_start(parse_config(config), store, str(path) if path else None)
    exp = store.create_experiment(name="warm", config=resolved.as_dict())
    return store.update_experiment(exp.id, state=ExperimentState.COMPLETED)


def test_experiment_delete_removes_its_warm_start_path_copy(store: Store, tmp_path: Path) -> None:
    root, src = tmp_path / "ckpts", tmp_path / "det-ckpt"
    src.mkdir()
    (src / "weights.bin").write_bytes(b"w" * 10)
    exp = _completed_warm_start(store, root, path=src)
    copy = exp.config["searcher"]["source_checkpoint_uuid"]
    assert (root / copy / "weights.bin").is_file()
    delete_experiment(store, exp, tmp_path / "trials")
    assert list(root.iterdir()) == []
    assert (src / "weights.bin").is_file()  # the directory given is the user's: it stays


def test_a_copy_from_other_storage_goes_with_the_last_experiment_reading_it(
    store: Store, tmp_path: Path
) -> None:
    root, other = tmp_path / "ckpts", tmp_path / "other"
    _two_trials(store, root)
    b, c = (_completed_warm_start(store, other, source="a3") for _ in range(2))
    in_place = _completed_warm_start(store, root, source="a3")  # reads a3 itself
    assert (other / "a3" / "weights.bin").is_file()
    delete_experiment(store, b, tmp_path / "trials")
    assert (other / "a3" / "weights.bin").is_file()  # c still starts from it
    delete_experiment(store, c, tmp_path / "trials")
    assert not (other / "a3").exists()
    delete_experiment(store, in_place, tmp_path / "trials")
    assert (root / "a3" / "weights.bin").is_file()  # the source is never a copy


def test_a_failed_create_leaves_no_warm_start_copy(
    postgres: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store fails to write the experiment after the warm-start copy was made (here a
    refused connection, injected): the copy goes too, the source stays."""
    src, root = tmp_path / "det-ckpt", tmp_path / "ckpts"
    src.mkdir()
    (src / "weights.bin").write_bytes(b"w" * 10)
    config = {**SINGLE, "checkpoint_storage": {"type": "shared_fs", "host_path": str(root)}}
    body = {"config": config, "model_def": MODEL_DEF, "warm_start_path": str(src)}
    with inprocess_master(tmp_path / "home", postgres.new_database()) as m:
        copies_at_failure: list[list[str]] = []

        def refuse(**_: Any) -> None:
            copies_at_failure.append([p.name for p in root.iterdir()] if root.exists() else [])
            raise ConnectionRefusedError("the database went away")

        monkeypatch.setattr(m.store, "create_experiment", refuse)
        assert m.call("POST", "/api/v1/experiments", body).status_code == 500
        monkeypatch.undo()
        assert m.store.list_experiments() == []
    [copies] = copies_at_failure
    assert len(copies) == 1  # the copy was made before the experiment row
    assert not root.exists() or list(root.iterdir()) == []
    assert (src / "weights.bin").is_file()


class _WatchedStorage(SharedFSStorageManager):
    """Shared-fs storage that notes, when the first file is deleted, how many of ``uuids``
    are DELETED in the store and how many transactions the store committed by then."""

    def __init__(self, root: Path, store: Store, uuids: list[str], commits: list[int]) -> None:
        super().__init__(root)
        self.store, self.uuids, self.commits = store, uuids, commits
        self.at_first_delete: tuple[int, int] | None = None

    def delete(self, storage_id: str) -> None:
        if self.at_first_delete is None:
            commits = len(self.commits)
            states = [c.state for c in self.store.list_checkpoints() if c.uuid in self.uuids]
            self.at_first_delete = (states.count("DELETING"), commits)
        super().delete(storage_id)


def test_a_run_marks_all_its_rows_in_one_transaction_before_any_file_goes(
    store: Store, tmp_path: Path
) -> None:
    root = tmp_path / "ckpts"
    exp = _experiment(store, root, save_trial_best=0, save_trial_latest=0)
    trial = _trial(store, exp)
    uuids = [f"c{i}" for i in range(1100)]  # more than two IN (...) chunks
    for i, u in enumerate(uuids):
        _save(store, root, trial, u, i + 1, 1)
    doomed = store.list_checkpoints(experiment_id=exp.id)
    commits: list[int] = []
    event.listen(store._engine, "commit", lambda _conn: commits.append(1))
    storage = _WatchedStorage(root, store, uuids, commits)
    result = delete_checkpoints(store, storage, doomed)
    assert storage.at_first_delete == (1100, 1)
    assert len(result.deleted) == 1100 and list(root.iterdir()) == []


class _StuckAt(SharedFSStorageManager):
    """Deletes remove nothing for one checkpoint (see _StuckStorage)."""

    def delete(self, storage_id: str) -> None:
        if storage_id != "u2":
            super().delete(storage_id)


def test_a_run_stopped_by_stuck_files_restores_the_rows_it_did_not_finish(
    store: Store, tmp_path: Path
) -> None:
    root = tmp_path / "ckpts"
    exp = _experiment(store, root)
    trial = _trial(store, exp)
    for i, u in enumerate(("u1", "u2", "u3")):
        _save(store, root, trial, u, i + 1, 10)
    with pytest.raises(CheckpointStorageError, match=r"u2: .* \(1 others were deleted before it\)"):
        delete_checkpoints(store, _StuckAt(root), store.list_checkpoints(experiment_id=exp.id))
    assert [store.get_checkpoint(u).state for u in ("u1", "u2", "u3")] == [
        "DELETED", "COMPLETED", "COMPLETED"
    ]  # fmt: skip
    assert sorted(p.name for p in root.iterdir()) == ["u2", "u3"]


def test_gc_removes_the_files_a_run_killed_midway_left(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "ckpts"
    exp = _two_trials(store, root)
    # What a master killed between marking a run's rows and deleting their files leaves.
    store.set_checkpoints_state(["a1", "b2"], "DELETED")
    assert collect_garbage(store, exp).deleted == []  # already counted by that run
    assert sorted(p.name for p in root.iterdir()) == ["a2", "a3", "b1", "b3"]


def _interrupted(store: Store, uuids: list[str]) -> None:
    """What a master killed between marking a run's rows and deleting their files leaves."""
    store.set_checkpoints_state(uuids, "DELETING")


def test_finish_pending_deletes_removes_the_files_and_marks_the_rows(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root, other = tmp_path / "ckpts", tmp_path / "other"
    first = _two_trials(store, root)
    second = _experiment(store, other)
    _save(store, other, _trial(store, second), "o1", 1, 7)
    _interrupted(store, ["a1", "b2", "o1"])
    with caplog.at_level("INFO", logger="trialkit.master.housekeeping._gc"):
        result = finish_pending_deletes(store)
    assert sorted(result.deleted) == ["a1", "b2", "o1"] and result.bytes_freed == 100 + 2000 + 7
    assert sorted(p.name for p in root.iterdir()) == ["a2", "a3", "b1", "b3"]
    assert list(other.iterdir()) == []
    assert {c.uuid: c.state for c in store.list_checkpoints() if c.state != "COMPLETED"} == {
        "a1": "DELETED", "b2": "DELETED", "o1": "DELETED"
    }  # fmt: skip
    assert f"experiment {first.id}: finished deleting 2 checkpoints a stopped master left" in (
        caplog.text
    )
    assert finish_pending_deletes(store).deleted == []  # nothing pending any more


def test_a_pending_delete_that_fails_is_logged_and_stays_pending(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "ckpts"
    exp = _two_trials(store, root)
    broken = store.create_experiment(name="old", config={"searcher": {"metric": "loss"}})
    store.add_checkpoint(
        uuid="u1", trial_id=_trial(store, broken).id, experiment_id=broken.id, run_id=1,
        steps_completed=1, metadata={}, resources={}, storage={},
    )  # fmt: skip
    _interrupted(store, ["u1", "a1"])
    with caplog.at_level("INFO", logger="trialkit.master.housekeeping._gc"):
        assert finish_pending_deletes(store).deleted == ["a1"]  # the other experiment still goes
    assert store.get_checkpoint("u1").state == "DELETING"
    assert (
        f"experiment {broken.id}: finishing the checkpoint deletes a stopped master left failed: "
        f"experiment {broken.id} has no checkpoint_storage"
    ) in caplog.text
    assert f"'trialkit experiment gc {broken.id}' retries" in caplog.text
    assert not (root / "a1").exists() and exp.id != broken.id


def test_stuck_files_of_a_pending_delete_keep_it_pending(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "ckpts"
    exp = _experiment(store, root)
    _save(store, root, _trial(store, exp), "u1", 1, 10)
    _interrupted(store, ["u1"])
    with pytest.raises(CheckpointStorageError, match="u1: its files could not all be deleted"):
        delete_checkpoints(store, _StuckStorage(root), [store.get_checkpoint("u1")])
    assert store.get_checkpoint("u1").state == "DELETING"  # what it was: still to be finished


def test_experiment_gc_and_checkpoint_delete_finish_pending_deletes(
    store: Store, tmp_path: Path
) -> None:
    root = tmp_path / "ckpts"
    exp = _two_trials(store, root)
    _interrupted(store, ["a1", "b2"])
    assert collect_garbage(store, exp).deleted == ["a1", "b2"]  # the policy chose the same
    assert {store.get_checkpoint(u).state for u in ("a1", "b2")} == {"DELETED"}
    _interrupted(store, ["a2"])
    assert delete_checkpoints_by_uuid(store, ["a2"]).deleted == ["a2"]
    assert sorted(p.name for p in root.iterdir()) == ["a3", "b1", "b3"]


def test_a_pending_checkpoint_is_shown_as_deleted(tmp_path: Path) -> None:
    """Listings, latest checkpoints and best checkpoints treat DELETING as deleted; describe
    says DELETING."""
    with inprocess_master(tmp_path / "home") as m:
        exp = _two_trials(m.store, tmp_path / "ckpts")
        _interrupted(m.store, ["a3", "b1"])
        listed = m.call("GET", f"/api/v1/experiments/{exp.id}/checkpoints").json()
        assert sorted(c["uuid"] for c in listed["checkpoints"]) == ["a1", "a2", "b2", "b3"]
        trials = m.call("GET", f"/api/v1/experiments/{exp.id}").json()["trials"]
        assert [t["latest_checkpoint"] for t in trials] == ["a2", "b3"]
        best = m.call("GET", f"/api/v1/experiments/{exp.id}/checkpoints/best?limit=9").json()
        assert [r["checkpoint"]["uuid"] for r in best["checkpoints"]] == ["a2", "a1", "b2", "b3"]
        assert m.call("GET", "/api/v1/checkpoints/a3").json()["state"] == "DELETING"
