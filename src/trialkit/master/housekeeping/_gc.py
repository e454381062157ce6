"""Checkpoint garbage collection with Determined's policy (reference §6 checkpoint_storage).

``select_for_deletion`` is the rule, a pure function: a checkpoint is deleted iff
``((experiment_rank > save_experiment_best AND trial_rank > save_trial_best) OR it has no
validation metric) AND trial_order_rank > save_trial_latest``. Ranks order by the searcher metric
of the validation at the checkpoint's ``steps_completed`` (best first, nulls last, ties by
validation id); ``trial_order_rank`` orders a trial's checkpoints by ``steps_completed``
descending. Checkpoints another experiment warm-starts from are never deleted.

``collect_garbage`` applies it: the rows become DELETING in one transaction, files go through the
storage manager, then the rows become DELETED (kept, so ``checkpoint describe`` still says what
it was; ``latest_checkpoint`` and ``checkpoint list`` skip both states). Rows a stopped master
left DELETING are finished by the next master (``finish_pending_deletes_after``).
"""

from __future__ import annotations

import logging
import math
import shutil
import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...storage import (
    CheckpointStorageError,
    StorageConfigError,
    StorageManager,
    build,
    tensorboard_prefix,
)
from ...store import Checkpoint, Experiment, Store
from ..search._experiment_config import searcher_config_of, storage_config_of
from ..search._warm_start import stored_source, warm_start_copy

if TYPE_CHECKING:
    from ...config import CheckpointStorage

DELETED = "DELETED"
#: Chosen for deletion, files perhaps still in storage: a master that starts finishes these.
DELETING = "DELETING"
#: The states of a checkpoint that is deleted or being deleted: never listed or resumed from.
GONE_STATES = frozenset({DELETING, DELETED})

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GCCandidate:
    """A checkpoint as the rule sees it: ``metric`` is the searcher metric of its validation
    (None: no validation at its steps, or no number there), ``validation_id`` that
    validation's id (ties between equal metrics go to the lower id)."""

    uuid: str
    trial_id: int
    steps_completed: int
    metric: float | None = None
    validation_id: int | None = None
    reported_at: float = 0.0


@dataclass(frozen=True)
class GCPolicy:
    """The three ``checkpoint_storage`` keys (Determined's defaults)."""

    save_experiment_best: int = 0
    save_trial_best: int = 1
    save_trial_latest: int = 1

    @classmethod
    def of(cls, storage: CheckpointStorage | None) -> GCPolicy:
        """The policy of a typed ``checkpoint_storage`` (none: the defaults)."""
        if storage is None:
            return cls()
        return cls(storage.save_experiment_best, storage.save_trial_best, storage.save_trial_latest)


@dataclass(frozen=True)
class GCResult:
    """What one collection really removed: the checkpoints whose files it deleted and the
    bytes those took in storage; ``missing``: records marked deleted whose files were not in
    the experiment's storage (nothing was freed for them)."""

    deleted: list[str] = field(default_factory=list)
    bytes_freed: int = 0
    missing: list[str] = field(default_factory=list)

    def __add__(self, other: GCResult) -> GCResult:
        return GCResult(
            self.deleted + other.deleted,
            self.bytes_freed + other.bytes_freed,
            self.missing + other.missing,
        )


def _metric_key(c: GCCandidate, smaller_is_better: bool) -> tuple[Any, ...]:
    """Best first, checkpoints without a metric last, ties by validation id (then uuid)."""
    if c.metric is None:
        return (1, 0.0, c.validation_id or 0, c.uuid)
    signed = c.metric if smaller_is_better else -c.metric
    return (0, signed, c.validation_id or 0, c.uuid)


def _ranks(items: Sequence[GCCandidate], key: Any) -> dict[str, int]:
    """1-based row numbers of ``items`` sorted by ``key`` (SQL's row_number())."""
    return {c.uuid: i for i, c in enumerate(sorted(items, key=key), start=1)}


def select_for_deletion(
    checkpoints: Sequence[GCCandidate],
    policy: GCPolicy,
    smaller_is_better: bool = True,
    protected: Iterable[str] = (),
) -> list[str]:
    """The uuids the GC rule deletes among one experiment's live checkpoints, in input order;
    ``protected`` uuids (warm-start sources) are never among them."""
    by_metric = lambda c: _metric_key(c, smaller_is_better)  # noqa: E731
    experiment_rank = _ranks(checkpoints, by_metric)
    per_trial: dict[int, list[GCCandidate]] = defaultdict(list)
    for c in checkpoints:
        per_trial[c.trial_id].append(c)
    trial_rank: dict[str, int] = {}
    trial_order_rank: dict[str, int] = {}
    for mine in per_trial.values():
        trial_rank |= _ranks(mine, by_metric)
        trial_order_rank |= _ranks(mine, lambda c: (-c.steps_completed, -c.reported_at, c.uuid))
    keep = set(protected)
    return [
        c.uuid
        for c in checkpoints
        if c.uuid not in keep
        and (
            (
                experiment_rank[c.uuid] > policy.save_experiment_best
                and trial_rank[c.uuid] > policy.save_trial_best
            )
            or c.metric is None
        )
        and trial_order_rank[c.uuid] > policy.save_trial_latest
    ]


def _number(value: Any) -> float | None:
    """A metric value the rule can compare (a finite JSON number), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def candidates(store: Store, experiment: Experiment) -> list[GCCandidate]:
    """The experiment's COMPLETED checkpoints, each with its validation's searcher metric."""
    metric = searcher_config_of(experiment).metric
    validations: dict[tuple[int, int], tuple[int, Any]] = {}
    for v in store.experiment_validations(experiment.id):
        validations[(v.trial_id, v.steps_completed)] = (v.id, v.values)  # the latest one wins
    out = []
    for c in store.list_checkpoints(experiment_id=experiment.id):
        if c.state != "COMPLETED":
            continue
        found = validations.get((c.trial_id, c.steps_completed))
        value = _number(found[1].get(metric)) if found and metric else None
        out.append(
            GCCandidate(
                uuid=c.uuid,
                trial_id=c.trial_id,
                steps_completed=c.steps_completed,
                metric=value,
                validation_id=found[0] if found and value is not None else None,
                reported_at=c.reported_at,
            )
        )
    return out


def warm_start_sources(store: Store) -> set[str]:
    """The checkpoints experiments name as their warm-start source (a ``source_trial_id`` was
    resolved to its checkpoint's uuid when the experiment was created)."""
    out: set[str] = set()
    for exp in store.list_experiments():
        source = stored_source(exp.config)
        if source is not None:
            out.add(source)
    return out


def experiment_storage(store: Store, experiment_id: int) -> StorageManager:
    """The storage the experiment's creator configured, with its credentials (a trial's
    reported location is not trusted for deleting files)."""
    configured = store.config_with_secrets(experiment_id).get("checkpoint_storage")
    if not configured:
        raise StorageConfigError(
            f"experiment {experiment_id} has no checkpoint_storage, so its checkpoints' files "
            "cannot be found"
        )
    return build(configured)


def delete_checkpoints(
    store: Store, storage: StorageManager, checkpoints: Iterable[Checkpoint]
) -> GCResult:
    """Mark the checkpoints' rows DELETING (one transaction), delete their files, then mark
    them DELETED. Files that stay stop the run: the rows of the checkpoints deleted so far
    become DELETED, the others what they were."""
    doomed = list(checkpoints)
    if not doomed:
        return GCResult()
    # Marked first: a master that dies mid-delete leaves DELETING rows, which the next master
    # finishes, never a COMPLETED record (a trial's latest) whose files are gone.
    store.set_checkpoints_state([c.uuid for c in doomed], DELETING)
    result = GCResult()
    done = 0
    try:
        for c in doomed:
            freed = _delete_files(storage, c, done)
            result += GCResult([c.uuid], freed) if freed is not None else GCResult(missing=[c.uuid])
            done += 1
    except BaseException:
        store.set_checkpoints_state([c.uuid for c in doomed[:done]], DELETED)
        _restore(store, doomed[done:])
        raise
    store.set_checkpoints_state([c.uuid for c in doomed], DELETED)
    if result.missing:
        logger.warning(
            "%d checkpoints had no files in storage %s (records marked deleted, nothing freed): %s",
            len(result.missing),
            storage.location,
            ", ".join(result.missing),
        )
    return result


def _delete_files(storage: StorageManager, checkpoint: Checkpoint, done_before: int) -> int | None:
    """Delete one checkpoint's files; the bytes they took, None when none were in storage.
    CheckpointStorageError when some stay (e.g. no permission), saying how many of its run
    were deleted before it."""
    freed = storage.stored_bytes(checkpoint.uuid)
    storage.delete(checkpoint.uuid)
    if storage.exists(checkpoint.uuid):
        done = f" ({done_before} others were deleted before it)" if done_before else ""
        raise CheckpointStorageError(
            f"checkpoint {checkpoint.uuid}: its files could not all be deleted from storage; "
            f"check the permissions of its directory and try again{done}"
        )
    return freed


def _restore(store: Store, checkpoints: Sequence[Checkpoint]) -> None:
    """Give checkpoints whose files were not deleted their states back (a row a stopped master
    left DELETING stays so)."""
    by_state: dict[str, list[str]] = defaultdict(list)
    for c in checkpoints:
        by_state[c.state].append(c.uuid)
    for state, uuids in by_state.items():
        store.set_checkpoints_state(uuids, state)


def collect_garbage(store: Store, experiment: Experiment) -> GCResult:
    """Finish the experiment's pending deletes, then apply its GC policy: delete what the rule
    selects; return both. One run per experiment at a time (the end-of-experiment run and
    ``experiment gc`` may meet)."""
    with _experiment_lock(experiment.id):
        experiment = store.get_experiment(experiment.id)
        earlier = _deleted(store, experiment)
        resumed = _finish_pending(store, experiment)
        result = _collect(store, experiment)
        _remove_leftovers(store, experiment, earlier)
        return resumed + result


def _collect(store: Store, experiment: Experiment) -> GCResult:
    policy = GCPolicy.of(storage_config_of(experiment))
    smaller_is_better = searcher_config_of(experiment).smaller_is_better
    chosen = set(
        select_for_deletion(
            candidates(store, experiment),
            policy,
            smaller_is_better,
            protected=warm_start_sources(store),
        )
    )
    doomed = [c for c in store.list_checkpoints(experiment_id=experiment.id) if c.uuid in chosen]
    if not doomed:  # nothing to do (an experiment without storage may end so, too)
        return GCResult()
    return delete_checkpoints(store, experiment_storage(store, experiment.id), doomed)


def _deleted(store: Store, experiment: Experiment) -> list[Checkpoint]:
    return store.list_checkpoints(experiment_id=experiment.id, state=DELETED)


def _finish_pending(store: Store, experiment: Experiment) -> GCResult:
    """Delete the files of the experiment's DELETING checkpoints (a run a stopped master
    left), then mark them DELETED. Callers hold the experiment's lock, so no run of this
    process is marking or deleting them at the same time."""
    pending = store.list_checkpoints(experiment_id=experiment.id, state=DELETING)
    if not pending:
        return GCResult()
    return delete_checkpoints(store, experiment_storage(store, experiment.id), pending)


def _remove_leftovers(store: Store, experiment: Experiment, deleted: Sequence[Checkpoint]) -> None:
    """Delete the files left behind by rows already DELETED whose files are still in storage:
    a trial that died in ``ctx.checkpoint.delete`` (the master marks, the trial deletes), or
    a master of a trialkit before DELETING (which marked its rows DELETED first)."""
    if not deleted:
        return
    storage = experiment_storage(store, experiment.id)
    left = [c.uuid for c in deleted if storage.exists(c.uuid)]
    for uuid in left:
        storage.delete(uuid)
    if left:
        logger.info(
            "experiment %d: removed the files of %d checkpoints an interrupted delete left",
            experiment.id,
            len(left),
        )


def finish_pending_deletes(store: Store) -> GCResult:
    """Finish every delete a stopped master left (rows still DELETING), experiment by
    experiment; each outcome goes to the master log. A failure is logged, never raised: its
    rows stay DELETING for the next start or ``trialkit experiment gc``."""
    pending = store.list_checkpoints(state=DELETING)
    total = GCResult()
    for experiment_id in sorted({c.experiment_id for c in pending}):
        total += _finish_pending_logged(store, experiment_id)
    return total


def _finish_pending_logged(store: Store, experiment_id: int) -> GCResult:
    """``_finish_each_pending`` of one experiment under its lock, its outcome logged."""
    try:
        with _experiment_lock(experiment_id):
            result, failed = _finish_each_pending(store, store.get_experiment(experiment_id))
    except Exception as e:  # storage or store trouble: say so where an operator looks
        result, failed = GCResult(), [str(e)]
    if result.deleted:
        logger.info(
            "experiment %d: finished deleting %d checkpoints a stopped master left (%d bytes): %s",
            experiment_id,
            len(result.deleted),
            result.bytes_freed,
            ", ".join(result.deleted),
        )
    for reason in failed:
        logger.error(
            "experiment %d: finishing the checkpoint deletes a stopped master left failed: %s; "
            "'trialkit experiment gc %d' retries (so does the next master start)",
            experiment_id,
            reason,
            experiment_id,
        )
    return result


def _finish_each_pending(store: Store, experiment: Experiment) -> tuple[GCResult, list[str]]:
    """Finish the experiment's DELETING checkpoints one by one, so files that cannot be
    deleted hold up their own checkpoint only; returns what went and why others did not."""
    storage = experiment_storage(store, experiment.id)
    result, failed = GCResult(), []
    for c in store.list_checkpoints(experiment_id=experiment.id, state=DELETING):
        try:
            result += delete_checkpoints(store, storage, [c])
        except CheckpointStorageError as e:
            failed.append(str(e))
    return result, failed


def finish_pending_deletes_after(store: Store) -> threading.Thread:
    """Start ``finish_pending_deletes`` beside a master that starts (a daemon thread, as the
    end-of-experiment GC: deleting files must not hold up the engine or the API)."""
    thread = threading.Thread(
        target=finish_pending_deletes, args=(store,), name="trialkit-gc-resume", daemon=True
    )
    thread.start()
    return thread


_locks_guard = threading.Lock()
_locks: dict[int, threading.Lock] = {}


def _experiment_lock(experiment_id: int) -> threading.Lock:
    """The lock that keeps two GC runs (or a GC and a delete) of one experiment apart."""
    with _locks_guard:
        return _locks.setdefault(experiment_id, threading.Lock())


class DeleteRefused(ValueError):
    """A checkpoint or experiment that must not be deleted now; the message says why."""


def _referencing(
    store: Store, uuids: set[str], other_than: int | None = None
) -> tuple[str, int] | None:
    """(uuid, experiment id) of a warm start (an experiment other than ``other_than``) that
    uses one of ``uuids`` as its source. A ``source_trial_id`` was resolved to its
    checkpoint's uuid when that experiment was created, so both forms are covered."""
    for exp in store.list_experiments():
        source = stored_source(exp.config)
        if source is not None and source in uuids and exp.id != other_than:
            return source, exp.id
    return None


def check_not_a_warm_start_source(store: Store, uuid: str) -> None:
    """DeleteRefused when an experiment warm-starts from the checkpoint."""
    used = _referencing(store, {uuid})
    if used is not None:
        raise DeleteRefused(
            f"checkpoint {uuid} is the warm-start source of experiment {used[1]}; "
            "delete that experiment first"
        )


def check_checkpoint_deletable(store: Store, checkpoint: Checkpoint) -> None:
    """DeleteRefused when the checkpoint's trial is still running or a warm start uses it."""
    trial = store.get_trial(checkpoint.trial_id)
    if not trial.state.ended:
        raise DeleteRefused(
            f"checkpoint {checkpoint.uuid} belongs to trial {trial.id}, which is "
            f"{trial.state.value}; it may resume from it, so delete it after the trial ends"
        )
    check_not_a_warm_start_source(store, checkpoint.uuid)


def delete_checkpoints_by_uuid(store: Store, uuids: Sequence[str]) -> GCResult:
    """Delete the named checkpoints (already deleted ones are skipped), all or none: each is
    checked first (``check_checkpoint_deletable``)."""
    chosen = [store.get_checkpoint(u) for u in dict.fromkeys(uuids)]
    live = [c for c in chosen if c.state != DELETED]  # a DELETING one is finished
    for c in live:
        check_checkpoint_deletable(store, c)
    by_experiment: dict[int, list[str]] = defaultdict(list)
    for c in live:
        by_experiment[c.experiment_id].append(c.uuid)
    result = GCResult()
    for experiment_id, mine in by_experiment.items():  # one transaction of marks for each
        with _experiment_lock(experiment_id):  # apart from GC and the start's resume
            storage = experiment_storage(store, experiment_id)
            again = [store.get_checkpoint(u) for u in mine]  # a GC may have deleted some
            result += delete_checkpoints(store, storage, [c for c in again if c.state != DELETED])
    return result


def check_experiment_deletable(store: Store, experiment: Experiment) -> None:
    """DeleteRefused unless the experiment has ended and no other experiment warm-starts
    from one of its checkpoints."""
    if not experiment.state.ended:
        raise DeleteRefused(
            f"experiment {experiment.id} is {experiment.state.value}; only a finished "
            f"experiment can be deleted ('trialkit experiment kill {experiment.id}' ends it)"
        )
    mine = {c.uuid for c in store.list_checkpoints(experiment_id=experiment.id)}
    used = _referencing(store, mine, other_than=experiment.id)
    if used is not None:
        raise DeleteRefused(
            f"experiment {experiment.id}'s checkpoint {used[0]} is the warm-start source of "
            f"experiment {used[1]}; delete that experiment first"
        )


def delete_experiment(store: Store, experiment: Experiment, trials_dir: Path) -> GCResult:
    """Delete a finished experiment: its checkpoints' files and its warm-start copy, its
    trials' directories under ``trials_dir`` (logs, working copies), then its rows."""
    with _experiment_lock(experiment.id):
        check_experiment_deletable(store, experiment)
        storage = experiment_storage(store, experiment.id)
        earlier = _deleted(store, experiment)
        live = store.list_checkpoints(experiment_id=experiment.id)  # DELETING ones are finished
        result = delete_checkpoints(store, storage, [c for c in live if c.state != DELETED])
        _remove_leftovers(store, experiment, earlier)
        copy = warm_start_copy(
            store, store.config_with_secrets(experiment.id), other_than=experiment.id
        )
        if copy is not None:  # what its trials started from, copied in at create
            storage.delete(copy)
        storage.delete_files(tensorboard_prefix(experiment.id))  # AUTO's uploads, as Determined
    for trial in store.list_trials(experiment.id):
        shutil.rmtree(trials_dir / str(trial.id), ignore_errors=True)
    store.delete_experiment_rows(experiment.id)
    return result


def best_checkpoints(
    store: Store, experiment: Experiment, limit: int
) -> list[tuple[Checkpoint, float | None]]:
    """The experiment's ``limit`` best live checkpoints by the searcher metric of their
    validation (the order GC ranks by: best first, without a metric last), with that value."""
    smaller_is_better = searcher_config_of(experiment).smaller_is_better
    ranked = sorted(candidates(store, experiment), key=lambda c: _metric_key(c, smaller_is_better))
    by_uuid = {c.uuid: c for c in store.list_checkpoints(experiment_id=experiment.id)}
    return [(by_uuid[c.uuid], c.metric) for c in ranked[:limit]]


def collect_garbage_at_end(store: Store, experiment_id: int) -> GCResult | None:
    """GC when an experiment has ended (the engine's hook): the outcome goes to the master
    log, a failure too (never raised: the checkpoints it could not delete stay, and
    ``trialkit experiment gc`` retries)."""
    try:
        result = collect_garbage(store, store.get_experiment(experiment_id))
    except Exception as e:  # storage or store trouble: say so where an operator looks
        logger.error(
            "experiment %d: checkpoint GC at its end failed: %s; "
            "'trialkit experiment gc %d' retries",
            experiment_id,
            e,
            experiment_id,
        )
        return None
    logger.info(
        "experiment %d: checkpoint GC at its end deleted %d checkpoints (%d bytes)",
        experiment_id,
        len(result.deleted),
        result.bytes_freed,
    )
    return result


def collect_garbage_after(store: Store, experiment_id: int) -> threading.Thread:
    """Start the end-of-experiment GC beside the engine: deleting files (from object stores,
    too) must not hold the engine's lock. A daemon thread, so a master that stops midway is
    not held up; rows go DELETING before their files, so it leaves DELETING rows at worst
    (the next master finishes them), never a COMPLETED record without its files."""
    thread = threading.Thread(
        target=collect_garbage_at_end,
        args=(store, experiment_id),
        name=f"trialkit-gc-{experiment_id}",
        daemon=True,
    )
    thread.start()
    return thread
