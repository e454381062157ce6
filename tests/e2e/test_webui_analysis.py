"""The web UI's analysis views in headless Chromium against a real master running real
experiments: trials compared across experiments (one chart, a series per trial, their
hyperparameters and final/best values side by side)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..integration.conftest import write_script
from ._browser import Browser, browser, login_url
from .conftest import Master

pytestmark = [pytest.mark.integration, pytest.mark.browser]

# Four reports of training "loss" and validation "val_loss" (lr / step: a trial's best is its
# last, and trials rank as their lr), with the progress counters the harnesses add.
TRIAL = """
import trialkit as det
from trialkit import core

hp = det.get_cluster_info().trial.hparams
with core.init() as ctx:
    for step in range(1, 5):
        ctx.train.report_training_metrics(
            steps_completed=step * 8, metrics={"loss": 2 * hp["lr"] / step, "batches": step * 8}
        )
        ctx.train.report_validation_metrics(
            steps_completed=step * 8, metrics={"val_loss": hp["lr"] / step, "batches": step * 8}
        )
"""

#: Markup in user-controlled strings: drawn as text, never run.
XSS = "<img src=x onerror=window.__xss=1>"


def _config(name: str, hparams: dict[str, Any], searcher: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "entrypoint": "python3 trial.py",
        "hyperparameters": hparams,
        "searcher": {"metric": "val_loss", "max_length": 32, **searcher},
        "max_restarts": 0,
    }


def _run(master: Master, model: Path, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Create the experiment, wait for it to complete; its trials (by id)."""
    exp = master.create(config, model)
    described = master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=120)
    assert described["experiment"]["state"] == "COMPLETED", described["experiment"]
    return sorted(described["trials"], key=lambda t: t["id"])


def _ready(b: Browser, url: str, selector: str) -> None:
    b.page.goto(url)
    b.page.wait_for_selector(selector)


def _column(page: Any, table: str, header: str) -> list[str]:
    """The cells of a table's column by its header's text."""
    return page.evaluate(
        """([table, header]) => {
          const heads = [...document.querySelectorAll(`${table} thead th`)].map(th => th.textContent);
          const i = heads.indexOf(header);
          if (i < 0) throw new Error(`no column ${header} in ${heads}`);
          return [...document.querySelectorAll(`${table} tbody tr`)].map(tr => tr.children[i].textContent);
        }""",
        [table, header],
    )


def test_compare_trials_across_experiments(master: Master, tmp_path: Path) -> None:
    model = tmp_path / "model"
    write_script(model, "trial.py", TRIAL)
    grid = {"name": "grid"}
    a = _run(
        master,
        model,
        _config(f"first {XSS}", {"lr": {"type": "categorical", "vals": [0.1, 0.2]}}, grid),
    )
    b_trials = _run(
        master,
        model,
        _config("second", {"lr": 0.4, "note": {"type": "const", "val": XSS}}, {"name": "single"}),
    )
    trials = a + b_trials
    exps = sorted({t["experiment_id"] for t in trials})

    with browser() as b:
        page = b.page
        page.goto(login_url(master))
        page.wait_for_function("document.body.dataset.ready === 'experiments'")
        ui = page.url.split("#")[0]
        # From the experiments list: tick both experiments, Compare.
        page.wait_for_selector("text=second")
        assert page.is_disabled("#btn-compare")
        for e in exps:
            page.check(f"input.pick[data-id='{e}']")
        assert "#/experiments/" not in page.url  # ticking does not open the experiment
        page.click("#btn-compare")
        page.wait_for_function(
            f"Number(document.querySelector('#compare-chart')?.dataset.series) === {len(trials)}"
        )
        chart = page.eval_on_selector(
            "#compare-chart", "e => ({...e.dataset, lines: e.querySelectorAll('.u-series').length})"
        )
        assert chart["metric"] == "val_loss" and chart["group"] == "validation", chart
        assert chart["points"] == str(4 * len(trials))
        assert chart["lines"] == len(trials) + 1  # uPlot's legend: the x series and one per trial
        assert _column(page, "#compare-table", "Trial") == [str(t["id"]) for t in trials]
        lrs = [float(v) for v in _column(page, "#compare-table", "lr")]
        assert lrs == [t["hparams"]["lr"] for t in trials]
        final = [float(v) for v in _column(page, "#compare-table", "final val_loss")]
        assert final == pytest.approx([t["hparams"]["lr"] / 4 for t in trials], rel=1e-3)
        best = [float(v) for v in _column(page, "#compare-table", "best val_loss")]
        assert best == pytest.approx(final, rel=1e-3)  # smaller is better: the last report
        assert _column(page, "#compare-table", "note") == ["—", "—", XSS]
        assert XSS in page.inner_text("#compare-table")  # the experiment's name, as text
        b.shot("compare-experiments")

        # Training metrics: their own names in the list, never the progress counters.
        page.select_option("#compare-group", "training")
        page.wait_for_function(
            "document.querySelector('#compare-chart').dataset.group === 'training'"
        )
        options = page.eval_on_selector_all("#compare-metric option", "os => os.map(o => o.value)")
        assert options == ["loss"], options
        assert page.get_attribute("#compare-chart", "data-series") == str(len(trials))
        final = [float(v) for v in _column(page, "#compare-table", "final loss")]
        assert final == pytest.approx([t["hparams"]["lr"] / 2 for t in trials], rel=1e-3)

        # From an experiment's trial table: tick one trial, Compare, add another experiment's.
        _ready(b, f"{ui}#/experiments/{a[0]['experiment_id']}", "#trials tbody tr")
        page.check(f"#trials input.pick[data-id='{a[1]['id']}']")
        page.click("#btn-compare-trials")
        page.wait_for_function("document.querySelector('#compare-chart')?.dataset.series === '1'")
        page.fill("#compare-add", str(b_trials[0]["id"]))
        page.click("#compare-add-btn")
        page.wait_for_function("document.querySelector('#compare-chart')?.dataset.series === '2'")
        assert _column(page, "#compare-table", "Trial") == [str(a[1]["id"]), str(b_trials[0]["id"])]
        b.shot("compare-trials")
        assert page.evaluate("window.__xss") is None
        assert b.errors == []
