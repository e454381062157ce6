"""core.init() in local mode (no cluster info): a plain ``python train.py`` is tracked in the store
under $TRIALKIT_HOME, with checkpoints, metrics, early exits and errors (reference §1.1, §1.5)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from tests.local_runs import ingested_store
from trialkit import core
from trialkit.errors import InvalidHP
from trialkit.storage import MANIFEST_NAME, StorageConfigError
from trialkit.store import ExperimentState, Store, TrialState


def open_store(home: Path) -> Store:
    return ingested_store(home)


def only_trial(home: Path) -> tuple[int, int]:
    s = open_store(home)
    try:
        (exp,) = s.list_experiments()
        (trial,) = s.list_trials(exp.id)
        return exp.id, trial.id
    finally:
        s.close()


def test_init_without_cluster_info_tracks_an_unmanaged_experiment(trialkit_home: Path) -> None:
    with core.init() as ctx:
        assert ctx.info is None
        assert ctx.distributed.rank == 0 and ctx.distributed.size == 1
        s = open_store(trialkit_home)
        (exp,) = s.list_experiments()
        assert exp.unmanaged and exp.state is ExperimentState.ACTIVE
        assert exp.name.startswith("local: ")
        assert exp.config["checkpoint_storage"]["host_path"] == str(trialkit_home / "checkpoints")
        s.close()
    assert (trialkit_home / "trialkit.db").is_file()
    s = open_store(trialkit_home)
    try:
        (exp,) = s.list_experiments()
        (trial,) = s.list_trials(exp.id)
        assert exp.state is ExperimentState.COMPLETED and exp.progress == 1.0
        assert exp.ended_at is not None and exp.error is None
        assert trial.state is TrialState.COMPLETED and trial.ended_at is not None
    finally:
        s.close()


def test_metrics_reach_the_store_jsonable(trialkit_home: Path) -> None:
    with core.init() as ctx:
        ctx.train.report_training_metrics(
            steps_completed=10,
            metrics={"loss": np.float32(0.5), "bad": float("nan")},
            batch_metrics=[{"loss": 1.0}, {"loss": 0.0}],
        )
        ctx.train.report_validation_metrics(steps_completed=10, metrics={"acc": float("inf")})
        ctx.train.report_metrics("inference", 10, {"latency": np.array([1, 2])})
    _, trial_id = only_trial(trialkit_home)
    s = open_store(trialkit_home)
    try:
        (training,) = s.list_metrics(trial_id, "training")
        assert training.steps_completed == 10
        assert training.values == {"loss": 0.5, "bad": "NaN"}
        (val,) = s.list_metrics(trial_id, "validation")
        assert val.values == {"acc": "Infinity"}
        (inf,) = s.list_metrics(trial_id, "inference")
        assert inf.values == {"latency": [1, 2]}
    finally:
        s.close()


def test_legacy_step_keywords_are_accepted(trialkit_home: Path) -> None:
    with core.init() as ctx:
        ctx.train.report_training_metrics(latest_batch=3, metrics={"loss": 1.0})
        ctx.train.report_validation_metrics(batches_trained=4, metrics={"loss": 1.0})
        ctx.train.report_training_metrics(np.int64(5), {"loss": 1.0})
    _, trial_id = only_trial(trialkit_home)
    s = open_store(trialkit_home)
    try:
        assert [m.steps_completed for m in s.list_metrics(trial_id)] == [3, 4, 5]
    finally:
        s.close()


def test_last_validation_and_best_validation(trialkit_home: Path) -> None:
    with core.init() as ctx:
        assert ctx.train._get_last_validation() is None
        ctx.train.report_validation_metrics(5, {"loss": 2.0})
        ctx.train.report_validation_metrics(10, {"loss": 1.0})
        assert ctx.train._get_last_validation() == 10
        # Off-cluster there is no searcher metric: like Determined's dummy context, None.
        assert ctx.train.get_experiment_best_validation() is None


def test_progress_status_and_early_exit_are_recorded(trialkit_home: Path) -> None:
    with core.init() as ctx:
        ctx.train.report_progress(0.25)
        ctx.train.set_status("warming up")
        ctx.train.report_early_exit(core.EarlyExitReason.USER_REQUESTED_STOP)
        with pytest.raises(ValueError, match="progress must be in"):
            ctx.train.report_progress(1.5)
    _, trial_id = only_trial(trialkit_home)
    s = open_store(trialkit_home)
    try:
        trial = s.get_trial(trial_id)
        assert trial.progress == 0.25
        assert trial.status == "warming up"
        assert trial.searcher.early_exit == "USER_REQUESTED_STOP"
    finally:
        s.close()


def test_invalid_hp_is_reported_and_suppressed(trialkit_home: Path) -> None:
    with core.init():
        raise InvalidHP("lr too large")
    # Reaching this line is the point: the block swallowed InvalidHP instead of exiting.
    _, trial_id = only_trial(trialkit_home)
    s = open_store(trialkit_home)
    try:
        trial = s.get_trial(trial_id)
        assert trial.searcher.early_exit == "INVALID_HP"
        assert trial.state is TrialState.COMPLETED
    finally:
        s.close()


def test_other_errors_propagate_and_mark_the_run_errored(trialkit_home: Path) -> None:
    with pytest.raises(ZeroDivisionError):
        with core.init() as ctx:
            ctx.train.report_training_metrics(1, {"loss": 1.0})
            1 / 0  # noqa: B018
    s = open_store(trialkit_home)
    try:
        (exp,) = s.list_experiments()
        (trial,) = s.list_trials(exp.id)
        assert exp.state is ExperimentState.ERROR
        assert exp.error is not None and "ZeroDivisionError" in exp.error
        assert trial.state is TrialState.ERROR
        assert s.count_metrics(trial.id) == 1  # metrics queued before the crash were delivered
    finally:
        s.close()


def test_checkpoint_store_path_publishes_and_registers(trialkit_home: Path, tmp_path: Path) -> None:
    base = tmp_path / "ckpts"
    with core.init(checkpoint_storage=str(base)) as ctx:
        with ctx.checkpoint.store_path({"steps_completed": 5, "note": "x"}) as (path, storage_id):
            (path / "model.pt").write_bytes(b"12345")
            assert not (base / storage_id).exists()
        assert (base / storage_id / "model.pt").read_bytes() == b"12345"
        meta = json.loads((base / storage_id / "metadata.json").read_text())
        assert meta == {"steps_completed": 5, "note": "x"}
        assert ctx.checkpoint.get_metadata(storage_id) == meta
    _, trial_id = only_trial(trialkit_home)
    s = open_store(trialkit_home)
    try:
        ckpt = s.latest_checkpoint(trial_id)
        assert ckpt is not None and ckpt.uuid == storage_id
        assert ckpt.steps_completed == 5
        assert ckpt.resources["model.pt"] == 5 and "metadata.json" in ckpt.resources
        assert ckpt.storage == {"type": "shared_fs", "host_path": str(base)}
    finally:
        s.close()


def test_default_checkpoints_go_under_the_home(trialkit_home: Path) -> None:
    with core.init() as ctx:
        with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, storage_id):
            (path / "f").write_text("x")
    assert (trialkit_home / "checkpoints" / storage_id / "f").read_text() == "x"


def test_checkpoint_latest_batch_is_accepted_as_steps(trialkit_home: Path, tmp_path: Path) -> None:
    with core.init(checkpoint_storage=str(tmp_path)) as ctx:
        with ctx.checkpoint.store_path({"latest_batch": 7}) as (path, storage_id):
            (path / "f").write_text("x")
    meta = json.loads((tmp_path / storage_id / "metadata.json").read_text())
    assert meta["steps_completed"] == 7
    s = open_store(trialkit_home)
    try:
        assert s.get_checkpoint(storage_id).steps_completed == 7
    finally:
        s.close()


def test_failed_save_is_neither_published_nor_registered(
    trialkit_home: Path, tmp_path: Path
) -> None:
    with core.init(checkpoint_storage=str(tmp_path / "ck")) as ctx:
        with pytest.raises(OSError):
            with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, _):
                (path / "half").write_text("x")
                raise OSError("disk full")
    assert not (tmp_path / "ck").exists() or list((tmp_path / "ck").iterdir()) == []
    s = open_store(trialkit_home)
    try:
        assert s.list_checkpoints() == []
    finally:
        s.close()


def test_upload_download_restore_and_delete(trialkit_home: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "model.pt").write_text("m")
    (src / "sub" / "opt.pt").write_text("o")
    (src / "scratch.log").write_text("noise")
    base = tmp_path / "ck"
    with core.init(checkpoint_storage=str(base)) as ctx:
        storage_id = ctx.checkpoint.upload(
            src, {"steps_completed": 3}, selector=lambda p: not p.endswith(".log")
        )
        stored = {p for p in os.listdir(base / storage_id)}
        assert stored == {"model.pt", "sub", "metadata.json", MANIFEST_NAME}
        with ctx.checkpoint.restore_path(storage_id) as path:
            assert (path / "sub" / "opt.pt").read_text() == "o"
        out = tmp_path / "out"
        ctx.checkpoint.download(storage_id, out, selector=lambda p: p == "model.pt")
        assert [p.name for p in out.iterdir()] == ["model.pt"]
        assert ctx.checkpoint.get_metadata(storage_id) == {"steps_completed": 3}
        ctx.checkpoint.delete(storage_id)
        assert not (base / storage_id).exists()
    _, trial_id = only_trial(trialkit_home)
    s = open_store(trialkit_home)
    try:
        assert s.get_checkpoint(storage_id).state == "DELETED"
        assert s.latest_checkpoint(trial_id) is None
    finally:
        s.close()


def test_upload_requires_a_directory_when_not_sharded(tmp_path: Path) -> None:
    with core.init(checkpoint_storage=str(tmp_path)) as ctx:
        with pytest.raises(RuntimeError, match="ckpt_dir is required"):
            ctx.checkpoint.upload(None, {"steps_completed": 1})


def test_get_metadata_falls_back_to_metadata_json(tmp_path: Path) -> None:
    """A checkpoint in storage the store does not know (e.g. copied in) still has metadata."""
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "metadata.json").write_text(json.dumps({"steps_completed": 9}))
    with core.init(checkpoint_storage=str(tmp_path)) as ctx:
        assert ctx.checkpoint.get_metadata("foreign") == {"steps_completed": 9}


def test_searcher_off_cluster_yields_one_op_of_length_one(trialkit_home: Path) -> None:
    with core.init() as ctx:
        assert ctx.searcher.get_configured_units() is core.Unit.EPOCHS
        lengths = []
        for op in ctx.searcher.operations():
            lengths.append(op.length)
            op.report_progress(1)
            op.report_completed(0.5)
        assert lengths == [1]


def test_preempt_off_cluster_is_false_until_sigterm(trialkit_home: Path) -> None:
    previous = signal.getsignal(signal.SIGTERM)
    with core.init() as ctx:
        assert ctx.preempt.should_preempt() is False
        handler = signal.getsignal(signal.SIGTERM)
        assert handler is not previous, "no SIGTERM handler installed: refusing to send SIGTERM"
        signal.raise_signal(signal.SIGTERM)
        assert ctx.preempt.should_preempt() is True
        assert ctx.preempt.should_preempt() is True  # stays requested
    assert signal.getsignal(signal.SIGTERM) is previous


def test_profiler_reports_system_metric_groups(trialkit_home: Path) -> None:
    with core.init() as ctx:
        ctx.profiler.on(sampling_interval=0.1, samples_per_report=2)
        ctx.profiler.on(sampling_interval=0.1, samples_per_report=2)  # idempotent
        time.sleep(0.35)
    _, trial_id = only_trial(trialkit_home)
    s = open_store(trialkit_home)
    try:
        for group, key in [
            ("cpu", "cpu_util_simple"),
            ("memory", "memory_free"),
            ("disk", "disk_read_throughput"),
            ("network", "net_recv_throughput"),
        ]:
            reports = s.list_metrics(trial_id, group)
            assert reports, f"no {group} report"
            assert key in reports[0].values["localhost"]
            assert reports[0].steps_completed == 1
    finally:
        s.close()


def test_tensorboard_manual_upload_copies_into_storage(tmp_path: Path) -> None:
    base = tmp_path / "ck"
    with core.init(
        checkpoint_storage=str(base), tensorboard_mode=core.TensorboardMode.MANUAL
    ) as ctx:
        tb = ctx.train.get_tensorboard_path()
        (tb / "events.out").write_text("e")
        (tb / "skip.tmp").write_text("t")
        ctx.train.upload_tensorboard_files(
            selector=lambda p: p.suffix != ".tmp",
            mangler=lambda p, rank: p.with_name(f"{p.name}.{rank}"),
        )
        prefix = ctx._backend.tensorboard_prefix()
    dest = base / prefix
    assert prefix.startswith("tensorboard/local-")  # the run's key: its ids come at ingest
    assert sorted(p.name for p in dest.iterdir()) == ["events.out.0"]


def test_tensorboard_upload_needs_manual_mode(tmp_path: Path) -> None:
    with core.init(checkpoint_storage=str(tmp_path)) as ctx:
        with pytest.raises(RuntimeError, match="MANUAL"):
            ctx.train.upload_tensorboard_files()


def test_alert_rejects_an_unknown_level() -> None:
    with core.init() as ctx:
        ctx.alert("hi", "there", level="warn")
        with pytest.raises(ValueError, match="alert level"):
            ctx.alert(level="loud")


def test_context_can_be_closed_twice(trialkit_home: Path) -> None:
    def recorded() -> tuple[object, ...]:
        s = open_store(trialkit_home)
        try:
            (exp,) = s.list_experiments()
            (trial,) = s.list_trials(exp.id)
            return exp.state, exp.ended_at, exp.error, trial.state, trial.ended_at
        finally:
            s.close()

    ctx = core.init()
    with ctx:
        pass
    done = recorded()
    assert done[0] == ExperimentState.COMPLETED and done[3] == TrialState.COMPLETED
    ctx.close(RuntimeError("closed again"))  # no error, nothing reopened or rewritten
    assert recorded() == done


def test_unusable_storage_leaves_no_run_behind(trialkit_home: Path) -> None:
    with pytest.raises(StorageConfigError):
        core.init(checkpoint_storage="ftp://host/prefix")  # no such storage type
    s = open_store(trialkit_home)
    try:
        assert s.list_experiments(states=[ExperimentState.ACTIVE]) == []
    finally:
        s.close()
