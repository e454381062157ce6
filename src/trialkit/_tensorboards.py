"""Where ``trialkit tensorboard`` records the TensorBoards it serves, so the master (and its web
UI) can link to them: one JSON file per running command, removed when it stops."""

from __future__ import annotations

import json
import os
from pathlib import Path


def tensorboard_records(home: Path) -> Path:
    """The folder of the records."""
    return home / "tensorboard" / "servers"


def record_tensorboard(
    home: Path, url: str, experiment_ids: list[int], trial_id: int | None
) -> Path:
    """Write this process's record (written whole, then renamed into place); its path."""
    folder = tensorboard_records(home)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{os.getpid()}.json"
    tmp = path.with_suffix(".tmp")
    record = {"url": url, "experiment_ids": experiment_ids, "trial_id": trial_id}
    tmp.write_text(json.dumps({**record, "pid": os.getpid()}))
    tmp.replace(path)
    return path
