"""Live views: the trial table while an experiment runs, and following logs."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import click

from ..rest import (
    LEVELS,
    ExperimentSummary,
    LogLabel,
    MetricOut,
    TrialOut,
    TrialState,
    log_labeller,
    log_level_name,
    log_line_shown,
)
from ._render import (
    StepCheckpoint,
    checkpoint_changed,
    fmt_metrics,
    pick_metrics,
    search_line,
    terminal_text,
    trial_events,
    trial_state,
    validation_changed,
    values_of,
)

if TYPE_CHECKING:
    from ..client import MasterClient


#: The exit status of a command stopped by Ctrl-C (128 + SIGINT), as a shell reports it.
INTERRUPTED = 130


@contextlib.contextmanager
def ctrl_c_stops_following(note: str | None = None) -> Iterator[None]:
    """Ctrl-C inside: the way a user stops following, not an error. Exit 130 quietly (with
    ``note`` on stderr: what goes on without us), never 'trialkit: error: aborted'."""
    try:
        yield
    except KeyboardInterrupt:
        if note:
            click.echo(note, err=True)
        sys.exit(INTERRUPTED)


def _view(desc: ExperimentSummary) -> Any:
    from rich.console import Group
    from rich.progress_bar import ProgressBar
    from rich.table import Table

    exp = desc.experiment
    metric = desc.searcher.metric
    header = Table.grid(padding=(0, 1))
    header.add_row(
        f"experiment {exp.id} {exp.name!r}: {exp.state}",
        ProgressBar(total=1.0, completed=float(exp.progress or 0.0), width=30),
        search_line(desc),
    )
    table = Table(header_style="bold")
    for col in ("trial", "state", "progress", "hparams", "training", "validation", "restarts"):
        table.add_column(col, overflow="fold")
    for t in desc.trials:
        progress = t.progress or (1.0 if t.state == TrialState.COMPLETED else 0.0)
        table.add_row(
            str(t.id),
            trial_state(t),
            ProgressBar(total=1.0, completed=progress, width=20),
            fmt_metrics(t.hparams),
            fmt_metrics(pick_metrics(values_of(t.latest_training), None)),
            fmt_metrics(pick_metrics(values_of(t.latest_validation), metric)),
            str(t.restarts),
        )
    return Group(header, table)


def _summary(client: MasterClient, experiment_id: int) -> ExperimentSummary:
    """The experiment's summary (describe without its checkpoint list), as the views read it."""
    return client.experiment_summary(experiment_id, retry_for=30)


def follow_experiment(
    client: MasterClient, experiment_id: int, interval: float = 0.5, live: bool | None = None
) -> ExperimentSummary:
    """Follow an experiment until it ends and return its last summary: a live table on a
    terminal, else one line per event (for CI logs and pipes)."""
    if live is None:
        live = sys.stdout.isatty()
    if not live:
        return _follow_lines(client, experiment_id, interval)
    from rich.console import Console
    from rich.live import Live

    console = Console()
    desc = _summary(client, experiment_id)
    with Live(_view(desc), console=console, refresh_per_second=4, transient=False) as view:
        while not desc.experiment.state.ended:
            time.sleep(interval)
            desc = _summary(client, experiment_id)
            view.update(_view(desc))
    click.echo("")
    click.echo(search_line(desc))
    return desc


class _Told:
    """The validations and checkpoints --follow has printed, so that each is told once and in
    order, also when a trial reports several between two polls (a describe shows the latest)."""

    def __init__(self, client: MasterClient, experiment_id: int) -> None:
        self._client, self._experiment_id = client, experiment_id
        self._validations: set[tuple[int, int, float]] = set()
        self._checkpoints: set[str] = set()

    def new_validations(self, before: TrialOut | None, trial: TrialOut) -> list[MetricOut]:
        if not validation_changed(before, trial):
            return []
        reply = self._client.trial_metrics(trial.id, group="validation", retry_for=30)
        new = []
        for m in sorted(reply.metrics, key=lambda m: m.reported_at):
            key = (m.run_id, m.steps_completed, m.reported_at)
            if key not in self._validations:
                self._validations.add(key)
                new.append(m)
        return new

    def new_checkpoints(self, before: TrialOut | None, trial: TrialOut) -> list[StepCheckpoint]:
        if not checkpoint_changed(before, trial):
            return []
        reply = self._client.experiment_checkpoints(self._experiment_id, retry_for=30)
        mine = [c for c in reply.checkpoints if c.trial_id == trial.id]
        new = []
        for c in sorted(mine, key=lambda c: c.reported_at):
            if c.uuid not in self._checkpoints:
                self._checkpoints.add(c.uuid)
                new.append(c)
        if not new:
            return []
        # the training metrics of each checkpoint's step share its line
        trained = self._client.trial_metrics(trial.id, group="training", retry_for=30)
        at_step = {
            m.steps_completed: m.values
            for m in sorted(trained.metrics, key=lambda m: m.reported_at)
        }
        return [
            StepCheckpoint(c.uuid, c.steps_completed, at_step.get(c.steps_completed)) for c in new
        ]


Events = tuple[list[MetricOut], list[StepCheckpoint]]  # (validations, checkpoints)


def _steps(validations: list[MetricOut], checkpoints: list[StepCheckpoint]) -> list[int | None]:
    return [v.steps_completed for v in validations] + [c.steps_completed for c in checkpoints]


def _hold_last_step(
    validations: list[MetricOut], checkpoints: list[StepCheckpoint], waited: set[int | None]
) -> tuple[Events, Events]:
    """(told now, held one poll): the newest step's validation or checkpoint, when the other
    may still come (a trial validates then checkpoints, or the reverse), waits one poll so both
    share a line; every earlier step is told now, and nothing waits twice (``waited``: the steps
    of the events held at the last poll)."""
    last = max((s for s in _steps(validations, checkpoints) if s is not None), default=None)
    if last is None or last in waited:
        return (validations, checkpoints), ([], [])
    at_last = [
        any(e.steps_completed == last for e in group) for group in (validations, checkpoints)
    ]
    if all(at_last):  # both are there: nothing to wait for
        return (validations, checkpoints), ([], [])
    return (
        ([v for v in validations if v.steps_completed != last],
         [c for c in checkpoints if c.steps_completed != last]),
        ([v for v in validations if v.steps_completed == last],
         [c for c in checkpoints if c.steps_completed == last]),
    )  # fmt: skip


def _follow_lines(client: MasterClient, experiment_id: int, interval: float) -> ExperimentSummary:
    seen: dict[int, TrialOut] = {}
    held: dict[int, Events] = {}  # per trial, the newest step's events waiting a poll
    told = _Told(client, experiment_id)
    while True:
        desc = _summary(client, experiment_id)
        metric = desc.searcher.metric
        over = desc.experiment.state.ended
        for t in desc.trials:
            before = seen.get(t.id)
            if t.state == TrialState.ERROR and not t.error and not over:
                # the reason may be stored just after the state: say it failed once it is there
                t = dataclasses.replace(t, state=before.state if before else TrialState.ACTIVE)
            old_vals, old_ckpts = held.pop(t.id, ([], []))
            validations = old_vals + told.new_validations(before, t)
            checkpoints = old_ckpts + told.new_checkpoints(before, t)
            if not (over or t.state.ended):  # what waited a poll is told now
                (validations, checkpoints), held[t.id] = _hold_last_step(
                    validations, checkpoints, set(_steps(old_vals, old_ckpts))
                )
            events = trial_events(before, t, metric, validations, checkpoints)
            for line in events:
                click.echo(line)
            seen[t.id] = t
        if over:
            click.echo(search_line(desc))
            return desc
        time.sleep(interval)


#: Lines in the first page of a trial's log (later pages: the master's default, 10,000).
FIRST_PAGE_LINES = 1_000


@dataclasses.dataclass(frozen=True)
class LogOptions:
    """Which of a log's lines to print, and how: the last ``tail`` of the past ones, those of
    ``level`` and above and of ``rank`` (``rest.log_line_shown``), with their colours or not."""

    tail: int | None = None
    color: bool = False
    level: str | None = None
    rank: int | None | str = "any"


def _level(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    try:
        return None if value is None else log_level_name(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def _rank(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None | str:
    if value is None:
        return "any"
    if value.lower() == "none":
        return None
    if value.isdigit():
        return int(value)
    raise click.BadParameter(f"{value!r}: a rank number, or 'none' for lines without a rank")


_LOG_OPTIONS = (
    click.option(
        "-n",
        "--tail",
        type=click.IntRange(min=0),
        default=None,
        metavar="N",
        help="Start with the last N lines (of each trial); with --level or --rank, the last N"
        " that pass them (the whole log is read).",
    ),
    click.option(
        "--level",
        metavar="LEVEL",
        callback=_level,
        help=f"Only lines of this level and above ({', '.join(LEVELS)}); a line without a level"
        " of its own (a traceback) has the level of the line before it of its rank.",
    ),
    click.option(
        "--rank",
        metavar="R",
        callback=_rank,
        help="Only the lines of rank R (their '[rank=R] || ' prefix); 'none': the lines"
        " without a rank (the launcher's).",
    ),
    click.option(
        "--color",
        is_flag=True,
        help="Keep the colours (SGR sequences) of trial output; other control characters are"
        " always removed.",
    ),
)


def log_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options --tail, --level, --rank and --color, given to ``command`` as one
    ``options: LogOptions``."""

    @functools.wraps(command)
    def with_options(
        *args: Any,
        tail: int | None,
        level: str | None,
        rank: int | None | str,
        color: bool,
        **kwargs: Any,
    ) -> None:
        command(*args, options=LogOptions(tail, color, level, rank), **kwargs)

    for option in reversed(_LOG_OPTIONS):
        with_options = option(with_options)
    return with_options


def follow_logs(
    client: MasterClient,
    trial_ids: Callable[[], list[int]],
    *,
    follow: bool,
    prefix: bool,
    finished: Callable[[], bool],
    options: LogOptions = LogOptions(),
) -> None:
    """Print trial logs (as ``options`` say); with ``follow``, keep printing until
    ``finished()`` and all logs are out. Control characters of the trials' output never reach
    the terminal (``options.color``: but SGR colours do)."""
    tail, color = options.tail, options.color
    # A level or rank filter with a tail: the last ``tail`` lines that pass it, so the whole log
    # is read (a traceback's level comes from the line before it) and only those are printed.
    filtered_tail = tail is not None and (options.level is not None or options.rank != "any")
    after: dict[int, int] = {}  # the last line printed of each trial
    labellers: dict[int, Callable[[str], LogLabel]] = {}  # per trial: its lines' levels carry on

    def echo(tid: int, shown: Sequence[str]) -> None:
        lines = [f"[trial {tid}] {text}" for text in shown] if prefix else shown
        click.echo("\n".join(lines), color=color or None)  # a page a write

    while True:
        over = finished()  # read before fetching, so no line written after it is missed
        for tid in trial_ids():
            first = tid not in after
            after.setdefault(tid, 0)
            held: collections.deque[str] | None = (
                collections.deque(maxlen=tail) if first and filtered_tail else None
            )
            more = True
            while more:  # page by page, each printed as it arrives
                resp = client.trial_logs(
                    tid,
                    after_id=after[tid],
                    # the master finds where the tail starts
                    tail=tail if first and held is None else None,
                    limit=FIRST_PAGE_LINES if first else None,  # a long log's start at once
                    retry_for=30,
                )
                first, more = False, resp.more
                if not resp.logs:
                    continue
                label = labellers.setdefault(tid, log_labeller())
                shown = [
                    terminal_text(line.line, color)
                    for line in resp.logs
                    if log_line_shown(label(line.line), options.level, options.rank)
                ]
                after[tid] = resp.logs[-1].id
                if held is not None:
                    held.extend(shown)
                elif shown:
                    echo(tid, shown)
            if held:
                echo(tid, list(held))
        if not follow or over:
            return
        time.sleep(0.3)
