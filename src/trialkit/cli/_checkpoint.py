"""``trialkit checkpoint``: list, describe, download, delete."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from ._common import (
    CLIError,
    experiment_client,
    fmt_time,
    get_client,
    json_option,
    print_json,
    print_table,
    resolve_checkpoint,
)
from ._render import plural


@click.group("checkpoint")
def checkpoint() -> None:
    """List, download and delete checkpoints."""


@checkpoint.command("list")
@click.argument("experiment_ref", metavar="EXPERIMENT")
@click.option(
    "--best",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Only the N best checkpoints by the searcher metric, best first.",
)
@json_option
def list_(experiment_ref: str, best: int | None, as_json: bool) -> None:
    """List an experiment's checkpoints (experiment id or name); deleted ones are not listed."""
    client, experiment_id = experiment_client(experiment_ref)
    if best is not None:
        _list_best(client, experiment_id, best, as_json)
        return
    ckpts = client.experiment_checkpoints(experiment_id).checkpoints
    if as_json:
        print_json(ckpts)
        return
    rows = [
        (
            c.uuid,
            c.trial_id,
            c.steps_completed,
            c.state,
            len(c.resources),
            fmt_time(c.reported_at),
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
    c = client.get_checkpoint(resolve_checkpoint(client, uuid))
    if as_json:
        print_json(c)
        return
    click.echo(f"checkpoint {c.uuid}: trial {c.trial_id}, steps {c.steps_completed}, {c.state}")
    click.echo(f"metadata: {c.metadata}")
    files = {p: n for p, n in c.resources.items() if not p.endswith("/")}
    print_table("files", ["path", "bytes"], sorted(files.items()))
    gone = _GONE.get(c.state, "")
    click.echo(f"{plural(len(files), 'file')}, {fmt_bytes(sum(files.values()))} in total{gone}")


#: What ``checkpoint describe`` adds after the files of a deleted checkpoint, by its state.
_GONE = {
    "DELETED": " (deleted from storage)",
    "DELETING": " (being deleted from storage; a master that stopped midway finishes it when it "
    "starts)",
}


@checkpoint.command("download")
@click.argument("uuid")
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to put the files (default checkpoints/UUID).",
)
@click.option(
    "--storage-path",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="Read from this checkpoint storage directory instead of the experiment's own "
    "(for a checkpoint a trial saved elsewhere).",
)
@click.option(
    "--mode",
    type=click.Choice(["auto", "direct", "master"], case_sensitive=False),
    default="auto",
    show_default=True,
    help="direct: read the checkpoint storage from here (its mount or credentials needed); "
    "master: the master reads it and sends the files; auto: direct, else through the master "
    "when this machine cannot reach the storage.",
)
def download(uuid: str, output_dir: Path | None, storage_path: Path | None, mode: str) -> None:
    """Copy a checkpoint's regular files (UUID or a unique prefix of it) to a local directory
    (links are not followed out), as the SDK's ``Checkpoint.download(path, mode=...)``."""
    from ..experimental.client import Checkpoint
    from ..storage import SharedFSStorageManager, check_storage_id

    check_storage_id(uuid)
    if storage_path is not None and mode.lower() == "master":
        raise CLIError("--storage-path is read from this machine: use --mode direct or auto")
    client = get_client()
    uuid = resolve_checkpoint(client, uuid)
    dest = output_dir or Path("checkpoints") / uuid
    if storage_path is not None:
        SharedFSStorageManager(storage_path).download(uuid, dest)
    else:
        record = dataclasses.asdict(client.get_checkpoint(uuid))
        Checkpoint(record, client).download(str(dest), mode=mode)
    click.echo(f"checkpoint {uuid} downloaded to {dest}")


def fmt_bytes(n: int) -> str:
    """``n`` bytes exactly, and in the largest binary unit when that is KiB or more
    (``1536 bytes (1.5 KiB)``)."""
    size, unit = float(n), "bytes"
    for bigger in ("KiB", "MiB", "GiB", "TiB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return plural(n, "byte") if unit == "bytes" else f"{n} bytes ({size:.1f} {unit})"


def _list_best(client: Any, experiment_id: int, limit: int, as_json: bool) -> None:
    """``checkpoint list --best N``: the best checkpoints by the searcher metric."""
    best = client.best_checkpoints(experiment_id, limit)
    if as_json:
        print_json(best)
        return
    if best.metric is None:
        raise CLIError(f"experiment {experiment_id} has no searcher.metric to rank checkpoints by")
    order = "smaller is better" if best.smaller_is_better else "larger is better"
    rows = [
        (
            r.checkpoint.uuid,
            r.checkpoint.trial_id,
            r.checkpoint.steps_completed,
            "" if r.searcher_metric is None else f"{r.searcher_metric:.6g}",
            fmt_time(r.checkpoint.reported_at),
        )
        for r in best.checkpoints
    ]
    print_table(
        f"best {limit} by {best.metric} ({order})",
        ["uuid", "trial", "steps", best.metric, "reported"],
        rows,
    )


@checkpoint.command("delete")
@click.argument("uuids", nargs=-1, required=True, metavar="UUID...")
def delete(uuids: tuple[str, ...]) -> None:
    """Delete checkpoints and their files (UUIDs or unique prefixes). Refused, for all of them,
    when one belongs to a trial that is still running or is a warm-start source."""
    client = get_client()
    result = client.delete_checkpoints([resolve_checkpoint(client, u) for u in uuids])
    echo_deleted(result.deleted, result.missing)
    click.echo(deleted_summary(len(result.deleted), result.bytes_freed, len(result.missing)))


def echo_deleted(deleted: list[str], missing: list[str]) -> None:
    """A line per checkpoint whose files were deleted, and per record that had none."""
    for uuid in deleted:
        click.echo(f"deleted checkpoint {uuid}")
    for uuid in missing:
        click.echo(
            f"checkpoint {uuid}: no files in the experiment's checkpoint storage; its record "
            "is marked deleted, nothing freed"
        )


def deleted_summary(deleted: int, bytes_freed: int, missing: int) -> str:
    """``N checkpoints deleted, B freed``, and the records without files if there were any."""
    text = f"{plural(deleted, 'checkpoint')} deleted, {fmt_bytes(bytes_freed)} freed"
    return f"{text}; {missing} without files in storage marked deleted" if missing else text
