"""TFKerasTrial on two workers (MultiWorkerMirroredStrategy over the TF_CONFIG that
trialkit.launch.tensorflow builds), on Keras 3 and on tf_keras (TF_USE_LEGACY_KERAS=1; both in
the tensorflow env): the same weights and validation metrics as one worker with the same global
batch, pause and resume, a killed worker failing the trial within seconds, and the launcher on
its own."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip(
    "tensorflow", reason="the Keras harness tests need tensorflow (tox -e tensorflow)"
)

from tests.integration.conftest import EXAMPLES, Master  # noqa: E402
from trialkit.launch.auto import DEFAULT_LAUNCHER, launcher_for  # noqa: E402

pytestmark = pytest.mark.integration
HERE = Path(__file__).resolve().parent
IRIS = EXAMPLES / "iris_tf_keras"
TF_LAUNCH = "python3 -m trialkit.launch.tensorflow -- python3 -m trialkit.exec.harness"


def _model_dir(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    shutil.copy(HERE / "distributed_def.py", d / "model_def.py")
    shutil.copy(IRIS / "iris.csv", d / "iris.csv")
    return d


def _config(slots: int, batches: int, batch_sleep: float, **changes: Any) -> dict[str, Any]:
    cfg = {
        "name": f"keras-dist-{slots}",
        "entrypoint": "model_def:DistTrial",
        "hyperparameters": {"global_batch_size": 10, "batch_sleep": batch_sleep},
        "resources": {"slots_per_trial": slots},
        "searcher": {"name": "single", "metric": "val_loss", "max_length": {"batches": batches}},
        "min_validation_period": {"batches": 12},
        "scheduling_unit": 4,
        "checkpoint_policy": "all",
        "reproducibility": {"experiment_seed": 3},
        "max_restarts": 0,
    }
    cfg.update(changes)
    return cfg


def _metrics(master: Master, trial_id: int, group: str) -> list[dict[str, Any]]:
    got = master.client.request(
        "GET", f"/api/v1/trials/{trial_id}/metrics", params={"group": group}
    )
    return list(got["metrics"])


def _final_weights(master: Master, desc: dict[str, Any], steps: int, out: Path) -> dict[str, Any]:
    """Every array of the checkpoint at ``steps``: model weights and optimizer state."""
    import h5py

    [ckpt] = [c for c in desc["checkpoints"] if c["steps_completed"] == steps]
    master.cli("checkpoint", "download", ckpt["uuid"], "--output-dir", str(out))
    arrays: dict[str, Any] = {}
    with h5py.File(out / "determined-keras-model.weights.h5", "r") as f:
        f.visititems(
            lambda name, obj: (
                arrays.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None
            )
        )
    with np.load(out / "determined-keras-optimizer-state.npz") as opt:
        arrays.update({f"optimizer/{k}": opt[k] for k in opt.files})
    return arrays


def _trained(master: Master, exp: int) -> int:
    trials = master.describe(exp)["trials"]
    if not trials:
        return 0
    return max(
        (m["steps_completed"] for m in _metrics(master, trials[0]["id"], "training")), default=0
    )


def one_trial(desc: dict[str, Any]) -> int:
    [trial] = desc["trials"]
    return int(trial["id"])


def test_two_workers_reach_one_workers_weights_and_resume_after_a_pause(
    master: Master, tmp_path: Path
) -> None:
    one = master.create(_config(1, 60, 0.0), _model_dir(tmp_path, "one"))
    straight = master.wait_state(one, {"COMPLETED", "ERROR"}, timeout=300)
    assert straight["experiment"]["state"] == "COMPLETED", straight

    two = master.create(_config(2, 60, 0.15), _model_dir(tmp_path, "two"))
    master.wait_for(lambda: _trained(master, two) >= 8, timeout=240, what="8 batches trained")
    master.cli("experiment", "pause", str(two))
    master.wait_for(
        lambda: master.describe(two)["trials"][0]["state"] == "PAUSED",
        timeout=120,
        what="trial PAUSED",
    )
    paused_at = max(c["steps_completed"] for c in master.describe(two)["checkpoints"])
    assert 8 <= paused_at < 60
    master.cli("experiment", "activate", str(two))
    resumed = master.wait_state(two, {"COMPLETED", "ERROR"}, timeout=300)
    assert resumed["experiment"]["state"] == "COMPLETED", resumed
    [trial] = resumed["trials"]
    assert trial["run_id"] == 2

    # Each worker trained its half of every global batch; the chief alone reported and saved.
    logs = master.cli("trial", "logs", str(trial["id"])).stdout
    for rank in (0, 1):
        assert f"[rank={rank}] || worker rank={rank} of 2 " in logs and "per-slot batch=5" in logs
    train = [m["steps_completed"] for m in _metrics(master, trial["id"], "training")]
    assert train == sorted(set(train)) and train[-1] == 60, train
    steps = [c["steps_completed"] for c in resumed["checkpoints"]]
    assert len(steps) == len(set(steps)) and 60 in steps and paused_at in steps, steps

    # Same weights and optimizer state as one worker with the same global batch: the only
    # difference is the order of float sums (each worker's half, then the all-reduce).
    a = _final_weights(master, straight, 60, tmp_path / "a")
    b = _final_weights(master, resumed, 60, tmp_path / "b")
    assert a.keys() == b.keys() and len(a) >= 4
    # (tf_keras's file also holds the metrics' running sums: per batch state, reset at every
    # step and validation, and the chief's own share under several workers.)
    for key in (k for k in a if not k.startswith("metrics/")):
        np.testing.assert_allclose(b[key], a[key], rtol=1e-5, atol=1e-6, err_msg=key)
    # Validation over the two shards (metric states summed) agrees with one worker's.
    va = {
        m["steps_completed"]: m["values"]
        for m in _metrics(master, one_trial(straight), "validation")
    }
    vb = {m["steps_completed"]: m["values"] for m in _metrics(master, trial["id"], "validation")}
    assert sorted(va) == sorted(vb) == [12, 24, 36, 48, 60]
    for step, values in va.items():
        for key in ("val_loss", "val_categorical_accuracy"):
            assert vb[step][key] == pytest.approx(values[key], rel=1e-5, abs=1e-6), (step, key)


def test_a_killed_worker_fails_the_trial_within_seconds(master: Master, tmp_path: Path) -> None:
    # The explicit launcher form of the entrypoint, as a user would write it.
    cfg = _config(2, 2000, 0.05, entrypoint=f"{TF_LAUNCH} model_def:DistTrial")
    exp = master.create(cfg, _model_dir(tmp_path, "kill"))
    master.wait_for(lambda: _trained(master, exp) >= 4, timeout=240, what="4 batches trained")
    [trial] = master.describe(exp)["trials"]
    logs = master.cli("trial", "logs", str(trial["id"])).stdout
    pid = int(re.search(r"worker rank=1 of 2 pid=(\d+)", logs).group(1))  # type: ignore[union-attr]
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    desc = master.wait_state(exp, {"ERROR", "COMPLETED"}, timeout=60)
    took = time.monotonic() - killed
    assert desc["experiment"]["state"] == "ERROR", desc
    assert took < 20, f"the trial took {took:.1f}s to fail after a worker was killed"
    logs = master.cli("trial", "logs", str(trial["id"])).stdout
    assert "worker rank 1 was killed by signal 9: stopping the other workers" in logs, logs


CORE_SCRIPT = """
import json, os, sys
import tensorflow as tf
from trialkit import core

d, strategy = core.DistributedContext.from_tf_config()
total = strategy.reduce("SUM", strategy.run(lambda: tf.constant(float(d.rank + 1))), axis=None)
with core.init(checkpoint_storage=os.environ["STORE"]) as ctx:  # finds the ranks in TF_CONFIG
    ranks = ctx.distributed.allgather((ctx.distributed.rank, ctx.distributed.local_rank))
print("RESULT " + json.dumps({"rank": d.rank, "size": d.size, "local_size": d.local_size,
      "cross_size": d.cross_size, "sum": float(total), "ranks": ranks,
      "mwms": isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)}), flush=True)
"""


def test_the_tensorflow_launcher_starts_workers_with_their_tf_config(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(CORE_SCRIPT)
    env = {**os.environ, "STORE": str(tmp_path / "store"), "TRIALKIT_HOME": str(tmp_path / "h")}
    env.pop("TRIALKIT_CLUSTER_INFO", None)
    launch = [sys.executable, "-m", "trialkit.launch.tensorflow"]
    proc = subprocess.run(
        [*launch, "--nproc-per-node", "2", "--", sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = sorted(
        (
            json.loads(ln.partition("RESULT ")[2])
            for ln in proc.stdout.splitlines()
            if "RESULT " in ln
        ),
        key=lambda r: r["rank"],
    )
    assert [r["rank"] for r in results] == [0, 1]
    assert all(ln.startswith(("[rank=0] || ", "[rank=1] || ")) for ln in proc.stdout.splitlines())
    for r in results:
        assert r["size"] == 2 and r["local_size"] == 2 and r["cross_size"] == 1
        assert r["sum"] == 3.0 and r["mwms"]
        assert r["ranks"] == [[0, 0], [1, 1]]
    # Bad input is one line.
    bad = subprocess.run(
        [*launch, "--trial", "model_def:T", "--", "python3", "x.py"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1 and bad.stderr.startswith("error: --trial model_def:T takes no")


def test_auto_picks_the_launcher_by_the_trials_harness() -> None:
    from trialkit import keras as tk

    class Mine(tk.TFKerasTrial):
        pass

    class Deeper(Mine):
        pass

    assert launcher_for(Mine) == launcher_for(Deeper) == "trialkit.launch.tensorflow"
    assert launcher_for(object) == DEFAULT_LAUNCHER == "trialkit.launch.torch_distributed"
