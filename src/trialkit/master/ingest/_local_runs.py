"""Ingest local-mode runs: the journals ``core.init()`` appends to when no master launched it
(``trialkit.contract``'s local-run journal) become unmanaged experiments of one trial, written
by the master like everything else in the store.

Idempotent: how far each journal was stored is kept beside it (``<key>.ingested``), and every
entry is stored so that applying it twice changes nothing (the trial is found by its request id,
metric batches are keyed by their entry, checkpoints by uuid), so a master that stops between
the store and that record stores nothing twice. An ended run's journal is removed once stored.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..._home import PRIVATE_DIR, write_private
from ...contract import JOURNAL_SUFFIX, local_runs_dir, local_tensorboard_dir, read_entries
from ...store import (
    ExperimentState,
    MetricBatch,
    MetricDelivery,
    NewMetric,
    NotFound,
    Store,
    TrialState,
)

logger = logging.getLogger("trialkit.master")

PROGRESS_SUFFIX = ".ingested"
#: A local run's trial is made for this request of its (one-trial) experiment.
REQUEST_PREFIX = "local:"
#: The metric batches of a journal: one shipper, its entries numbered in order.
SENDER = "local-journal"
#: Bytes of one journal read per call, about: ~5,000 reports, 0.1-0.5 s to store on 2 busy
#: cores. The engine waits for it, so a long run's journal is stored over several ticks.
READ_LIMIT = 1 << 19
#: What a run's ``trial`` entries may set.
TRIAL_FIELDS = frozenset({"progress", "status", "early_exit"})


@dataclass
class _Progress:
    """How much of one journal is in the store (its first ``entries`` entries, ``offset`` bytes)."""

    offset: int = 0
    entries: int = 0
    experiment_id: int | None = None
    trial_id: int | None = None
    ended: bool = False


class LocalRunIngest:
    """Stores what the local runs of ``home`` journaled since the last call."""

    def __init__(self, store: Store, home: Path) -> None:
        self.store = store
        self.home = home
        self._progress: dict[str, _Progress] = {}
        self._failing: set[str] = set()

    def ingest(self) -> int:
        """Store the next new complete entries of every journal (about READ_LIMIT bytes of
        each); how many bytes of journal that took in. A journal that fails is tried again next
        time (logged), the others go on."""
        directory = local_runs_dir(self.home)
        if not directory.is_dir():
            return 0
        stored = 0
        for journal in sorted(directory.glob(f"*{JOURNAL_SUFFIX}")):
            try:
                stored += self._ingest(journal)
            except NotFound as e:  # its experiment was deleted while the run went on
                logger.warning("local run %s: %s; its journal is dropped", journal, e)
                self._drop(journal)
            except Exception:
                self._progress.pop(journal.stem, None)  # half applied: go by the record on disk
                if journal.stem not in self._failing:  # once, not every tick
                    logger.exception("local run %s: ingest failed; trying again", journal)
                self._failing.add(journal.stem)
            else:
                self._failing.discard(journal.stem)
        for orphan in directory.glob(f"*{PROGRESS_SUFFIX}"):  # its journal is gone: all stored
            if not orphan.with_suffix(JOURNAL_SUFFIX).exists():
                orphan.unlink(missing_ok=True)
        return stored

    def ingest_all(self) -> None:
        """Store everything journaled so far (for a reader of the store that cannot wait for
        ticks: a test, a benchmark)."""
        while self.ingest():
            pass

    def _ingest(self, journal: Path) -> int:
        key = journal.stem
        stored = 0
        progress = self._progress.get(key) or _read_progress(_progress_path(journal))
        self._progress[key] = progress
        if not progress.ended and journal.stat().st_size > progress.offset:
            before = progress.offset
            entries, end = read_entries(journal, before, READ_LIMIT)
            self._store(key, progress, [e for _, e in entries])
            progress.offset, progress.entries = end, progress.entries + len(entries)
            _write_progress(_progress_path(journal), progress)
            stored = end - before
        if progress.ended:
            self._finish(journal, progress)
        return stored

    def _store(self, key: str, progress: _Progress, entries: list[dict[str, Any]]) -> None:
        """Store ``entries`` in order, runs of metric entries in one transaction."""
        metrics: list[MetricDelivery] = []
        for number, entry in enumerate(entries, start=progress.entries):
            if entry["kind"] == "metrics" and progress.trial_id is not None:
                metrics.append(_metrics(progress.trial_id, number, entry))
                continue
            self._store_metrics(metrics)
            self._apply(key, progress, entry)
        self._store_metrics(metrics)

    def _store_metrics(self, metrics: list[MetricDelivery]) -> None:
        if metrics:
            self.store.add_metric_deliveries(metrics)
            metrics.clear()

    def _apply(self, key: str, progress: _Progress, entry: dict[str, Any]) -> None:
        kind = entry["kind"]
        if kind == "start":
            self._start(key, progress, entry)
            return
        if progress.experiment_id is None or progress.trial_id is None:
            logger.warning("local run %s: %s entry before the run's start; skipped", key, kind)
            return
        exp_id, trial_id = progress.experiment_id, progress.trial_id
        if kind == "checkpoint":
            self.store.add_checkpoint(
                trial_id=trial_id, experiment_id=exp_id, run_id=0, **entry["record"]
            )
        elif kind == "checkpoint_state":
            self.store.set_checkpoint_state(entry["uuid"], entry["state"])
        elif kind == "trial":
            fields = {k: v for k, v in entry["fields"].items() if k in TRIAL_FIELDS}
            self.store.update_trial(trial_id, **fields)
        elif kind == "end":
            self._end(exp_id, trial_id, entry)
            progress.ended = True
        else:
            logger.warning("local run %s: unknown entry %r; skipped", key, kind)

    def _start(self, key: str, progress: _Progress, entry: dict[str, Any]) -> None:
        """Create the run's experiment and trial, or find them (a start stored before the
        master stopped, without its progress record)."""
        request = f"{REQUEST_PREFIX}{key}"
        found = self._find_trial(request)
        if found is None:
            exp = self.store.create_experiment(
                name=entry["name"],
                config=entry["config"],
                description=entry["description"],
                labels=entry["labels"],
                unmanaged=True,
            )
            trial = self.store.create_trial(
                experiment_id=exp.id, request_id=request, hparams=entry["hparams"], seed=0
            )
            found = (exp.id, trial.id)
        progress.experiment_id, progress.trial_id = found
        self.store.update_experiment(found[0], created_at=entry["at"])
        self.store.update_trial(found[1], created_at=entry["at"])
        logger.info("local run %s: stored as experiment %d, trial %d", key, found[0], found[1])

    def _find_trial(self, request: str) -> tuple[int, int] | None:
        for exp in reversed(self.store.list_experiments()):  # the run's is likely recent
            trial = self.store.trial_by_request(exp.id, request) if exp.unmanaged else None
            if trial is not None:
                return exp.id, trial.id
        return None

    def _end(self, exp_id: int, trial_id: int, entry: dict[str, Any]) -> None:
        """The run ended: its trial and experiment, COMPLETED or ERROR, as it said."""
        failed, at = bool(entry["failed"]), entry["at"]
        self.store.update_trial(
            trial_id,
            state=TrialState.ERROR if failed else TrialState.COMPLETED,
            ended_at=at,
        )
        self.store.update_experiment(
            exp_id,
            state=ExperimentState.ERROR if failed else ExperimentState.COMPLETED,
            progress=0.0 if failed else 1.0,
            error=entry["error"],
            ended_at=at,
        )

    def _finish(self, journal: Path, progress: _Progress) -> None:
        """The run ended and is stored: its TensorBoard files take its ids' place, as a
        master-run trial's do, and its journal goes."""
        tensorboard = self.home / "tensorboard"
        moved = tensorboard / local_tensorboard_dir(journal.stem)
        target = tensorboard / f"experiment-{progress.experiment_id}/trial-{progress.trial_id}"
        if moved.is_dir() and not target.exists():
            target.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
            os.replace(moved, target)
        self._drop(journal)

    def _drop(self, journal: Path) -> None:
        """Forget a journal: the file first, so a progress record left alone means done."""
        journal.unlink(missing_ok=True)
        _progress_path(journal).unlink(missing_ok=True)
        self._progress.pop(journal.stem, None)


def _progress_path(journal: Path) -> Path:
    return journal.with_suffix(PROGRESS_SUFFIX)


def _write_progress(path: Path, progress: _Progress) -> None:
    """Replace the progress record in one step: a master stopped mid-write leaves the old one."""
    partial = path.with_name(f".{path.name}.tmp")
    write_private(partial, json.dumps(asdict(progress)))
    os.replace(partial, path)


def _read_progress(path: Path) -> _Progress:
    try:
        return _Progress(**json.loads(path.read_text()))
    except FileNotFoundError:
        return _Progress()


def _metrics(trial_id: int, number: int, entry: dict[str, Any]) -> MetricDelivery:
    """A metrics entry as a batch stored at most once (keyed by its place in the journal)."""
    reports = [
        NewMetric(
            trial_id=trial_id,
            run_id=0,
            group=r["group"],
            steps_completed=r["steps_completed"],
            values=r["metrics"],
            batch_metrics=r.get("batch_metrics"),
            reported_at=entry["at"],
        )
        for r in entry["reports"]
    ]
    return MetricDelivery(reports, MetricBatch(trial_id, 0, SENDER, number))
