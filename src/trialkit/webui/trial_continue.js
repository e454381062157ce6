// "Continue trial" (Determined's button): a new experiment that trains the trial on, with its
// hyperparameters, searcher single, warm-started from its latest checkpoint and running the
// model directory stored with its experiment; its config is shown to edit before it is created.
import { get, post } from "./api.js";
import { h } from "./util.js";

const KEPT_SEARCHER = ["metric", "smaller_is_better", "max_length"];

/** A trial's hyperparameter values as a config's constants (nested ones stay nested). */
function constHparams(hparams) {
  return Object.fromEntries(Object.entries(hparams).map(([name, value]) => [name,
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? constHparams(value) : { type: "const", val: value }]));
}

/** The continued experiment's config: mirrors trialkit.cli._continue.continued_config. */
export function continuedConfig(config, trial, checkpoint) {
  const searcher = config.searcher ?? {};
  const kept = KEPT_SEARCHER.filter((k) => searcher[k] !== null && searcher[k] !== undefined);
  return {
    ...config,
    hyperparameters: constHparams(trial.hparams),
    searcher: { name: "single", ...Object.fromEntries(kept.map((k) => [k, searcher[k]])), source_checkpoint_uuid: checkpoint },
    description: `continues trial ${trial.id} of experiment ${trial.experiment_id} from checkpoint ${checkpoint}`,
  };
}

/** The button that opens the dialog (disabled until the trial has a checkpoint). */
export function continueButton(trial) {
  return h("button", {
    id: "continue-trial", class: "small", disabled: !trial.latest_checkpoint,
    title: trial.latest_checkpoint ? "a new experiment warm-started from this trial's latest checkpoint" : "no checkpoint yet",
    onclick: () => openDialog(trial),
  }, "Continue trial");
}

async function openDialog(trial) {
  const exp = (await get(`/api/v1/experiments/${trial.experiment_id}`)).experiment;
  const text = h("textarea", { id: "continue-config", rows: 24, cols: 80, spellcheck: "false" });
  text.value = JSON.stringify(continuedConfig(exp.config, trial, trial.latest_checkpoint), null, 2);
  const error = h("div", { class: "error-box", id: "continue-error", hidden: true });
  const dialog = h("dialog", { id: "continue-dialog" },
    h("h2", {}, `Continue trial ${trial.id}`),
    h("p", { class: "muted" }, "The new experiment's config (JSON): edit it, then create it."),
    text, error,
    h("div", { class: "toolbar" },
      h("button", { id: "continue-create", onclick: () => create(trial, exp, text.value, error) }, "Create experiment"),
      h("button", { id: "continue-cancel", onclick: () => dialog.close() }, "Cancel")));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
}

async function create(trial, exp, text, error) {
  try {
    const config = JSON.parse(text);
    const modelDef = await get(`/api/v1/experiments/${trial.experiment_id}/model_def`);
    const body = { config, activate: true, model_def: modelDef.b64_tgz || undefined, python: exp.python ?? undefined };
    const created = (await post("/api/v1/experiments", body)).experiment;
    document.getElementById("continue-dialog")?.close();
    location.hash = `#/experiments/${created.id}`;
  } catch (e) {
    error.textContent = `not created: ${e.message}`;
    error.hidden = false;
  }
}
