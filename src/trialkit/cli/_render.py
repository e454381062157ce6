"""Text for the CLI's views, as pure functions of the master's responses (no I/O, no rich)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

TERMINAL = frozenset({"COMPLETED", "CANCELED", "ERROR"})

# Columns whose values are identifiers to copy whole: never folded or cut.
WHOLE_COLUMNS = frozenset({"uuid", "latest checkpoint", "checkpoint"})


# An escape sequence (CSI, OSC, or ESC and one character) or any other control character but
# tab and newline: C0, DEL and C1 (a lone 0x9b is a CSI to some terminals).
_UNSAFE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -~]?)"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)
# Select Graphic Rendition: colours and bold, nothing that moves the cursor or clears.
_SGR = re.compile(r"\x1b\[[0-9;:]*m")


def terminal_text(text: str, color: bool = False) -> str:
    """``text`` (a trial's output) safe to print: every escape sequence and control character
    removed but newline and tab, so a trial cannot ring the bell, move the cursor or retitle the
    terminal; with ``color``, SGR colour sequences are kept."""

    def keep(m: re.Match[str]) -> str:
        return m[0] if color and _SGR.fullmatch(m[0]) else ""

    return _UNSAFE.sub(keep, text)


def fmt_value(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def fmt_metrics(values: dict[str, Any] | None, limit: int | None = None) -> str:
    """``k=v, ...`` for every entry; with ``limit``, the first ones and ``… (+N more)``."""
    if not values:
        return ""
    items = list(values.items())
    shown = items if limit is None else items[:limit]
    text = ", ".join(f"{k}={fmt_value(v)}" for k, v in shown)
    if len(shown) < len(items):
        text += f", … (+{len(items) - len(shown)} more)"
    return text


def pick_metrics(values: dict[str, Any] | None, first: str | None) -> dict[str, Any]:
    """The metrics with the searcher metric first, without the batches/epochs/records counters."""
    if not values:
        return {}
    counters = {"batches", "epochs", "records"}
    out = {first: values[first]} if first and first in values else {}
    out.update((k, v) for k, v in values.items() if k not in out and k not in counters)
    return out


def never_started(desc: dict[str, Any]) -> int:
    """Trials the search planned (or created) that never ran, once the experiment is over."""
    exp, trials = desc["experiment"], desc["trials"]
    if exp["state"] not in TERMINAL:
        return 0
    unlaunched = sum(1 for t in trials if not t.get("run_id"))
    max_trials = (desc.get("searcher") or {}).get("max_trials") or 0
    return unlaunched + max(int(max_trials) - len(trials), 0)


def trial_counts(desc: dict[str, Any]) -> str:
    """``3 completed · 1 errored · 2 never started``: what happened to the trials."""
    exp, trials = desc["experiment"], desc["trials"]
    launched = [t for t in trials if t.get("run_id")]
    counts: dict[str, int] = {}
    for t in launched:
        state = t["state"]
        if state == "COMPLETED":
            key = "completed"
        elif state == "ERROR":
            key = "errored"
        elif state == "CANCELED":
            key = "canceled"
        elif state == "PAUSED":
            key = "paused"
        else:
            key = "running" if t.get("pid") or t.get("slots") else "waiting"  # Ray: no pid
        counts[key] = counts.get(key, 0) + 1
    order = ["running", "waiting", "paused", "completed", "errored", "canceled"]
    parts = [f"{counts[k]} {k}" for k in order if counts.get(k)]
    if exp["state"] in TERMINAL:
        if never_started(desc):
            parts.append(f"{never_started(desc)} never started")
    else:
        max_trials = (desc.get("searcher") or {}).get("max_trials") or 0
        waiting = len(trials) - len(launched) + max(int(max_trials) - len(trials), 0)
        if waiting:
            parts.append(f"{waiting} to start")
    return " · ".join(parts) or "no trials yet"


def best_line(desc: dict[str, Any]) -> str | None:
    """``best trial 3 loss=0.0123 (lr=0.01, ...), checkpoint UUID``, or None before any
    validation."""
    best = desc.get("best_trial")
    if not best:
        return None
    line = f"best: trial {best['trial_id']} {best['metric']}={best['value']:.6g}"
    if best.get("hparams"):
        line += f" ({fmt_metrics(best['hparams'])})"
    ckpt = next(
        (t.get("latest_checkpoint") for t in desc["trials"] if t["id"] == best["trial_id"]), None
    )
    if ckpt:
        line += f", checkpoint {ckpt}"
    return line


def search_line(desc: dict[str, Any], with_best: bool = True) -> str:
    """``random 45% · 2 running · 5 completed · best trial 3 loss=0.0123``."""
    exp = desc["experiment"]
    s = desc.get("searcher") or {}
    parts = [f"{s.get('name') or 'search'} {float(exp['progress'] or 0.0) * 100:.0f}%"]
    parts.append(trial_counts(desc))
    best = desc.get("best_trial")
    if best and with_best:
        parts.append(f"best trial {best['trial_id']} {best['metric']}={best['value']:.6g}")
    return " · ".join(parts)


def failure_reason(desc: dict[str, Any]) -> str | None:
    """Why an experiment failed: its own error, else the first errored trial's."""
    exp = desc["experiment"]
    if exp.get("error"):
        return str(exp["error"])
    for t in desc["trials"]:
        if t["state"] == "ERROR" and t.get("error"):
            return f"trial {t['id']} failed: {first_line(t['error'])}"
    return None


def first_line(text: str) -> str:
    """The first non-empty line of a (possibly multi-line) error, safe to print (an error may
    quote a trial's output)."""
    lines = terminal_text(str(text)).splitlines()
    return next((ln.strip() for ln in lines if ln.strip()), "")


def ended_line(experiment_id: int, desc: dict[str, Any]) -> str:
    """``experiment 3 ended ERROR: trial 2 failed: ValueError: boom``."""
    state = desc["experiment"]["state"]
    reason = failure_reason(desc) if state != "COMPLETED" else None
    return f"experiment {experiment_id} ended {state}" + (
        f": {first_line(reason)}" if reason else ""
    )


def trial_state(t: dict[str, Any], restarts: bool = False) -> str:
    """A trial's state, with what it is doing while it runs (``ACTIVE (validating)``) and,
    with ``restarts``, how often it restarted."""
    state = str(t["state"])
    notes = [str(t["status"])] if state not in TERMINAL and t.get("status") else []
    if restarts and t.get("restarts"):
        notes.append(f"{t['restarts']} restart{'s' if t['restarts'] > 1 else ''}")
    return f"{state} ({', '.join(notes)})" if notes else state


def searcher_line(desc: dict[str, Any]) -> str:
    """``searcher: random, metric validation_loss (smaller is better), at most 16 trials``."""
    s = desc.get("searcher") or {}
    text = f"searcher: {s.get('name') or '?'}"
    if s.get("metric"):
        better = "smaller" if s.get("smaller_is_better", True) else "larger"
        text += f", metric {s['metric']} ({better} is better)"
    if s.get("max_trials"):
        n = int(s["max_trials"])
        text += f", at most {n} trial{'s' if n != 1 else ''}"
    return text


def _run_events(prev: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Runs that started, and runs that failed and will be restarted, in run order. Run N's
    failure is counted (``restarts`` = N) when it exits, before run N + 1 starts."""
    started = range((prev.get("run_id") or 0) + 1, (now.get("run_id") or 0) + 1)
    failed = range((prev.get("restarts") or 0) + 1, (now.get("restarts") or 0) + 1)
    hparams = fmt_metrics(now["hparams"]) or "no hparams"
    reason = first_line(now.get("error") or "") or "no reason recorded"
    lines = []
    for run in sorted(set(started) | set(failed)):
        if run in started:
            again = f" (restart {run - 1})" if run > 1 else ""
            lines.append(f"trial {now['id']} started{again}: {hparams}")
        if run in failed:
            lines.append(f"trial {now['id']} failed, restarting: {reason}")
    return lines


def validation_changed(before: dict[str, Any] | None, now: dict[str, Any]) -> bool:
    """Whether a trial reported a validation between two describe responses."""
    val, old_val = now.get("latest_validation") or {}, (before or {}).get("latest_validation") or {}
    return bool(val) and (val.get("steps_completed"), val.get("reported_at")) != (
        old_val.get("steps_completed"),
        old_val.get("reported_at"),
    )


def checkpoint_changed(before: dict[str, Any] | None, now: dict[str, Any]) -> bool:
    """Whether a trial registered a checkpoint between two describe responses."""
    ckpt = now.get("latest_checkpoint")
    return bool(ckpt) and ckpt != (before or {}).get("latest_checkpoint")


def trial_events(
    before: dict[str, Any] | None,
    now: dict[str, Any],
    metric: str | None,
    validations: Sequence[dict[str, Any]] | None = None,
    checkpoints: Sequence[dict[str, Any]] | None = None,
) -> list[str]:
    """One line per thing that happened to a trial between two describe responses.
    ``validations`` / ``checkpoints`` (``uuid`` and ``steps_completed``): every one reported
    since ``before``, oldest first, where the caller fetched them; else only the latest of each
    is told. A step's validation and checkpoint share one line, and steps are told in order."""
    tid, prev = now["id"], before or {}
    lines: list[str] = []
    lines += _run_events(prev, now)
    if validations is None:
        validations = [now["latest_validation"]] if validation_changed(before, now) else []
    if checkpoints is None:
        checkpoints = (
            [{"uuid": now["latest_checkpoint"], "steps_completed": None}]
            if checkpoint_changed(before, now)
            else []
        )
    lines += [f"trial {tid} {text}" for text in _step_events(validations, checkpoints, metric)]
    if now["state"] in TERMINAL and now["state"] != prev.get("state"):
        if now["state"] == "ERROR":
            reason = first_line(now.get("error") or "") or "no reason recorded"
            lines.append(f"trial {tid} failed: {reason}")
        elif now["state"] == "COMPLETED":
            lines.append(f"trial {tid} completed")
        elif now.get("run_id"):
            lines.append(f"trial {tid} canceled")
    return lines


#: Characters of a checkpoint UUID shown while following (any unique prefix names it).
SHORT_UUID = 8


def _step_events(
    validations: Sequence[dict[str, Any]],
    checkpoints: Sequence[dict[str, Any]],
    metric: str | None,
) -> list[str]:
    """Per step, in step order: its validation's metrics and its checkpoint's short UUID on one
    line (a validation and a checkpoint of the same step used to be two lines, out of order)."""
    by_step: dict[int | None, dict[str, list[str]]] = {}
    for val in validations:
        shown = fmt_metrics(pick_metrics(val.get("values"), metric))
        by_step.setdefault(val.get("steps_completed"), {"val": [], "ckpt": []})["val"].append(shown)
    trained: dict[int | None, str] = {}  # a checkpoint's step's training metrics
    for ckpt in checkpoints:
        step = ckpt.get("steps_completed")
        short = str(ckpt["uuid"])[:SHORT_UUID]
        by_step.setdefault(step, {"val": [], "ckpt": []})["ckpt"].append(short)
        if ckpt.get("values"):
            trained[step] = fmt_metrics(pick_metrics(ckpt["values"], None))
    lines = []
    for step in sorted(by_step, key=lambda s: float("inf") if s is None else s):
        vals, ckpts = by_step[step]["val"], by_step[step]["ckpt"]
        told = [*vals, *(f"checkpoint {c}" for c in ckpts)]
        if vals:
            lines.append(f"validation at step {step}: {', '.join(told)}")
        elif step in trained:
            lines.append(f"step {step}: {trained[step]}, {', '.join(told)}")
        else:
            lines.append(
                f"checkpoint {', '.join(ckpts)}" + ("" if step is None else f" at step {step}")
            )
    return lines


def column_widths(
    columns: Sequence[str], rows: Sequence[Sequence[str]], width: int
) -> list[int | None]:
    """Per column, the width that keeps it on one line, or None for a column that may wrap.

    Identifiers (UUIDs) always stay whole; other columns stay on one line while everything fits
    in ``width``, and the widest of them wrap first when it does not (never cut)."""
    longest = [
        max([len(row[i]) for row in rows] + [min(len(col), _SHORT)])
        for i, col in enumerate(columns)
    ]
    keep: list[int | None] = [
        n if col in WHOLE_COLUMNS or n <= _SHORT else None
        for col, n in zip(columns, longest, strict=True)
    ]
    gap = 2 * (len(columns) - 1)
    free = [i for i, col in enumerate(columns) if col not in WHOLE_COLUMNS and keep[i] is not None]
    free.sort(key=lambda i: -longest[i])
    wrapped_room = 10 * sum(1 for k in keep if k is None)
    while free and sum(k for k in keep if k is not None) + gap + wrapped_room > width:
        keep[free.pop(0)] = None
        wrapped_room += 10
    return keep


_SHORT = 20
