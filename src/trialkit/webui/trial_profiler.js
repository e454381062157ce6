// A trial's profiler tab: the system samples the Core API profiler reports (as metric groups
// cpu, memory, disk, network, and gpu where a profiler reports one) drawn as time series, and
// the Trial harness's timings per reporting period (group timings: data loading vs. step).
import { lineChart } from "./charts.js";
import { fmtNum, h } from "./util.js";

/** The profiler's groups in the order shown, with their charts' titles. */
const GROUPS = [
  ["cpu", "CPU utilisation (%)"],
  ["gpu", "GPU utilisation (%) and free memory (GiB), per GPU"],
  ["memory", "free memory (GiB)"],
  ["disk", "disk throughput (bytes/s)"],
  ["network", "network throughput (bytes/s)"],
  ["timings", "harness timings: seconds per reporting period"],
];
/** The x axis of a group whose reports count batches rather than profiler reports. */
const X_LABELS = new Map([["timings", "batches trained"]]);
const TITLES = new Map(GROUPS);

// A profiler report's values: {agent: {name: number}} (the agent is the node it sampled).
const isSample = (values) => Object.keys(values).length > 0 && Object.values(values).every((v) => v !== null && typeof v === "object");

/** The profiler's reports among a trial's metrics, by group: [{steps_completed, values, reported_at}]. */
export function profilerReports(metrics) {
  const found = new Map();
  for (const m of metrics) {
    if (m.group === "training" || m.group === "validation" || !isSample(m.values)) continue;
    found.set(m.group, [...(found.get(m.group) ?? []), m]);
  }
  const known = GROUPS.map(([g]) => g).filter((g) => found.has(g));
  return new Map([...known, ...[...found.keys()].filter((g) => !TITLES.has(g)).sort()].map((g) => [g, found.get(g)]));
}

/** An agent's values as [name, number] pairs: the gpu group nests one level, {uuid: {name: number}},
 * whose pairs are named "uuid name". */
function flatValues(values) {
  return Object.entries(values).flatMap(([name, v]) => {
    if (typeof v === "number") return [[name, v]];
    if (v !== null && typeof v === "object") {
      return Object.entries(v).filter(([, x]) => typeof x === "number").map(([sub, x]) => [`${name} ${sub}`, x]);
    }
    return [];
  });
}

/** A line per agent and value name: x is the report's number (reports come at a fixed period). */
function linesOf(reports) {
  const lines = new Map();
  const agents = new Set(reports.flatMap((r) => Object.keys(r.values)));
  for (const r of reports) {
    for (const [agent, values] of Object.entries(r.values)) {
      for (const [name, v] of flatValues(values)) {
        const label = agents.size > 1 ? `${agent} ${name}` : name;
        const line = lines.get(label) ?? { label, steps: [], values: [] };
        line.steps.push(r.steps_completed);
        line.values.push(v);
        lines.set(label, line);
      }
    }
  }
  return [...lines.values()];
}

/** How often the reports came, from their arrival times ("" with fewer than two). */
function period(reports) {
  if (reports.length < 2) return "";
  const span = reports[reports.length - 1].reported_at - reports[0].reported_at;
  return `, over ${fmtNum(span)} s (about every ${fmtNum(span / (reports.length - 1))} s)`;
}

/** The tab's element and its update(metrics, ended) that draws the profiler's groups. */
export function profilerView() {
  const el = h("div", { id: "profiler" });
  const charts = new Map(); // group -> {card, chart}
  function update(metrics, ended) {
    const groups = profilerReports(metrics);
    el.dataset.groups = [...groups.keys()].join(",");
    if (!groups.size) {
      charts.clear();
      el.replaceChildren(h("p", { class: "muted no-data", id: "profiler-empty" }, ended
        ? "no profiler data: this trial did not turn the profiler on (profiling.enabled: true in the config, or context.profiler.on() in Core API code)"
        : "no profiler data yet: it comes once the trial turns the profiler on (profiling.enabled: true, or context.profiler.on())"));
      return;
    }
    if ([...charts.keys()].join() !== [...groups.keys()].join()) {
      charts.clear();
      const cards = [...groups.keys()].map((g) => {
        const card = h("div", { class: "card profiler-chart", id: `profiler-${g}`, "data-group": g });
        charts.set(g, { card, chart: lineChart(card, { title: TITLES.get(g) ?? g, xLabel: X_LABELS.get(g) ?? "profiler report" }) });
        return card;
      });
      el.replaceChildren(h("p", { class: "muted", id: "profiler-note" }), h("div", { class: "grid" }, cards));
    }
    for (const [g, reports] of groups) charts.get(g).chart.update(linesOf(reports));
    const first = [...groups].find(([g]) => !X_LABELS.has(g))?.[1];
    const timed = groups.get("timings");
    el.querySelector("#profiler-note").textContent = [
      first ? `${first.length} profiler report${first.length === 1 ? "" : "s"}${period(first)}; each the average of its samples` : "",
      timed ? `harness timings at ${timed.length} training report${timed.length === 1 ? "" : "s"}: seconds fetching batches (dataloader_next) and training on them (train_batch) since the report before` : "",
    ].filter(Boolean).join(" · ");
  }
  return { el, update };
}
