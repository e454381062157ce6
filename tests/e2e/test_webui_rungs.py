"""The experiment page's rungs view in headless Chromium, on a real adaptive_asha experiment
run by a real master: the brackets and rungs the searcher holds, each trial's metric at a rung
as the trial reported it, and which trials went on to the next rung."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..integration.conftest import write_script
from ._browser import browser, login_url
from .conftest import Master

pytestmark = [pytest.mark.integration, pytest.mark.browser]

# 0.37 operations: train to each op's length (a step a batch), report the loss, complete the op.
TRIAL = """
import trialkit as det
from trialkit import core

lr = det.get_cluster_info().trial.hparams["lr"]
with core.init() as ctx:
    for op in ctx.searcher.operations():
        loss = (lr - 0.3) ** 2 + 1.0 / op.length
        ctx.train.report_validation_metrics(steps_completed=op.length, metrics={"loss": loss})
        op.report_completed(loss)
"""

# 8 trials, max_length 16, divisor 4: 2 rungs at most; "standard" mode: a bracket of 2 rungs
# (4, 16 batches) and one of 1 rung (16).
CONFIG = {
    "name": "webui-rungs",
    "entrypoint": "python3 trial.py",
    "hyperparameters": {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0}},
    "searcher": {
        "name": "adaptive_asha",
        "metric": "loss",
        "max_length": {"batches": 16},
        "max_trials": 8,
        "max_concurrent_trials": 2,
    },
    "reproducibility": {"experiment_seed": 3},
    "max_restarts": 0,
}


def _validations(master: Master, trial_id: int) -> dict[int, float]:
    got = master.client.request(
        "GET", f"/api/v1/trials/{trial_id}/metrics", params={"group": "validation"}
    )["metrics"]
    return {m["steps_completed"]: m["values"]["loss"] for m in got}


def test_the_page_shows_the_searchers_rungs(master: Master, tmp_path: Path) -> None:
    model = tmp_path / "model"
    write_script(model, "trial.py", TRIAL)
    exp = master.create(CONFIG, model)
    master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=240)
    assert master.describe(exp)["experiment"]["state"] == "COMPLETED"

    rungs: dict[str, Any] = master.client.request(
        "GET", f"/api/v1/experiments/{exp}/searcher/rungs"
    )
    assert (rungs["searcher"], rungs["unit"], rungs["metric"]) == (
        "adaptive_asha",
        "batches",
        "loss",
    )
    lengths = [[r["length"] for r in b["rungs"]] for b in rungs["brackets"]]
    assert lengths == [[4, 16], [16]]
    reported = {t["id"]: _validations(master, t["id"]) for t in master.describe(exp)["trials"]}
    listed = 0
    for bracket in rungs["brackets"]:
        for rung in bracket["rungs"]:
            assert rung["training"] == []  # the search is over
            for entry in rung["trials"]:
                listed += 1
                # the metric the trial reported at this rung's length
                assert entry["value"] == reported[entry["trial_id"]][rung["length"]]
                went_on = any(s > rung["length"] for s in reported[entry["trial_id"]])
                assert (entry["status"] == "promoted") == went_on, entry
    assert listed == sum(len(v) for v in reported.values())  # every result in one rung
    first = rungs["brackets"][0]["rungs"][0]["trials"]
    assert {t["status"] for t in first} == {"promoted", "stopped"}

    with browser() as b:
        page = b.page
        page.goto(login_url(master, str(exp)))
        page.wait_for_selector("#rungs .bracket[data-bracket='1'] tr[data-rung='0']")
        shown = page.eval_on_selector_all(
            "#rungs .bracket",
            """els => els.map(b => [...b.querySelectorAll('tr[data-rung]')].map(r => [
                Number(r.dataset.length),
                [...r.querySelectorAll('.rung-trial')].map(c => [Number(c.dataset.trial), c.dataset.status])]))""",
        )
        expected = [
            [[r["length"], [[t["trial_id"], t["status"]] for t in r["trials"]]] for r in b["rungs"]]
            for b in rungs["brackets"]
        ]
        assert shown == expected
        assert "bracket 0: 2 rungs" in page.inner_text("#rungs")
        b.shot("08-experiment-rungs")
        assert b.errors == []
