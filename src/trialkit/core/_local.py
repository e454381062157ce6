"""Local mode: no master. Reports are appended to the run's journal under ``$TRIALKIT_HOME``
(``trialkit.contract``'s local-run journal); the master, the store's one writer, ingests it as an
unmanaged experiment with one trial, so runs outside the master can be listed afterwards."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from .._home import trialkit_home
from ..contract import (
    JournalWriter,
    journal_path,
    local_tensorboard_dir,
    new_run_key,
    read_entries,
)
from ._backend import TrialBackend
from ._local_run import LocalRun

logger = logging.getLogger("trialkit.core")


def _script_name() -> str:
    return Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "interactive"


def _start_entry(run: LocalRun, checkpoint_storage: dict[str, Any]) -> dict[str, Any]:
    """The experiment a new local run is recorded as (the journal's first entry)."""
    name = run.name or f"local: {_script_name()}"
    searcher = {"name": "single", "metric": None, "smaller_is_better": True, **run.searcher}
    config = {
        "name": name,
        "description": run.description,
        "labels": list(run.labels),
        "entrypoint": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "searcher": searcher,
        "hyperparameters": dict(run.hparams),
        "data": dict(run.data),
        "checkpoint_storage": checkpoint_storage,
    }
    return {
        "name": name,
        "config": config,
        "description": run.description,
        "labels": list(run.labels),
        "hparams": dict(run.hparams),
    }


class LocalBackend(TrialBackend):
    """Appends to the run's journal (read back for what the run asks); never preempts (SIGTERM
    still does, see PreemptContext)."""

    def __init__(
        self,
        home: Path,
        checkpoint_storage: dict[str, Any],
        *,
        join: str | None = None,
        run: LocalRun | None = None,
    ) -> None:
        self.run_id = 0
        self._op_done = False
        self._owner = join is None
        #: names the run until the master ingests it (then ``trialkit experiment list`` has ids)
        self.key = join or new_run_key()
        self.journal = JournalWriter(journal_path(home, self.key), create=join is None)
        if join is not None:  # a worker rank: the chief's run
            return
        self.journal.append(
            "start", durable=True, **_start_entry(run or LocalRun(), checkpoint_storage)
        )
        logger.info(
            "local mode: recording this run in %s (trialkit experiment list)", self.journal.path
        )

    @classmethod
    def open(
        cls,
        checkpoint_storage: dict[str, Any],
        join: str | None = None,
        run: LocalRun | None = None,
    ) -> LocalBackend:
        """Record this run as a new local run, or ``join`` the run of that key."""
        return cls(trialkit_home(), checkpoint_storage, join=join, run=run)

    def tensorboard_prefix(self) -> str:
        return f"tensorboard/{local_tensorboard_dir(self.key)}"

    def _entries(self, kind: str) -> list[dict[str, Any]]:
        return [e for _, e in read_entries(self.journal.path)[0] if e["kind"] == kind]

    def ship_metrics(self, reports: list[dict[str, Any]]) -> None:
        self.journal.append("metrics", reports=reports)

    def report_checkpoint(self, record: dict[str, Any]) -> None:
        self.journal.append("checkpoint", durable=True, record=record)

    def checkpoint_metadata(self, uuid: str) -> dict[str, Any] | None:
        found = [e["record"] for e in self._entries("checkpoint") if e["record"]["uuid"] == uuid]
        return dict(found[-1]["metadata"]) if found else None

    def delete_checkpoint(self, uuid: str) -> None:
        self.journal.append("checkpoint_state", uuid=uuid, state="DELETED")

    def preemption_requested(self, timeout: float) -> bool:
        return False

    def ack_preemption(self) -> None:
        pass

    def searcher_operation(self) -> tuple[int | None, bool]:
        # Like Determined off-cluster: a single operation of length 1.
        return (None, True) if self._op_done else (1, False)

    def complete_operation(self, length: int, metric: Any) -> None:
        self._op_done = True

    def report_progress(self, value: float, *, raw: bool) -> None:
        self.journal.append("trial", fields={"progress": float(value)})

    def set_status(self, status: str) -> None:
        self.journal.append("trial", fields={"status": status})

    def report_early_exit(self, reason: str) -> None:
        self.journal.append("trial", fields={"early_exit": reason})

    def best_validation(self) -> float | None:
        return None

    def last_validation(self) -> int | None:
        validations = [
            r["steps_completed"]
            for e in self._entries("metrics")
            for r in e["reports"]
            if r["group"] == "validation"
        ]
        return validations[-1] if validations else None

    def close(self, exc: BaseException | None = None) -> None:
        if self.journal.closed:
            return
        if self._owner:
            error = f"{type(exc).__name__}: {exc}" if exc is not None else None
            self.journal.append("end", failed=exc is not None, error=error)
        self.journal.close()
