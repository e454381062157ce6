"""Text for the CLI's views, as pure functions of the master's typed responses (no I/O, no
rich)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._messages import summary_line
from ..rest import (
    ExperimentDescription,
    ExperimentOut,
    ExperimentState,
    ExperimentSummary,
    MetricOut,
    TrialOut,
    TrialState,
)

#: What the summary lines read: ``--follow``'s summary or ``describe``'s description.
Summary = ExperimentSummary | ExperimentDescription

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


def values_of(report: MetricOut | None) -> dict[str, Any] | None:
    """A report's values; None where there is no report (a trial that has not reported yet)."""
    return report.values if report is not None else None


def pick_metrics(values: dict[str, Any] | None, first: str | None) -> dict[str, Any]:
    """The metrics with the searcher metric first, without the batches/epochs/records counters."""
    metrics, _ = split_progress(values)
    out = {first: metrics[first]} if first and first in metrics else {}
    out.update((k, v) for k, v in metrics.items() if k not in out)
    return out


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 checkpoint``, ``2 checkpoints``: a count with its noun in the right number."""
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def progress_percent(exp: ExperimentOut) -> str:
    """``45%``: the search's progress; never 100% before the experiment ended (a trial that
    trained its full length may still validate, checkpoint and exit)."""
    percent = float(exp.progress or 0.0) * 100
    if not exp.state.ended:
        percent = min(percent, 99.0)
    return f"{percent:.0f}%"


RESTARTING = "restarting"
"""How the master's status for a trial in its restart back-off begins."""


def _count_key(t: TrialOut) -> str:
    """The trial-table state a trial is counted under in the summary."""
    if t.state != TrialState.ACTIVE:
        return _STATE_WORDS[t.state]
    if not t.run_id:
        return "to start"
    if t.pid or t.slots:  # Ray: no pid
        return "running"
    return RESTARTING if (t.status or "").startswith(RESTARTING) else "waiting"


#: A trial state in the summaries' words, in the order ``experiment list`` counts them.
_STATE_WORDS = {
    TrialState.ACTIVE: "active",
    TrialState.PAUSED: "paused",
    TrialState.COMPLETED: "completed",
    TrialState.ERROR: "errored",
    TrialState.CANCELED: "canceled",
}
_COUNT_ORDER = ["running", RESTARTING, "waiting", "paused", "completed", "errored", "canceled"]


def trial_counts(desc: Summary) -> str:
    """``3 completed · 1 errored · 2 canceled (1 never started)``: every trial in the table
    counted once under its state, then the trials the search planned but did not create."""
    exp, trials = desc.experiment, desc.trials
    counts: dict[str, int] = {}
    unstarted: dict[str, int] = {}
    for t in trials:
        key = _count_key(t)
        counts[key] = counts.get(key, 0) + 1
        if not t.run_id and key in ("canceled", "errored"):  # local runs have no run id
            unstarted[key] = unstarted.get(key, 0) + 1
    parts = []
    for key in _COUNT_ORDER:
        if counts.get(key):
            never = f" ({unstarted[key]} never started)" if unstarted.get(key) else ""
            parts.append(f"{counts[key]} {key}{never}")
    max_trials = 0 if exp.unmanaged else desc.searcher.max_trials
    planned = max(int(max_trials or 0) - len(trials), 0)
    if exp.state.ended:
        if counts.get("to start"):  # not ended with their experiment: none ever ran
            parts.append(f"{counts['to start']} never started")
        if planned:
            parts.append(f"{planned} never created")
    elif counts.get("to start", 0) + planned:
        parts.append(f"{counts.get('to start', 0) + planned} to start")
    return " · ".join(parts) or "no trials yet"


def trial_states_cell(states: dict[str, int]) -> str:
    """``3 completed, 1 running``: an experiment's trials by state, for ``experiment list``."""
    shown = [f"{states[s]} {w}" for s, w in _STATE_WORDS.items() if states.get(s)]
    shown += [f"{n} {s.lower()}" for s, n in states.items() if s not in _STATE_WORDS and n]
    return ", ".join(shown) or "none"


def best_line(desc: Summary) -> str | None:
    """``best trial 3 loss=0.0123 (lr=0.01, ...), checkpoint UUID``, or None before any
    validation."""
    best = desc.best_trial
    if best is None:
        return None
    line = f"best: trial {best.trial_id} {best.metric}={best.value:.6g}"
    if best.hparams:
        line += f" ({fmt_metrics(best.hparams)})"
    if best.checkpoint:
        line += f", checkpoint {best.checkpoint}"
    return line


def search_line(desc: Summary, with_best: bool = True) -> str:
    """``random 45% · 2 running · 5 completed · best trial 3 loss=0.0123``."""
    parts = [f"{desc.searcher.name or 'search'} {progress_percent(desc.experiment)}"]
    parts.append(trial_counts(desc))
    best = desc.best_trial
    if best is not None and with_best:
        parts.append(f"best trial {best.trial_id} {best.metric}={best.value:.6g}")
    return " · ".join(parts)


def failure_reason(desc: Summary) -> str | None:
    """Why an experiment failed: its own error, else the first errored trial's."""
    if desc.experiment.error:
        return desc.experiment.error
    for t in desc.trials:
        if t.state == TrialState.ERROR and t.error:
            return f"trial {t.id} failed: {first_line(t.error)}"
    return None


def first_line(text: str) -> str:
    """A (possibly multi-line) error on one line, safe to print (an error may quote a trial's
    output): its first non-empty line, with its last where the first only introduces it."""
    return summary_line(terminal_text(str(text)).splitlines())


def logs_hint(trial_id: int) -> str:
    """Where a failed trial's whole output (its traceback) is."""
    return f"(full output: trialkit t logs {trial_id})"


def _first_errored(desc: Summary) -> int | None:
    return next((t.id for t in desc.trials if t.state == TrialState.ERROR), None)


def ended_line(experiment_id: int, desc: Summary) -> str:
    """``experiment 3 ended ERROR: trial 2 failed: ValueError: boom (full output: trialkit t
    logs 2)``."""
    state = desc.experiment.state
    reason = failure_reason(desc) if state != ExperimentState.COMPLETED else None
    errored = _first_errored(desc) if reason else None
    hint = f" {logs_hint(errored)}" if errored is not None else ""
    return f"experiment {experiment_id} ended {state}" + (
        f": {first_line(reason)}{hint}" if reason else ""
    )


def trial_state(t: TrialOut, restarts: bool = False) -> str:
    """A trial's state, with what it is doing while it runs (``ACTIVE (validating)``) and,
    with ``restarts``, how often it restarted."""
    notes = [t.status] if not t.state.ended and t.status else []
    if restarts and t.restarts and not (t.status or "").startswith(RESTARTING):
        notes.append(plural(t.restarts, "restart"))
    return f"{t.state} ({', '.join(notes)})" if notes else str(t.state)


def searcher_line(desc: Summary) -> str:
    """``searcher: random, metric validation_loss (smaller is better), at most 16 trials``."""
    s = desc.searcher
    text = f"searcher: {s.name or '?'}"
    if s.metric:
        better = "smaller" if s.smaller_is_better else "larger"
        text += f", metric {s.metric} ({better} is better)"
    if s.max_trials:
        text += f", at most {plural(s.max_trials, 'trial')}"
    return text


def _run_events(prev: TrialOut | None, now: TrialOut) -> list[str]:
    """Runs that started, and runs that failed and will be restarted, in run order. Run N's
    failure is counted (``restarts`` = N) when it exits, before run N + 1 starts."""
    started = range((prev.run_id if prev else 0) + 1, now.run_id + 1)
    failed = range((prev.restarts if prev else 0) + 1, now.restarts + 1)
    hparams = fmt_metrics(now.hparams) or "no hparams"
    reason = first_line(now.error or "") or "no reason recorded"
    lines = []
    for run in sorted(set(started) | set(failed)):
        if run in started:
            again = f" (restart {run - 1})" if run > 1 else ""
            lines.append(f"trial {now.id} started{again}: {hparams}")
        if run in failed:
            lines.append(f"trial {now.id} failed, restarting: {reason}")
    return lines


def validation_changed(before: TrialOut | None, now: TrialOut) -> bool:
    """Whether a trial reported a validation between two describe responses."""
    val, old = now.latest_validation, before.latest_validation if before else None
    return val is not None and (
        old is None
        or (val.steps_completed, val.reported_at) != (old.steps_completed, old.reported_at)
    )


def checkpoint_changed(before: TrialOut | None, now: TrialOut) -> bool:
    """Whether a trial registered a checkpoint between two describe responses."""
    ckpt = now.latest_checkpoint
    return bool(ckpt) and ckpt != (before.latest_checkpoint if before else None)


@dataclass(frozen=True)
class StepCheckpoint:
    """A checkpoint as following tells it: its UUID, its step (None: not known) and the
    training metrics reported at that step (None: none known)."""

    uuid: str
    steps_completed: int | None
    values: dict[str, Any] | None = None


def trial_events(
    before: TrialOut | None,
    now: TrialOut,
    metric: str | None,
    validations: Sequence[MetricOut] | None = None,
    checkpoints: Sequence[StepCheckpoint] | None = None,
) -> list[str]:
    """One line per thing that happened to a trial between two describe responses.
    ``validations`` / ``checkpoints``: every one reported since ``before``, oldest first, where
    the caller fetched them; else only the latest of each is told. A step's validation and
    checkpoint share one line, and steps are told in order."""
    tid = now.id
    lines: list[str] = []
    lines += _run_events(before, now)
    if validations is None:
        latest = now.latest_validation
        validations = [latest] if latest is not None and validation_changed(before, now) else []
    if checkpoints is None:
        ckpt = now.latest_checkpoint
        checkpoints = (
            [StepCheckpoint(ckpt, None)] if ckpt and checkpoint_changed(before, now) else []
        )
    lines += [f"trial {tid} {text}" for text in _step_events(validations, checkpoints, metric)]
    if now.state.ended and now.state != (before.state if before else None):
        if now.state == TrialState.ERROR:
            reason = first_line(now.error or "") or "no reason recorded"
            lines.append(f"trial {tid} failed: {reason} {logs_hint(tid)}")
        elif now.state == TrialState.COMPLETED:
            lines.append(f"trial {tid} completed")
        elif now.run_id:
            lines.append(f"trial {tid} canceled")
    return lines


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


#: Characters of a checkpoint UUID shown while following (any unique prefix names it).
SHORT_UUID = 8


def _step_events(
    validations: Sequence[MetricOut],
    checkpoints: Sequence[StepCheckpoint],
    metric: str | None,
) -> list[str]:
    """Per step, in step order: its validation's metrics and its checkpoint's short UUID on one
    line (a validation and a checkpoint of the same step used to be two lines, out of order)."""
    by_step: dict[int | None, dict[str, list[str]]] = {}
    for val in validations:
        shown = fmt_metrics(pick_metrics(val.values, metric))
        by_step.setdefault(val.steps_completed, {"val": [], "ckpt": []})["val"].append(shown)
    trained: dict[int | None, str] = {}  # a checkpoint's step's training metrics
    for ckpt in checkpoints:
        step = ckpt.steps_completed
        short = ckpt.uuid[:SHORT_UUID]
        by_step.setdefault(step, {"val": [], "ckpt": []})["ckpt"].append(short)
        if ckpt.values:
            trained[step] = fmt_metrics(pick_metrics(ckpt.values, None))
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
    only between words. Identifiers (UUIDs) always stay whole on one line, and short values too
    unless only folding them (a date above its time) keeps the rows side by side. None when even
    that does not fit: the rows are better shown one field a line."""
    full = [max([len(row[i]) for row in rows] + [len(col)]) for i, col in enumerate(columns)]
    if width is None:
        return full
    room = width - 2 * (len(columns) - 1)
    for short_whole in (True, False):
        least = [
            n
            if col in WHOLE_COLUMNS or (short_whole and n <= _SHORT)
            else max([_longest_word(col)] + [_longest_word(row[i]) for row in rows])
            for i, (col, n) in enumerate(zip(columns, full, strict=True))
        ]
        widths = _narrowed(full, least, room)
        if widths is not None:
            return widths
    return None


def _narrowed(full: Sequence[int], least: Sequence[int], room: int) -> list[int] | None:
    """``full`` narrowed, widest first and none below its ``least``, until they sum to ``room``."""
    widths = list(full)
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
