"""``trialkit checkpoint``: list, describe, download."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import (
    experiment_client,
    fmt_time,
    get_client,
    json_option,
    print_json,
    print_table,
    resolve_checkpoint,
)


@click.group("checkpoint")
def checkpoint() -> None:
    """List and download checkpoints."""


@checkpoint.command("list")
@click.argument("experiment_ref", metavar="EXPERIMENT")
@json_option
def list_(experiment_ref: str, as_json: bool) -> None:
    """List an experiment's checkpoints (experiment id or name)."""
    client, experiment_id = experiment_client(experiment_ref)
    ckpts = client.request("GET", f"/api/v1/experiments/{experiment_id}/checkpoints")["checkpoints"]
    if as_json:
        print_json(ckpts)
        return
    rows = [
        (
            c["uuid"],
            c["trial_id"],
            c["steps_completed"],
            c["state"],
            len(c["resources"]),
            fmt_time(c["reported_at"]),
        )
        for c in ckpts
    ]
    print_table(None, ["uuid", "trial", "steps", "state", "files", "reported"], rows)


@checkpoint.command("describe")
@click.argument("uuid")
@json_option
def describe(uuid: str, as_json: bool) -> None:
    """Show a checkpoint's metadata and files (UUID or a unique prefix of it)."""
    client = get_client()
    c = client.request("GET", f"/api/v1/checkpoints/{resolve_checkpoint(client, uuid)}")
    if as_json:
        print_json(c)
        return
    click.echo(
        f"checkpoint {c['uuid']}: trial {c['trial_id']}, steps {c['steps_completed']}, {c['state']}"
    )
    click.echo(f"metadata: {c['metadata']}")
    print_table("files", ["path", "bytes"], sorted(c["resources"].items()))


@checkpoint.command("download")
@click.argument("uuid")
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to put the files (default checkpoints/UUID).",
)
def download(uuid: str, output_dir: Path | None) -> None:
    """Copy a checkpoint's files (UUID or a unique prefix of it) to a local directory."""
    from ..storage import build

    client = get_client()
    uuid = resolve_checkpoint(client, uuid)
    c = client.request("GET", f"/api/v1/checkpoints/{uuid}")
    dest = output_dir or Path("checkpoints") / uuid
    build(c["storage"]).download(uuid, dest)
    click.echo(f"checkpoint {uuid} downloaded to {dest}")
