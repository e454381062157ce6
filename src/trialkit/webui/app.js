// The web UI: a hash router over four pages (experiments, an experiment, a trial, compare); JSON
// from the master's REST API.
import { LoggedOut, post } from "./api.js";
import { comparePage } from "./page_compare.js";
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
  const [path, query] = hash.split("?");
  const [kind, id, tab] = path.split("/");
  try {
    if (kind === "experiments" && id) leave = await experimentPage(main, Number(id));
    else if (kind === "trials" && id) leave = await trialPage(main, Number(id), tab);
    else if (kind === "compare") leave = await comparePage(main, new URLSearchParams(query));
    else leave = await experimentsPage(main);
    document.body.dataset.ready = hash || "experiments";
  } catch (e) {
    main.replaceChildren(h("div", { class: "error-box", id: "page-error" },
      e instanceof LoggedOut ? e.message : `could not load this page: ${e.message}`));
    document.body.dataset.ready = "error";
  }
}

/** End this browser's session (the master refuses its cookie from now on). */
async function logout() {
  leave?.();
  leave = null;
  window.removeEventListener("hashchange", route);
  try {
    await post("/ui/logout");
  } catch (e) {
    if (!(e instanceof LoggedOut)) throw e;  // already logged out: the same end
  }
  document.getElementById("logout").remove();
  main.replaceChildren(h("div", { class: "error-box", id: "logged-out" },
    "Logged out. Run 'trialkit ui' for a new login link."));
  document.body.dataset.ready = "logged-out";
}

document.getElementById("logout").addEventListener("click", logout);
window.addEventListener("hashchange", route);
route();
