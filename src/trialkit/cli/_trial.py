"""``trialkit trial`` (alias ``t``): list, describe, logs, continue."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import click

from ..rest import BatchMetricsOut, MetricOut
from ._common import experiment_client, get_client, json_option, print_json, print_table
from ._continue import continue_
from ._follow import (
    LogOptions,
    ctrl_c_stops_following,
    follow_logs,
    log_options,
)
from ._render import fmt_metrics, split_progress, terminal_text, trial_state


@click.group("trial")
def trial() -> None:
    """Inspect trials."""


@trial.command("list")
@click.argument("experiment_ref", metavar="EXPERIMENT")
@json_option
def list_(experiment_ref: str, as_json: bool) -> None:
    """List an experiment's trials (experiment id or name)."""
    client, experiment_id = experiment_client(experiment_ref)
    trials = client.list_trials(experiment_id).trials
    if as_json:
        print_json(trials)
        return
    rows = [
        (
            t.id,
            trial_state(t),
            t.restarts,
            fmt_metrics(t.hparams),
            t.best_validation,
            t.latest_checkpoint or "",
        )
        for t in trials
    ]
    print_table(
        None,
        ["trial", "state", "restarts", "hparams", "best validation", "latest checkpoint"],
        rows,
    )


@trial.command("describe")
@click.argument("trial_id", type=int)
@click.option(
    "--metrics",
    "with_metrics",
    is_flag=True,
    help="Also show every training report and the per-batch metrics it carried.",
)
@json_option
def describe(trial_id: int, with_metrics: bool, as_json: bool) -> None:
    """Show a trial with its validations and checkpoints."""
    client = get_client()
    desc = client.describe_trial(trial_id)
    training = client.trial_metrics(trial_id, group="training").metrics if with_metrics else []
    batches = client.trial_batch_metrics(trial_id).reports if with_metrics else []
    if as_json:
        out = dataclasses.asdict(desc)
        if with_metrics:
            out["training_metrics"] = [dataclasses.asdict(m) for m in training]
            out["batch_metrics"] = [dataclasses.asdict(b) for b in batches]
        print_json(out)
        return
    t = desc.trial
    click.echo(
        f"trial {t.id} of experiment {t.experiment_id}: {trial_state(t)},"
        f" restarts {t.restarts}, seed {t.seed}"
    )
    if t.hparams:
        click.echo(f"hparams: {fmt_metrics(t.hparams)}")
    if t.error:
        click.echo(f"error: {terminal_text(t.error)}")
    _show_reports("validations", desc.validation_metrics)
    crow = [(c.uuid, c.steps_completed, c.state) for c in desc.checkpoints]
    print_table("checkpoints", ["uuid", "steps", "state"], crow)
    if with_metrics:
        _show_training(training, batches)


def _show_reports(title: str, reports: Sequence[MetricOut]) -> None:
    """One row per report: its metrics, then how far training got (batches, epochs, records)
    in a column of its own, since those counters are progress, not metrics."""
    split = [(m.steps_completed, *split_progress(m.values)) for m in reports]
    if any(progress for _, _, progress in split):
        rows = [(s, fmt_metrics(m), fmt_metrics(p)) for s, m, p in split]
        print_table(title, ["steps", "metrics", "progress"], rows)
    else:
        print_table(title, ["steps", "metrics"], [(s, fmt_metrics(m)) for s, m, _ in split])


def _show_training(reports: Sequence[MetricOut], batches: Sequence[BatchMetricsOut]) -> None:
    """The training reports, then one row per batch of those that carried batch metrics."""
    _show_reports("training", reports)
    brows = [
        (b.steps_completed, i, fmt_metrics(values))
        for b in batches
        for i, values in enumerate(b.batch_metrics)
    ]
    print_table("batch metrics", ["steps", "index", "metrics"], brows)


@trial.command("logs")
@click.argument("trial_id", type=int)
@click.option("-f", "--follow", is_flag=True, help="Keep printing until the trial ends.")
@log_options
def logs(
    trial_id: int,
    follow: bool,
    options: LogOptions,
) -> None:
    """Print a trial's logs (all, or those of a level and above, of a rank)."""
    client = get_client()

    def finished() -> bool:
        resp = client.trial_logs(trial_id, limit=0)
        return resp.trial_state.ended and not resp.running

    client.describe_trial(trial_id)  # a clear error for a trial that does not exist
    with ctrl_c_stops_following():
        follow_logs(
            client,
            lambda: [trial_id],
            follow=follow,
            prefix=False,
            finished=finished,
            options=options,
        )


trial.add_command(continue_)
