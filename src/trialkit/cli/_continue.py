"""``trialkit trial continue``: Determined's "Continue Trial": a new experiment that trains one
trial with the hyperparameters of trial N, warm-started from N's latest checkpoint, running the
model directory stored with N's experiment."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from .._merge import merged
from ..rest import TrialOut
from ._common import CLIError, get_client

#: The searcher fields a continued trial keeps: its metric, and how long it trained.
_KEPT_SEARCHER = ("metric", "smaller_is_better", "max_length")


def const_hparams(hparams: Mapping[str, Any]) -> dict[str, Any]:
    """A trial's hyperparameter values as a config's constants (nested ones stay nested)."""
    return {
        name: const_hparams(value)
        if isinstance(value, Mapping)
        else {"type": "const", "val": value}
        for name, value in hparams.items()
    }


def continued_config(config: Mapping[str, Any], trial: TrialOut, checkpoint: str) -> dict[str, Any]:
    """The config of the experiment that continues ``trial``: its experiment's config with the
    trial's hyperparameters, searcher single, warm-started from ``checkpoint``. The web UI's
    "Continue trial" dialog (``webui/trial_continue.js``: ``continuedConfig``) mirrors it."""
    searcher = config.get("searcher") or {}
    out = {key: value for key, value in config.items() if key != "hyperparameters"}
    out["hyperparameters"] = const_hparams(trial.hparams)
    out["searcher"] = {
        "name": "single",
        **{key: searcher[key] for key in _KEPT_SEARCHER if searcher.get(key) is not None},
        "source_checkpoint_uuid": checkpoint,
    }
    out["description"] = (
        f"continues trial {trial.id} of experiment {trial.experiment_id} from checkpoint {checkpoint}"
    )
    return out


def _from_file(path: Path) -> dict[str, Any]:
    """The mapping in a YAML (or JSON) file merged over the derived config."""
    from ..config import ConfigError, read_config_file

    data = read_config_file(path)
    if not isinstance(data, dict):
        raise ConfigError([f"{path}: expected a mapping at the top level"])
    return data


@click.command("continue")
@click.argument("trial_id", type=int)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A YAML file merged over the continued config (e.g. 'searcher: {max_length: 200}');"
    " --dry-run prints the whole config to start one from.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config field, e.g. searcher.max_length=200 or hyperparameters.lr=0.01.",
)
@click.option(
    "--follow",
    is_flag=True,
    help="Follow the new experiment until it ends, as 'experiment create --follow'.",
)
@click.option("--dry-run", is_flag=True, help="Print the config (JSON, also YAML); create nothing.")
def continue_(
    trial_id: int,
    config_file: Path | None,
    overrides: tuple[str, ...],
    follow: bool,
    dry_run: bool,
) -> None:
    """Create a new experiment that trains trial TRIAL_ID on: its hyperparameters, searcher
    single, warm-started from its latest checkpoint, with its experiment's model directory."""
    from ..config import load_config
    from ._experiment import follow_to_end

    client = get_client()
    trial = client.describe_trial(trial_id).trial
    if not trial.latest_checkpoint:
        raise CLIError(f"trial {trial_id} has no checkpoint to continue from")
    exp = client.describe_experiment(trial.experiment_id).experiment
    raw = continued_config(exp.config, trial, trial.latest_checkpoint)
    if config_file is not None:
        raw = merged(raw, _from_file(config_file))
    cfg = load_config(raw, list(overrides))
    for warning in cfg.warnings:
        click.echo(f"warning: {warning}", err=True)
    if dry_run:
        click.echo(json.dumps(cfg.as_dict(), indent=2))
        return
    archive = client.experiment_model_def(trial.experiment_id)
    created = client.create_experiment(
        cfg.as_dict(),
        model_def=base64.b64encode(archive).decode() if archive else None,
        python=exp.python,
    ).experiment
    click.echo(
        f"Created experiment {created.id}, continuing trial {trial_id} from checkpoint"
        f" {trial.latest_checkpoint}"
    )
    if follow:
        follow_to_end(client, created.id)
