"""Shared CLI plumbing: one error exit, the master client, JSON/table output."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from .._client import MasterClient
from .._home import trialkit_home


class CLIError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


def exit_with_error(message: str, code: int = 2) -> NoReturn:
    click.echo(f"trialkit: error: {message}", err=True)
    sys.exit(code)


def get_client(start: bool = True) -> MasterClient:
    """The running master's client; start one in the background when there is none."""
    from ..master import client_for, start_background

    home = trialkit_home()
    client = client_for(home)
    if client is not None:
        return client
    if not start:
        raise CLIError(f"no master is running for {home}; start one with 'trialkit master up'")
    click.echo(f"Starting a master in the background (home {home})...", err=True)
    return start_background(home)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def print_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, header_style="bold")
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    Console().print(table)


def fmt_metrics(values: dict[str, Any] | None, limit: int = 3) -> str:
    if not values:
        return ""
    items = list(values.items())[:limit]
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in items)


def fmt_time(ts: float | None) -> str:
    if not ts:
        return ""
    import datetime

    return datetime.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
