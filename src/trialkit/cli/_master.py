"""``trialkit master``: up, down, status."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import click

from .._home import trialkit_home
from ..rest import MasterInfo, PoolInfo
from ._common import CLIError, exit_with_error, json_option, print_json
from ._render import plural


def _duration(seconds: float) -> str:
    """``1h 02m``, ``5m 03s`` or ``12s``."""
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 60}m {s % 60:02d}s" if s >= 60 else f"{s}s"


def _status_lines(url: str, info: MasterInfo) -> list[str]:
    trials = info.running_trials
    idle = info.idle_timeout_seconds
    return [
        f"master running at {url} (pid {info.pid})",
        f"  version  {info.version}",
        f"  python   {info.python}",
        f"  home     {info.home}",
        f"  uptime   {_duration(info.uptime_seconds)}",
        f"  slots    {info.slots}" + (" (GPUs)" if info.gpus else ""),
        f"  trials   {len(trials)} running"
        + (f" ({', '.join(map(str, trials))})" if trials else ""),
        f"  idle     stops after {_duration(idle)} idle"
        if idle
        else "  idle     never stops by itself",
        *(
            f"  {'pools' if i == 0 else '':<8} {_pool_line(pool)}"
            for i, pool in enumerate(info.pools)
        ),
    ]


def _pool_line(pool: PoolInfo) -> str:
    """``ray: Ray cluster at 127.0.0.2:6390, 3 nodes, 2 CPU slots`` (or the local pool's)."""
    kind = (pool.slot_type or "cpu").upper()
    slots = pool.slots
    size = plural(slots, f"{kind} slot") if slots is not None else f"{kind} slots unknown"
    if pool.type != "ray":
        return f"{pool.name}: {size} on this machine"
    where = f"Ray cluster at {pool.address}"
    if pool.nodes is None:
        return f"{pool.name}: {where}, not answering"
    return f"{pool.name}: {where}, {plural(pool.nodes, 'node')}, {size}"


@click.group("master")
def master() -> None:
    """Start, stop and inspect the local master."""


@master.command("up")
@click.option(
    "--slots",
    type=int,
    default=None,
    help="CPU slots when there are no GPUs, 1 to 1024 (default: CPU count).",
)
@click.option("--foreground", is_flag=True, help="Run in this terminal instead of the background.")
@click.option(
    "--idle-timeout",
    default=None,
    metavar="DURATION",
    help="Stop after this long with no running trial and no API call, e.g. 30m or 2h; "
    "0 = never. Default: $TRIALKIT_MASTER_IDLE_TIMEOUT, else never (a master the CLI starts "
    "on demand stops after 30m).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Master config file with resource pools (default: $TRIALKIT_HOME/master.yaml).",
)
def up(
    slots: int | None, foreground: bool, idle_timeout: str | None, config_file: Path | None
) -> None:
    """Start a master for $TRIALKIT_HOME (does nothing if one is running)."""
    from ..client import (
        SlotsError,
        check_slots,
        client_for,
        default_idle_timeout,
        parse_idle_timeout,
        run_in_foreground,
        start_background,
    )

    try:
        check_slots(slots)
    except SlotsError as e:
        raise click.BadParameter(str(e).removeprefix("--slots: "), param_hint="'--slots'") from e
    home = trialkit_home()
    _use_master_config(home, config_file)
    try:
        idle = (
            default_idle_timeout(on_demand=False)
            if idle_timeout is None
            else parse_idle_timeout(idle_timeout, "--idle-timeout")
        )
    except ValueError as e:
        raise CLIError(str(e)) from None
    if foreground:
        run_in_foreground(home, slots=slots, idle_timeout=idle)
    running = client_for(home)
    client = running or start_background(home, slots=slots, idle_timeout=idle)
    info = client.master_info()
    where = f"at {client.url} with {plural(info.slots, 'slot')} (home {home})"
    if running is None:
        click.echo(f"master running {where}")
    elif slots is not None and slots != info.slots:
        exit_with_error(
            f"a master is already running {where}; --slots {slots} is ignored"
            " ('trialkit master down' first to change it)",
            1,
        )
    else:
        click.echo(f"master already running {where}")


def _use_master_config(home: Path, config_file: Path | None) -> None:
    """Check the master config file now (one line per problem) and hand it to the master."""
    from ..config import (
        MASTER_CONFIG_ENV,
        MasterConfigError,
        load_master_config,
        master_config_path,
    )

    path = master_config_path(home, config_file)
    try:
        load_master_config(path)
    except MasterConfigError as e:
        raise CLIError(str(e)) from None
    if config_file is not None:
        os.environ[MASTER_CONFIG_ENV] = str(config_file.absolute())


@master.command("down")
def down() -> None:
    """Stop the running master; trials keep running and the next master adopts them."""
    from ..client import stop_master

    home = trialkit_home()
    running = _running_trials(home)
    if not stop_master(home):
        click.echo(f"no master running for {home}")
    else:
        click.echo(stopped_line(running))


def _running_trials(home: Path) -> list[int]:
    """The trials the running master supervises now (none when no master answers)."""
    from ..client import client_for

    client = client_for(home)
    if client is None:
        return []
    try:
        return list(client.master_info().running_trials)
    except Exception:  # it stopped answering: down stops it all the same
        return []
    finally:
        client.close()


def stopped_line(running: list[int]) -> str:
    """What ``master down`` did, and what becomes of the trials it leaves running: they go on
    training and retry their reports, so the next master for this home adopts them if it comes
    within the trials' retry window; after it a report fails, and so does the trial."""
    if not running:
        return "master stopped"
    from ..contract import REPORT_RETRY_SECONDS, RETRY_ENV, retry_window

    try:
        window = _duration(retry_window(REPORT_RETRY_SECONDS))
    except ValueError:  # a bad value: the trials say so themselves
        window = _duration(REPORT_RETRY_SECONDS)
    one = len(running) == 1
    who = f"trial {running[0]} keeps" if one else f"{len(running)} trials keep"
    ids = "" if one else f" ({', '.join(map(str, running))})"
    report, fail = ("reports", "it fails") if one else ("report", "they fail")
    return (
        f"master stopped; {who} running{ids} and {report} to the next master if it starts"
        f" within {window} ('trialkit master up'; ${RETRY_ENV}), else {fail}"
    )


@master.command("status")
@json_option
def status(as_json: bool) -> None:
    """Say whether a master is running: where, its version, interpreter, uptime and trials."""
    from ..client import client_for

    home = trialkit_home()
    client = client_for(home)
    info = client.master_info() if client else None
    if as_json:
        fields = dataclasses.asdict(info) | {"url": client.url} if info and client else None
        print_json({"running": info is not None, **(fields or {"home": str(home)})})
    elif info and client:
        click.echo("\n".join(_status_lines(client.url, info)))
        click.echo(f"  web UI   {client.ui_login_url()}  (one use, 2 minutes)")
    else:
        click.echo(f"no master running for {home}")
