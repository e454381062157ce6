"""``trialkit alias``: opt in to ``import determined`` (trialkit's alias) in a Python
environment outside trialkit's own processes, e.g. for ``python train.py`` in local mode."""

from __future__ import annotations

import shutil
import site
import sysconfig
from pathlib import Path

import click

#: The .pth line imports the boot module (copied next to it), which installs the alias.
PTH_NAME = "trialkit_determined_alias.pth"
MODULE_NAME = "_trialkit_alias_boot"


target_option = click.option(
    "--target",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A site-packages directory (default: this interpreter's; see --user).",
)
user_option = click.option("--user", is_flag=True, help="Use the user site-packages directory.")


def _site_dir(target: Path | None, user: bool) -> Path:
    if target is not None:
        return target
    return Path(site.getusersitepackages() if user else sysconfig.get_paths()["purelib"])


@click.group("alias")
def alias() -> None:
    """`import determined` outside trialkit's processes (opt-in; trials always have it)."""


@alias.command("install")
@target_option
@user_option
def install(target: Path | None, user: bool) -> None:
    """Write a .pth file so every start of this Python can `import determined` (trialkit's
    alias; a real Determined, if installed, always wins; TRIALKIT_DETERMINED_ALIAS=0 turns
    it off)."""
    where = _site_dir(target, user)
    where.mkdir(parents=True, exist_ok=True)
    from .._alias import BOOT_DIR

    shutil.copyfile(BOOT_DIR / f"{MODULE_NAME}.py", where / f"{MODULE_NAME}.py")
    (where / PTH_NAME).write_text(f"import {MODULE_NAME}\n")
    click.echo(f"installed the determined alias in {where}")


@alias.command("uninstall")
@target_option
@user_option
def uninstall(target: Path | None, user: bool) -> None:
    """Remove what 'trialkit alias install' wrote."""
    where = _site_dir(target, user)
    removed = [p for p in (where / PTH_NAME, where / f"{MODULE_NAME}.py") if p.is_file()]
    for path in removed:
        path.unlink()
    click.echo(f"removed the determined alias from {where}" if removed else f"no alias in {where}")
