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
      scales: { x: { time: false, range: stepRange } },
      // The steps shown (what tests read; the axes are drawn on a canvas).
      hooks: { setScale: [(u, key) => { if (key === "x") el.dataset.steps = `${u.scales.x.min}-${u.scales.x.max}`; }] },
      axes: [{ label: xLabel }, { label: yLabel, size: 60 }],
      series: [{ label: xLabel }, ...series.map((s, i) => ({
        label: s.label, stroke: s.color || color(i), width: 1.5, spanGaps: true,
        points: { show: s.steps.length < 60 },
      }))],
    }, data, el);
  }
  return { update: build, get plot() { return plot; } };
}

/** The x range of a line chart: the steps drawn; one step alone (a single validation) stands at
 * the right of 0..step, as the training chart beside it does, not in the middle of 0..2×step. */
function stepRange(u, min, max) {
  const xs = u.data[0]; // uPlot has already widened a lone step to 0..2×step in min, max
  if (!xs.length || xs[0] !== xs[xs.length - 1]) return [min, max];
  return xs[0] > 0 ? [0, xs[0] * 1.05] : [xs[0] - 1, xs[0] + 1];
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

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element (text children as text nodes: labels are never parsed as markup). */
function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, v);
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  return el;
}

/** Blue (t = 0, best) to red (t = 1, worst), through grey. */
export function rampColor(t) {
  const [a, b] = t < 0.5 ? [[37, 99, 235], [156, 163, 175]] : [[156, 163, 175], [220, 38, 38]];
  const u = t < 0.5 ? t * 2 : (t - 0.5) * 2;
  return `rgb(${a.map((x, i) => Math.round(x + (b[i] - x) * u)).join(",")})`;
}

/** Where a value sits on an axis, 0 (bottom) to 1 (top): numbers linearly (or on a log scale
 * when all are positive and span 100x or more), anything else as evenly spaced categories. */
function axisScale(values) {
  const present = values.filter((v) => v !== undefined);
  if (present.length && present.every((v) => typeof v === "number")) {
    const log = present.every((v) => v > 0) && Math.max(...present) >= 100 * Math.min(...present);
    const f = log ? Math.log10 : (v) => v;
    const lo = Math.min(...present.map(f)), hi = Math.max(...present.map(f));
    const ticks = [...new Set([Math.min(...present), Math.max(...present)])];
    return { at: (v) => (hi === lo ? 0.5 : (f(v) - lo) / (hi - lo)), ticks, log };
  }
  const cats = [...new Set(present.map((v) => JSON.stringify(v)))].sort();
  const at = (v) => (cats.length < 2 ? 0.5 : cats.indexOf(JSON.stringify(v)) / (cats.length - 1));
  return { at, ticks: cats.map((c) => JSON.parse(c)), log: false };
}

/**
 * Parallel coordinates: an axis per entry of `axes` ({label, values: one per line}), a polyline
 * per line through its values, coloured by `shade` (0 best .. 1 worst, one per line); `titles`
 * name the lines on hover. A line without a value on an axis skips it.
 */
export function parallelCoordinates(el, { axes, shade, titles, fmt = String }) {
  const w = Math.max(480, (el.clientWidth || 800) - 4), h = 320;
  const spacing = (w - 160) / Math.max(1, axes.length - 1);
  // Labels wider than the space between axes alternate between two rows, and each is cut to
  // its room once drawn (the full name on hover and in data-name).
  const stagger = axes.some((a) => a.label.length * 8 > spacing);
  const top = stagger ? 52 : 36, bottom = 24, left = 80, right = 80;
  const x = (i) => left + (axes.length < 2 ? 0 : (i * (w - left - right)) / (axes.length - 1));
  const scales = axes.map((a) => axisScale(a.values));
  const y = (i, v) => top + (1 - scales[i].at(v)) * (h - top - bottom);
  const lines = shade.map((s, n) => svg("polyline", {
    class: "pc-line", fill: "none", stroke: rampColor(s), "stroke-width": 1.5, "stroke-opacity": 0.75,
    points: axes.map((a, i) => (a.values[n] === undefined ? null : `${x(i)},${y(i, a.values[n])}`)).filter(Boolean).join(" "),
  }, svg("title", {}, titles[n])));
  const axisEls = axes.map((a, i) => svg("g", { class: "pc-axis" },
    svg("line", { x1: x(i), x2: x(i), y1: top, y2: h - bottom, stroke: "#6b7380" }),
    svg("text", { class: "pc-label", "data-name": a.label, x: x(i), y: stagger && i % 2 ? 34 : 14, "text-anchor": "middle", "font-weight": 600 },
      a.label, svg("title", {}, a.label)),
    scales[i].log ? svg("text", { x: x(i), y: h - 6, "text-anchor": "middle", "font-size": 11 }, "log scale") : null,
    scales[i].ticks.map((t) => svg("text", { class: "pc-tick", x: x(i) + 4, y: y(i, t) + 4, "font-size": 11 }, fmt(t)))));
  el.replaceChildren(svg("svg", { width: w, height: h, class: "parcoords", role: "img" }, lines, axisEls));
  el.dataset.lines = String(lines.length);
  const room = (i) => Math.min((stagger ? 2 : 1) * spacing, 2 * Math.min(x(i), w - x(i))) - 8;
  el.querySelectorAll(".pc-label").forEach((label, i) => fitText(label, room(i)));
}

/** Shorten an SVG text (its first text node) until it is at most `width` px wide: "…" in the
 * middle, since names sharing a prefix differ at their end. */
function fitText(text, width) {
  const node = text.firstChild;
  const full = node.textContent;
  const wide = text.getComputedTextLength();
  if (wide <= width) return;
  // From the length its average character width allows, down until it fits.
  for (let n = Math.floor((full.length * width) / wide) + 1; n > 1; n--) {
    const head = Math.ceil((n - 1) / 2);
    node.textContent = `${full.slice(0, head)}…${full.slice(full.length - (n - 1 - head))}`;
    if (text.getComputedTextLength() <= width) return;
  }
}
