"""The web UI in headless Chromium against a real master running real experiments: the pages
render, a curve gains points as the trial reports (no reload), pause works from its button, a
failed trial's reason shows, and nothing is logged to the console as an error."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from ..integration.conftest import write_script
from ._browser import browser, login_url
from .conftest import Master

pytestmark = [pytest.mark.integration, pytest.mark.browser]

# Reports a validation every step (so the experiment chart grows), checkpoints every 5 steps,
# resumes from its latest checkpoint and honours preemption (so pause works).
TRIAL = """
import json, os, sys, time
import trialkit as det
from trialkit import core

TOTAL = int(os.environ.get("TOTAL", "40"))
info = det.get_cluster_info()
lr = info.trial.hparams["lr"]
with core.init() as ctx:
    step = 0
    if info.latest_checkpoint:
        with ctx.checkpoint.restore_path(info.latest_checkpoint) as path:
            step = json.loads((path / "state.json").read_text())["step"]
    print(f"starts at step {step}", flush=True)
    if os.environ.get("FAIL"):
        print("loading the data set", flush=True)
        raise RuntimeError("the data set is corrupt: shard 3 has no labels")
    while step < TOTAL:
        time.sleep(0.15)
        step += 1
        loss = lr / step
        if not os.environ.get("VALIDATION_ONLY"):
            ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": loss, "acc": 1 - loss})
        ctx.train.report_validation_metrics(steps_completed=step, metrics={"loss": loss})
        if step % 5 == 0:
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _):
                (path / "state.json").write_text(json.dumps({"step": step}))
            if ctx.preempt.should_preempt():
                print(f"preempted at step {step}", flush=True)
                sys.exit(0)
"""


def _config(name: str, trials: int, **env: object) -> dict:
    return {
        "name": name,
        "entrypoint": "python3 trial.py",
        "hyperparameters": {"lr": {"type": "double", "minval": 0.1, "maxval": 1.0}},
        "searcher": {
            "name": "random",
            "metric": "loss",
            "max_trials": trials,
            "max_length": {"batches": 4000},
        },
        "max_restarts": 0,
        "environment": {"environment_variables": [f"{k}={v}" for k, v in env.items()]},
    }


def _points(page: object) -> int:
    return int(page.get_attribute("#metric-chart", "data-points") or 0)  # type: ignore[attr-defined]


def test_watch_pause_and_a_failure_in_the_browser(master: Master, tmp_path: Path) -> None:
    model = tmp_path / "model"
    write_script(model, "trial.py", TRIAL)
    exp = master.create(_config("webui-search", 2, TOTAL=4000), model)
    failed = master.create(_config("webui-fails", 1, FAIL=1), model)
    with browser() as b:
        page = b.page
        page.goto(login_url(master))
        page.wait_for_selector("text=webui-search")
        page.wait_for_selector("text=webui-fails")
        b.shot("01-experiments")

        page.goto(page.url.split("#")[0] + f"#/experiments/{exp}")
        page.wait_for_function(
            "Number(document.querySelector('#metric-chart')?.dataset.points) > 3"
        )
        page.evaluate("window.__noReload = true")
        before = _points(page)
        page.wait_for_function(
            f"Number(document.querySelector('#metric-chart').dataset.points) > {before + 5}"
        )
        assert page.evaluate("window.__noReload") is True  # the curve grew without a reload
        assert "lr" in page.inner_text("#trials thead")
        b.shot("02-experiment-live")

        page.click("#btn-pause")
        page.wait_for_selector("h1 .state-PAUSED")
        assert master.describe(exp)["experiment"]["state"] == "PAUSED"
        page.wait_for_selector("#btn-activate:not([disabled])")
        b.shot("03-experiment-paused")

        trial = master.describe(exp)["trials"][0]["id"]
        page.goto(page.url.split("#")[0] + f"#/trials/{trial}")
        page.wait_for_selector("#validation-chart .uplot")
        page.wait_for_function(
            "document.querySelector('#logs').textContent.includes('starts at step')"
        )
        link = page.wait_for_selector("#checkpoints a >> text=download")
        b.shot("04-trial")
        archive = page.request.get(page.url.split("/ui/")[0] + link.get_attribute("href"))
        assert archive.status == 200
        with tarfile.open(fileobj=io.BytesIO(archive.body()), mode="r:gz") as tar:
            assert any(n.endswith("/state.json") for n in tar.getnames())
        assert "null" not in page.inner_text("main > div")

        master.wait_state(failed, {"ERROR", "COMPLETED"})
        failed_trial = master.describe(failed)["trials"][0]["id"]
        page.goto(page.url.split("#")[0] + f"#/trials/{failed_trial}")
        reason = page.wait_for_selector("#failure-reason")
        page.wait_for_function(
            "document.querySelector('#logs').textContent.includes('shard 3 has no labels')"
        )
        b.shot("05-failed-trial")
        assert reason.inner_text().startswith("Failure:")

        # Archive the failed experiment from its page: the list hides it until asked.
        page.goto(page.url.split("#")[0] + f"#/experiments/{failed}")
        page.click("#btn-archive")
        page.wait_for_selector("#btn-unarchive")
        assert master.describe(failed)["experiment"]["archived"] is True
        page.goto(page.url.split("#")[0] + "#/")
        page.wait_for_selector("text=webui-search")
        assert "webui-fails" not in page.inner_text("table")
        page.check("#show-archived")
        page.wait_for_selector("text=webui-fails")
        b.shot("06-experiments-archived")

        master.cli("experiment", "kill", str(exp))
        assert b.errors == []


def test_the_experiments_list_shows_a_new_experiment_without_a_reload(
    master: Master, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    write_script(model, "trial.py", TRIAL)
    master.create(_config("webui-first", 1, TOTAL=3), model)
    with browser() as b:
        page = b.page
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url))
        page.goto(login_url(master))
        page.wait_for_selector("text=webui-first")
        page.wait_for_function("document.body.dataset.ready === 'experiments'")
        page.evaluate("window.__noReload = true")
        second = master.create(_config("webui-second", 1, TOTAL=3), model)
        page.wait_for_selector(f"#main a[href='#/experiments/{second}']", timeout=30_000)
        # Its state follows too: the list is told when the experiment completes.
        master.wait_state(second, {"COMPLETED"})
        row = page.locator("tr", has=page.locator(f"a[href='#/experiments/{second}']")).first
        row.locator(".state-COMPLETED").wait_for(timeout=30_000)
        assert page.evaluate("window.__noReload") is True
        # Told by the list's event stream (server-sent events), not by polling.
        assert any(u.endswith("/api/v1/events/experiments") for u in asked), asked
        b.shot("07-experiments-live")
        assert b.errors == []


def test_the_steps_column_counts_a_trial_that_reports_only_validations(
    master: Master, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    write_script(model, "trial.py", TRIAL)
    exp = master.create(_config("webui-validation-only", 1, TOTAL=3, VALIDATION_ONLY=1), model)
    master.wait_state(exp, {"COMPLETED"})
    with browser() as b:
        page = b.page
        page.goto(login_url(master, str(exp)))
        page.wait_for_selector("#trials tbody tr")
        steps = page.evaluate(
            """() => {
                const heads = [...document.querySelectorAll('#trials thead th')];
                const col = heads.findIndex((th) => th.textContent.startsWith('Steps'));
                return document.querySelector('#trials tbody tr').children[col].textContent;
            }"""
        )
        assert steps == "3"
        assert b.errors == []


def test_the_log_out_button_ends_the_session(master: Master) -> None:
    with browser() as b:
        page = b.page
        page.goto(login_url(master))
        page.wait_for_function("document.body.dataset.ready === 'experiments'")
        page.click("#logout")
        page.wait_for_selector("#logged-out")
        assert b.errors == []
        # The cookie is gone, and the master refuses the session from now on.
        assert page.goto(page.url.split("#")[0]).status == 401
