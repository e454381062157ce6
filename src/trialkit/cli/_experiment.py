"""``trialkit experiment`` (alias ``e``): create, list, describe, pause, activate, kill, archive,
logs, download-model-def, gc, delete, label, set description, in Determined's CLI shapes."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import APIError
from ..rest import ExperimentDescription, ExperimentState, ExperimentSummary, TrialState
from ._common import (
    CLIError,
    exit_with_error,
    experiment_client,
    fmt_time,
    get_client,
    json_option,
    print_json,
    print_table,
)
from ._edit import label, set_
from ._follow import (
    LogOptions,
    ctrl_c_stops_following,
    follow_experiment,
    follow_logs,
    log_options,
)
from ._render import (
    best_line,
    ended_line,
    first_line,
    fmt_metrics,
    logs_hint,
    pick_metrics,
    plural,
    progress_percent,
    search_line,
    searcher_line,
    terminal_text,
    trial_state,
    trial_states_cell,
    values_of,
)

if TYPE_CHECKING:
    from ..client import MasterClient


@click.group("experiment")
def experiment() -> None:
    """Create and manage experiments."""


@experiment.command("create")
@click.argument("config_file", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("model_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--config",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config field, e.g. searcher.max_trials=4.",
)
@click.option(
    "--follow",
    is_flag=True,
    help="Follow the experiment until it ends: a live trial table on a terminal, else a line per event.",
)
@click.option(
    "-f",
    "--follow-first-trial",
    "follow_first",
    is_flag=True,
    help="Print the first trial's logs as they come until the experiment ends (det e create -f).",
)
@click.option(
    "--dry-run", is_flag=True, help="Validate the config and model directory; create nothing."
)
@click.option("--paused", is_flag=True, help="Create the experiment paused.")
@click.option(
    "--warm-start",
    metavar="UUID|PATH",
    help="Start every trial from this checkpoint's weights: a checkpoint uuid on the master, "
    "or a checkpoint directory (e.g. one Determined wrote). Training counters start at 0.",
)
def create(
    config_file: Path,
    model_dir: Path,
    overrides: tuple[str, ...],
    follow: bool,
    follow_first: bool,
    dry_run: bool,
    paused: bool,
    warm_start: str | None,
) -> None:
    """Create an experiment from CONFIG_FILE running code from MODEL_DIR."""
    from .._modeldir import entrypoint_check, pack
    from ..config import ConfigError, load_config

    if follow and follow_first:
        raise CLIError("--follow and -f/--follow-first-trial: give one (events, or logs)")
    warm_start_path = _warm_start_dir(warm_start)
    cfg = load_config(config_file, list(overrides))
    for warning in cfg.warnings:
        click.echo(f"warning: {warning}", err=True)
    archive = pack(model_dir)
    missing = entrypoint_check(cfg.entrypoint, archive, f"model directory {model_dir}")
    if missing:
        raise ConfigError(missing)
    if dry_run:
        click.echo(
            f"config {str(config_file)!r} is valid; model directory packs to {len(archive) / 1024:.1f} KiB"
        )
        return
    client = get_client()
    exp = client.create_experiment(
        _with_warm_start_uuid(cfg.as_dict(), warm_start, warm_start_path),
        model_def=base64.b64encode(archive).decode(),
        activate=not paused,
        # Trials run with this interpreter (and its venv) unless environment.python is set.
        python=sys.executable,
        warm_start_path=warm_start_path,
    ).experiment
    click.echo(f"Created experiment {exp.id}")
    if follow:
        follow_to_end(client, exp.id)
    elif follow_first:
        follow_to_end(client, exp.id, first_trial_logs=True)


def _warm_start_dir(value: str | None) -> str | None:
    """``--warm-start`` as a checkpoint directory to send (absolute), or None for a uuid."""
    if value is None:
        return None
    path = Path(value).expanduser()
    if path.is_dir():
        return str(path.resolve())
    if path.exists() or "/" in value or value.startswith("."):
        raise CLIError(f"--warm-start {value}: not a checkpoint directory (nor a checkpoint uuid)")
    return None


def _with_warm_start_uuid(
    config: dict[str, Any], value: str | None, path: str | None
) -> dict[str, Any]:
    """The config with ``--warm-start UUID`` as ``searcher.source_checkpoint_uuid``."""
    if value is None or path is not None:
        return config
    searcher = config.setdefault("searcher", {})
    if searcher.get("source_trial_id") is not None or searcher.get("source_checkpoint_uuid"):
        raise CLIError(
            f"--warm-start {value}: the config also names searcher.source_trial_id or "
            "source_checkpoint_uuid; keep one warm-start source"
        )
    searcher["source_checkpoint_uuid"] = value
    return config


def follow_to_end(client: MasterClient, experiment_id: int, first_trial_logs: bool = False) -> None:
    """Follow until the experiment ends (its events, or its first trial's logs as Determined's
    ``-f`` did); exit 1 unless it completed, 130 on Ctrl-C."""
    with ctrl_c_stops_following(
        f"stopped following; experiment {experiment_id} keeps running"
        f" ('trialkit experiment kill {experiment_id}' stops it)"
    ):
        if first_trial_logs:
            desc = _follow_first_trial_logs(client, experiment_id)
        else:
            desc = follow_experiment(client, experiment_id)
    click.echo(ended_line(experiment_id, desc))
    if desc.experiment.state != ExperimentState.COMPLETED:
        sys.exit(1)


def _follow_first_trial_logs(client: MasterClient, experiment_id: int) -> ExperimentSummary:
    """Print the first trial's logs until the experiment ends; return its last summary."""

    def first_trial() -> list[int]:
        ids = [t.id for t in client.list_trials(experiment_id).trials]
        return [min(ids)] if ids else []

    def finished() -> bool:
        return client.experiment_summary(experiment_id).experiment.state.ended

    follow_logs(client, first_trial, follow=True, prefix=False, finished=finished)
    return client.experiment_summary(experiment_id, retry_for=30)


@experiment.command("list")
@click.option("--all", "-a", "show_all", is_flag=True, help="Include archived experiments.")
@json_option
def list_(show_all: bool, as_json: bool) -> None:
    """List experiments."""
    exps = get_client().list_experiments(archived=show_all).experiments
    if as_json:
        print_json(exps)
        return
    columns = ["id", "name", "state", "progress", "trials", "started", "ended"]
    rows: list[tuple[Any, ...]] = [
        (
            e.id,
            e.name,
            e.state,
            progress_percent(e),
            trial_states_cell(e.trial_states),
            fmt_time(e.created_at),
            fmt_time(e.ended_at),
        )
        + (("yes" if e.archived else "",) if show_all else ())
        for e in exps
    ]
    print_table(None, [*columns, "archived"] if show_all else columns, rows)


@experiment.command("describe")
@click.argument("experiment_ref", metavar="EXPERIMENT")
@json_option
def describe(experiment_ref: str, as_json: bool) -> None:
    """Show an experiment (id or name): state, search, best trial and the trial table."""
    client, experiment_id = experiment_client(experiment_ref)
    desc = client.describe_experiment(experiment_id)
    if as_json:
        print_json(desc)
        return
    show_experiment(desc)


def show_experiment(desc: ExperimentDescription) -> None:
    """The readable describe view: a header of a few lines, then one row per trial."""
    e = desc.experiment
    metric = desc.searcher.metric
    filled = int(progress_percent(e)[:-1]) * 30 // 100  # a full bar only once it ended
    click.echo(f"experiment {e.id} {e.name!r}: {e.state}")
    if e.description:
        click.echo(f"description: {terminal_text(e.description)}")
    if e.labels:
        click.echo(f"labels: {terminal_text(', '.join(e.labels))}")
    if e.python:
        click.echo(f"python {e.python}")
    click.echo(searcher_line(desc))
    storage = (e.config or {}).get("checkpoint_storage") or {}
    if storage.get("filled_from_default"):
        place = storage.get("host_path") or storage.get("container_path") or storage.get("bucket")
        click.echo(
            f"checkpoint storage {storage.get('type')} {place}: "
            f"{', '.join(storage['filled_from_default'])} from the master's default"
        )
    click.echo(f"search [{'#' * filled}{'.' * (30 - filled)}] {search_line(desc, with_best=False)}")
    best = best_line(desc)
    if best:
        click.echo(best)
    if e.error:
        click.echo(f"error: {terminal_text(e.error)}")
    rows = [
        (
            t.id,
            trial_state(t, restarts=True),
            fmt_metrics(t.hparams),
            fmt_metrics(pick_metrics(values_of(t.latest_validation), metric)),
        )
        for t in desc.trials
    ]
    print_table(None, ["trial", "state", "hparams", "validation"], rows)
    for t in desc.trials:
        if t.state == TrialState.ERROR and t.error:
            click.echo(f"trial {t.id} error: {first_line(t.error)} {logs_hint(t.id)}")
    live = [c for c in desc.checkpoints if c.state not in ("DELETING", "DELETED")]
    if live:
        click.echo(
            f"{plural(len(live), 'checkpoint')} (trialkit checkpoint list {e.id});"
            f" JSON: trialkit experiment describe {e.id} --json"
        )


def _simple(action: str, help_text: str) -> None:
    @experiment.command(action, help=help_text)
    @click.argument("experiment_ref", metavar="EXPERIMENT")
    def cmd(experiment_ref: str) -> None:
        client, experiment_id = experiment_client(experiment_ref)
        try:
            exp = client.experiment_action(experiment_id, action).experiment
        except APIError as e:
            if e.status != 409:
                raise
            exit_with_error(str(e), 1)  # the master says why: e.g. the experiment has ended
        click.echo(
            f"experiment {experiment_id}: {exp.state}{' (archived)' if exp.archived else ''}"
        )


_simple("pause", "Pause an experiment: its trials checkpoint and exit.")
_simple("activate", "Resume a paused experiment from its latest checkpoints.")
_simple("kill", "Stop an experiment's trials now (SIGTERM, then SIGKILL).")
_simple("archive", "Hide a finished experiment from the default list.")
_simple("unarchive", "Show an archived experiment again.")


@experiment.command("logs")
@click.argument("experiment_ref", metavar="EXPERIMENT")
@click.option("-f", "--follow", is_flag=True, help="Keep printing until the experiment ends.")
@log_options
def logs(
    experiment_ref: str,
    follow: bool,
    options: LogOptions,
) -> None:
    """Print the logs of every trial of an experiment (id or name), or those of a level and
    above, of a rank."""
    client, experiment_id = experiment_client(experiment_ref)

    def trials() -> list[int]:
        return [t.id for t in client.list_trials(experiment_id).trials]

    def finished() -> bool:
        return client.experiment_summary(experiment_id).experiment.state.ended

    if not trials() and not follow:
        raise CLIError(f"experiment {experiment_id} has no trials yet")
    with ctrl_c_stops_following():
        follow_logs(
            client,
            trials,
            follow=follow,
            prefix=True,
            finished=finished,
            options=options,
        )


@experiment.command("preview")
@click.argument("config_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--config", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config field."
)
@click.option(
    "--seed", type=int, default=None, help="Experiment seed (default: the config's, else 0)."
)
@json_option
def preview(config_file: Path, overrides: tuple[str, ...], seed: int | None, as_json: bool) -> None:
    """Show the trials and training lengths a config's search would produce, running nothing.

    Metrics are simulated (deterministically), so ASHA promotions are an example, not a forecast.
    """
    from ..config import load_config
    from ..searcher import preview as simulate

    cfg = load_config(config_file, list(overrides))
    if seed is None:
        seed = cfg.reproducibility.experiment_seed or 0
    from ..searcher import SearcherError

    try:
        trials = simulate(cfg.searcher, cfg.hyperparameters, seed)
    except (ValueError, SearcherError) as e:
        raise CLIError(str(e)) from None
    if as_json:
        print_json(trials)
        return
    rows = [
        (
            i + 1,
            fmt_metrics(t["hparams"]),
            t["trial_seed"],
            " → ".join(map(str, t["lengths"])),
        )
        for i, t in enumerate(trials)
    ]
    print_table(
        f"{plural(len(trials), 'trial')} (seed {seed})",
        ["trial", "hparams", "seed", "trains to"],
        rows,
    )


@experiment.command("download-model-def")
@click.argument("experiment_ref", metavar="EXPERIMENT")
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where to write experiment_<id>_model_def.tgz (or the files, with --unpack).",
)
@click.option("--unpack", is_flag=True, help="Write the model directory's files, not the .tgz.")
def download_model_def(experiment_ref: str, output_dir: Path, unpack: bool) -> None:
    """Fetch the model directory stored with an experiment, as Determined's
    'det e download-model-def' did (experiment_<id>_model_def.tgz)."""
    from .._modeldir import ModelDirError
    from .._modeldir import unpack as unpack_archive

    client, experiment_id = experiment_client(experiment_ref)
    archive = client.experiment_model_def(experiment_id)
    if not archive:
        raise CLIError(f"experiment {experiment_id} was created without a model directory")
    if unpack:
        try:
            unpack_archive(archive, output_dir)
        except ModelDirError as e:
            raise CLIError(f"experiment download-model-def {experiment_id}: {e}") from None
        click.echo(f"Unpacked the model directory of experiment {experiment_id} into {output_dir}")
        return
    output_dir.mkdir(parents=True, exist_ok=True)
    dst = output_dir / f"experiment_{experiment_id}_model_def.tgz"
    dst.write_bytes(archive)
    click.echo(f"Wrote {dst}")


@experiment.command("gc")
@click.argument("experiment_ref", metavar="EXPERIMENT")
def gc(experiment_ref: str) -> None:
    """Apply a finished experiment's checkpoint GC policy now (checkpoint_storage's
    save_experiment_best, save_trial_best, save_trial_latest) and print what it deleted."""
    from ._checkpoint import deleted_summary, echo_deleted

    client, experiment_id = experiment_client(experiment_ref)
    result = client.experiment_gc(experiment_id)
    echo_deleted(result.deleted, result.missing)
    summary = deleted_summary(len(result.deleted), result.bytes_freed, len(result.missing))
    click.echo(f"experiment {experiment_id}: {summary}")


@experiment.command("delete")
@click.argument("experiment_ref", metavar="EXPERIMENT")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def delete(experiment_ref: str, yes: bool) -> None:
    """Delete a finished experiment: its checkpoints and their files, its trials' logs and
    directories, and its records. It cannot be undone."""
    from ._checkpoint import fmt_bytes

    client, experiment_id = experiment_client(experiment_ref)
    if not yes:
        if not sys.stdin.isatty():
            raise CLIError(
                f"experiment delete {experiment_id}: no terminal to confirm on; add --yes"
            )
        click.confirm(
            f"Delete experiment {experiment_id} with all its checkpoints and logs?", abort=True
        )
    result = client.delete_experiment(experiment_id)
    missing = result.checkpoints_missing
    click.echo(
        f"deleted experiment {experiment_id}: {plural(result.checkpoints_deleted, 'checkpoint')}, "
        f"{fmt_bytes(result.bytes_freed)} freed"
        + (f"; {plural(missing, 'checkpoint record')} had no files in storage" if missing else "")
    )


experiment.add_command(label)
experiment.add_command(set_)
