// One trial: training and validation curves for any metric, checkpoints, logs, failure reason;
// the profiler's system metrics in their own tab.
import { get, loadOnFirstEvent } from "./api.js";
import { lineChart } from "./charts.js";
import { continueButton } from "./trial_continue.js";
import { LEVELS, logLabeller, logLineShown } from "./trial_logs.js";
import { profilerView } from "./trial_profiler.js";
import {
  compareHash, fmtBytes, fmtNum, fmtProgress, h, hparamList, isProgress, stateBadge, tensorboardLinks,
} from "./util.js";

const TERMINAL = new Set(["COMPLETED", "CANCELED", "ERROR", "DELETED"]);

export async function trialPage(main, id, tab = "overview") {
  const header = h("div");
  const metricSelect = h("select", { id: "metric-select" });
  const trainEl = h("div", { id: "training-chart", class: "card" });
  const valEl = h("div", { id: "validation-chart", class: "card" });
  const ckptEl = h("div", { id: "checkpoints" });
  const logSearch = h("input", { type: "search", id: "log-search", placeholder: "search logs…" });
  const follow = h("input", { type: "checkbox", id: "log-follow", checked: true });
  const logLevel = h("select", { id: "log-level", title: "lines of this level and above (a traceback has its message's level)" },
    h("option", { value: "" }, "any level"), LEVELS.map((l) => h("option", { value: l }, `${l}+`)));
  const logRank = h("select", { id: "log-rank", hidden: true }, h("option", { value: "" }, "any rank"));
  const labelLog = logLabeller();
  const logsEl = h("pre", { id: "logs", class: "logs" });
  const training = lineChart(trainEl, { title: "training" });
  const validation = lineChart(valEl, { title: "validation" });
  let metrics = [];
  let logLines = [];
  let lastLogId = 0;
  let desc = null;

  const profiler = profilerView();
  const overview = h("div", { id: "overview" },
    h("div", { class: "toolbar", id: "metric-toolbar" }, "metric ", metricSelect),
    h("div", { class: "grid" }, trainEl, valEl),
    h("h2", {}, "Checkpoints"), ckptEl,
    h("h2", {}, "Logs"), h("div", { class: "toolbar" }, logSearch, logLevel, logRank, h("label", {}, follow, " follow")),
    logsEl);
  const panes = { overview, profiler: profiler.el };
  const tabs = Object.keys(panes).map((name) => h("button", {
    class: "tab", id: `tab-${name}`, type: "button", onclick: () => openTab(name),
  }, name === "overview" ? "Overview" : "Profiler"));
  main.replaceChildren(header, h("div", { class: "tabs", role: "tablist" }, tabs), overview, profiler.el);

  // One pane shown at a time; the profiler's charts are drawn when shown (they size to it).
  function showTab(name) {
    for (const [pane, el] of Object.entries(panes)) el.hidden = pane !== name;
    for (const tab of tabs) tab.classList.toggle("active", tab.id === `tab-${name}`);
    if (name === "profiler" && desc) profiler.update(metrics, TERMINAL.has(desc.trial.state));
  }
  // Each tab has its address (#/trials/N/profiler), so a link or a reload opens it again.
  function openTab(name) {
    history.replaceState(null, "", `#/trials/${id}${name === "overview" ? "" : `/${name}`}`);
    showTab(name);
  }
  showTab(Object.hasOwn(panes, tab) ? tab : "overview");

  function renderHeader() {
    const t = desc.trial;
    const reason = t.error || (t.state === "ERROR" ? "the trial failed (see its logs)" : null);
    const latest = metrics.reduce((a, m) => (fmtProgress(m.values) && (!a || m.steps_completed >= a.steps_completed) ? m : a), null);
    const progress = latest ? fmtProgress(latest.values) : "";
    header.replaceChildren(h("div", {},
      h("h1", {}, `Trial ${t.id} `, stateBadge(t.state), " ", continueButton(t)),
      h("dl", { class: "kv" },
        h("dt", {}, "experiment"), h("dd", {}, h("a", { href: `#/experiments/${t.experiment_id}` }, String(t.experiment_id)),
          " · ", h("a", { href: compareHash({ trials: [t.id], within: [t.experiment_id] }), id: "compare-trial" }, "compare with other trials")),
        h("dt", {}, "hyperparameters"), h("dd", {}, hparamList(t.hparams)),
        progress ? [h("dt", {}, "progress"), h("dd", { id: "trial-progress" }, progress)] : null,
        h("dt", {}, "restarts"), h("dd", {}, String(t.restarts)),
        h("dt", {}, "best validation"), h("dd", {}, t.best_validation === null || t.best_validation === undefined ? "—" : fmtNum(t.best_validation)),
        t.status ? [h("dt", {}, "status"), h("dd", {}, t.status)] : null,
        t.early_exit ? [h("dt", {}, "early exit"), h("dd", {}, t.early_exit)] : null,
        h("dt", {}, "TensorBoard"), h("dd", { id: "tensorboard" }, tensorboardLinks(
          desc.tensorboards.filter((tb) => tb.trial_id === null || tb.trial_id === t.id),
          `trialkit tensorboard ${t.experiment_id} --trial ${t.id}`)),
      ),
      reason ? h("div", { class: "error-box", id: "failure-reason" }, h("b", {}, "Failure: "), reason) : null));
  }

  function renderCheckpoints() {
    const rows = desc.checkpoints;
    ckptEl.replaceChildren(rows.length
      ? h("div", { class: "table-wrap" }, h("table", {}, h("tr", {}, ["UUID", "steps", "state", "size", "files", ""].map((x) => h("th", {}, x))),
        rows.map((c) => {
          const files = Object.keys(c.resources || {});
          const size = Object.values(c.resources || {}).reduce((a, b) => a + b, 0);
          return h("tr", {}, h("td", {}, h("code", {}, c.uuid)), h("td", { class: "num" }, String(c.steps_completed)),
            h("td", {}, c.state), h("td", { class: "num" }, fmtBytes(size)), h("td", {}, String(files.length)),
            h("td", {}, c.state === "COMPLETED"
              ? h("a", { href: `/ui/checkpoints/${c.uuid}.tar.gz`, download: `${c.uuid}.tar.gz` }, "download")
              : ""));
        })))
      : h("p", { class: "muted" }, "no checkpoints yet"));
  }

  // Which metric a group's chart draws for the one picked: itself, else its counterpart
  // (training "loss" beside validation "val_loss", as Determined names them).
  function drawn(group, name) {
    const has = (n) => metrics.some((m) => m.group === group && typeof m.values[n] === "number");
    const other = group === "validation" ? `val_${name}` : name.replace(/^val_/, "");
    return has(name) ? name : has(other) ? other : null;
  }

  // The metric the page opens on: one with data in both charts, the searcher's first.
  function defaultMetric(names) {
    const metric = desc?.searcherMetric;
    const first = [metric, metric?.replace(/^val_/, ""), ...names].filter((n) => names.includes(n));
    return first.find((n) => drawn("training", n) && drawn("validation", n)) ?? first[0] ?? "";
  }

  function emptyMessage(group, name) {
    const ended = TERMINAL.has(desc.trial.state);
    if (!metrics.some((m) => m.group === group)) {
      return ended ? `no ${group} metrics reported: the trial ended before reporting any` : `no ${group} metrics reported yet`;
    }
    return `no ${group} values of ${name}: pick another metric`;
  }

  function renderCharts() {
    const names = [...new Set(metrics.flatMap((m) => Object.keys(m.values)
      .filter((k) => typeof m.values[k] === "number" && !isProgress(k))))].sort();
    if ([...metricSelect.options].map((o) => o.value).join() !== names.join()) {
      const keep = metricSelect.value;
      metricSelect.replaceChildren(...names.map((n) => h("option", { value: n }, n)));
      metricSelect.value = names.includes(keep) ? keep : defaultMetric(names);
    }
    metricSelect.parentElement.hidden = !names.length;  // nothing to pick until a metric comes
    const picked = metricSelect.value;
    for (const [group, chart] of [["training", training], ["validation", validation]]) {
      const name = drawn(group, picked);
      const rows = name ? metrics.filter((m) => m.group === group && typeof m.values[name] === "number") : [];
      chart.update(rows.length ? [{ label: name, steps: rows.map((m) => m.steps_completed), values: rows.map((m) => m.values[name]) }] : [],
        { empty: emptyMessage(group, picked) });
    }
  }
  metricSelect.addEventListener("change", renderCharts);

  function renderLogs() {
    const needle = logSearch.value.trim().toLowerCase();
    const shown = logLines.filter((l) => logLineShown(l, logLevel.value, logRank.value)
      && (!needle || l.line.toLowerCase().includes(needle)));
    logsEl.textContent = shown.map((l) => l.line).join("\n");
    logsEl.dataset.lines = String(shown.length);
    if (follow.checked) logsEl.scrollTop = logsEl.scrollHeight;
  }
  logSearch.addEventListener("input", renderLogs);
  logLevel.addEventListener("change", renderLogs);
  logRank.addEventListener("change", renderLogs);

  // The rank filter offers the ranks seen so far ("no rank": the launcher's own lines).
  function renderRanks() {
    const ranks = [...new Set(logLines.map((l) => l.rank))].sort((a, b) => (a ?? -1) - (b ?? -1));
    if (logRank.options.length - 1 === ranks.length) return;
    const keep = logRank.value;
    logRank.replaceChildren(h("option", { value: "" }, "any rank"),
      ...ranks.map((r) => h("option", { value: String(r) }, r === null ? "no rank" : `rank ${r}`)));
    logRank.value = keep;
    logRank.hidden = !ranks.some((r) => r !== null);
  }

  async function loadLogs() {
    const r = await get(`/api/v1/trials/${id}/logs?after_id=${lastLogId}&limit=5000`);
    if (r.logs.length) {
      logLines = logLines.concat(r.logs.map((l) => ({ ...l, ...labelLog(l.line) })));
      lastLogId = r.logs[r.logs.length - 1].id;
      renderRanks();
      renderLogs();
      if (r.more) return loadLogs();  // the page stopped at its line or size limit
    }
    return r;
  }

  let busy = false;
  async function refresh() {
    if (busy) return;
    busy = true;
    try {
      desc = await get(`/api/v1/trials/${id}`);
      if (!desc.searcherMetric) {
        const exp = await get(`/api/v1/experiments/${desc.trial.experiment_id}/summary`).catch(() => null);
        desc.searcherMetric = exp?.searcher?.metric;
      }
      metrics = (await get(`/api/v1/trials/${id}/metrics`)).metrics;
      desc.tensorboards = (await get(`/api/v1/experiments/${desc.trial.experiment_id}/tensorboards`)).tensorboards;
      renderHeader();
      renderCharts();
      if (!profiler.el.hidden) profiler.update(metrics, TERMINAL.has(desc.trial.state));
      renderCheckpoints();
      await loadLogs();
    } finally { busy = false; }
  }
  const { experiment_id: experimentId } = (await get(`/api/v1/trials/${id}`)).trial;
  const stop = await loadOnFirstEvent(experimentId, refresh);
  // Logs can grow with nothing else changing: tail them while the trial runs.
  const timer = setInterval(() => {
    if (!TERMINAL.has(desc.trial.state)) loadLogs().catch(() => {});
  }, 1500);
  return () => { stop(); clearInterval(timer); };
}
