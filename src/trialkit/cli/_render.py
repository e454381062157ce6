"""Text for the CLI's views, as pure functions of the master's responses (no I/O, no rich)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .._messages import summary_line

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


#: What the harnesses add to each report to say how far training got: progress, not metrics.
PROGRESS_COUNTERS = ("batches", "epochs", "records")


def split_progress(values: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """A report's values as (metrics, progress): the batches/epochs/records counters apart."""
    values = values or {}
    metrics = {k: v for k, v in values.items() if k not in PROGRESS_COUNTERS}
    progress = {k: values[k] for k in PROGRESS_COUNTERS if k in values}
    return metrics, progress


def pick_metrics(values: dict[str, Any] | None, first: str | None) -> dict[str, Any]:
    """The metrics with the searcher metric first, without the batches/epochs/records counters."""
    metrics, _ = split_progress(values)
    out = {first: metrics[first]} if first and first in metrics else {}
    out.update((k, v) for k, v in metrics.items() if k not in out)
    return out


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 checkpoint``, ``2 checkpoints``: a count with its noun in the right number."""
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def progress_percent(exp: dict[str, Any]) -> str:
    """``45%``: the search's progress; never 100% before the experiment ended (a trial that
    trained its full length may still validate, checkpoint and exit)."""
    percent = float(exp.get("progress") or 0.0) * 100
    if exp["state"] not in TERMINAL:
        percent = min(percent, 99.0)
    return f"{percent:.0f}%"


RESTARTING = "restarting"
"""How the master's status for a trial in its restart back-off begins."""


def _count_key(t: dict[str, Any]) -> str:
    """The trial-table state a trial is counted under in the summary."""
    state = t["state"]
    if state in _COUNT_KEYS:
        return _COUNT_KEYS[state]
    if not t.get("run_id"):
        return "to start"
    if t.get("pid") or t.get("slots"):  # Ray: no pid
        return "running"
    return RESTARTING if str(t.get("status") or "").startswith(RESTARTING) else "waiting"


_COUNT_KEYS = {
    "COMPLETED": "completed",
    "ERROR": "errored",
    "CANCELED": "canceled",
    "PAUSED": "paused",
}
_COUNT_ORDER = ["running", RESTARTING, "waiting", "paused", "completed", "errored", "canceled"]


def trial_counts(desc: dict[str, Any]) -> str:
    """``3 completed · 1 errored · 2 canceled (1 never started)``: every trial in the table
    counted once under its state, then the trials the search planned but did not create."""
    exp, trials = desc["experiment"], desc["trials"]
    counts: dict[str, int] = {}
    unstarted: dict[str, int] = {}
    for t in trials:
        key = _count_key(t)
        counts[key] = counts.get(key, 0) + 1
        if not t.get("run_id") and key in ("canceled", "errored"):  # local runs have no run id
            unstarted[key] = unstarted.get(key, 0) + 1
    parts = []
    for key in _COUNT_ORDER:
        if counts.get(key):
            never = f" ({unstarted[key]} never started)" if unstarted.get(key) else ""
            parts.append(f"{counts[key]} {key}{never}")
    max_trials = 0 if exp.get("unmanaged") else (desc.get("searcher") or {}).get("max_trials")
    planned = max(int(max_trials or 0) - len(trials), 0)
    if exp["state"] in TERMINAL:
        if counts.get("to start"):  # not ended with their experiment: none ever ran
            parts.append(f"{counts['to start']} never started")
        if planned:
            parts.append(f"{planned} never created")
    elif counts.get("to start", 0) + planned:
        parts.append(f"{counts.get('to start', 0) + planned} to start")
    return " · ".join(parts) or "no trials yet"


def trial_states_cell(states: dict[str, int]) -> str:
    """``3 completed, 1 running``: an experiment's trials by state, for ``experiment list``."""
    words = {"ACTIVE": "active", "PAUSED": "paused", "COMPLETED": "completed"}
    words.update(ERROR="errored", CANCELED="canceled")
    shown = [f"{states[s]} {w}" for s, w in words.items() if states.get(s)]
    shown += [f"{n} {s.lower()}" for s, n in states.items() if s not in words and n]
    return ", ".join(shown) or "none"


def best_line(desc: dict[str, Any]) -> str | None:
    """``best trial 3 loss=0.0123 (lr=0.01, ...), checkpoint UUID``, or None before any
    validation."""
    best = desc.get("best_trial")
    if not best:
        return None
    line = f"best: trial {best['trial_id']} {best['metric']}={best['value']:.6g}"
    if best.get("hparams"):
        line += f" ({fmt_metrics(best['hparams'])})"
    if best.get("checkpoint"):
        line += f", checkpoint {best['checkpoint']}"
    return line


def search_line(desc: dict[str, Any], with_best: bool = True) -> str:
    """``random 45% · 2 running · 5 completed · best trial 3 loss=0.0123``."""
    exp = desc["experiment"]
    s = desc.get("searcher") or {}
    parts = [f"{s.get('name') or 'search'} {progress_percent(exp)}"]
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
    """A (possibly multi-line) error on one line, safe to print (an error may quote a trial's
    output): its first non-empty line, with its last where the first only introduces it."""
    return summary_line(terminal_text(str(text)).splitlines())


def logs_hint(trial_id: int) -> str:
    """Where a failed trial's whole output (its traceback) is."""
    return f"(full output: trialkit t logs {trial_id})"


def _first_errored(desc: dict[str, Any]) -> int | None:
    return next((t["id"] for t in desc["trials"] if t["state"] == "ERROR"), None)


def ended_line(experiment_id: int, desc: dict[str, Any]) -> str:
    """``experiment 3 ended ERROR: trial 2 failed: ValueError: boom (full output: trialkit t
    logs 2)``."""
    state = desc["experiment"]["state"]
    reason = failure_reason(desc) if state != "COMPLETED" else None
    errored = _first_errored(desc) if reason else None
    hint = f" {logs_hint(errored)}" if errored is not None else ""
    return f"experiment {experiment_id} ended {state}" + (
        f": {first_line(reason)}{hint}" if reason else ""
    )


def trial_state(t: dict[str, Any], restarts: bool = False) -> str:
    """A trial's state, with what it is doing while it runs (``ACTIVE (validating)``) and,
    with ``restarts``, how often it restarted."""
    state = str(t["state"])
    notes = [str(t["status"])] if state not in TERMINAL and t.get("status") else []
    if restarts and t.get("restarts") and not str(t.get("status") or "").startswith(RESTARTING):
        notes.append(plural(int(t["restarts"]), "restart"))
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
        text += f", at most {plural(n, 'trial')}"
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
            lines.append(f"trial {tid} failed: {reason} {logs_hint(tid)}")
        elif now["state"] == "COMPLETED":
            lines.append(f"trial {tid} completed")
        elif now.get("run_id"):
            lines.append(f"trial {tid} canceled")
    return lines


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


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
    columns: Sequence[str], rows: Sequence[Sequence[str]], width: int | None
) -> list[int] | None:
    """Per column, the width it gets: every column at its full width when that fits in
    ``width`` (or when ``width`` is None: output that is not a terminal is never wrapped), else
    the widest wrappable columns narrowed first, never below their longest word, so text breaks
    only between words. Identifiers (UUIDs) and short values always stay whole on one line.
    None when even that does not fit: the rows are better shown one field a line."""
    full = [max([len(row[i]) for row in rows] + [len(col)]) for i, col in enumerate(columns)]
    least = [
        n
        if col in WHOLE_COLUMNS or n <= _SHORT
        else max([_longest_word(col)] + [_longest_word(row[i]) for row in rows])
        for i, (col, n) in enumerate(zip(columns, full, strict=True))
    ]
    widths = list(full)
    if width is None:
        return widths
    room = width - 2 * (len(columns) - 1)
    while sum(widths) > room:
        narrowable = [i for i in range(len(widths)) if widths[i] > least[i]]
        if not narrowable:
            return None
        widths[max(narrowable, key=lambda i: widths[i])] -= 1
    return widths


def record_lines(
    columns: Sequence[str], rows: Sequence[Sequence[str]], width: int | None
) -> list[str]:
    """Rows as records, one field a line (``trial 3``, then ``  hparams: lr=0.1, ...`` folded
    between words): for a table whose words cannot fit side by side in ``width``."""
    out: list[str] = []
    for row in rows:
        out.append(f"{columns[0]} {row[0]}")
        for col, text in zip(columns[1:], row[1:], strict=True):
            if not text:
                continue
            label = f"  {col}: "
            room = max((width or 0) - len(label), 20) if width else len(text)
            folded = wrap_cell(text, room).split("\n")
            out.append(label + folded[0])
            out += [" " * len(label) + line for line in folded[1:]]
    return out


def wrap_cell(text: str, width: int) -> str:
    """``text`` folded onto lines of at most ``width`` characters at spaces; a word wider than
    the column (a terminal too narrow for it) is cut into pieces on lines of their own."""
    if len(text) <= width or "\n" in text:
        return text
    lines: list[str] = []
    line = ""
    for word in text.split():
        pieces = [word[i : i + width] for i in range(0, len(word), width)]
        if len(pieces) > 1:
            lines += [line] if line else []
            lines += pieces[:-1]
            line = pieces[-1]
        elif line and len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            lines += [line] if line else []
            line = word
    return "\n".join([*lines, line] if line else lines)


_SHORT = 20
