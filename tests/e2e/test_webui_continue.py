"""The trial page's "Continue trial" (Determined's button), on a real master in a real browser:
the dialog shows the continued config (the CLI's ``trialkit t continue``), an edit is kept, and
the new experiment runs warm-started from the trial's latest checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..integration.test_cli_continue import source_trial
from ._browser import browser, open_ui
from .conftest import Master

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def _open_dialog(page: Any, url: str) -> str:
    """Open the trial page at ``url`` and its Continue trial dialog; the config it shows."""
    page.goto(url)
    page.click("#continue-trial:not([disabled])")
    return str(page.wait_for_selector("#continue-config").input_value())


def test_continue_trial_creates_the_edited_warm_started_experiment(
    master: Master, tmp_path: Path
) -> None:
    source, trial = source_trial(master, tmp_path)
    uuid = trial["latest_checkpoint"]

    with browser() as b:
        page, trial_page = b.page, f"{open_ui(b, master)}#/trials/{trial['id']}"
        shown = json.loads(_open_dialog(page, trial_page))
        # What the CLI would create (its --dry-run), before the edit.
        dry = json.loads(master.cli("t", "continue", str(trial["id"]), "--dry-run").stdout)
        for key in ("hyperparameters", "description"):
            assert shown[key] == dry[key]
        assert shown["searcher"] == {k: v for k, v in dry["searcher"].items() if v is not None}
        assert shown["searcher"]["source_checkpoint_uuid"] == uuid

        shown["name"] = "continued in the UI"
        page.fill("#continue-config", json.dumps(shown, indent=2))
        b.shot("trial-continue-dialog")
        page.click("#continue-create")
        page.wait_for_url("**#/experiments/*")
        created = int(page.url.rsplit("/", 1)[1])
        assert created != source
        ended = master.wait_state(created, {"COMPLETED", "ERROR"})
        assert ended["experiment"]["state"] == "COMPLETED", ended["experiment"]
        config = ended["experiment"]["config"]
        assert config["name"] == "continued in the UI"
        assert config["searcher"]["source_checkpoint_uuid"] == uuid
        [continued] = ended["trials"]
        logs = master.cli("t", "logs", str(continued["id"])).stdout
        assert f"restored {uuid} trained by trial {trial['id']}" in logs

        # Bad JSON: the dialog says why and creates nothing.
        _open_dialog(page, trial_page)
        page.fill("#continue-config", "{not json")
        page.click("#continue-create")
        assert "not created" in page.wait_for_selector("#continue-error:not([hidden])").inner_text()
        assert len(master.client.list_experiments(archived=True).experiments) == 2
        assert b.errors == []
