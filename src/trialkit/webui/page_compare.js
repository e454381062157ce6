// Compare trials, of one experiment or several: one metric's curves in one chart (training or
// validation), and the trials' hyperparameters and final/best values side by side.
import { get, watchExperiment } from "./api.js";
import { color, lineChart } from "./charts.js";
import {
  compareHash, dataTable, flatHparams, fmtHparam, fmtNum, h, isProgress, serialized, stateBadge,
} from "./util.js";

const GROUPS = ["validation", "training"];
const ids = (text) => (text ?? "").split(",").map(Number).filter((n) => Number.isInteger(n) && n > 0);

/** The page for `params`: trials=1,2 and/or experiments=3 (every trial of those). */
export async function comparePage(main, params) {
  const trialIds = ids(params.get("trials"));
  const expIds = ids(params.get("experiments"));
  const groupSelect = h("select", { id: "compare-group" }, GROUPS.map((g) => h("option", { value: g }, g)));
  const metricSelect = h("select", { id: "compare-metric" });
  const addInput = h("input", { id: "compare-add", placeholder: "trial IDs, e.g. 4, 12", size: 16 });
  const chartEl = h("div", { id: "compare-chart", class: "card" });
  const chart = lineChart(chartEl, { title: "" });
  const table = dataTable([], { onRow: (t) => { location.hash = `#/trials/${t.id}`; } });
  const add = () => {
    location.hash = compareHash({ trials: [...new Set([...shownIds(), ...ids(addInput.value.replace(/\s/g, ""))])] });
  };
  main.replaceChildren(
    h("h1", {}, "Compare trials"),
    h("div", { class: "toolbar" }, "metric ", groupSelect, metricSelect,
      h("span", { class: "muted" }, " · add trials "), addInput, h("button", { id: "compare-add-btn", onclick: add }, "Add")),
    chartEl,
    h("h2", {}, "Hyperparameters and metrics"), h("div", { id: "compare-table" }, table.el));
  if (!trialIds.length && !expIds.length) {
    chart.update([], { empty: "no trials picked: tick trials (or experiments) and press Compare, or add trial IDs above" });
    return () => {};
  }

  let trials = []; // TrialOut of every trial compared, in the order asked
  const searchers = new Map(); // experiment id -> {name, metric, smaller_is_better, expName}
  const metrics = new Map(); // `${trial}/${group}` -> [{steps_completed, values}]
  const shownIds = () => trials.map((t) => t.id);

  async function loadTrials() {
    const own = await Promise.all(trialIds.map((t) => get(`/api/v1/trials/${t}`)));
    const exps = [...new Set([...expIds, ...own.map((d) => d.trial.experiment_id)])];
    const summaries = await Promise.all(exps.map((e) => get(`/api/v1/experiments/${e}/summary`)));
    const byId = new Map();
    for (const s of summaries) {
      searchers.set(s.experiment.id, { ...s.searcher, expName: s.experiment.name });
      for (const t of s.trials) byId.set(t.id, t);
    }
    const wanted = [...trialIds, ...summaries.filter((s) => expIds.includes(s.experiment.id))
      .flatMap((s) => s.trials.map((t) => t.id))];
    trials = [...new Set(wanted)].map((t) => byId.get(t)).filter(Boolean);
  }

  async function loadMetrics(group) {
    const rows = await Promise.all(trials.map((t) => get(`/api/v1/trials/${t.id}/metrics?group=${group}`)));
    trials.forEach((t, i) => metrics.set(`${t.id}/${group}`, rows[i].metrics));
  }

  const rowsOf = (t, group) => metrics.get(`${t.id}/${group}`) ?? [];

  // The metric a group opens on: the searcher's (or its training counterpart), else the first.
  function defaultMetric(group, names) {
    const metric = searchers.get(trials[0]?.experiment_id)?.metric ?? "";
    return [metric, metric.replace(/^val_/, "")].find((n) => names.includes(n)) ?? names[0] ?? "";
  }

  function renderMetricSelect(group) {
    const names = [...new Set(trials.flatMap((t) => rowsOf(t, group).flatMap((m) => Object.keys(m.values)
      .filter((k) => typeof m.values[k] === "number" && !isProgress(k)))))].sort();
    if ([...metricSelect.options].map((o) => o.value).join() !== names.join()) {
      const keep = metricSelect.value;
      metricSelect.replaceChildren(...names.map((n) => h("option", { value: n }, n)));
      metricSelect.value = names.includes(keep) ? keep : defaultMetric(group, names);
    }
  }

  const label = (t) => `trial ${t.id} (exp ${t.experiment_id})`;

  function renderChart(group, name) {
    chart.update(trials.map((t, i) => {
      const rows = rowsOf(t, group).filter((m) => typeof m.values[name] === "number");
      return { label: label(t), color: color(i), steps: rows.map((m) => m.steps_completed), values: rows.map((m) => m.values[name]) };
    }), { empty: name ? `no trial reported ${group} ${name}` : `none of these trials reported ${group} metrics yet` });
    chartEl.dataset.metric = name;
    chartEl.dataset.group = group;
  }

  // A trial's final and best value of the metric; best as its experiment's searcher ranks them.
  function finalAndBest(t, group, name) {
    const values = rowsOf(t, group).map((m) => m.values[name]).filter((v) => typeof v === "number");
    if (!values.length) return [null, null];
    const smaller = searchers.get(t.experiment_id)?.smaller_is_better ?? true;
    return [values[values.length - 1], smaller ? Math.min(...values) : Math.max(...values)];
  }

  function renderTable(group, name) {
    const hps = [...new Set(trials.flatMap((t) => flatHparams(t.hparams).map(([k]) => k)))].sort();
    const hpOf = (t) => new Map(flatHparams(t.hparams));
    const rows = trials.map((t, i) => {
      const [final, best] = finalAndBest(t, group, name);
      return { ...t, index: i, final, best, hp: hpOf(t) };
    });
    const exp = (t) => searchers.get(t.experiment_id) ?? {};
    table.setColumns([
      { key: "id", label: "Trial", value: (t) => t.id, num: true,
        render: (t) => h("span", {}, h("span", { class: "swatch", style: `background:${color(t.index)}` }),
          h("a", { href: `#/trials/${t.id}` }, String(t.id))) },
      { key: "exp", label: "Experiment", value: (t) => `${t.experiment_id} ${exp(t).expName ?? ""}`,
        render: (t) => h("a", { href: `#/experiments/${t.experiment_id}` }, `${t.experiment_id}: ${exp(t).expName ?? ""}`) },
      { key: "state", label: "State", value: (t) => t.state, render: (t) => stateBadge(t.state) },
      { key: "searcher", label: "searcher metric", value: (t) => exp(t).metric ?? "" },
      { key: "searcher-best", label: "best (searcher)", value: (t) => t.best_validation, num: true },
      { key: "final", label: `final ${name}`, value: (t) => t.final, num: true },
      { key: "best", label: `best ${name}`, value: (t) => t.best, num: true },
      ...hps.map((k) => ({ key: `hp:${k}`, label: k, value: (t) => (t.hp.has(k) ? fmtHparam(t.hp.get(k)) : ""),
        render: (t) => (t.hp.has(k) ? fmtHparam(t.hp.get(k)) : "—") })),
    ]);
    table.update(rows);
  }

  function render() {
    const group = groupSelect.value;
    renderMetricSelect(group);
    renderChart(group, metricSelect.value);
    renderTable(group, metricSelect.value);
    chartEl.dataset.trials = String(trials.length);
  }

  async function load() {
    await loadTrials();
    metrics.clear();
    await loadMetrics(groupSelect.value);
    render();
  }
  const reload = serialized(load);
  groupSelect.addEventListener("change", () => {
    if (trials.some((t) => !metrics.has(`${t.id}/${groupSelect.value}`))) loadMetrics(groupSelect.value).then(render);
    else render();
  });
  metricSelect.addEventListener("change", render);
  await reload();
  // Live: each experiment's event stream (its first event, sent on connect, is what was loaded).
  const stops = [...searchers.keys()].map((e) => {
    let first = true;
    return watchExperiment(e, () => {
      if (first) first = false;
      else reload().catch((err) => console.warn(err.message));
    });
  });
  return () => stops.forEach((stop) => stop());
}
