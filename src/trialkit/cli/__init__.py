"""The ``trialkit`` command."""

from __future__ import annotations

import sys

import click

from ._alias import alias
from ._checkpoint import checkpoint
from ._common import CLIError, exit_with_error
from ._experiment import experiment
from ._master import master
from ._trial import trial
from ._ui import tensorboard, ui


class _AliasedGroup(click.Group):
    aliases = {"e": "experiment", "t": "trial", "c": "checkpoint", "m": "master"}

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(name, name))


@click.group(cls=_AliasedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="trialkit")
def cli() -> None:
    """trialkit: run experiments with Determined's APIs on this machine."""


cli.add_command(experiment)
cli.add_command(trial)
cli.add_command(checkpoint)
cli.add_command(master)
cli.add_command(alias)
cli.add_command(ui)
cli.add_command(tensorboard)


def _known_errors() -> tuple[type[BaseException], ...]:
    from .._home import HomeError
    from .._modeldir import ModelDirError
    from ..client import APIError, MasterUnavailable
    from ..config import ConfigError
    from ..storage import (
        CheckpointIntegrityError,
        CheckpointNotFound,
        CheckpointStorageError,
        StorageConfigError,
    )

    return (
        CLIError,
        ConfigError,
        ModelDirError,
        APIError,
        MasterUnavailable,
        StorageConfigError,
        CheckpointNotFound,
        CheckpointIntegrityError,
        CheckpointStorageError,
        HomeError,
    )


def _message(e: BaseException) -> str:
    errors = getattr(e, "errors", None)
    if isinstance(errors, list) and errors:
        return (
            "\n  ".join(["invalid experiment:", *map(str, errors)])
            if len(errors) > 1
            else str(errors[0])
        )
    return str(e)


def main(argv: list[str] | None = None) -> None:
    """Entry point: known errors become one 'trialkit: error:' line and exit code 2."""
    args = sys.argv[1:] if argv is None else argv
    if not args:  # bare `trialkit`: the help, as a successful answer
        with click.Context(cli, info_name="trialkit") as ctx:
            click.echo(cli.get_help(ctx))
        sys.exit(0)
    try:
        cli.main(args=args, prog_name="trialkit", standalone_mode=False)
    except click.exceptions.Abort:
        exit_with_error("aborted", 130)
    except click.UsageError as e:
        hint = f" (see '{e.ctx.command_path} --help')" if e.ctx else ""
        exit_with_error(f"{e.format_message()}{hint}")
    except click.ClickException as e:
        exit_with_error(e.format_message())
    except _known_errors() as e:
        exit_with_error(_message(e))
    except KeyboardInterrupt:
        exit_with_error("interrupted", 130)
    sys.exit(0)
