// Charts on uPlot (vendored from npm, see vendor/README.md).
import uPlot from "./vendor/uPlot.esm.js";
import { h } from "./util.js";

const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777",
  "#65a30d", "#ea580c", "#4f46e5", "#0d9488", "#be123c"];
export const color = (i) => PALETTE[i % PALETTE.length];

function width(el) { return Math.max(320, (el.clientWidth || 640) - 4); }

/**
 * Lines over steps: series = [{label, steps: [], values: []}]. Returns {update(series, {empty})},
 * which redraws in place (uPlot.setData when the set of lines is unchanged), or shows the
 * ``empty`` message (why there is nothing to draw) when no line has a point.
 */
export function lineChart(el, { title, xLabel = "steps", yLabel = "" } = {}) {
  let plot = null;
  let labels = "";
  function build(series, { empty = "no data yet" } = {}) {
    if (!series.some((s) => s.steps.length)) {
      // Nothing to draw: say why instead of an empty frame.
      plot?.destroy();
      plot = null;
      labels = "";
      el.dataset.points = "0";
      el.dataset.series = "0";
      el.replaceChildren(title ? h("div", { class: "u-title" }, title) : "", h("p", { class: "muted no-data" }, empty));
      return;
    }
    const data = series.length
      ? uPlot.join(series.map((s) => [s.steps, s.values.map((v) => (v === null ? null : +v))]))
      : [[]];
    const key = series.map((s) => s.label).join("\u0000");
    // How many points are drawn: what tests and the benchmark wait on.
    el.dataset.points = String(series.reduce((n, s) => n + s.steps.length, 0));
    el.dataset.series = String(series.filter((s) => s.steps.length).length);
    if (plot && key === labels) { plot.setData(data); return; }
    plot?.destroy();
    labels = key;
    el.replaceChildren();
    plot = new uPlot({
      title, width: width(el), height: 300,
      legend: { show: series.length <= 12 },
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: false } },
      axes: [{ label: xLabel }, { label: yLabel, size: 60 }],
      series: [{ label: xLabel }, ...series.map((s, i) => ({
        label: s.label, stroke: s.color || color(i), width: 1.5, spanGaps: true,
        points: { show: s.steps.length < 60 },
      }))],
    }, data, el);
  }
  return { update: build, get plot() { return plot; } };
}

/** Points only (an HP against the metric): xs, ys and a title per axis. */
export function scatterChart(el, { title, xLabel, yLabel }) {
  let plot = null;
  return {
    update(xs, ys) {
      const order = xs.map((_, i) => i).sort((a, b) => xs[a] - xs[b]);
      const data = [order.map((i) => xs[i]), order.map((i) => ys[i])];
      plot?.destroy();
      el.replaceChildren();
      plot = new uPlot({
        title, width: width(el), height: 300,
        scales: { x: { time: false } },
        legend: { show: false },
        axes: [{ label: xLabel }, { label: yLabel, size: 60 }],
        series: [{ label: xLabel }, {
          label: yLabel, stroke: color(0), fill: color(0) + "80",
          paths: () => null, points: { show: true, size: 7 },
        }],
      }, data, el);
    },
  };
}
