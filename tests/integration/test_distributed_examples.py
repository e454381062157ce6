"""The distributed examples run to completion on 2 CPU workers under a real master; a
multi-slot trial without a launcher is told what to do."""

from __future__ import annotations

import pytest

from .conftest import EXAMPLES, Master

pytestmark = pytest.mark.integration


def _logs(master: Master, trial_id: int) -> list[str]:
    return [
        ln["line"] for ln in master.client.request("GET", f"/api/v1/trials/{trial_id}/logs")["logs"]
    ]


def test_core_api_4_distributed(master: Master) -> None:
    core_dir = EXAMPLES / "core_api"
    master.cli("experiment", "create", str(core_dir / "4_distributed.yaml"), str(core_dir), "-f")
    desc = master.describe(1)
    assert desc["experiment"]["state"] == "COMPLETED"
    trial = desc["trials"][0]
    # 100 steps, each adding the allgathered increment_by of both workers (1 + 1)
    assert trial["latest_validation"]["values"]["x"] == 200
    logs = _logs(master, trial["id"])
    assert any(ln.startswith("[rank=0] || ") and "x is now 200" in ln for ln in logs)
    assert not any(ln.startswith("[rank=1] || ") for ln in logs)  # only the chief logs progress


def test_torch_distributed_ddp_example(master: Master) -> None:
    pytest.importorskip("torch")
    d = EXAMPLES / "torch_distributed"
    master.cli("experiment", "create", str(d / "const.yaml"), str(d), "-f", timeout=240)
    desc = master.describe(1)
    assert desc["experiment"]["state"] == "COMPLETED"
    trial = desc["trials"][0]
    assert trial["latest_validation"]["values"]["val_loss"] < 0.1  # it learned y = 3x - 2
    assert len(desc["checkpoints"]) == 5
    logs = _logs(master, trial["id"])
    for r in (0, 1):
        assert any(f"[rank={r}]" in ln and f"Process {r}, total 2." in ln for ln in logs)


def test_multi_slot_without_a_launcher_runs_once_and_says_what_to_do(
    master: Master, tmp_path
) -> None:
    d = tmp_path / "m"
    d.mkdir()
    (d / "t.py").write_text(
        "from trialkit import core\nprint('started', flush=True)\ncore.init()\n"
    )
    exp = master.create(
        {
            "name": "no-launcher",
            "entrypoint": "python3 t.py",
            "resources": {"slots_per_trial": 2},
            "searcher": {"name": "single", "metric": "x"},
            "max_restarts": 0,
        },
        d,
    )
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"})
    assert desc["experiment"]["state"] == "ERROR"
    logs = _logs(master, desc["trials"][0]["id"])
    assert sum("started" in ln for ln in logs) == 1  # one process, not one per slot
    assert any(
        "you must provide a valid DistributedContext for a multi-slot task" in ln
        and "trialkit.launch.torch_distributed" in ln
        for ln in logs
    )
