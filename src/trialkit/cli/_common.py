"""Shared CLI plumbing: one error exit, the master client, JSON/table output."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from .._home import trialkit_home
from ..client import MasterClient


class CLIError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


def exit_with_error(message: str, code: int = 2) -> NoReturn:
    click.echo(f"trialkit: error: {message}", err=True)
    sys.exit(code)


def resolve_experiment(client: MasterClient, ref: str) -> int:
    """An experiment id from an id, a name, or a unique prefix of a name."""
    if ref.isdigit():
        return int(ref)
    exps = client.list_experiments(archived=True).experiments
    exact = [e for e in exps if e.name == ref]
    found = exact or [e for e in exps if e.name.startswith(ref)]
    if len(found) == 1:
        return found[0].id
    if not found:
        raise CLIError(f"no experiment with id or name {ref!r}; see 'trialkit experiment list'")
    listed = ", ".join(f"{e.id} ({e.name})" for e in found[:10])
    raise CLIError(f"{ref!r} names {len(found)} experiments: {listed}; give an id")


def experiment_client(ref: str) -> tuple[MasterClient, int]:
    """The master's client and the experiment ``ref`` (id or name) names."""
    if not ref.isdigit():
        from ..client import client_for

        if client_for(trialkit_home()) is None:
            raise CLIError(
                f"no experiment with id {ref!r}: ids are numbers, and names need a running master"
                " ('trialkit master up')"
            )
    client = get_client()
    return client, resolve_experiment(client, ref)


def resolve_checkpoint(client: MasterClient, ref: str) -> str:
    """A checkpoint UUID from the UUID or any unique prefix of it."""
    ref = ref.strip().lower()
    if len(ref) == 36:
        return ref
    found = client.find_checkpoints(ref).uuids
    if len(found) == 1:
        return str(found[0])
    if not found:
        raise CLIError(f"no checkpoint UUID starts with {ref!r}; see 'trialkit checkpoint list'")
    listed = ", ".join(found[:10]) + (", …" if len(found) > 10 else "")
    raise CLIError(f"{ref!r} is the start of {len(found)} checkpoint UUIDs: {listed}")


def get_client(start: bool = True) -> MasterClient:
    """The running master's client; start one in the background when there is none."""
    from ..client import client_for, start_background

    home = trialkit_home()
    client = client_for(home)
    if client is not None:
        return client
    if not start:
        raise CLIError(f"no master is running for {home}; start one with 'trialkit master up'")
    click.echo(f"Starting a master in the background (home {home}); {_idle_note()}", err=True)
    return start_background(home)


def _idle_note() -> str:
    """How long an on-demand master stays, and how to stop it before: a read command leaves
    it running so that the next command answers at once."""
    from ..client import default_idle_timeout

    try:
        idle = default_idle_timeout(on_demand=True)
    except ValueError:  # start_background says what is wrong with the variable
        return "'trialkit master down' stops it"
    stays = f"it stops after {idle / 60:g} min idle" if idle else "it never stops by itself"
    return f"{stays}; 'trialkit master down' stops it now"


def print_json(data: Any) -> None:
    """``data`` (a response model, or plain data) as indented JSON."""
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        data = dataclasses.asdict(data)
    elif isinstance(data, list):
        data = [dataclasses.asdict(d) if dataclasses.is_dataclass(d) else d for d in data]  # type: ignore[arg-type]
    click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def print_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A rich table that never hides data: identifiers and short values stay whole on one line,
    longer text (hparams, metrics, names) wraps inside its column, only between words; rows are
    printed one field a line where the words cannot fit side by side. Output that is not a
    terminal (a pipe, a file) is not wrapped unless COLUMNS sets a width."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from ._render import column_widths, record_lines, wrap_cell

    console = Console(soft_wrap=False)
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    limit = console.width if console.is_terminal or os.environ.get("COLUMNS") else None
    widths = column_widths(columns, cells, limit)
    if widths is None:  # too narrow for the words side by side: one field a line
        if title:
            click.echo(title)
        click.echo("\n".join(record_lines(columns, cells, limit)))
        return
    # Cells come wrapped to their widths: rich only lays them out, never folds or crops one.
    console.width = max(console.width, sum(widths) + 2 * len(columns))
    table = Table(
        title=title,
        header_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        collapse_padding=True,
        pad_edge=False,
    )
    for col in columns:
        table.add_column(col, no_wrap=True)
    for row in cells:
        table.add_row(*(wrap_cell(text, w) for text, w in zip(row, widths, strict=True)))
    console.print(table)


def fmt_time(ts: float | None) -> str:
    if not ts:
        return ""
    import datetime

    return datetime.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
