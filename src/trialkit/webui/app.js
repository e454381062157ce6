// The web UI: a hash router over three pages; JSON from the master's REST API.
import { LoggedOut } from "./api.js";
import { experimentPage } from "./page_experiment.js";
import { experimentsPage } from "./page_experiments.js";
import { trialPage } from "./page_trial.js";
import { h } from "./util.js";

const main = document.getElementById("main");
let leave = null;

async function route() {
  leave?.();
  leave = null;
  const hash = location.hash.replace(/^#\/?/, "");
  const [kind, id] = hash.split("/");
  try {
    if (kind === "experiments" && id) leave = await experimentPage(main, Number(id));
    else if (kind === "trials" && id) leave = await trialPage(main, Number(id));
    else leave = await experimentsPage(main);
    document.body.dataset.ready = hash || "experiments";
  } catch (e) {
    main.replaceChildren(h("div", { class: "error-box", id: "page-error" },
      e instanceof LoggedOut ? e.message : `could not load this page: ${e.message}`));
    document.body.dataset.ready = "error";
  }
}

window.addEventListener("hashchange", route);
route();
