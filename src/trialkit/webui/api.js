// The master's REST routes (the same the CLI uses); the session cookie authenticates them.

export class LoggedOut extends Error {}

export async function api(path, options = {}) {
  const resp = await fetch(path, { credentials: "same-origin", ...options });
  if (resp.status === 401) throw new LoggedOut("not logged in: run 'trialkit ui' for a new link");
  const body = resp.headers.get("content-type")?.includes("json") ? await resp.json() : null;
  if (!resp.ok) {
    const detail = body?.detail;
    const text = detail?.errors ? detail.errors.join("; ") : (detail ?? resp.statusText);
    throw new Error(`${resp.status}: ${typeof text === "string" ? text : JSON.stringify(text)}`);
  }
  return body;
}

export const get = (path) => api(path);
// The header proves the request comes from these pages (the master refuses the cookie without it).
const UI_HEADER = { "X-Trialkit-UI": "1" };
/** A POST (with `body` sent as JSON, when given). */
export const post = (path, body) => api(path, body === undefined
  ? { method: "POST", headers: UI_HEADER }
  : { method: "POST", headers: { ...UI_HEADER, "Content-Type": "application/json" }, body: JSON.stringify(body) });
/** Change some of a resource's fields (`body`, sent as JSON). */
export const patch = (path, body) => api(path, {
  method: "PATCH", headers: { ...UI_HEADER, "Content-Type": "application/json" }, body: JSON.stringify(body),
});

/** An EventSource on an experiment's events; `onEvent` gets each parsed event. */
export function watchExperiment(id, onEvent, onClosed = () => {}) {
  return watchEvents(`/api/v1/experiments/${id}/events`, onEvent, onClosed);
}

/** An EventSource on `url` (server-sent events of JSON); returns the function that stops it. */
export function watchEvents(url, onEvent, onClosed = () => {}) {
  const source = new EventSource(url);
  const live = document.getElementById("live");
  source.onopen = () => { if (live) live.textContent = "● live"; };
  source.onerror = () => {
    // CLOSED: refused (logged out, no such experiment), not a dropped connection it retries.
    if (source.readyState === EventSource.CLOSED) {
      if (live) live.textContent = "";
      onClosed();
    } else if (live) live.textContent = "○ reconnecting";
  };
  source.onmessage = (msg) => onEvent(JSON.parse(msg.data));
  return () => { source.close(); if (live) live.textContent = ""; };
}

/**
 * Watch an experiment, calling `load` on each event; resolves (to the stop function) once the
 * first event's load is done, so a page loads once: its data, then changes as they come.
 */
export function loadOnFirstEvent(id, load) {
  return new Promise((resolve, reject) => {
    let first = true;
    const stop = watchExperiment(id, () => {
      const done = load();
      if (first) {
        first = false;
        done.then(() => resolve(stop), (e) => { stop(); reject(e); });
      } else {
        done.catch((e) => console.warn(e.message));
      }
    }, () => {
      // Say why: the same request as JSON gives the reason (401: log in again; 404: gone).
      if (first) get(`/api/v1/experiments/${id}/summary`).then(() => reject(new Error("live updates refused")), reject);
    });
  });
}
