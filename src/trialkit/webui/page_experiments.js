// The experiments list: state, progress, best metric, searcher, duration; archive filter; ticked
// experiments' trials compared.
import { get, watchEvents } from "./api.js";
import { compareHash, dataTable, fmtDuration, h, pickColumn, progressBar, serialized, stateBadge } from "./util.js";

export async function experimentsPage(main) {
  const showArchived = h("input", { type: "checkbox", id: "show-archived" });
  const picked = new Set();
  const compare = h("button", { id: "btn-compare", disabled: true, title: "every trial of the experiments ticked, in one chart",
    onclick: () => { location.hash = compareHash({ experiments: picked }); } }, "Compare");
  const table = dataTable([
    pickColumn(picked, () => { compare.disabled = !picked.size; }),
    { key: "id", label: "ID", value: (e) => e.id, num: true,
      render: (e) => h("a", { href: `#/experiments/${e.id}` }, String(e.id)) },
    { key: "name", label: "Name", value: (e) => e.name,
      render: (e) => h("a", { href: `#/experiments/${e.id}` }, e.name) },
    { key: "labels", label: "Labels", value: (e) => e.labels.join(", ") },
    { key: "state", label: "State", value: (e) => e.state, render: (e) => stateBadge(e.state) },
    { key: "progress", label: "Progress", value: (e) => e.progress, render: (e) => progressBar(e.progress) },
    { key: "best", label: "Best metric", value: (e) => e.best, num: true },
    { key: "searcher", label: "Searcher", value: (e) => e.config?.searcher?.name ?? "" },
    { key: "metric", label: "Metric", value: (e) => e.config?.searcher?.metric ?? "" },
    { key: "duration", label: "Duration", value: (e) => e.duration, render: (e) => fmtDuration(e.duration) },
    { key: "archived", label: "Archived", value: (e) => (e.archived ? "archived" : "") },
  ], { onRow: (e) => { location.hash = `#/experiments/${e.id}`; } });
  main.replaceChildren(
    h("h1", {}, "Experiments"),
    h("div", { class: "toolbar" }, h("label", {}, showArchived, " show archived"), compare),
    table.el,
  );

  async function load() {
    const { experiments } = await get(`/api/v1/experiments${showArchived.checked ? "?all=true" : ""}`);
    const now = Date.now() / 1000;
    const bests = await Promise.all(experiments.map((e) =>
      get(`/api/v1/experiments/${e.id}/best_validation`).then((b) => b.value, () => null)));
    table.update(experiments.map((e, i) => ({
      ...e, best: bests[i], duration: (e.ended_at ?? now) - e.created_at,
    })));
  }
  const reload = serialized(load);
  showArchived.addEventListener("change", reload);
  await reload();
  // Live: the list's event stream says when an experiment is new, changed state or progress,
  // or reported metrics; the list reloads then (no polling).
  return watchEvents("/api/v1/events/experiments",
    () => { reload().catch((e) => console.warn(e.message)); });
}
