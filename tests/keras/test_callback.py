"""TrialkitCallback (Determined's DeterminedCallback) in a user's own ``model.fit``: locally
(``core.init()`` with no master) and as an experiment's entrypoint under a real master, with
resume from a checkpoint and preemption. The Keras backend is the environment's: tensorflow in
``tox -e tensorflow``, torch in ``tox -e torch`` (``KERAS_BACKEND=torch``, no TensorFlow), tf_keras
in ``tox -e tensorflow`` again with ``TF_USE_LEGACY_KERAS=1``."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def _missing_stack() -> str | None:
    """Why the environment cannot run this module's Keras, or None when it can."""
    if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
        needs = ["tensorflow", "tf_keras"]
    else:
        needs = ["keras", os.environ.get("KERAS_BACKEND", "tensorflow")]
    absent = [m for m in needs if importlib.util.find_spec(m) is None]
    if absent:
        return f"the Keras callback tests need {', '.join(absent)} (tox -e tensorflow / torch)"
    return None


if (_why := _missing_stack()) is not None:
    pytest.skip(_why, allow_module_level=True)

from tests.integration.conftest import Master  # noqa: E402

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "callback_train.py"
pytestmark = pytest.mark.integration


def _fit(
    home: Path, *args: str, checkpoint: str | None = None, continue_id: str | None = None
) -> tuple[dict[str, Any], str]:
    """Run the user's script locally (no master); return its final weights and its output."""
    out = home / "weights.json"
    env = {
        **os.environ,
        "TRIALKIT_HOME": str(home),
        "TEST_WEIGHTS_OUT": str(out),
    }
    env.pop("TRIALKIT_CLUSTER_INFO", None)
    env.pop("TEST_CHECKPOINT", None)
    if checkpoint:
        env["TEST_CHECKPOINT"] = checkpoint
    if continue_id:
        env["TEST_CONTINUE_ID"] = continue_id
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text()), proc.stdout + proc.stderr


def _store(home: Path) -> Any:
    from tests.local_runs import ingested_store

    return ingested_store(home)


def _last_trial(home: Path) -> tuple[list[Any], list[Any], list[Any]]:
    """(training metrics, validation metrics, checkpoints) of the latest local run in ``home``."""
    store = _store(home)
    try:
        trial = store.list_trials()[-1]
        return (
            store.list_metrics(trial.id, "training"),
            store.list_metrics(trial.id, "validation"),
            store.list_checkpoints(trial_id=trial.id),
        )
    finally:
        store.close()


def _epochs_begun(output: str) -> list[int]:
    return [int(m) for m in re.findall(r"EPOCH_BEGIN (\d+)", output)]


def test_local_fit_reports_each_epoch_and_checkpoints_weights_with_the_epoch(
    tmp_path: Path,
) -> None:
    _fit(tmp_path, "3")
    train, val, ckpts = _last_trial(tmp_path)
    # 64 rows / batch 16 = 4 batches an epoch.
    assert [m.steps_completed for m in train] == [4, 8, 12]
    assert [m.values["epochs"] for m in train] == [1, 2, 3]
    assert all({"loss", "binary_accuracy"} <= set(m.values) for m in train)
    assert not any(k.startswith("val_") for m in train for k in m.values)
    assert [m.steps_completed for m in val] == [4, 8, 12]
    assert all({"loss", "binary_accuracy", "epochs", "batches"} <= set(m.values) for m in val)
    assert [c.steps_completed for c in ckpts] == [4, 8, 12]
    assert [c.metadata["epochs"] for c in ckpts] == [1, 2, 3]
    assert {"model.weights.h5", "callback_state"} <= set(ckpts[-1].resources)


def test_local_training_metrics_every_n_batches(tmp_path: Path) -> None:
    _fit(tmp_path, "3", "3")
    train, val, _ = _last_trial(tmp_path)
    assert [m.steps_completed for m in train] == [3, 6, 9, 12]
    assert [m.steps_completed for m in val] == [4, 8, 12]


def test_resume_from_checkpoint_continues_at_the_next_epoch_with_the_same_weights(
    tmp_path: Path,
) -> None:
    straight, _ = _fit(tmp_path / "straight", "5")
    _fit(tmp_path / "split", "3")
    *_, ckpts = _last_trial(tmp_path / "split")
    resumed, output = _fit(tmp_path / "split", "5", checkpoint=ckpts[-1].uuid)
    assert _epochs_begun(output) == [3, 4], output
    train, val, ckpts2 = _last_trial(tmp_path / "split")
    assert [m.steps_completed for m in train] == [16, 20]
    assert [c.metadata["epochs"] for c in ckpts2] == [4, 5]
    assert resumed["steps"] == straight["steps"] == 20
    # Weights and the optimizer's state came back: the resumed run ends where one run ends.
    assert resumed["weights"] == straight["weights"]


def test_checkpoint_of_another_continue_id_only_warm_starts(tmp_path: Path) -> None:
    _fit(tmp_path, "2")
    *_, ckpts = _last_trial(tmp_path)
    _, output = _fit(tmp_path, "2", checkpoint=ckpts[-1].uuid, continue_id="another-run")
    assert _epochs_begun(output) == [0, 1], output
    assert "warm start from checkpoint" in output
    train, _, _ = _last_trial(tmp_path)
    assert [m.steps_completed for m in train] == [4, 8]


def _model_dir(tmp_path: Path) -> Path:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    shutil.copy(SCRIPT, model_dir / "train.py")
    return model_dir


def _config(args: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": "keras-callback",
        "entrypoint": f"python3 train.py {args}",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"epochs": 4}},
        "max_restarts": 0,
        **extra,
    }


def _metrics(master: Master, trial_id: int, group: str) -> list[dict[str, Any]]:
    got = master.client.request(
        "GET", f"/api/v1/trials/{trial_id}/metrics", params={"group": group}
    )
    return list(got["metrics"])


def test_under_master_reports_metrics_checkpoints_and_progress(
    master: Master, tmp_path: Path
) -> None:
    exp = master.create(_config("4"), _model_dir(tmp_path))
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=300)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    [trial] = desc["trials"]
    assert [m["steps_completed"] for m in _metrics(master, trial["id"], "training")] == [
        4,
        8,
        12,
        16,
    ]
    vals = _metrics(master, trial["id"], "validation")
    assert [m["steps_completed"] for m in vals] == [4, 8, 12, 16]
    assert vals[-1]["values"]["epochs"] == 4
    assert sorted(c["steps_completed"] for c in desc["checkpoints"]) == [4, 8, 12, 16]
    assert desc["experiment"]["progress"] == 1.0


def test_under_master_pause_checkpoints_and_activate_resumes_at_the_next_epoch(
    master: Master, tmp_path: Path
) -> None:
    exp = master.create(_config("6 epoch 1.5"), _model_dir(tmp_path))
    master.wait_for(
        lambda: bool(master.describe(exp)["checkpoints"]), timeout=240, what="a first checkpoint"
    )
    master.cli("experiment", "pause", str(exp))
    paused = master.wait_state(exp, {"PAUSED", "ERROR", "COMPLETED"}, timeout=120)
    assert paused["experiment"]["state"] == "PAUSED", paused
    master.cli("experiment", "activate", str(exp))
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=300)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    [trial] = desc["trials"]
    logs = master.cli("trial", "logs", str(trial["id"])).stdout
    assert "preemption requested: stopping after epoch" in logs, logs
    resumed = re.search(r"resuming from checkpoint (\S+) at epoch (\d+)", logs)
    assert resumed is not None, logs
    uuid, epoch = resumed.group(1), int(resumed.group(2))
    steps = {c["uuid"]: c["steps_completed"] for c in desc["checkpoints"]}
    assert 1 <= epoch < 6 and steps[uuid] == 4 * epoch, (steps, logs)
    # Every epoch ran exactly once across the two runs: the second began after the checkpoint.
    assert _epochs_begun(logs) == list(range(6)), logs
    vals = _metrics(master, trial["id"], "validation")
    assert [m["steps_completed"] for m in vals] == [4, 8, 12, 16, 20, 24]
    assert max(steps.values()) == 24


EXAMPLE = HERE.parents[1] / "examples" / "keras_callback"


def test_example_runs_locally(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "train.py"],
        cwd=EXAMPLE,
        env={**os.environ, "TRIALKIT_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    train, val, ckpts = _last_trial(tmp_path)
    # 512 rows / batch 32 = 16 batches an epoch, 5 epochs.
    assert [m.steps_completed for m in val] == [16, 32, 48, 64, 80]
    assert [c.steps_completed for c in ckpts] == [16, 32, 48, 64, 80]
    assert val[-1].values["binary_accuracy"] > 0.8


def test_example_const_under_master(master: Master, tmp_path: Path) -> None:
    import yaml

    model_dir = Path(shutil.copytree(EXAMPLE, tmp_path / "example"))
    cfg = yaml.safe_load((EXAMPLE / "const.yaml").read_text())
    exp = master.create(cfg, model_dir)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=300)
    assert desc["experiment"]["state"] == "COMPLETED", desc
    [trial] = desc["trials"]
    vals = _metrics(master, trial["id"], "validation")
    assert [m["steps_completed"] for m in vals] == [16, 32, 48, 64, 80]
    assert vals[-1]["values"]["binary_accuracy"] > 0.8
    assert desc["experiment"]["progress"] == 1.0


@pytest.mark.skipif(
    os.environ.get("TF_USE_LEGACY_KERAS") != "1",
    reason="Determined's TF-format model_checkpoint loads on tf_keras only (tox -e tensorflow, TF_USE_LEGACY_KERAS=1)",
)
def test_a_checkpoint_in_determineds_layout_resumes_on_tf_keras(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Determined 0.38's DeterminedCallback writes ``model_checkpoint`` (TensorFlow's checkpoint
    format, model and optimizer) and a pickled ``callback_state`` (reference §3.1)."""
    import pickle

    monkeypatch.setenv("TRIALKIT_HOME", str(tmp_path))
    monkeypatch.delenv("TRIALKIT_CLUSTER_INFO", raising=False)
    monkeypatch.syspath_prepend(str(HERE))
    import callback_train

    from trialkit import core

    straight, _ = _fit(tmp_path / "straight", "4")
    model = callback_train.build_model()
    x, y = callback_train.data(0)
    model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    state = {"epoch": 1, "steps_completed": 8, "continue_id": "local"}
    state.update(training_length=None, validation_length=None)
    with core.init() as ctx:
        with ctx.checkpoint.store_path({"steps_completed": 8}) as (path, uuid):
            model.save_weights(str(path / "model_checkpoint"))  # no suffix: TF format
            (path / "callback_state").write_bytes(pickle.dumps(state))
    resumed, output = _fit(tmp_path, "4", checkpoint=uuid)
    assert f"resuming from checkpoint {uuid} at epoch 2" in output, output
    assert _epochs_begun(output) == [2, 3], output
    train, _, _ = _last_trial(tmp_path)
    assert [m.steps_completed for m in train] == [12, 16]
    assert resumed["weights"] == straight["weights"]
