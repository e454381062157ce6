"""examples/lightning_mnist under a real master: const and adaptive_asha train, validate and
checkpoint; a run paused mid-epoch and activated ends on the weights of an uninterrupted run."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.conftest import EXAMPLES, Master

torch = pytest.importorskip("torch")
pytest.importorskip("lightning")

pytestmark = pytest.mark.integration

#: Runs the example with a sleep per batch so a pause lands mid-epoch; no RNG or weight changes.
SLOW = """import time

import train

step = train.MNISTModule.training_step


def slow_step(self, batch, batch_idx):
    time.sleep(0.3)
    return step(self, batch, batch_idx)


train.MNISTModule.training_step = slow_step
train.main()
"""


def _example(tmp_path: Path) -> Path:
    model_dir = tmp_path / "lightning_mnist"
    shutil.copytree(EXAMPLES / "lightning_mnist", model_dir)
    (model_dir / "slow_train.py").write_text(SLOW)
    return model_dir


def _config(model_dir: Path, name: str, *, slow: bool = False) -> dict[str, Any]:
    cfg: dict[str, Any] = yaml.safe_load((model_dir / name).read_text())
    cfg["reproducibility"] = {"experiment_seed": 7}
    cfg.setdefault("environment", {})["environment_variables"] = ["OMP_NUM_THREADS=1"]
    if slow:
        cfg["entrypoint"] = cfg["entrypoint"].replace("train.py", "slow_train.py")
    return cfg


def _finished(master: Master, exp: int, timeout: float = 420) -> dict[str, Any]:
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=timeout)
    if desc["experiment"]["state"] != "COMPLETED":
        logs = [master.cli("trial", "logs", str(t["id"])).stdout[-3000:] for t in desc["trials"]]
        raise AssertionError("\n".join(logs))
    return desc


def _metrics(master: Master, trial_id: int, group: str) -> list[dict[str, Any]]:
    got = master.client.request(
        "GET", f"/api/v1/trials/{trial_id}/metrics", params={"group": group}
    )["metrics"]
    return sorted(got, key=lambda m: (m["run_id"], m["steps_completed"]))


def _weights(master: Master, uuid: str, dest: Path) -> dict[str, Any]:
    master.cli("checkpoint", "download", uuid, "-o", str(dest))
    ckpt = torch.load(dest / "lightning.ckpt", map_location="cpu", weights_only=False)
    return ckpt["state_dict"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("yaml_name", "length", "epoch_len"),
    [("const.yaml", 60, 20), ("distributed.yaml", 40, 10)],  # 2 ranks: half the batches each
)
def test_pause_mid_epoch_and_activate_ends_on_uninterrupted_weights(
    master: Master, tmp_path: Path, yaml_name: str, length: int, epoch_len: int
) -> None:
    model_dir = _example(tmp_path)
    straight = master.create(_config(model_dir, yaml_name), model_dir)
    if yaml_name == "distributed.yaml":
        _finished(master, straight)  # the master has 2 slots: one 2-slot trial at a time
    paused_exp = master.create(_config(model_dir, yaml_name, slow=True), model_dir)
    master.wait_for(lambda: bool(master.describe(paused_exp)["trials"]), timeout=60, what="trial")
    trial_id = master.describe(paused_exp)["trials"][0]["id"]

    def trained() -> int:
        return max(
            (m["steps_completed"] for m in _metrics(master, trial_id, "training")), default=0
        )

    master.wait_for(lambda: trained() >= 25, timeout=300, what="25 batches")
    master.cli("experiment", "pause", str(paused_exp))
    master.wait_for(
        lambda: master.describe(paused_exp)["trials"][0]["state"] == "PAUSED",
        timeout=180,
        what="PAUSED",
    )
    paused = max(master.describe(paused_exp)["checkpoints"], key=lambda c: c["steps_completed"])
    assert 25 <= paused["steps_completed"] < length, paused
    assert paused["steps_completed"] % epoch_len, f"paused at an epoch's end: {paused}"
    master.cli("experiment", "activate", str(paused_exp))
    [resumed] = _finished(master, paused_exp)["trials"]
    [reference] = _finished(master, straight)["trials"]
    run2 = [
        m["steps_completed"] for m in _metrics(master, trial_id, "training") if m["run_id"] == 2
    ]
    assert run2 and min(run2) > paused["steps_completed"], (paused, run2)
    validated = [m["steps_completed"] for m in _metrics(master, trial_id, "validation")]
    assert validated == list(range(epoch_len, length + 1, epoch_len))  # none at the pause
    left = _weights(master, reference["latest_checkpoint"], tmp_path / "a")
    right = _weights(master, resumed["latest_checkpoint"], tmp_path / "b")
    assert left.keys() == right.keys() and left
    assert [k for k in left if not torch.equal(left[k], right[k])] == []


def test_adaptive_asha_runs_the_example(master: Master, tmp_path: Path) -> None:
    model_dir = _example(tmp_path)
    cfg = _config(model_dir, "adaptive.yaml")
    cfg["searcher"]["max_trials"] = 4
    desc = _finished(master, master.create(cfg, model_dir), timeout=540)
    trials = desc["trials"]
    assert len(trials) == 4 and all(t["state"] == "COMPLETED" for t in trials)
    lengths = sorted(t["latest_validation"]["steps_completed"] for t in trials)
    assert lengths[-1] == 80 and lengths[0] < 80, lengths  # ASHA stopped some trials early
    for t in trials:  # every searcher length validated once, where the searcher asked
        steps = [m["steps_completed"] for m in _metrics(master, t["id"], "validation")]
        assert steps and steps[-1] == t["latest_validation"]["steps_completed"]
        assert len(steps) == len(set(steps)), steps


#: The example, slower, with rank 1 writing its pid once it is past batch 12 (to be killed).
KILLABLE = """import os
import time

import train

step = train.MNISTModule.training_step


def slow_step(self, batch, batch_idx):
    time.sleep(0.2)
    if self.global_rank == 1 and self.global_step >= 12 and not os.path.exists({pidfile!r}):
        with open({pidfile!r} + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename({pidfile!r} + ".tmp", {pidfile!r})
    return step(self, batch, batch_idx)


train.MNISTModule.training_step = slow_step
train.main()
"""


def test_two_ddp_ranks_a_killed_rank_fails_fast_and_the_trial_resumes(
    master: Master, tmp_path: Path
) -> None:
    model_dir = _example(tmp_path)
    pidfile = tmp_path / "rank1.pid"
    (model_dir / "killable.py").write_text(KILLABLE.format(pidfile=str(pidfile)))
    cfg = _config(model_dir, "distributed.yaml")
    cfg["entrypoint"] = cfg["entrypoint"].replace("train.py", "killable.py")
    cfg["min_checkpoint_period"] = {"batches": 10}
    exp = master.create(cfg, model_dir)
    master.wait_for(pidfile.exists, timeout=240, what="rank 1 past batch 12")
    os.kill(int(pidfile.read_text()), signal.SIGKILL)
    killed = time.monotonic()
    master.wait_for(
        lambda: master.describe(exp)["trials"][0]["restarts"] == 1,
        timeout=60,
        what="the run to end and a restart to be counted",
    )
    took = time.monotonic() - killed
    print(f"the run ended {took:.1f}s after rank 1 was SIGKILLed")
    assert took < 10.0, f"the master saw the run end {took:.1f}s after rank 1 was killed"
    [trial] = _finished(master, exp)["trials"]
    assert trial["run_id"] == 2 and trial["latest_validation"]["steps_completed"] == 40
    run2 = [
        m["steps_completed"] for m in _metrics(master, trial["id"], "training") if m["run_id"] == 2
    ]
    assert run2 and min(run2) > 10, run2  # run 2 went on from the checkpoint at batch 10
    ckpt = max(master.describe(exp)["checkpoints"], key=lambda c: c["steps_completed"])
    assert ckpt["steps_completed"] == 40 and "lightning.ckpt" in ckpt["resources"]


def test_adaptive_asha_with_time_metric_and_max_time(master: Master, tmp_path: Path) -> None:
    """The 0.38 contract: no operations; validations carry ``batches``, ASHA stops trials."""
    model_dir = _example(tmp_path)
    cfg = _config(model_dir, "adaptive.yaml")
    searcher = cfg["searcher"]
    del searcher["max_length"]
    searcher.update(time_metric="batches", max_time=80, max_rungs=2, max_trials=3)
    desc = _finished(master, master.create(cfg, model_dir), timeout=540)
    trials = desc["trials"]
    assert len(trials) == 3
    lengths = sorted(t["latest_validation"]["steps_completed"] for t in trials)
    assert lengths[-1] == 80, lengths  # the best trial reached max_time
    for t in trials:  # once an epoch (20 batches), each with the time metric
        validation = _metrics(master, t["id"], "validation")
        assert [m["steps_completed"] for m in validation][:1] == [20]
        assert all(m["values"]["batches"] == m["steps_completed"] for m in validation)


def test_const_and_the_lightning_trial_class_train_alike(master: Master, tmp_path: Path) -> None:
    """const.yaml (``python3 train.py``) reports, validates and checkpoints at the searcher's
    length; ``entrypoint: model_def:MNISTTrial`` (trial.yaml) ends on the same weights."""
    model_dir = _example(tmp_path)
    script = master.create(_config(model_dir, "const.yaml"), model_dir)
    trial_cls = master.create(_config(model_dir, "trial.yaml"), model_dir)
    [a] = _finished(master, script)["trials"]
    training = _metrics(master, a["id"], "training")
    assert [m["steps_completed"] for m in training] == list(range(5, 61, 5))
    assert all("loss" in m["values"] and "batches" in m["values"] for m in training)
    validation = _metrics(master, a["id"], "validation")
    assert [m["steps_completed"] for m in validation] == [20, 40, 60]  # each epoch's end
    assert {"val_loss", "val_accuracy", "epochs"} <= validation[-1]["values"].keys()
    assert validation[-1]["values"]["epochs"] == 3.0  # 20 batches an epoch
    ckpt = master.describe(script)["checkpoints"][-1]
    assert ckpt["steps_completed"] == 60 and "lightning.ckpt" in ckpt["resources"]
    [b] = _finished(master, trial_cls)["trials"]
    steps = [m["steps_completed"] for m in _metrics(master, b["id"], "training")]
    assert steps == list(range(5, 61, 5))  # scheduling_unit: 5
    assert b["latest_validation"]["steps_completed"] == 60
    left = _weights(master, a["latest_checkpoint"], tmp_path / "a")
    right = _weights(master, b["latest_checkpoint"], tmp_path / "b")
    assert left.keys() == right.keys() and left
    assert [k for k in left if not torch.equal(left[k], right[k])] == []


def test_warm_start_from_another_trial_loads_the_weights_not_the_counters(
    master: Master, tmp_path: Path
) -> None:
    model_dir = _example(tmp_path)
    cfg = _config(model_dir, "const.yaml")
    cfg["searcher"]["max_length"] = {"batches": 20}
    [source] = _finished(master, master.create(cfg, model_dir))["trials"]
    cfg["hyperparameters"]["learning_rate"] = 0.0  # training leaves the start weights as they are
    cfg["searcher"]["source_checkpoint_uuid"] = source["latest_checkpoint"]
    [warm] = _finished(master, master.create(cfg, model_dir))["trials"]
    steps = [m["steps_completed"] for m in _metrics(master, warm["id"], "training")]
    assert steps == [5, 10, 15, 20]  # its own count from 0, not the source's 20
    left = _weights(master, source["latest_checkpoint"], tmp_path / "a")
    right = _weights(master, warm["latest_checkpoint"], tmp_path / "b")
    assert left.keys() == right.keys() and left
    assert [k for k in left if not torch.equal(left[k], right[k])] == []
