"""Live views: the trial table while an experiment runs, and following logs."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import click

from .._client import MasterClient
from ._common import fmt_metrics

_TERMINAL = {"COMPLETED", "CANCELED", "ERROR"}


def search_line(desc: dict[str, Any]) -> str:
    """``search 45% · 7/16 trials · best trial 3 loss=0.0123`` from a describe response."""
    exp = desc["experiment"]
    s = desc.get("searcher") or {}
    parts = [f"{s.get('name') or 'search'} {exp['progress'] * 100:.0f}%"]
    if s.get("max_trials"):
        done = sum(n for k, n in (s.get("trial_states") or {}).items() if k in _TERMINAL)
        parts.append(f"{done}/{s['max_trials']} trials done")
    best = desc.get("best_trial")
    if best:
        metric = next((k for k in best if k != "trial_id"), "metric")
        parts.append(f"best trial {best['trial_id']} {metric}={best[metric]:.6g}")
    return " · ".join(parts)


def _view(desc: dict[str, Any]) -> Any:
    from rich.console import Group
    from rich.progress_bar import ProgressBar
    from rich.table import Table

    exp = desc["experiment"]
    header = Table.grid(padding=(0, 1))
    header.add_row(
        f"experiment {exp['id']} {exp['name']!r}: {exp['state']}",
        ProgressBar(total=1.0, completed=float(exp["progress"] or 0.0), width=30),
        search_line(desc),
    )
    table = Table(header_style="bold")
    for col in ("trial", "state", "progress", "hparams", "training", "validation", "restarts"):
        table.add_column(col)
    for t in desc["trials"]:
        progress = t.get("progress") or (1.0 if t["state"] == "COMPLETED" else 0.0)
        table.add_row(
            str(t["id"]),
            t["state"] + (" (running)" if t.get("pid") else ""),
            ProgressBar(total=1.0, completed=progress, width=20),
            fmt_metrics(t["hparams"]),
            fmt_metrics((t.get("latest_training") or {}).get("values")),
            fmt_metrics((t.get("latest_validation") or {}).get("values")),
            str(t["restarts"]),
        )
    return Group(header, table)


def follow_experiment(client: MasterClient, experiment_id: int, interval: float = 0.5) -> str:
    """Show a live trial table until the experiment ends; return its final state."""
    from rich.console import Console
    from rich.live import Live

    console = Console()
    desc = client.request("GET", f"/api/v1/experiments/{experiment_id}", retry_for=30)
    with Live(_view(desc), console=console, refresh_per_second=4, transient=False) as live:
        while desc["experiment"]["state"] not in _TERMINAL:
            time.sleep(interval)
            desc = client.request("GET", f"/api/v1/experiments/{experiment_id}", retry_for=30)
            live.update(_view(desc))
    exp = desc["experiment"]
    console.print(search_line(desc))
    if exp.get("error"):
        click.echo(f"experiment {experiment_id}: {exp['error']}", err=True)
    return str(exp["state"])


def follow_logs(
    client: MasterClient,
    trial_ids: Callable[[], list[int]],
    *,
    follow: bool,
    prefix: bool,
    finished: Callable[[], bool],
) -> None:
    """Print trial logs; with ``follow``, keep printing until ``finished()`` and all logs are out."""
    after: dict[int, int] = {}
    while True:
        over = finished()  # read before fetching, so no line written after it is missed
        for tid in trial_ids():
            while True:
                resp = client.request(
                    "GET",
                    f"/api/v1/trials/{tid}/logs",
                    params={"after_id": after.get(tid, 0)},
                    retry_for=30,
                )
                for line in resp["logs"]:
                    click.echo(f"[trial {tid}] {line['line']}" if prefix else line["line"])
                    after[tid] = line["id"]
                if len(resp["logs"]) < 10_000:
                    break
        if not follow or over:
            return
        time.sleep(0.3)
