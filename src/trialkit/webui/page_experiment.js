// One experiment: actions, description and labels, the searcher metric per trial, HP vs metric, trials, the search's
// analysis (parallel coordinates, HP importance), rungs, config.
import { hpImportance } from "./analysis.js";
import { get, loadOnFirstEvent, post } from "./api.js";
import { lineChart, parallelCoordinates, rampColor, scatterChart } from "./charts.js";
import { metaEditor } from "./experiment_meta.js";
import {
  compareHash, dataTable, flatHparams, fmtHparam, fmtNum, fmtProgress, h, isProgress, pickColumn, progressBar,
  stateBadge, tensorboardLinks,
} from "./util.js";

const TERMINAL = new Set(["COMPLETED", "CANCELED", "ERROR", "DELETED"]);

export function actionButtons(exp, onDone) {
  const act = (action) => async () => {
    try { await post(`/api/v1/experiments/${exp.id}/${action}`); } catch (e) { alert(e.message); }
    onDone();
  };
  const done = TERMINAL.has(exp.state);
  return h("div", { class: "toolbar", id: "actions" },
    h("button", { id: "btn-pause", disabled: exp.state !== "ACTIVE", onclick: act("pause") }, "Pause"),
    h("button", { id: "btn-activate", disabled: exp.state !== "PAUSED", onclick: act("activate") }, "Activate"),
    h("button", { id: "btn-kill", disabled: done, onclick: act("kill") }, "Kill"),
    exp.archived
      ? h("button", { id: "btn-unarchive", onclick: act("unarchive") }, "Unarchive")
      : h("button", { id: "btn-archive", disabled: !done, onclick: act("archive") }, "Archive"),
  );
}

export async function experimentPage(main, id) {
  const header = h("div");
  const meta = metaEditor(id);
  const chartEl = h("div", { id: "metric-chart", class: "card" });
  const hpSelect = h("select", { id: "hp-select" });
  const scatterEl = h("div", { id: "hp-chart" });
  const rungsEl = h("div", { id: "rungs" });
  const parcoordsEl = h("div", { id: "parcoords" });
  const parcoordsNote = h("p", { class: "muted" });
  const importanceEl = h("div", { id: "hp-importance" });
  const configEl = h("pre", { id: "config" });
  let summary = null;
  let tensorboards = [];
  let rungs = null;
  const series = new Map(); // trial id -> {steps, values}
  let lastId = 0;
  let metricName = "";

  const trialsTable = dataTable([], { onRow: (t) => { location.hash = `#/trials/${t.id}`; } });
  const picked = new Set(); // trials ticked for the compare page
  const compare = h("button", { id: "btn-compare-trials", disabled: true, title: "the trials ticked, in one chart",
    onclick: () => { location.hash = compareHash({ trials: picked, within: [id] }); } }, "Compare");
  const chart = lineChart(chartEl, { title: "searcher metric per trial" });

  main.replaceChildren(header, meta.el,
    h("div", { class: "grid" }, chartEl,
      h("div", { class: "card" }, h("div", { class: "toolbar" }, "hyperparameter ", hpSelect), scatterEl)),
    h("h2", {}, "Trials ", compare), h("div", { id: "trials" }, trialsTable.el),
    h("h2", {}, "Search analysis"),
    h("div", { class: "card" }, h("h3", {}, "hyperparameters → searcher metric"), parcoordsEl, parcoordsNote),
    h("div", { class: "card" }, h("h3", {}, "hyperparameter importance"), importanceEl),
    h("h2", {}, "Rungs"), rungsEl,
    h("h2", {}, "Config"), configEl);

  function renderHeader() {
    const e = summary.experiment;
    const s = summary.searcher;
    header.replaceChildren(
      h("h1", {}, `Experiment ${e.id}: ${e.name} `, stateBadge(e.state)),
      h("dl", { class: "kv" },
        h("dt", {}, "progress"), h("dd", {}, progressBar(e.progress), ` ${Math.round(e.progress * 100)}%`),
        h("dt", {}, "searcher"), h("dd", {}, `${s.name ?? ""} on ${s.metric ?? "—"} (${s.smaller_is_better ? "smaller" : "larger"} is better)`),
        h("dt", {}, "best"), h("dd", { id: "best" }, summary.best_trial
          ? [`${fmtNum(summary.best_trial.value)} (trial `, h("a", { href: `#/trials/${summary.best_trial.trial_id}` }, String(summary.best_trial.trial_id)), ")"]
          : "—"),
        h("dt", {}, "trials"), h("dd", {}, Object.entries(s.trial_states).map(([k, v]) => `${v} ${k}`).join(", ")),
        h("dt", {}, "TensorBoard"), h("dd", { id: "tensorboard" }, tensorboardLinks(tensorboards, `trialkit tensorboard ${e.id}`)),
        e.error ? [h("dt", {}, "error"), h("dd", { class: "error-box" }, e.error)] : null,
      ),
      actionButtons(e, refresh));
  }

  // A trial's progress: the later of its latest training and validation reports (a trial may
  // report only validations).
  const stepsOf = (t) => {
    const steps = [t.latest_training, t.latest_validation].map((m) => m?.steps_completed ?? -1);
    return Math.max(...steps) < 0 ? null : Math.max(...steps);
  };

  function renderTrials() {
    const trials = summary.trials;
    const hps = [...new Set(trials.flatMap((t) => Object.keys(t.hparams)))].sort();
    // The batches/epochs/records counters are progress (the Steps column's tooltip), not metrics.
    const vkeys = [...new Set(trials.flatMap((t) => Object.keys(t.latest_validation?.values ?? {})))]
      .filter((k) => !isProgress(k)).sort();
    const progressOf = (t) => fmtProgress(
      [t.latest_training, t.latest_validation].filter(Boolean).sort((a, b) => b.steps_completed - a.steps_completed)[0]?.values);
    const scalar = (v) => (v !== null && typeof v === "object" ? JSON.stringify(v) : v);
    const cols = [
      pickColumn(picked, () => { compare.disabled = !picked.size; }),
      { key: "id", label: "Trial", value: (t) => t.id, num: true,
        render: (t) => h("a", { href: `#/trials/${t.id}` }, String(t.id)) },
      { key: "state", label: "State", value: (t) => t.state, render: (t) => stateBadge(t.state) },
      { key: "steps", label: "Steps", value: stepsOf, num: true,
        render: (t) => h("span", { title: progressOf(t) || null }, fmtNum(stepsOf(t))) },
      { key: "best", label: `best ${summary.searcher.metric ?? ""}`, value: (t) => t.best_validation, num: true },
      ...vkeys.map((k) => ({ key: `v:${k}`, label: k.startsWith("val") ? k : `val ${k}`, value: (t) => scalar(t.latest_validation?.values?.[k] ?? null), num: true })),
      ...hps.map((k) => ({ key: `hp:${k}`, label: k, value: (t) => scalar(t.hparams[k] ?? null), num: true })),
    ];
    trialsTable.setColumns(cols);
    trialsTable.update(trials);
    // HP vs metric
    const numeric = hps.filter((k) => trials.some((t) => typeof t.hparams[k] === "number"));
    if (hpSelect.options.length !== numeric.length) {
      hpSelect.replaceChildren(...numeric.map((k) => h("option", { value: k }, k)));
    }
    renderScatter();
    renderAnalysis();
    renderRungs();
  }

  // Parallel coordinates (a line per trial with a metric: its hyperparameters, then its best
  // searcher metric, coloured best to worst) and each hyperparameter's importance.
  function renderAnalysis() {
    const metric = summary.searcher.metric ?? "metric";
    const done = summary.trials.filter((t) => typeof t.best_validation === "number");
    if (!done.length) {
      parcoordsEl.replaceChildren(h("p", { class: "muted no-data" }, `no trial reported ${metric} yet`));
      parcoordsNote.textContent = "";
      parcoordsEl.dataset.lines = "0";
    } else {
      const hps = done.map((t) => new Map(flatHparams(t.hparams)));
      const names = [...new Set(hps.flatMap((m) => [...m.keys()]))].sort();
      const values = done.map((t) => t.best_validation);
      const lo = Math.min(...values), hi = Math.max(...values);
      const worse = (v) => (summary.searcher.smaller_is_better ? v - lo : hi - v);
      parallelCoordinates(parcoordsEl, {
        axes: [...names.map((n) => ({ label: n, values: hps.map((m) => m.get(n)) })), { label: metric, values }],
        shade: values.map((v) => (hi === lo ? 0 : worse(v) / (hi - lo))),
        titles: done.map((t) => `trial ${t.id}: ${metric} ${fmtNum(t.best_validation)}`),
        fmt: fmtHparam,
      });
      parcoordsNote.replaceChildren(`${done.length} trial${done.length === 1 ? "" : "s"} with a ${metric}; colour: best `,
        h("b", { style: `color:${rampColor(0)}` }, "blue"), " to worst ", h("b", { style: `color:${rampColor(1)}` }, "red"),
        " (hover a line for its trial)");
    }
    renderImportance(done, metric);
  }

  // The importance table: optuna's estimate from the master where it has optuna (fANOVA, or
  // its PED-ANOVA without scikit-learn), else the browser's own rank correlation; a line says
  // which. Drawn at once from the last answer, then again when the master answers.
  let fromMaster = null; // the master's last answer
  let asked = 0;
  function renderImportance(done, metric) {
    if (done.length < 3) {
      importanceEl.replaceChildren(h("p", { class: "muted" }, `needs 3 trials with a ${metric} (${done.length} so far)`));
      importanceEl.dataset.estimator = "";
      asked++; // an answer still on its way is for trials no longer shown
      return;
    }
    const local = hpImportance(done.map((t) => ({ hparams: new Map(flatHparams(t.hparams)), value: t.best_validation })));
    drawImportance(local, metric, done.length);
    const ask = ++asked;
    get(`/api/v1/experiments/${id}/importance`)
      .catch((e) => ({ estimator: null, reason: e.message }))
      .then((reply) => {
        if (ask !== asked) return;
        fromMaster = reply;
        drawImportance(local, metric, done.length);
        importanceEl.dataset.answered = String(ask);
      });
  }

  function drawImportance(local, metric, trials) {
    const optuna = fromMaster?.estimator ? fromMaster : null;
    const rho = new Map(local.map((r) => [r.name, r.rho]));
    const rows = optuna
      ? optuna.importances.map((r) => ({ name: r.name, score: r.importance, rho: rho.get(r.name) ?? null, method: optuna.estimator }))
      : local;
    const direction = (r) => (r.rho == null ? "" : r.rho > 0 ? `higher → larger ${metric}` : `higher → smaller ${metric}`);
    const estimator = optuna ? `${optuna.estimator}, computed by the master` : "rank correlation (ρ² / η²), computed in the browser";
    const why = !optuna && fromMaster?.reason ? ` (optuna's fANOVA not available: ${fromMaster.reason})` : "";
    importanceEl.dataset.estimator = optuna ? optuna.estimator : "rank correlation";
    importanceEl.replaceChildren(
      h("p", { id: "importance-estimator" }, h("b", {}, "estimator: "), estimator, h("span", { class: "muted" }, why)),
      h("div", { class: "table-wrap" }, h("table", { class: "importance" },
        h("tr", {}, ["hyperparameter", "importance", "", "estimator", "trend"].map((c) => h("th", {}, c))),
        rows.map((r) => h("tr", { "data-hp": r.name, "data-score": r.score ?? "" },
          h("td", {}, r.name),
          h("td", {}, h("span", { class: "bar" }, h("span", { style: `width:${Math.round((r.score ?? 0) * 100)}%` }))),
          h("td", { class: "num" }, r.score === null ? "constant" : r.score.toFixed(2)),
          h("td", { class: "muted" }, r.method),
          h("td", { class: "muted" }, direction(r)))))),
      h("p", { class: "muted" }, optuna
        ? `From the best ${metric} of ${optuna.trials} trials: each hyperparameter's importance by optuna's `
          + `${optuna.estimator.replace(" (optuna)", "")} evaluator (they sum to 1; what it measures: see the web UI docs). `
          + "Not causal, and noisy with few trials."
        : `From the best ${metric} of ${trials} trials: the share of the trials' order by `
          + `${metric} that each hyperparameter explains (0 to 1; see the web UI docs). Not causal, and noisy with few trials.`));
  }

  function renderScatter() {
    const k = hpSelect.value;
    const pts = summary.trials.filter((t) => typeof t.hparams[k] === "number" && t.best_validation !== null);
    if (!k || !pts.length) { scatterEl.replaceChildren(h("p", { class: "muted" }, "no numeric hyperparameter with a metric yet")); return; }
    const sc = scatterChart(scatterEl, { title: `${k} vs best ${summary.searcher.metric}`, xLabel: k, yLabel: summary.searcher.metric });
    sc.update(pts.map((t) => t.hparams[k]), pts.map((t) => t.best_validation));
  }
  hpSelect.addEventListener("change", renderScatter);

  function renderRungs() {
    // The search's rungs as the ASHA searcher holds them (its saved state, served by the master).
    const brackets = rungs?.brackets ?? [];
    if (!brackets.length) {
      rungsEl.replaceChildren(h("p", { class: "muted" }, `no rungs: searcher ${summary.searcher.name}`));
      return;
    }
    const unit = rungs.unit ? ` (${rungs.unit})` : "";
    const chip = (t) => h("a", {
      class: `rung-trial status-${t.status}`, href: t.trial_id === null ? null : `#/trials/${t.trial_id}`,
      title: t.status, "data-trial": t.trial_id, "data-status": t.status,
    }, `${t.trial_id ?? "?"}: ${t.value === null ? "—" : fmtNum(t.value)}`);
    const count = (r, status) => r.trials.filter((t) => t.status === status).length;
    rungsEl.replaceChildren(...brackets.map((b) => h("div", { class: "bracket", "data-bracket": b.index },
      brackets.length > 1 ? h("h3", {}, `bracket ${b.index}: ${b.rungs.length} rung${b.rungs.length === 1 ? "" : "s"}, ${b.max_trials} trials`) : null,
      h("div", { class: "table-wrap" }, h("table", { class: "rung-table" },
        h("tr", {}, ["rung", `trains to${unit}`, "results", "promoted", "completed", "stopped", "waiting", "training",
          `trials (${rungs.metric ?? "metric"}, best first)`].map((c) => h("th", {}, c))),
        b.rungs.map((r) => h("tr", { "data-rung": r.index, "data-length": r.length },
          h("td", {}, String(r.index)), h("td", { class: "num" }, String(r.length)),
          h("td", { class: "num" }, String(r.trials.length)),
          h("td", { class: "num" }, String(count(r, "promoted"))),
          h("td", { class: "num" }, String(count(r, "completed"))),
          h("td", { class: "num" }, String(count(r, "stopped") + count(r, "exited"))),
          h("td", { class: "num" }, String(count(r, "waiting"))),
          h("td", { class: "num" }, String(r.training.length)),
          h("td", { class: "rung-trials" }, r.trials.map(chip)))))))));
  }

  async function loadMetrics() {
    const m = await get(`/api/v1/experiments/${id}/metrics?group=validation&after_id=${lastId}`);
    metricName = m.metric;
    for (const s of m.series) {
      const cur = series.get(s.trial_id) ?? { steps: [], values: [] };
      cur.steps.push(...s.steps);
      cur.values.push(...s.values);
      series.set(s.trial_id, cur);
    }
    lastId = m.last_id;
  }

  function renderChart() {
    const lines = [...series.entries()].sort((a, b) => a[0] - b[0])
      .map(([tid, s]) => ({ label: `trial ${tid}`, steps: s.steps, values: s.values }));
    const e = summary.experiment;
    const empty = e.state === "ERROR"
      ? `nothing was reported: the experiment failed before any trial reported ${metricName || "a validation metric"}`
      : TERMINAL.has(e.state) ? `no trial reported ${metricName || "a validation metric"}`
        : `no validation metrics reported yet${metricName ? ` (waiting for ${metricName})` : ""}`;
    chart.update(lines, { empty });
    chartEl.dataset.metric = metricName;
  }

  let busy = false;
  let again = false;
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const [s, tb, r] = await Promise.all([
        get(`/api/v1/experiments/${id}/summary`),
        get(`/api/v1/experiments/${id}/tensorboards`),
        get(`/api/v1/experiments/${id}/searcher/rungs`),
        loadMetrics(),
      ]);
      summary = s;
      tensorboards = tb.tensorboards;
      rungs = r;
      renderHeader();
      meta.update(summary.experiment);
      renderChart();
      renderTrials();
      if (!configEl.textContent) configEl.textContent = JSON.stringify(summary.experiment.config, null, 2);
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }
  // The stream's first event (sent on connect) loads the page; later ones refresh it.
  const stop = await loadOnFirstEvent(id, refresh);
  return stop;
}
