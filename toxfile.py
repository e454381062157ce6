"""tox's inline plugin for trialkit: with ``TRIALKIT_TOX_DROP_ENVS=1`` (what the full run of
``scripts/tox.sh`` sets) an env's directory is removed as soon as all its commands have passed.

A full run installs twelve envs, six of them with torch or TensorFlow: ~11 GB if every env stays,
more than some machines have free (CI once ran out of disk 14 minutes in). Dropping each env when
it passes keeps only the envs running at once, and a failed env stays for a look inside.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from tox.plugin import impl

DROP_ENV = "TRIALKIT_TOX_DROP_ENVS"
_passed: set[str] = set()


@impl
def tox_after_run_commands(tox_env: Any, exit_code: int, outcomes: list[Any]) -> None:
    # ignore_errors envs run every command and report the last code: look at each one's code
    if exit_code == 0 and all(o.exit_code == 0 for o in outcomes):
        _passed.add(tox_env.name)


@impl
def tox_env_teardown(tox_env: Any) -> None:
    if os.environ.get(DROP_ENV) == "1" and tox_env.name in _passed:
        shutil.rmtree(tox_env.env_dir, ignore_errors=True)
