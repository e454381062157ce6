"""``core_v2`` launched by the master (``unmanaged=False``): it is ``core.init()``, the
``DefaultConfig`` is ignored and the reports go to the managed trial (issue 32, item 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Master, write_script

pytestmark = pytest.mark.integration

SCRIPT = """
from determined.experimental import core_v2

core_v2.init(defaults=core_v2.DefaultConfig(name="ignored when managed"), unmanaged=False)
assert core_v2.info is not None and core_v2.info.trial is not None
core_v2.train.report_validation_metrics(steps_completed=3, metrics={"loss": 0.5})
with core_v2.checkpoint.store_path({"steps_completed": 3}) as (path, _):
    (path / "w").write_text("w")
core_v2.close()
"""


def test_core_v2_with_unmanaged_false_under_the_master_is_core_init(
    master: Master, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    write_script(model, "train.py", SCRIPT)
    config = {
        "name": "managed-v2",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": 3},
        "max_restarts": 0,
    }
    exp = master.create(config, model)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR", "CANCELED"}, timeout=60)
    [trial] = desc["trials"]
    assert desc["experiment"]["state"] == "COMPLETED", master.cli(
        "t", "logs", str(trial["id"])
    ).stdout
    assert trial["latest_validation"]["values"] == {"loss": 0.5}
    assert [c["steps_completed"] for c in desc["checkpoints"]] == [3]
    listed = master.client.request("GET", "/api/v1/experiments")["experiments"]
    assert [e["name"] for e in listed] == ["managed-v2"]  # no local experiment beside it
