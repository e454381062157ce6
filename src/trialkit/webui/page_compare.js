// Compare trials, of one experiment or several: one metric's curves in one chart (training or
// validation), and the trials' hyperparameters and final/best values side by side.
import { get, watchExperiment } from "./api.js";
import { color, lineChart } from "./charts.js";
import {
  compareHash, dataTable, flatHparams, fmtHparam, fmtNum, h, isProgress, serialized, stateBadge,
} from "./util.js";

const GROUPS = ["validation", "training"];
const ids = (text) => (text ?? "").split(",").map(Number).filter((n) => Number.isInteger(n) && n > 0);

/** The page for `params`: trials=1,2 and/or experiments=3 (every trial of those); within=4:
 * experiments the trials belong to, as the pages linking here know (else a request per trial). */
export async function comparePage(main, params) {
  const trialIds = ids(params.get("trials"));
  const expIds = ids(params.get("experiments"));
  const withinIds = ids(params.get("within"));
  const groupSelect = h("select", { id: "compare-group" }, GROUPS.map((g) => h("option", { value: g }, g)));
  const metricSelect = h("select", { id: "compare-metric" });
  const addInput = h("input", { id: "compare-add", placeholder: "trial IDs, e.g. 4, 12", size: 16 });
  const chartEl = h("div", { id: "compare-chart", class: "card" });
  const chart = lineChart(chartEl, { title: "" });
  const table = dataTable([], { onRow: (t) => { location.hash = `#/trials/${t.id}`; } });
  const add = () => {
    const more = ids(addInput.value.replace(/\s/g, ""));
    location.hash = compareHash({ trials: [...new Set([...shownIds(), ...more])], within: [...searchers.keys()] });
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
  // `${group}/${metric}` -> trial id -> {steps, values}: one request per experiment (the route
  // the experiment chart uses, cached by the master), not one per trial.
  const series = new Map();
  const shownIds = () => trials.map((t) => t.id);

  // The trials' experiments' summaries: those named first, then those of trials not in them.
  // A trial's own request (heavy: every validation) says which experiment it is in, whose
  // summary then holds its siblings: a few at a time, so 200 ids of one experiment cost a few
  // trial requests and one summary, not 200 (7 s).
  async function loadTrials() {
    const summary = (e) => get(`/api/v1/experiments/${e}/summary`);
    // An experiment only said to hold the trials may be gone: its trials are then asked for.
    const hint = withinIds.filter((e) => !expIds.includes(e)).map((e) => summary(e).catch(() => null));
    const summaries = (await Promise.all([...expIds.map(summary), ...hint])).filter(Boolean);
    const named = new Set(summaries.map((s) => s.experiment.id));
    const found = new Set(summaries.flatMap((s) => s.trials.map((t) => t.id)));
    for (let left = trialIds.filter((t) => !found.has(t)); left.length; left = left.filter((t) => !found.has(t))) {
      const own = await Promise.all(left.slice(0, 8).map((t) => get(`/api/v1/trials/${t}`)));
      const more = [...new Set(own.map((d) => d.trial.experiment_id))].filter((e) => !named.has(e));
      const added = await Promise.all(more.map(summary));
      summaries.push(...added);
      more.forEach((e) => named.add(e));
      for (const s of added) s.trials.forEach((t) => found.add(t.id));
      own.forEach((d) => found.add(d.trial.id));
    }
    const byId = new Map();
    for (const s of summaries) {
      searchers.set(s.experiment.id, { ...s.searcher, expName: s.experiment.name });
      for (const t of s.trials) byId.set(t.id, t);
    }
    const wanted = [...trialIds, ...summaries.filter((s) => expIds.includes(s.experiment.id))
      .flatMap((s) => s.trials.map((t) => t.id))];
    trials = [...new Set(wanted)].map((t) => byId.get(t)).filter(Boolean);
  }

  async function loadSeries(group, name) {
    const key = `${group}/${name}`;
    if (!name || series.has(key)) return;
    const exps = [...new Set(trials.map((t) => t.experiment_id))];
    const q = `group=${group}&metric=${encodeURIComponent(name)}`;
    const replies = await Promise.all(exps.map((e) => get(`/api/v1/experiments/${e}/metrics?${q}`)));
    series.set(key, new Map(replies.flatMap((r) => r.series.map((s) => [s.trial_id, s]))));
  }

  // A trial's points of the metric (none where it reported no number).
  function pointsOf(t, group, name) {
    const s = series.get(`${group}/${name}`)?.get(t.id) ?? { steps: [], values: [] };
    const keep = s.values.map((v) => typeof v === "number");
    return { steps: s.steps.filter((_, i) => keep[i]), values: s.values.filter((_, i) => keep[i]) };
  }

  // The metric a group opens on: the searcher's (or its training counterpart), else the first.
  function defaultMetric(names) {
    const metric = searchers.get(trials[0]?.experiment_id)?.metric ?? "";
    return [metric, metric.replace(/^val_/, "")].find((n) => names.includes(n)) ?? names[0] ?? "";
  }

  // The metrics to pick from: those of the trials' latest report of the group.
  function renderMetricSelect(group) {
    const latest = (t) => (group === "training" ? t.latest_training : t.latest_validation)?.values ?? {};
    const names = [...new Set(trials.flatMap((t) => Object.entries(latest(t))
      .filter(([k, v]) => typeof v === "number" && !isProgress(k)).map(([k]) => k)))].sort();
    if ([...metricSelect.options].map((o) => o.value).join() !== names.join()) {
      const keep = metricSelect.value;
      metricSelect.replaceChildren(...names.map((n) => h("option", { value: n }, n)));
      metricSelect.value = names.includes(keep) ? keep : defaultMetric(names);
    }
  }

  const label = (t) => `trial ${t.id} (exp ${t.experiment_id})`;

  function renderChart(group, name) {
    chart.update(trials.map((t, i) => {
      return { label: label(t), color: color(i), ...pointsOf(t, group, name) };
    }), { empty: name ? `no trial reported ${group} ${name}` : `none of these trials reported ${group} metrics yet` });
    chartEl.dataset.metric = name;
    chartEl.dataset.group = group;
  }

  // A trial's final and best value of the metric; best as its experiment's searcher ranks them.
  function finalAndBest(t, group, name) {
    const { values } = pointsOf(t, group, name);
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
    renderChart(group, metricSelect.value);
    renderTable(group, metricSelect.value);
    chartEl.dataset.trials = String(trials.length);
  }

  // Pick the group's metric, load its points where not loaded yet, draw.
  async function show() {
    renderMetricSelect(groupSelect.value);
    await loadSeries(groupSelect.value, metricSelect.value);
    render();
  }

  // One job at a time: after an event (stale), the trials and their points again; after a
  // pick, only the points it needs.
  let stale = true;
  const update = serialized(async () => {
    if (stale) {
      stale = false;
      await loadTrials();
      series.clear();
    }
    await show();
  });
  const reload = () => { stale = true; return update(); };
  for (const select of [groupSelect, metricSelect]) {
    select.addEventListener("change", () => { update().catch((e) => console.warn(e.message)); });
  }
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
