// An experiment's description and labels, shown and edited in place (PATCH of the experiment).
import { patch } from "./api.js";
import { h } from "./util.js";

/**
 * The editor's element and its update(experiment): it redraws only when the description or
 * labels changed, and never while the description is being edited (live updates come often).
 */
export function metaEditor(id) {
  const el = h("dl", { class: "kv", id: "experiment-meta" });
  let exp = null;
  let shown = null;
  let editing = false;
  const error = h("div", { class: "error-box", id: "meta-error", hidden: true });

  async function save(fields) {
    try {
      exp = (await patch(`/api/v1/experiments/${id}`, fields)).experiment;
      error.hidden = true;
      editing = false;
    } catch (e) {
      error.textContent = `not saved: ${e.message}`;
      error.hidden = false;
    }
    render();
  }

  function descriptionRow() {
    if (editing) {
      const input = h("textarea", { id: "description-input", rows: 3, cols: 60 });
      input.value = exp.description ?? "";
      return h("dd", {}, input, h("div", { class: "toolbar" },
        h("button", { id: "btn-save-description", onclick: () => save({ description: input.value }) }, "Save"),
        h("button", { id: "btn-cancel-description", onclick: () => { editing = false; render(); } }, "Cancel")));
    }
    return h("dd", {}, exp.description ? h("span", { id: "description" }, exp.description) : h("span", { class: "muted", id: "description" }, "none"),
      " ", h("button", { id: "btn-edit-description", class: "small", onclick: () => { editing = true; render(); } }, "Edit"));
  }

  function labelsRow() {
    const input = h("input", { id: "label-input", placeholder: "new label", size: 14, maxlength: 255 });
    const add = () => {
      const label = input.value.trim();
      if (label && !exp.labels.includes(label)) save({ labels: [...exp.labels, label] });
    };
    input.addEventListener("keydown", (ev) => { if (ev.key === "Enter") add(); });
    return h("dd", { id: "labels" },
      exp.labels.map((l) => h("span", { class: "label-chip", "data-label": l }, l,
        h("button", { class: "label-remove", title: `remove ${l}`, onclick: () => save({ labels: exp.labels.filter((x) => x !== l) }) }, "×"))),
      input, h("button", { id: "btn-add-label", class: "small", onclick: add }, "Add"));
  }

  function render() {
    shown = JSON.stringify([exp.description, exp.labels]);
    el.replaceChildren(h("dt", {}, "description"), descriptionRow(), h("dt", {}, "labels"), labelsRow(), error);
  }

  return {
    el,
    update(latest) {
      if (editing) return;
      exp = latest;
      if (JSON.stringify([exp.description, exp.labels]) !== shown) render();
    },
  };
}
