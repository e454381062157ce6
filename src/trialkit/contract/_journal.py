"""The journal of checkpoints a trial saved but could not register (the master was away longer
than the trial's retry window): one JSON file per checkpoint in the trial's directory, holding
the report the master did not get. The master registers them when it next launches or recovers
the trial (master/housekeeping/_journal.py). Shared by both sides, so it imports neither."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .._home import PRIVATE_DIR, PRIVATE_FILE
from ._cluster_info import INFO_ENV

#: Under the trial directory (the one holding cluster_info.json).
JOURNAL_DIR = "unregistered-checkpoints"


def journal_dir(trial_dir: Path) -> Path:
    """Where the trial in ``trial_dir`` journals its unregistered checkpoints."""
    return trial_dir / JOURNAL_DIR


def trial_journal_dir() -> Path | None:
    """This trial process's journal directory (None when no master launched it)."""
    info = os.environ.get(INFO_ENV)
    return journal_dir(Path(info).parent) if info else None


def write_entry(directory: Path, report: dict[str, Any]) -> Path:
    """Write ``report`` as ``<directory>/<uuid>.json`` atomically (temp file + rename), 0600."""
    directory.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    final = directory / f"{report['uuid']}.json"
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{report['uuid']}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            os.fchmod(f.fileno(), PRIVATE_FILE)
            json.dump(report, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return final
