"""The experiment page's action buttons on a real master: an action the master refuses (the
experiment ended after the page last drew it) is said in an alert with the master's reason, and
changes nothing (issue 31 item 5: the REST answer was 200 and the alert never fired)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._browser import browser, open_ui
from ._experiments import config, run_experiment
from .conftest import Master

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def test_an_action_refused_by_the_master_is_alerted_with_its_reason(
    master: Master, model: Path
) -> None:
    [trial] = run_experiment(master, model, config("ended", {"lr": 0.1}, {"name": "single"}))
    exp = trial["experiment_id"]
    with browser() as b:
        page = b.page
        ui = open_ui(b, master)
        page.goto(f"{ui}#/experiments/{exp}")
        page.wait_for_selector("#btn-kill")
        assert page.is_disabled("#btn-kill") and page.is_disabled("#btn-activate")

        alerts: list[str] = []
        page.on("dialog", lambda d: (alerts.append(d.message), d.accept()))
        # A page drawn while the experiment still ran had these buttons enabled.
        for n, action in enumerate(("kill", "activate"), start=1):
            # In one step: the page redraws its buttons after each answer.
            page.evaluate(
                "a => { const b = document.querySelector(`#btn-${a}`); b.disabled = false;"
                " b.click(); }",
                action,
            )
            for _ in range(100):  # the alert comes after the master's answer
                if len(alerts) == n:
                    break
                page.wait_for_timeout(100)
        assert alerts == [
            f"409: experiment {exp} is already COMPLETED; nothing to kill",
            f"409: experiment {exp} is already COMPLETED; nothing to activate",
        ]
        page.wait_for_selector("#btn-kill:disabled")  # redrawn from the master's state
    assert master.describe(exp)["experiment"]["state"] == "COMPLETED"
