"""``trialkit experiment label add|remove`` and ``experiment set description``: what a user
says about an experiment (Determined's ``det e label``, ``det e set description``), through
the master's edit route; its config keeps what it was created with."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import click

from ._common import experiment_client


@click.group("label")
def label() -> None:
    """Add or remove an experiment's labels."""


#: How a label command changes the labels: (experiment id, its labels, the command's) -> new.
LabelChange = Callable[[int, list[str], Sequence[str]], list[str]]


def _label_command(name: str, help_text: str, change: LabelChange) -> None:
    """``label NAME EXPERIMENT LABEL...``: the experiment's labels become ``change``'s."""

    @label.command(name, help=help_text)
    @click.argument("experiment_ref", metavar="EXPERIMENT")
    @click.argument("labels", nargs=-1, required=True)
    def cmd(experiment_ref: str, labels: tuple[str, ...]) -> None:
        client, experiment_id = experiment_client(experiment_ref)
        before = client.experiment_summary(experiment_id).experiment.labels
        after = change(experiment_id, before, labels)
        exp = client.edit_experiment(experiment_id, labels=after).experiment
        click.echo(
            f"experiment {experiment_id}: labels {', '.join(exp.labels) if exp.labels else '(none)'}"
        )


def _added(experiment_id: int, before: list[str], labels: Sequence[str]) -> list[str]:
    return [*before, *labels]  # the master keeps each once


def _removed(experiment_id: int, before: list[str], labels: Sequence[str]) -> list[str]:
    absent = [name for name in labels if name not in before]
    if absent:
        click.echo(
            f"experiment {experiment_id} has no label {', '.join(map(repr, absent))}", err=True
        )
    return [name for name in before if name not in labels]


_label_command(
    "add", "Add LABELS to an experiment (id or name); one it has already stays once.", _added
)
_label_command("remove", "Remove LABELS from an experiment (id or name).", _removed)


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
