"""Where trialkit keeps its state: ``$TRIALKIT_HOME`` (default ``~/.trialkit``)."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "TRIALKIT_HOME"


def trialkit_home() -> Path:
    """The trialkit home directory (created on first use)."""
    home = Path(os.environ.get(HOME_ENV) or Path.home() / ".trialkit").expanduser().absolute()
    home.mkdir(parents=True, exist_ok=True)
    return home


def default_checkpoint_storage(home: Path) -> dict[str, object]:
    """Checkpoints go under the home directory unless the config says otherwise."""
    return {
        "type": "shared_fs",
        "host_path": str(home / "checkpoints"),
        "storage_path": None,
        "save_experiment_best": 0,
        "save_trial_best": 1,
        "save_trial_latest": 1,
    }
