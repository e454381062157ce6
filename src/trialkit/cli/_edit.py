"""``trialkit experiment label add|remove`` and ``experiment set description``: what a user
says about an experiment (Determined's ``det e label``, ``det e set description``), through
the master's edit route; its config keeps what it was created with."""

from __future__ import annotations

from collections.abc import Sequence

import click

from ._common import experiment_client


@click.group("label")
def label() -> None:
    """Add or remove an experiment's labels."""


def _echo_labels(experiment_id: int, labels: Sequence[str]) -> None:
    click.echo(f"experiment {experiment_id}: labels {', '.join(labels) if labels else '(none)'}")


@label.command("add")
@click.argument("experiment_ref", metavar="EXPERIMENT")
@click.argument("labels", nargs=-1, required=True)
def add(experiment_ref: str, labels: tuple[str, ...]) -> None:
    """Add LABELS to an experiment (id or name); those it has already stay once."""
    client, experiment_id = experiment_client(experiment_ref)
    before = client.experiment_summary(experiment_id).experiment.labels
    exp = client.edit_experiment(experiment_id, labels=[*before, *labels]).experiment
    _echo_labels(experiment_id, exp.labels)


@label.command("remove")
@click.argument("experiment_ref", metavar="EXPERIMENT")
@click.argument("labels", nargs=-1, required=True)
def remove(experiment_ref: str, labels: tuple[str, ...]) -> None:
    """Remove LABELS from an experiment (id or name)."""
    client, experiment_id = experiment_client(experiment_ref)
    before = client.experiment_summary(experiment_id).experiment.labels
    absent = [name for name in labels if name not in before]
    if absent:
        click.echo(
            f"experiment {experiment_id} has no label {', '.join(map(repr, absent))}", err=True
        )
    kept = [name for name in before if name not in labels]
    exp = client.edit_experiment(experiment_id, labels=kept).experiment
    _echo_labels(experiment_id, exp.labels)


@click.group("set")
def set_() -> None:
    """Change what is said about an experiment."""


@set_.command("description")
@click.argument("experiment_ref", metavar="EXPERIMENT")
@click.argument("description")
def description(experiment_ref: str, description: str) -> None:
    """Set an experiment's DESCRIPTION ("" clears it)."""
    client, experiment_id = experiment_client(experiment_ref)
    exp = client.edit_experiment(experiment_id, description=description).experiment
    said = f"description {exp.description!r}" if exp.description else "no description"
    click.echo(f"experiment {experiment_id}: {said}")
