// Small DOM and formatting helpers.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function fmtNum(v) {
  if (v === null || v === undefined || v === "") return "";
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(3) : v.toPrecision(4).replace(/\.?0+$/, "");
}

/** The counters the harnesses add to every report: how far training got, not metrics. */
export const PROGRESS_COUNTERS = ["batches", "epochs", "records"];
export const isProgress = (name) => PROGRESS_COUNTERS.includes(name);

/** "32 batches · 4 epochs · 1024 records" from a report's values ("" without counters). */
export function fmtProgress(values) {
  return PROGRESS_COUNTERS.filter((k) => typeof values?.[k] === "number")
    .map((k) => `${fmtNum(values[k])} ${k}`).join(" · ");
}

/** Hyperparameters as [dotted key, value] pairs: a nested one ({optimizer: {lr}}) as "optimizer.lr". */
export function flatHparams(hparams) {
  const pairs = [];
  const walk = (prefix, v) => {
    if (v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length) {
      for (const [k, x] of Object.entries(v)) walk(prefix ? `${prefix}.${k}` : k, x);
    } else pairs.push([prefix, v]);
  };
  walk("", hparams ?? {});
  return pairs;
}

/** A hyperparameter's value as text: numbers to 4 significant digits, anything else as JSON. */
export const fmtHparam = (v) => (typeof v === "number" ? fmtNum(v) : typeof v === "object" ? JSON.stringify(v) : String(v));

/** Hyperparameters as a key/value list: nested ones as dotted keys, numbers to 4 significant
 * digits with the full value in a tooltip. */
export function hparamList(hparams) {
  const rows = flatHparams(hparams).map(([k, v]) =>
    [h("dt", {}, k), h("dd", { title: typeof v === "object" ? JSON.stringify(v) : String(v) }, fmtHparam(v))]);
  return rows.length ? h("dl", { class: "kv hparams", id: "hparams" }, rows.flat()) : h("span", { class: "muted" }, "none");
}

export function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const s = Math.max(0, Math.round(seconds));
  if (s >= 3600) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${s}s`;
}

export function fmtBytes(n) {
  if (!n) return "0 B";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export const stateBadge = (state) => h("span", { class: `state state-${state}` }, state);

export const progressBar = (p) =>
  h("span", { class: "bar", title: `${Math.round((p || 0) * 100)}%` },
    h("span", { style: `width:${Math.round((p || 0) * 100)}%` }));

/**
 * A sortable, filterable table. columns: [{key, label, value(row), render?(row), num?, search?}]
 * (search: false leaves a column out of the filter).
 * Returns {el, update(rows)}: update keeps the sort and filter.
 */
export function dataTable(initialColumns, { filterPlaceholder = "filter rows…", onRow } = {}) {
  let columns = initialColumns;
  let rows = [];
  let sortKey = null;
  let sortDir = 1;
  const filter = h("input", { type: "search", placeholder: filterPlaceholder, class: "table-filter" });
  const thead = h("thead");
  const tbody = h("tbody");
  const count = h("span", { class: "muted" });
  const table = h("table", {}, thead, tbody);
  const el = h("div", {}, h("div", { class: "toolbar" }, filter, count), h("div", { class: "table-wrap" }, table));

  function header() {
    thead.replaceChildren(h("tr", {}, columns.map((c) => h("th", {
      class: c.key === sortKey ? (sortDir > 0 ? "sorted-asc" : "sorted-desc") : null,
      onclick: () => { sortDir = sortKey === c.key ? -sortDir : 1; sortKey = c.key; render(); },
    }, c.label))));
  }
  function render() {
    header();
    const needle = filter.value.trim().toLowerCase();
    let shown = needle
      ? rows.filter((r) => columns.some((c) => c.search !== false && String(c.value(r) ?? "").toLowerCase().includes(needle)))
      : rows.slice();
    if (sortKey) {
      const col = columns.find((c) => c.key === sortKey);
      shown.sort((a, b) => {
        const x = col.value(a), y = col.value(b);
        if (x === y) return 0;
        if (x === null || x === undefined || x === "") return 1;
        if (y === null || y === undefined || y === "") return -1;
        return (x < y ? -1 : 1) * sortDir;
      });
    }
    tbody.replaceChildren(...shown.map((r) => h("tr", { onclick: onRow ? () => onRow(r) : null },
      columns.map((c) => h("td", { class: c.num ? "num" : null },
        c.render ? c.render(r) : fmtNum(c.value(r)))))));
    count.textContent = `${shown.length} of ${rows.length}`;
  }
  filter.addEventListener("input", render);
  return {
    el,
    update(newRows) { rows = newRows; render(); },
    setColumns(cols) { columns = cols; },
  };
}

/** Links to the TensorBoards serving this experiment, else the command that starts one. */
export function tensorboardLinks(tensorboards, command) {
  if (!tensorboards?.length) return [h("code", {}, command), " prints its address"];
  return tensorboards.map((tb, i) => [i ? ", " : "",
    h("a", { href: tb.url, target: "_blank", rel: "noopener", class: "tensorboard-link" },
      tb.trial_id === null ? `TensorBoard (experiments ${tb.experiment_ids.join(", ")})` : `TensorBoard (trial ${tb.trial_id})`)]);
}

/**
 * `load` made safe to call on every event: loads never overlap, and a call during a load asks for
 * one more afterwards. Returns the function to call (its promise settles with the current load).
 */
export function serialized(load) {
  let busy = null;
  let again = false;
  function reload() {
    if (busy) { again = true; return busy; }
    busy = load().finally(() => {
      busy = null;
      if (again) { again = false; reload().catch((e) => console.warn(e.message)); }
    });
    return busy;
  }
  return reload;
}

/** A table column of checkboxes that picks rows (by `id`) into `picked`; `onChange` after each
 * click. The click does not reach the row (which opens it). */
export function pickColumn(picked, onChange) {
  const box = (r) => h("input", {
    type: "checkbox", class: "pick", "data-id": r.id, checked: picked.has(r.id),
    onclick: (ev) => {
      ev.stopPropagation();
      if (ev.target.checked) picked.add(r.id); else picked.delete(r.id);
      onChange();
    },
  });
  return { key: "pick", label: "", value: (r) => (picked.has(r.id) ? 0 : 1), render: box, search: false };
}

/** The compare page's address for these trials and every trial of these experiments; `within`:
 * experiments the trials are known to belong to (read in one request each, not one per trial). */
export function compareHash({ trials = [], experiments = [], within = [] }) {
  const q = new URLSearchParams();
  for (const [key, ids] of [["trials", [...trials]], ["experiments", [...experiments]], ["within", [...within]]]) {
    if (ids.length) q.set(key, ids.join(","));
  }
  return `#/compare?${q}`;
}
