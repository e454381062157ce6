"""The web UI's analysis views in headless Chromium against a real master running real
experiments: trials compared across experiments (one chart, a series per trial, their
hyperparameters and final/best values side by side); a search's parallel coordinates and
hyperparameter importance (and the importance estimator's functions, run in the browser); a
trial's profiler tab."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from ..integration._ranked_logs import LAUNCH, WORKER
from ..integration.conftest import write_script
from ._browser import Browser, browser, open_ui
from ._experiments import XSS, config, run_experiment
from .conftest import Master

pytestmark = [pytest.mark.integration, pytest.mark.browser]


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


def test_compare_trials_across_experiments(master: Master, model: Path) -> None:
    grid = {"name": "grid"}
    a = run_experiment(
        master,
        model,
        config(f"first {XSS}", {"lr": {"type": "categorical", "vals": [0.1, 0.2]}}, grid),
    )
    b_trials = run_experiment(
        master,
        model,
        config("second", {"lr": 0.4, "note": {"type": "const", "val": XSS}}, {"name": "single"}),
    )
    trials = a + b_trials
    exps = sorted({t["experiment_id"] for t in trials})

    with browser() as b:
        page = b.page
        ui = open_ui(b, master)
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
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url))
        page.click("#btn-compare-trials")
        page.wait_for_function("document.querySelector('#compare-chart')?.dataset.series === '1'")
        # The address names the trials' experiment: its summary, never a request per trial
        # (200 trials' own requests took 8 s: bench/webui_render.py).
        assert f"within={a[0]['experiment_id']}" in page.url
        assert [u for u in asked if "/api/v1/trials/" in u] == []
        # From a trial's page: its link opens the compare page with it alone.
        _ready(b, f"{ui}#/trials/{a[1]['id']}", "#compare-trial")
        page.click("#compare-trial")
        page.wait_for_function("document.querySelector('#compare-chart')?.dataset.series === '1'")
        page.fill("#compare-add", str(b_trials[0]["id"]))
        page.click("#compare-add-btn")
        page.wait_for_function("document.querySelector('#compare-chart')?.dataset.series === '2'")
        assert _column(page, "#compare-table", "Trial") == [str(a[1]["id"]), str(b_trials[0]["id"])]
        b.shot("compare-trials")
        assert page.evaluate("window.__xss") is None
        assert b.errors == []


def test_search_analysis_parallel_coordinates_and_importance(master: Master, model: Path) -> None:
    # A grid of 3 lr x 2 optimizers: the metric (lr / 4 at best) follows lr alone.
    hparams = {
        "lr": {"type": "double", "minval": 0.1, "maxval": 0.4, "count": 3},
        "optimizer": {"type": "categorical", "vals": ["sgd", XSS]},
    }
    trials = run_experiment(master, model, config("grid", hparams, {"name": "grid"}))
    assert len(trials) == 6
    best = min(trials, key=lambda t: t["hparams"]["lr"])

    with browser() as b:
        page = b.page
        open_ui(b, master, str(trials[0]["experiment_id"]))
        page.wait_for_selector("#parcoords svg")
        lines = page.eval_on_selector_all(
            "#parcoords polyline",
            "ls => ls.map(l => [l.querySelector('title').textContent, l.getAttribute('stroke'),"
            " l.getAttribute('points').split(' ').length])",
        )
        assert len(lines) == len(trials)  # a polyline per trial
        assert all(n == 3 for _, _, n in lines)  # through lr, optimizer and the metric
        shade = dict((title.split(":")[0], stroke) for title, stroke, _ in lines)
        assert shade[f"trial {best['id']}"] == "rgb(37,99,235)"  # the best trial: blue
        labels = page.eval_on_selector_all(
            "#parcoords .pc-label", "ts => ts.map(t => t.dataset.name)"
        )
        assert labels == ["lr", "optimizer", "val_loss"]
        ticks = page.eval_on_selector_all("#parcoords .pc-tick", "ts => ts.map(t => t.textContent)")
        assert XSS in ticks and "sgd" in ticks  # a categorical axis names its values, as text

        rows = page.eval_on_selector_all(
            "#hp-importance tr[data-hp]",
            "rs => rs.map(r => [r.dataset.hp, Number(r.dataset.score)])",
        )
        assert [name for name, _ in rows] == ["lr", "optimizer"]
        assert rows[0][1] == pytest.approx(1.0)  # lr orders the trials by metric exactly
        assert rows[1][1] == pytest.approx(0.0)  # both optimizers have the same metrics

        # The page says which estimator it shows: the master's optuna one where the master's
        # environment has optuna, else its own rank correlation, saying why (tox -e webui has
        # no optuna: the second).
        page.wait_for_selector("#hp-importance[data-answered]")
        label = page.inner_text("#importance-estimator")
        estimator = page.get_attribute("#hp-importance", "data-estimator")
        if importlib.util.find_spec("optuna") is None:
            assert estimator == "rank correlation"
            assert label == (
                "estimator: rank correlation (ρ² / η²), computed in the browser (optuna's fANOVA"
                " not available: optuna is not installed in the master's environment)"
            )
        else:
            fanova = importlib.util.find_spec("sklearn") is not None
            assert estimator == ("fANOVA (optuna)" if fanova else "PED-ANOVA (optuna)")
            assert label == f"estimator: {estimator}, computed by the master"
            shown = page.eval_on_selector_all(
                "#hp-importance tr[data-hp]", "rs => rs.map(r => r.dataset.hp)"
            )
            assert shown[0] == "lr"
        b.shot("search-analysis")
        assert page.evaluate("window.__xss") is None
        assert b.errors == []


def test_importance_estimators_in_the_browser(master: Master) -> None:
    """The estimator's functions on known inputs, in the page's own JavaScript."""
    with browser() as b:
        page = b.page
        open_ui(b, master)
        got = page.evaluate(
            """async () => {
              const a = await import("./analysis.js");
              const rows = (xs, ys) => xs.map((x, i) => ({hparams: new Map([["x", x], ["c", 1]]), value: ys[i]}));
              return {
                ranks: a.ranks([10, 30, 20, 20]),
                monotone: a.spearman([1, 2, 3, 4], [1, 8, 27, 64]),
                reversed: a.spearman([1, 2, 3, 4], [9, 5, 2, 1]),
                flat: a.spearman([1, 2, 3], [5, 5, 5]),
                eta: a.etaSquared(["a", "a", "b", "b"], [1, 3, 5, 7]),
                apart: a.etaSquared(["a", "a", "b", "b"], [1, 1, 5, 5]),
                importance: a.hpImportance(rows([1, 2, 3, 4], [4, 3, 2, 1])),
                categorical: a.hpImportance(rows(["u", "v", "u", "v"], [1, 2, 3, 4])),
              };
            }"""
        )
    assert got["ranks"] == [1, 4, 2.5, 2.5]  # ties share their average rank
    assert got["monotone"] == pytest.approx(1.0)  # not linear, but monotone
    assert got["reversed"] == pytest.approx(-1.0)
    assert got["flat"] is None  # a metric that never changes explains nothing
    assert got["eta"] == pytest.approx(16 / 20)  # between-group 2*(2^2)*2=16 of 20
    assert got["apart"] == pytest.approx(1.0)
    x, c = got["importance"]
    assert (x["name"], x["score"], x["rho"]) == ("x", pytest.approx(1.0), pytest.approx(-1.0))
    assert (c["name"], c["score"]) == ("c", None)  # a constant hyperparameter
    x = got["categorical"][0]
    assert x["name"] == "x" and x["method"].startswith("η²")
    assert x["score"] == pytest.approx(0.2)  # ranks 1,3 vs 2,4: means 2 and 3 of 2.5; 1 of 5


def test_profiler_tab_draws_the_system_samples(master: Master, model: Path) -> None:
    env = {"environment_variables": ["PROFILE=1"]}
    [profiled] = run_experiment(
        master, model, config("profiled", {"lr": 0.1}, {"name": "single"}, environment=env)
    )
    [plain] = run_experiment(master, model, config("plain", {"lr": 0.1}, {"name": "single"}))
    reports = {
        group: master.client.request(
            "GET", f"/api/v1/trials/{profiled['id']}/metrics?group={group}"
        )["metrics"]
        for group in ("cpu", "memory", "disk", "network")
    }
    assert all(len(r) >= 3 for r in reports.values()), {g: len(r) for g, r in reports.items()}

    with browser() as b:
        page = b.page
        ui = open_ui(b, master)
        _ready(b, f"{ui}#/trials/{profiled['id']}", "#training-chart .uplot")
        assert page.is_hidden("#profiler")
        page.click("#tab-profiler")
        page.wait_for_selector("#profiler-network .uplot")
        assert page.is_hidden("#overview")
        charts = page.eval_on_selector_all(
            "#profiler .profiler-chart",
            "cs => cs.map(c => [c.dataset.group, Number(c.dataset.points), Number(c.dataset.series),"
            " c.querySelector('.u-title').textContent])",
        )
        assert [c[0] for c in charts] == ["cpu", "memory", "disk", "network"]
        lines = {
            "cpu": 1,
            "memory": 1,
            "disk": 2,
            "network": 2,
        }  # read and write, sent and received
        for group, points, series, title in charts:
            assert series == lines[group], (group, series)
            assert points == len(reports[group]) * lines[group], (group, points)
            assert title  # what it draws, with its unit
        assert "CPU utilisation (%)" in charts[0][3]
        assert f"{len(reports['cpu'])} profiler reports" in page.inner_text("#profiler-note")
        b.shot("trial-profiler")
        # The tab has its address: a reload (or the link) opens it again.
        assert page.url.endswith(f"#/trials/{profiled['id']}/profiler"), page.url
        page.reload()
        page.wait_for_selector("#profiler-network .uplot")
        assert page.is_hidden("#overview")
        # Back to the overview: the curves are still there.
        page.click("#tab-overview")
        assert page.is_visible("#training-chart .uplot") and page.is_hidden("#profiler")
        assert page.url.endswith(f"#/trials/{profiled['id']}"), page.url

        _ready(b, f"{ui}#/trials/{plain['id']}", "#training-chart .uplot")
        page.click("#tab-profiler")
        empty = page.wait_for_selector("#profiler-empty")
        assert "no profiler data" in empty.inner_text()
        assert page.eval_on_selector_all("#profiler .profiler-chart", "cs => cs.length") == 0
        assert b.errors == []


# The profiler's gpu group as it reports it on a GPU node (NVML: tests/gpu/test_profiler.py), one
# level per GPU uuid, reported through the same metric path; this machine has no GPU.
GPU_REPORTS = """
from trialkit import core

with core.init() as ctx:
    for n in range(1, 4):
        per_gpu = {f"GPU-{i}": {"gpu_util": 30.0 * i + n, "gpu_free_memory": 70.0 - n} for i in (0, 1)}
        ctx.train.report_metrics("gpu", n, {"node-1": per_gpu})
    ctx.train.report_validation_metrics(steps_completed=3, metrics={"val_loss": 1.0})
"""


def test_profiler_tab_draws_each_gpu_of_the_gpu_group(master: Master, tmp_path: Path) -> None:
    write_script(tmp_path / "gpu", "trial.py", GPU_REPORTS)
    [trial] = run_experiment(master, tmp_path / "gpu", config("gpu", {}, {"name": "single"}))
    with browser() as b:
        page = b.page
        ui = open_ui(b, master)
        page.goto(f"{ui}#/trials/{trial['id']}")
        page.click("#tab-profiler")
        page.wait_for_selector("#profiler-gpu .uplot")
        chart = page.eval_on_selector(
            "#profiler-gpu",
            "c => ({series: c.dataset.series, points: c.dataset.points,"
            " title: c.querySelector('.u-title').textContent,"
            " legend: c.querySelector('.u-legend').textContent})",
        )
        assert chart["series"] == "4" and chart["points"] == str(4 * 3), chart  # 2 GPUs x 2
        assert "GPU-0 gpu_util" in chart["legend"] and "GPU-1 gpu_free_memory" in chart["legend"]
        assert chart["title"].startswith("GPU utilisation")
        assert b.errors == []


# The shared Trial loop (no framework: a plain-Python strategy) with the profiler on: fetching a
# batch takes 20 ms, training on it 2 ms; a report every 4 batches, 32 batches.
TIMED_LOOP = """
import random, time
from trialkit import core
from trialkit.harness import Batch, LoopSettings, Target, TrainLoop

class Slow:
    def __init__(self): self.seen = 0
    def callbacks(self): return {}
    def use_hooks(self, hooks): pass
    def build_train_iterator(self, skip, seed):
        def batches():
            for i in range(skip, 10**6):
                time.sleep(0.02)
                yield i
        return batches(), 8
    def train_batch(self, batch, epoch_idx, batch_idx, epoch_len):
        time.sleep(0.002)
        self.seen += 1
        return {"loss": 1.0 / (batch + 1)}
    def batch_length(self, batch): return 1
    def reset_reducers(self): pass
    def training_reducer_metrics(self): return {}
    def metrics_to_python(self, batches): return batches
    def validate(self, test_mode): return {"val_loss": 1.0 / self.seen}
    def stop_requested(self): return False
    def save(self, path, rng_state): (path / "seen").write_text(str(self.seen))
    def load(self, path): return None
    def training_started(self): pass
    def training_ended(self): pass
    def capture_rng(self): return {}
    def restore_rng(self, state): pass
    def fresh_seed(self): return 1
    def checkpoint_metadata(self): return {"framework": "plain-python", "format": "text"}

with core.init() as ctx:
    ctx.profiler.on(sampling_interval=0.1, samples_per_report=2)
    settings = LoopSettings(validation_period=Batch(16), checkpoint_period=Batch(32),
                            reporting_period=Batch(4), checkpoint_policy="none",
                            searcher_metric="val_loss")
    TrainLoop(ctx, Slow(), settings).run([Target(Batch(32))])
"""


def test_profiler_tab_draws_the_harness_timings(master: Master, tmp_path: Path) -> None:
    write_script(tmp_path / "timed", "trial.py", TIMED_LOOP)
    [trial] = run_experiment(
        master, tmp_path / "timed", config("timed", {"lr": 0.1}, {"name": "single"})
    )
    reports = master.client.request("GET", f"/api/v1/trials/{trial['id']}/metrics?group=timings")
    timings = reports["metrics"]
    assert [m["steps_completed"] for m in timings] == list(range(4, 33, 4))
    for m in timings:  # 4 batches a report: 80 ms fetching, 8 ms training (and some slack)
        seconds = m["values"]["localhost"]
        assert 0.08 <= seconds["dataloader_next"] < 1.0, seconds
        assert 0.008 <= seconds["train_batch"] < seconds["dataloader_next"], seconds

    with browser() as b:
        page = b.page
        ui = open_ui(b, master)
        _ready(b, f"{ui}#/trials/{trial['id']}", "#training-chart .uplot")
        page.click("#tab-profiler")
        page.wait_for_selector("#profiler-timings .uplot")
        chart = page.eval_on_selector(
            "#profiler-timings",
            "c => ({...c.dataset, title: c.querySelector('.u-title').textContent,"
            " legend: [...c.querySelectorAll('.u-series .u-label')].map(l => l.textContent)})",
        )
        assert chart["series"] == "2" and chart["points"] == str(2 * len(timings)), chart
        assert chart["title"] == "harness timings: seconds per reporting period"
        assert "dataloader_next" in chart["legend"] and "train_batch" in chart["legend"], chart
        groups = page.get_attribute("#profiler", "data-groups")
        assert groups is not None and groups.endswith("timings"), groups  # after the system's
        note = page.inner_text("#profiler-note")
        assert f"harness timings at {len(timings)} training reports" in note, note
        b.shot("trial-profiler-timings")
        assert b.errors == []


def _log_lines(page: Any) -> list[str]:
    return [ln for ln in page.inner_text("#logs").splitlines() if ln]


def test_trial_logs_filtered_by_level_and_rank(master: Master, model: Path) -> None:
    write_script(model, "launch.py", LAUNCH)
    write_script(model, "worker.py", WORKER)
    launched = config("logs", {"lr": 0.1}, {"name": "single"}, entrypoint="python3 launch.py")
    exp = master.create(launched, model)
    [trial] = master.wait_state(exp, {"COMPLETED", "ERROR"})["trials"]

    with browser() as b:
        page = b.page
        ui = open_ui(b, master)
        _ready(b, f"{ui}#/trials/{trial['id']}", "#log-rank:not([hidden])")
        page.wait_for_function(
            "document.querySelector('#logs').textContent.includes('both workers')"
        )
        everything = _log_lines(page)
        assert any("debug from rank 0" in ln for ln in everything)
        ranks = page.eval_on_selector_all("#log-rank option", "os => os.map(o => o.textContent)")
        assert ranks == ["any rank", "no rank", "rank 0", "rank 1"]

        page.select_option("#log-level", "WARNING")
        shown = _log_lines(page)
        assert sum("warning from rank" in ln for ln in shown) == 2
        assert any("error from rank 1" in ln for ln in shown)
        assert not any("info from" in ln or "debug from" in ln for ln in shown)
        assert not any("both workers" in ln for ln in shown)  # no level of its own
        assert any("ValueError: bad batch" in ln for ln in shown)  # the ERROR's traceback

        page.select_option("#log-level", "ERROR")
        page.select_option("#log-rank", "1")
        shown = _log_lines(page)
        assert shown[0].startswith("[rank=1] || ERROR: ") and "error from rank 1" in shown[0]
        assert "Traceback (most recent call last):" in shown[1]
        assert shown[-1] == "[rank=1] || ValueError: bad batch"
        assert all(ln.startswith("[rank=1] || ") for ln in shown)

        page.select_option("#log-level", "")
        page.select_option("#log-rank", "0")
        shown = _log_lines(page)
        assert [ln.split("|| ", 1)[1].split(": ", 1)[0] for ln in shown] == [
            "DEBUG",
            "INFO",
            "WARNING",
        ]
        b.shot("trial-logs-filtered")
        assert b.errors == []
