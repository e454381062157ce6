"""The seed-001 Core API tutorial stages run to COMPLETED through the real master and CLI."""

from __future__ import annotations

import json

import pytest

from .conftest import EXAMPLES, Master

pytestmark = pytest.mark.integration
CORE = EXAMPLES / "core_api"


@pytest.mark.parametrize("stage", ["0_start", "1_metrics", "2_checkpoints"])
def test_single_trial_stages_complete(master: Master, stage: str) -> None:
    proc = master.cli("experiment", "create", str(CORE / f"{stage}.yaml"), str(CORE), "--follow")
    assert "ended COMPLETED" in proc.stdout
    desc = json.loads(master.cli("experiment", "describe", "1", "--json").stdout)
    assert desc["experiment"]["state"] == "COMPLETED"
    [trial] = desc["trials"]
    assert trial["state"] == "COMPLETED" and trial["restarts"] == 0
    if stage != "0_start":
        assert trial["latest_validation"]["values"] == {"x": 100}
        assert (
            master.client.request(
                "GET", f"/api/v1/trials/{trial['id']}/metrics", params={"group": "training"}
            )["metrics"][-1]["steps_completed"]
            == 100
        )
    if stage == "2_checkpoints":
        steps = sorted(c["steps_completed"] for c in desc["checkpoints"])
        assert steps == list(range(10, 101, 10))
        assert all(
            "state" in c["resources"] and "metadata.json" in c["resources"]
            for c in desc["checkpoints"]
        )


def test_hpsearch_random_runs_every_trial_to_its_length(master: Master) -> None:
    proc = master.cli("experiment", "create", str(CORE / "3_hpsearch.yaml"), str(CORE), "--follow")
    assert "ended COMPLETED" in proc.stdout
    desc = master.describe(1)
    trials = desc["trials"]
    assert len(trials) == 4
    for t in trials:
        assert t["state"] == "COMPLETED"
        assert 1 <= t["hparams"]["increment_by"] <= 8
        assert t["latest_validation"]["steps_completed"] == 100
        assert t["latest_validation"]["values"]["x"] == 100 * t["hparams"]["increment_by"]
    best = min(t["best_validation"] for t in trials)
    assert desc["best_trial"]["metric"] == "loss"
    assert desc["best_trial"]["value"] == best
    # Same seed, same trials: a second experiment draws identical hyperparameters.
    master.cli("experiment", "create", str(CORE / "3_hpsearch.yaml"), str(CORE), "--follow")
    again = master.describe(2)["trials"]
    assert [t["hparams"] for t in again] == [t["hparams"] for t in trials]
    assert [t["seed"] for t in again] == [t["seed"] for t in trials]


def test_checkpoint_list_describe_download(master: Master, tmp_path) -> None:
    master.cli("experiment", "create", str(CORE / "2_checkpoints.yaml"), str(CORE), "--follow")
    ckpts = json.loads(master.cli("checkpoint", "list", "1", "--json").stdout)
    last = max(ckpts, key=lambda c: c["steps_completed"])
    desc = json.loads(master.cli("checkpoint", "describe", last["uuid"], "--json").stdout)
    assert desc["metadata"] == {"steps_completed": 100}
    out = tmp_path / "dl"
    master.cli("checkpoint", "download", last["uuid"], "--output-dir", str(out))
    x, steps, _trial = (out / "state").read_text().split(",")
    assert (int(x), int(steps)) == (100, 100)
    assert json.loads((out / "metadata.json").read_text()) == {"steps_completed": 100}
