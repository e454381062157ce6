"""The DeepSpeed examples under a real master: each with one slot (``entrypoint:
model_def:Trial``) and two slots (the launcher form ``python3 -m trialkit.launch.deepspeed --
python3 -m trialkit.exec.harness model_def:Trial``); paused mid-run and activated, each ends on
the weights of an uninterrupted run (every tensor of every engine file of the final
checkpoints). Lengths are cut short for CI; the model, data and ds_config are the examples'."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import EXAMPLES, Master

pytest.importorskip("deepspeed")
torch = pytest.importorskip("torch")

pytestmark = pytest.mark.integration

TRIAL_CLASS = {"deepspeed_linear": "LinearTrial", "deepspeed_dcgan": "DCGANTrial"}
ENGINES = {"deepspeed_linear": 1, "deepspeed_dcgan": 2}
LENGTH = 20
#: A subclass that sleeps per batch, so a pause lands mid-run; it changes no RNG or weight.
SLOW_DEF = """import time
import model_def


class Slow(model_def.{cls}):
    def train_batch(self, dataloader_iter, epoch_idx, batch_idx):
        time.sleep(0.5)
        return super().train_batch(dataloader_iter, epoch_idx, batch_idx)
"""


def _example(name: str, tmp_path: Path) -> Path:
    """A copy of the example (experiment create writes into the model directory)."""
    model_dir = tmp_path / name
    shutil.copytree(EXAMPLES / name, model_dir)
    (model_dir / "slow_def.py").write_text(SLOW_DEF.format(cls=TRIAL_CLASS[name]))
    return model_dir


def _config(model_dir: Path, yaml_name: str, *, slow: bool = False) -> dict[str, Any]:
    """The example's config, shorter, with a fixed seed (two experiments, one trial seed)."""
    cfg: dict[str, Any] = yaml.safe_load((model_dir / yaml_name).read_text())
    cfg["searcher"]["max_length"] = {"batches": LENGTH}
    cfg["min_validation_period"] = {"batches": 10}
    cfg["min_checkpoint_period"] = {"batches": 10}
    cfg["scheduling_unit"] = 2
    cfg["perform_initial_validation"] = True
    cfg["reproducibility"] = {"experiment_seed": 11}
    # Two CPU ranks on a shared machine: one thread each.
    cfg["environment"] = {"environment_variables": ["OMP_NUM_THREADS=1", "DS_ACCELERATOR=cpu"]}
    if slow:
        spec = f"model_def:{TRIAL_CLASS[model_dir.name]}"
        cfg["entrypoint"] = cfg["entrypoint"].replace(spec, "slow_def:Slow")
    return cfg


def _completed(master: Master, exp: int) -> dict[str, Any]:
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=420)
    trial = desc["trials"][0]
    logs = master.cli("trial", "logs", str(trial["id"])).stdout
    assert desc["experiment"]["state"] == "COMPLETED", logs[-4000:]
    return trial  # type: ignore[no-any-return]


def _trained(master: Master, trial_id: int) -> int:
    got = master.client.request(
        "GET", f"/api/v1/trials/{trial_id}/metrics", params={"group": "training"}
    )["metrics"]
    return max((m["steps_completed"] for m in got), default=0)


def _validations(master: Master, trial_id: int, metric: str) -> list[float]:
    got = master.client.request(
        "GET", f"/api/v1/trials/{trial_id}/metrics", params={"group": "validation"}
    )["metrics"]
    return [m["values"][metric] for m in sorted(got, key=lambda m: m["steps_completed"])]


def _engine_tensors(master: Master, uuid: str, dest: Path) -> dict[str, Any]:
    """Every tensor in the checkpoint's engine files (weights, optimizer and scheduler state of
    each rank), by file and key path, from the checkpoint as ``trialkit checkpoint download``
    fetches it."""
    master.cli("checkpoint", "download", uuid, "-o", str(dest))
    out: dict[str, Any] = {}

    def walk(prefix: str, obj: Any) -> None:
        if isinstance(obj, torch.Tensor):
            out[prefix] = obj
        elif isinstance(obj, dict):
            for k, v in obj.items():
                walk(f"{prefix}/{k}", v)
        elif isinstance(obj, list | tuple):
            for i, v in enumerate(obj):
                walk(f"{prefix}/{i}", v)

    for f in sorted(dest.glob("model*/*.pt")):
        walk(str(f.relative_to(dest)), torch.load(f, map_location="cpu", weights_only=False))
    return out


def _assert_same_engines(master: Master, a: dict[str, Any], b: dict[str, Any], tmp: Path) -> None:
    assert a["latest_checkpoint"] and b["latest_checkpoint"]
    left = _engine_tensors(master, a["latest_checkpoint"], tmp / "a")
    right = _engine_tensors(master, b["latest_checkpoint"], tmp / "b")
    assert left.keys() == right.keys()
    assert any("/module/" in k for k in left), sorted(left)
    differ = [k for k in left if not torch.equal(left[k], right[k])]
    assert not differ, differ


def _pause_mid_run_and_activate(master: Master, exp: int) -> dict[str, Any]:
    master.wait_for(lambda: bool(master.describe(exp)["trials"]), timeout=60, what="a trial")
    trial_id = master.describe(exp)["trials"][0]["id"]
    master.wait_for(lambda: _trained(master, trial_id) >= 2, timeout=240, what="2 batches")
    master.cli("experiment", "pause", str(exp))
    master.wait_for(
        lambda: master.describe(exp)["trials"][0]["state"] == "PAUSED",
        timeout=180,
        what="PAUSED",
    )
    paused = max(master.describe(exp)["checkpoints"], key=lambda c: c["steps_completed"])
    assert 2 <= paused["steps_completed"] < LENGTH, paused
    master.cli("experiment", "activate", str(exp))
    resumed = _completed(master, exp)
    assert resumed["latest_validation"]["steps_completed"] == LENGTH
    # Run 2 went on from the checkpoint (a restart from scratch would end equal too).
    metrics = master.client.request(
        "GET", f"/api/v1/trials/{trial_id}/metrics", params={"group": "training"}
    )["metrics"]
    after = [m["steps_completed"] for m in metrics if m["run_id"] == 2]
    assert after and min(after) > paused["steps_completed"], (paused, after)
    return paused  # type: ignore[no-any-return]


def test_linear_one_slot_pauses_and_resumes_exactly(master: Master, tmp_path: Path) -> None:
    model_dir = _example("deepspeed_linear", tmp_path)
    # The uninterrupted run and the paused one side by side, one slot each.
    straight = master.create(_config(model_dir, "const.yaml"), model_dir)
    paused_exp = master.create(_config(model_dir, "const.yaml", slow=True), model_dir)
    paused = _pause_mid_run_and_activate(master, paused_exp)
    assert "model0/mp_rank_00_model_states.pt" in paused["resources"]
    a, b = _completed(master, straight), master.describe(paused_exp)["trials"][0]
    losses = _validations(master, a["id"], "val_loss")
    assert losses[-1] < losses[0] / 2, losses  # it learned
    assert b["latest_validation"]["values"] == a["latest_validation"]["values"]
    _assert_same_engines(master, a, b, tmp_path)


def test_dcgan_two_slots_pause_and_resume_exactly(master: Master, tmp_path: Path) -> None:
    model_dir = _example("deepspeed_dcgan", tmp_path)
    a = _completed(master, master.create(_config(model_dir, "distributed.yaml"), model_dir))
    logs = master.cli("trial", "logs", str(a["id"])).stdout
    assert "[rank=1]" in logs and "deepspeed.launcher.launch" in logs, logs[-3000:]
    exp = master.create(_config(model_dir, "distributed.yaml", slow=True), model_dir)
    paused = _pause_mid_run_and_activate(master, exp)
    files = set(paused["resources"])
    assert {"det_state_dict_rank0.pth", "det_state_dict_rank1.pth"} <= files, sorted(files)
    assert {f"model{i}/mp_rank_00_model_states.pt" for i in (0, 1)} <= files, sorted(files)
    b = master.describe(exp)["trials"][0]
    _assert_same_engines(master, a, b, tmp_path)
    assert b["latest_validation"]["values"] == a["latest_validation"]["values"]


@pytest.mark.parametrize(
    ("name", "yaml_name"),
    [("deepspeed_dcgan", "const.yaml"), ("deepspeed_linear", "distributed.yaml")],
)
def test_example_trains_validates_and_checkpoints(
    master: Master, tmp_path: Path, name: str, yaml_name: str
) -> None:
    model_dir = _example(name, tmp_path)
    exp = master.create(_config(model_dir, yaml_name), model_dir)
    trial = _completed(master, exp)
    assert trial["latest_validation"]["steps_completed"] == LENGTH
    desc = master.describe(exp)
    ckpt = max(desc["checkpoints"], key=lambda c: c["steps_completed"])
    assert ckpt["steps_completed"] == LENGTH
    engines = {f"model{i}/mp_rank_00_model_states.pt" for i in range(ENGINES[name])}
    assert engines <= set(ckpt["resources"]), sorted(ckpt["resources"])
    slots = yaml.safe_load((model_dir / yaml_name).read_text()).get("resources", {})
    for r in range(slots.get("slots_per_trial", 1)):
        assert f"det_state_dict_rank{r}.pth" in ckpt["resources"]
