"""What a user sees in the web UI at 1024 and 1400 px: no page scrolls sideways, every chart
shows data or says why not, the trial page opens on a metric with data, hyperparameters are a
readable list, and the batches/epochs/records counters are progress, not metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..integration.conftest import write_script
from ._browser import Browser, browser, login_url
from .conftest import Master

pytestmark = [pytest.mark.integration, pytest.mark.browser]

# Reports as the harnesses do (the progress counters beside the metrics); training metrics by
# name, validation ones prefixed val_ (the searcher's metric). FAIL_AT: raise after that many
# training reports (0: before reporting anything); VALIDATE_EVERY: validate every N reports.
TRIAL = """
import os
import trialkit as det
from trialkit import core

fail_at = int(os.environ.get("FAIL_AT", "-1"))
validate_every = int(os.environ.get("VALIDATE_EVERY", "1"))
lr = det.get_cluster_info().trial.hparams["lr"]
with core.init() as ctx:
    for step in range(1, 5):
        if step - 1 == fail_at:
            raise RuntimeError("the data set is corrupt")
        progress = {"batches": step * 8, "epochs": step, "records": step * 256}
        ctx.train.report_training_metrics(
            steps_completed=step * 8, metrics={"loss": lr / step, "acc": 1 - lr / step, **progress}
        )
        if fail_at < 0 and step % validate_every == 0:
            ctx.train.report_validation_metrics(
                steps_completed=step * 8, metrics={"val_loss": lr / step, **progress}
            )
"""

LONG_NAME = "a_hyperparameter_with_a_rather_long_name_for_the_trials_table"


def _config(name: str, **env: object) -> dict[str, Any]:
    return {
        "name": name,
        "entrypoint": "python3 trial.py",
        "hyperparameters": {
            "lr": {"type": "double", "minval": 0.1, "maxval": 1.0},
            **{
                f"{LONG_NAME}_{i}": {"type": "double", "minval": 0.1, "maxval": 1.0}
                for i in range(4)
            },
        },
        "searcher": {"name": "random", "metric": "val_loss", "max_trials": 1, "max_length": 32},
        "max_restarts": 0,
        "environment": {"environment_variables": [f"{k}={v}" for k, v in env.items()]},
    }


def _no_sideways_scroll(b: Browser, name: str) -> None:
    page = b.page
    width = page.evaluate("innerWidth")
    b.shot(f"readable-{name}-{width}")
    scroll = page.evaluate("document.scrollingElement.scrollWidth")
    assert scroll <= width, f"{name} at {width} px scrolls sideways ({scroll} px wide)"
    bar = page.evaluate("document.querySelector('header').getBoundingClientRect().width")
    assert bar >= width - 1, f"the top bar of {name} stops short at {width} px"


def _axis_labels_apart(page: Any) -> None:
    """The parallel-coordinates axes' labels (long hyperparameter names here) do not overlap."""
    boxes = page.eval_on_selector_all(
        "#parcoords .pc-label",
        "ts => ts.map(t => { const r = t.getBBox(); return [r.x, r.y, r.x + r.width, r.y + r.height]; })",
    )
    assert len(boxes) == 6  # lr, the 4 long names, the metric
    for i, a in enumerate(boxes):
        for c in boxes[i + 1 :]:
            apart = a[2] <= c[0] or c[2] <= a[0] or a[3] <= c[1] or c[3] <= a[1]
            assert apart, f"axis labels overlap: {a} and {c}"


def _points(page: Any, chart: str) -> int:
    return int(page.get_attribute(chart, "data-points") or 0)


def test_pages_are_readable_at_1024_and_1400_px(master: Master, tmp_path: Path) -> None:
    model = tmp_path / "model"
    write_script(model, "trial.py", TRIAL)
    ok = master.create(_config("readable"), model)
    early = master.create(_config("fails-early", FAIL_AT=0), model)
    late = master.create(_config("fails-late", FAIL_AT=2), model)
    for exp, state in ((ok, "COMPLETED"), (early, "ERROR"), (late, "ERROR")):
        assert master.wait_state(exp, {"COMPLETED", "ERROR"})["experiment"]["state"] == state
    trial = {e: master.describe(e)["trials"][0] for e in (ok, early, late)}
    hparams = trial[ok]["hparams"]

    with browser() as b:
        page = b.page
        page.goto(login_url(master))
        page.wait_for_function("document.body.dataset.ready === 'experiments'")
        ui = page.url.split("#")[0]
        for width in (1400, 1024):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(f"{ui}#/")
            page.wait_for_selector("text=fails-late")
            _no_sideways_scroll(b, "experiments")

            page.goto(f"{ui}#/experiments/{ok}")
            page.wait_for_function(
                "Number(document.querySelector('#metric-chart')?.dataset.points) > 0"
            )
            page.wait_for_selector("#trials tbody tr")
            heads = page.inner_text("#trials thead")
            assert "val_loss" in heads
            for counter in ("batches", "epochs", "records"):
                assert counter not in heads, heads  # progress, not a metric column
            _no_sideways_scroll(b, "experiment")
            _axis_labels_apart(page)

            page.goto(f"{ui}#/trials/{trial[ok]['id']}")
            page.wait_for_selector("#validation-chart .uplot")
            page.wait_for_selector("#hparams dd")
            # Opens on a metric with data in both charts; the counters are not metrics.
            assert _points(page, "#training-chart") > 0
            assert _points(page, "#validation-chart") > 0
            options = page.eval_on_selector_all(
                "#metric-select option", "os => os.map(o => o.value)"
            )
            assert "val_loss" in options and "loss" in options, options
            assert not {"batches", "epochs", "records"} & set(options), options
            assert "32 batches" in page.inner_text("#trial-progress")
            # Hyperparameters: one row each, 4 significant digits, the full value on hover.
            hp = page.eval_on_selector_all(
                "#hparams dd",
                "ds => ds.map(d => [d.previousElementSibling.textContent, d.textContent, d.title])",
            )
            assert len(hp) == len(hparams)
            for key, shown, full in hp:
                assert float(shown) == pytest.approx(hparams[key], rel=1e-3)
                assert len(shown.replace("0.", "").lstrip("0")) <= 4, shown  # 4 significant digits
                assert float(full) == hparams[key]
            _no_sideways_scroll(b, "trial")

            page.goto(f"{ui}#/experiments/{early}")
            message = page.wait_for_selector("#metric-chart .no-data")
            assert "nothing was reported" in message.inner_text()
            _no_sideways_scroll(b, "experiment-failed")

            page.goto(f"{ui}#/trials/{trial[early]['id']}")
            page.wait_for_selector("#failure-reason")
            assert "no training metrics" in page.inner_text("#training-chart .no-data")
            assert "no validation metrics" in page.inner_text("#validation-chart .no-data")

            page.goto(f"{ui}#/trials/{trial[late]['id']}")
            page.wait_for_selector("#training-chart .uplot")
            assert _points(page, "#training-chart") > 0
            assert "no validation metrics" in page.inner_text("#validation-chart .no-data")
            _no_sideways_scroll(b, "trial-failed")
        assert b.errors == []


def test_a_single_validation_stands_at_its_step(master: Master, tmp_path: Path) -> None:
    """One validation at step 32 is drawn on 0..32 (as the training chart's steps), not in the
    middle of 0..64 (uPlot's range for a lone value)."""
    model = tmp_path / "model"
    write_script(model, "trial.py", TRIAL)
    exp = master.create(_config("one-validation", VALIDATE_EVERY=4), model)
    assert master.wait_state(exp, {"COMPLETED", "ERROR"})["experiment"]["state"] == "COMPLETED"
    trial = master.describe(exp)["trials"][0]["id"]
    with browser() as b:
        page = b.page
        page.goto(login_url(master))
        ui = page.url.split("#")[0]
        page.goto(f"{ui}#/trials/{trial}")
        page.wait_for_selector("#validation-chart .uplot")
        assert page.get_attribute("#training-chart", "data-steps") == "8-32"
        low, high = map(float, page.get_attribute("#validation-chart", "data-steps").split("-"))
        assert low == 0 and 32 < high <= 32 * 1.05
        page.goto(f"{ui}#/experiments/{exp}")
        page.wait_for_selector("#metric-chart .uplot")
        low, high = map(float, page.get_attribute("#metric-chart", "data-steps").split("-"))
        assert low == 0 and 32 < high <= 32 * 1.05
        assert b.errors == []
