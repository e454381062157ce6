"""``trialkit master``: up, down, status."""

from __future__ import annotations

import click

from .._home import trialkit_home
from ._common import exit_with_error, json_option, print_json


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
def up(slots: int | None, foreground: bool) -> None:
    """Start a master for $TRIALKIT_HOME (does nothing if one is running)."""
    from ..master import SlotsError, check_slots, client_for, serve, start_background

    try:
        check_slots(slots)
    except SlotsError as e:
        raise click.BadParameter(str(e).removeprefix("--slots: "), param_hint="'--slots'") from e
    home = trialkit_home()
    if foreground:
        serve(home, slots=slots)
        return
    running = client_for(home)
    client = running or start_background(home, slots=slots)
    info = client.request("GET", "/api/v1/master")
    where = f"at {client.url} with {info['slots']} slots (home {home})"
    if running is None:
        click.echo(f"master running {where}")
    elif slots is not None and slots != info["slots"]:
        exit_with_error(
            f"a master is already running {where}; --slots {slots} is ignored"
            " ('trialkit master down' first to change it)",
            1,
        )
    else:
        click.echo(f"master already running {where}")


@master.command("down")
def down() -> None:
    """Stop the running master; trials keep running and the next master adopts them."""
    from ..master import stop_master

    home = trialkit_home()
    click.echo("master stopped" if stop_master(home) else f"no master running for {home}")


@master.command("status")
@json_option
def status(as_json: bool) -> None:
    """Say whether a master is running, where, and with how many slots."""
    from ..master import client_for

    home = trialkit_home()
    client = client_for(home)
    info = client.request("GET", "/api/v1/master") | {"url": client.url} if client else None
    if as_json:
        print_json({"running": info is not None, **(info or {"home": str(home)})})
    elif info:
        click.echo(f"master running at {info['url']} with {info['slots']} slots (home {home})")
    else:
        click.echo(f"no master running for {home}")
