"""The store: one place that opens sessions, commits, rolls back and translates DB errors.

Query methods return the frozen domain objects of ``_types`` so callers never hold ORM rows.

``metric_batches`` (the keys that make a resent metric batch be stored once) holds only the
batches of runs still going: when a run ends the engine deletes its rows and any earlier run's
(``forget_metric_batches``), since a process that exited cannot resend.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import (
    func,
    select,
    update,
)
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from .._secrets import (
    Secrets,
    kept_secrets,
    reveal_config,
    reveal_storage,
    split_config,
    split_storage,
)
from . import _convert as convert
from ._changes import WriteCounter
from ._charts import ChartQueries
from ._connection import (
    WROTE,
    normalize_url,
    note_writes,
    open_engine,
    rollback,
    shown,
    sqlite_url,
)
from ._deletes import DeleteQueries
from ._errors import NotFound, StoreError, driver_reason
from ._logs import LogQueries
from ._metric_writes import MetricWrites
from ._models import (
    CheckpointRow,
    ExperimentRow,
    MetricRow,
    StorageSecretRow,
    TrialRow,
)
from ._queries import experiment_trial_ids, latest_and_best, latest_checkpoints, metric_number
from ._retry import repeatable, retry_public_methods, store_error
from ._schema import SchemaError
from ._schema import upgrade as upgrade_schema
from ._types import (
    BatchMetrics,
    Checkpoint,
    Experiment,
    ExperimentState,
    Metric,
    Trial,
    TrialState,
    TrialView,
)


@retry_public_methods
class Store(MetricWrites, DeleteQueries, ChartQueries, LogQueries):
    """Thread-safe access to experiments, trials, metrics, checkpoints and logs.

    Checkpoint storage credentials in a config or a checkpoint's storage are stored apart and
    read back as ``trialkit._secrets.MASK``; only ``config_with_secrets`` and
    ``checkpoint_storage_with_secrets`` give them back, for the master's and the trial's use.

    Every public method waits out a database server that is down or restarting (``_retry``)."""

    def __init__(self, url: str) -> None:
        self.url = normalize_url(url)
        self._engine = open_engine(self.url)
        try:
            upgrade_schema(self._engine, shown(url))
        except SchemaError as e:
            self._engine.dispose()
            raise StoreError(str(e)) from e
        except SQLAlchemyError as e:
            self._engine.dispose()
            raise StoreError(f"cannot open the store at {shown(url)}: {driver_reason(e)}") from e
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)
        self._writes = WriteCounter(self._engine)
        note_writes(self._sessions)
        self._dbapi = self._engine.dialect.loaded_dbapi
        self._prepare_metric_writes()

    @classmethod
    def at(cls, home: str | os.PathLike[str]) -> Store:
        """The default SQLite store under a trialkit home directory."""
        Path(home).mkdir(parents=True, exist_ok=True)
        return cls(sqlite_url(Path(home) / "trialkit.db"))

    @classmethod
    def for_home(cls, home: str | os.PathLike[str]) -> Store:
        """The store a home uses: ``$TRIALKIT_DB`` (e.g. a PostgreSQL URL) if set, else SQLite."""
        url = os.environ.get("TRIALKIT_DB")
        return cls(url) if url else cls.at(home)

    def close(self) -> None:
        self._engine.dispose()

    @property
    def changes(self) -> int:
        """A number that changes after each write this process committed: while it stays the
        same, nothing this process stores has changed (writes of other processes are not seen)."""
        return self._writes.value

    @contextlib.contextmanager
    def _session(self) -> Iterator[Session]:
        session = self._sessions()
        committing = False
        try:
            yield session
            committing = True
            session.commit()
        except SQLAlchemyError as e:
            rollback(session)
            in_doubt = committing and session.info.get(WROTE, False)
            raise store_error(e, self._dbapi, in_doubt=in_doubt) from e
        except BaseException:
            rollback(session)
            raise
        finally:
            session.close()

    @staticmethod
    def _set_fields(row: Any, fields: dict[str, Any]) -> None:
        columns = row.__table__.columns.keys()
        unknown = sorted(k for k in fields if k not in columns and k != "meta")
        if unknown:
            raise ValueError(f"{row.__tablename__}: no such field(s) {', '.join(unknown)}")
        for key, value in fields.items():
            setattr(row, key, value)

    @staticmethod
    def _get(session: Session, model: type[Any], key: Any, what: str) -> Any:
        row = session.get(model, key)
        if row is None:
            raise NotFound(f"{what} {key} not found")
        return row

    # Experiments -------------------------------------------------------------------------------

    def create_experiment(
        self,
        *,
        name: str,
        config: dict[str, Any],
        description: str | None = None,
        labels: Sequence[str] = (),
        model_def: bytes | None = None,
        unmanaged: bool = False,
        state: ExperimentState = ExperimentState.ACTIVE,
    ) -> Experiment:
        masked, secrets = split_config(config)
        with self._session() as s:
            row = ExperimentRow(
                name=name,
                description=description,
                labels=list(labels),
                config=masked,
                model_def=model_def,
                state=state.value,
                archived=False,
                unmanaged=unmanaged,
                progress=0.0,
                created_at=time.time(),
            )
            s.add(row)
            s.flush()
            self._keep_secrets(s, row.id, "", secrets)
            return convert.experiment(row)

    @staticmethod
    def _keep_secrets(
        s: Session, experiment_id: int, checkpoint_uuid: str, secrets: Secrets
    ) -> None:
        """Store (or with none, forget) the credentials of a config ("") or a checkpoint."""
        row = s.get(StorageSecretRow, (experiment_id, checkpoint_uuid))
        if row is not None and not secrets:
            s.delete(row)
        elif row is not None:
            row.secrets = dict(secrets)
        elif secrets:
            s.add(
                StorageSecretRow(
                    experiment_id=experiment_id,
                    checkpoint_uuid=checkpoint_uuid,
                    secrets=dict(secrets),
                )
            )

    @staticmethod
    def _secrets_of(s: Session, experiment_id: int, checkpoint_uuid: str = "") -> Secrets:
        row = s.get(StorageSecretRow, (experiment_id, checkpoint_uuid))
        return dict(row.secrets) if row is not None else {}

    def config_with_secrets(self, experiment_id: int) -> dict[str, Any]:
        """The experiment's config with its storage credentials: for the master's own storage
        access and the trial's cluster info only, never to show."""
        with self._session() as s:
            row = self._get(s, ExperimentRow, experiment_id, "experiment")
            return reveal_config(row.config, self._secrets_of(s, experiment_id))

    def checkpoint_storage_with_secrets(self, uuid: str) -> dict[str, Any]:
        """The storage a checkpoint was reported in, with its credentials (see above)."""
        with self._session() as s:
            row = self._get(s, CheckpointRow, uuid, "checkpoint")
            secrets = self._secrets_of(s, row.experiment_id, uuid) or self._secrets_of(
                s, row.experiment_id
            )
            return reveal_storage(row.storage, secrets)

    def get_experiment(self, experiment_id: int) -> Experiment:
        with self._session() as s:
            return convert.experiment(self._get(s, ExperimentRow, experiment_id, "experiment"))

    def list_experiments(
        self, *, include_archived: bool = True, states: Sequence[ExperimentState] = ()
    ) -> list[Experiment]:
        with self._session() as s:
            q = select(ExperimentRow).order_by(ExperimentRow.id)
            if not include_archived:
                q = q.where(ExperimentRow.archived.is_(False))
            if states:
                q = q.where(ExperimentRow.state.in_([st.value for st in states]))
            return [convert.experiment(r) for r in s.scalars(q)]

    @repeatable
    def update_experiment(self, experiment_id: int, **fields: Any) -> Experiment:
        if isinstance(fields.get("state"), ExperimentState):
            fields["state"] = fields["state"].value
        given = None
        if "config" in fields:
            fields["config"], given = split_config(fields["config"])
        with self._session() as s:
            row = self._get(s, ExperimentRow, experiment_id, "experiment")
            self._set_fields(row, fields)
            if given is not None:
                old = self._secrets_of(s, experiment_id)
                kept = kept_secrets(fields["config"], given, old)
                self._keep_secrets(s, experiment_id, "", kept)
            return convert.experiment(row)

    def get_model_def(self, experiment_id: int) -> bytes | None:
        with self._session() as s:
            return self._get(s, ExperimentRow, experiment_id, "experiment").model_def  # type: ignore[no-any-return]

    def get_searcher_state(self, experiment_id: int) -> dict[str, Any] | None:
        with self._session() as s:
            return self._get(s, ExperimentRow, experiment_id, "experiment").searcher_state  # type: ignore[no-any-return]

    # Trials ------------------------------------------------------------------------------------

    def create_trial(
        self, *, experiment_id: int, request_id: str, hparams: dict[str, Any], seed: int
    ) -> Trial:
        with self._session() as s:
            row = TrialRow(
                experiment_id=experiment_id,
                request_id=request_id,
                hparams=hparams,
                seed=seed,
                state=TrialState.ACTIVE.value,
                restarts=0,
                run_id=0,
                op_complete=True,
                closed=False,
                stop_requested=False,
                log_offset=0,
                slots=[],
                created_at=time.time(),
            )
            s.add(row)
            s.flush()
            return convert.trial(row)

    def get_trial(self, trial_id: int) -> Trial:
        with self._session() as s:
            return convert.trial(self._get(s, TrialRow, trial_id, "trial"))

    def list_trials(self, experiment_id: int | None = None) -> list[Trial]:
        with self._session() as s:
            q = select(TrialRow).order_by(TrialRow.id)
            if experiment_id is not None:
                q = q.where(TrialRow.experiment_id == experiment_id)
            return [convert.trial(r) for r in s.scalars(q)]

    def trial_state_counts(self) -> dict[int, dict[str, int]]:
        """Per experiment, how many of its trials are in each state (one grouped query)."""
        with self._session() as s:
            q = select(TrialRow.experiment_id, TrialRow.state, func.count()).group_by(
                TrialRow.experiment_id, TrialRow.state
            )
            counts: dict[int, dict[str, int]] = {}
            for exp_id, state, n in s.execute(q):
                counts.setdefault(exp_id, {})[state] = n
            return counts

    def trial_by_request(self, experiment_id: int, request_id: str) -> Trial | None:
        """The experiment's trial made for searcher request ``request_id``, if any."""
        with self._session() as s:
            q = select(TrialRow).where(
                TrialRow.experiment_id == experiment_id, TrialRow.request_id == request_id
            )
            row = s.scalars(q.limit(1)).first()
            return None if row is None else convert.trial(row)

    @repeatable
    def update_trial(self, trial_id: int, **fields: Any) -> Trial:
        if isinstance(fields.get("state"), TrialState):
            fields["state"] = fields["state"].value
        with self._session() as s:
            row = self._get(s, TrialRow, trial_id, "trial")
            self._set_fields(row, fields)
            return convert.trial(row)

    # Metrics -----------------------------------------------------------------------------------

    def list_metrics(self, trial_id: int, group: str | None = None) -> list[Metric]:
        with self._session() as s:
            q = select(MetricRow).where(MetricRow.trial_id == trial_id).order_by(MetricRow.id)
            if group is not None:
                q = q.where(MetricRow.group == group)
            return [convert.metric(r) for r in s.scalars(q)]

    def count_metrics(self, trial_id: int, group: str | None = None) -> int:
        with self._session() as s:
            q = select(func.count(MetricRow.id)).where(MetricRow.trial_id == trial_id)
            if group is not None:
                q = q.where(MetricRow.group == group)
            return int(s.scalar(q) or 0)

    def latest_metrics(self, trial_id: int, group: str) -> Metric | None:
        with self._session() as s:
            q = (
                select(MetricRow)
                .where(MetricRow.trial_id == trial_id, MetricRow.group == group)
                .order_by(MetricRow.id.desc())
                .limit(1)
            )
            row = s.scalars(q).first()
            return convert.metric(row) if row is not None else None

    def best_validation(
        self,
        *,
        metric: str,
        smaller_is_better: bool,
        experiment_id: int | None = None,
        trial_id: int | None = None,
    ) -> float | None:
        """The best value of ``metric`` over validation reports of an experiment or a trial
        (numbers only: "NaN" strings and booleans are not compared)."""
        with self._session() as s:
            value = metric_number(self._engine.dialect.name, metric)
            pick = func.min if smaller_is_better else func.max
            q = select(pick(value)).where(MetricRow.group == "validation")
            if trial_id is not None:
                q = q.where(MetricRow.trial_id == trial_id)
            if experiment_id is not None:
                q = q.where(MetricRow.trial_id.in_(experiment_trial_ids(experiment_id)))
            found = s.scalar(q)
        return None if found is None else float(found)

    def trial_views(
        self,
        *,
        metric: str | None,
        smaller_is_better: bool,
        experiment_id: int | None = None,
        trial_id: int | None = None,
    ) -> list[TrialView]:
        """The trials of an experiment (or one trial) with their latest metrics, best
        ``metric`` value and latest checkpoint: three statements, whatever the number of trials."""
        with self._session() as s:
            q = select(TrialRow).order_by(TrialRow.id)
            if experiment_id is not None:
                q = q.where(TrialRow.experiment_id == experiment_id)
            if trial_id is not None:
                q = q.where(TrialRow.id == trial_id)
            trials = [convert.trial(r) for r in s.scalars(q)]
            if not trials:
                return []
            ids: Any = (
                experiment_trial_ids(experiment_id)
                if experiment_id is not None
                else [t.id for t in trials]
            )
            latest: dict[tuple[int, str], Metric] = {}
            best: dict[int, float] = {}
            for row in latest_and_best(s, ids, metric, smaller_is_better):
                latest[(row.trial_id, row.group)] = convert.domain(Metric, row)
                if row.best is not None:
                    best[row.trial_id] = float(row.best)
            checkpoints = latest_checkpoints(s, ids)
        return [
            TrialView(
                trial=t,
                latest_training=latest.get((t.id, "training")),
                latest_validation=latest.get((t.id, "validation")),
                best_validation=best.get(t.id),
                latest_checkpoint=checkpoints.get(t.id),
            )
            for t in trials
        ]

    def list_batch_metrics(self, trial_id: int) -> list[BatchMetrics]:
        """The per-batch metrics of a trial's training reports that carried them, in order."""
        with self._session() as s:
            q = (
                select(
                    MetricRow.run_id,
                    MetricRow.steps_completed,
                    MetricRow.reported_at,
                    MetricRow.batch_metrics,
                )
                .where(MetricRow.trial_id == trial_id, MetricRow.batch_metrics.is_not(None))
                .order_by(MetricRow.id)
            )
            return [convert.domain(BatchMetrics, r) for r in s.execute(q)]

    def last_validation_steps(self, trial_id: int) -> int | None:
        latest = self.latest_metrics(trial_id, "validation")
        return latest.steps_completed if latest else None

    # Checkpoints -------------------------------------------------------------------------------

    @repeatable
    def add_checkpoint(
        self,
        *,
        uuid: str,
        trial_id: int,
        experiment_id: int,
        run_id: int,
        steps_completed: int,
        metadata: dict[str, Any],
        resources: dict[str, int],
        storage: dict[str, Any],
    ) -> Checkpoint:
        """Register a checkpoint; its storage's credentials are kept apart only when they are
        not its experiment's (the usual case: the trial reports the experiment's storage)."""
        storage, secrets = split_storage(storage)
        with self._session() as s:
            if secrets == self._secrets_of(s, experiment_id):
                secrets = {}
            self._keep_secrets(s, experiment_id, uuid, secrets)
            row = CheckpointRow(
                uuid=uuid,
                trial_id=trial_id,
                experiment_id=experiment_id,
                run_id=run_id,
                steps_completed=steps_completed,
                meta=metadata,
                resources=resources,
                storage=storage,
                state="COMPLETED",
                reported_at=time.time(),
            )
            s.merge(row)
            return convert.checkpoint(row)

    def get_checkpoint(self, uuid: str) -> Checkpoint:
        with self._session() as s:
            return convert.checkpoint(self._get(s, CheckpointRow, uuid, "checkpoint"))

    def list_checkpoints(
        self,
        *,
        experiment_id: int | None = None,
        trial_id: int | None = None,
        state: str | None = None,
    ) -> list[Checkpoint]:
        """Checkpoints, oldest report first, of an experiment, a trial, in a state, or all."""
        with self._session() as s:
            q = select(CheckpointRow).order_by(CheckpointRow.reported_at)
            if experiment_id is not None:
                q = q.where(CheckpointRow.experiment_id == experiment_id)
            if trial_id is not None:
                q = q.where(CheckpointRow.trial_id == trial_id)
            if state is not None:
                q = q.where(CheckpointRow.state == state)
            return [convert.checkpoint(r) for r in s.scalars(q)]

    def latest_checkpoint(self, trial_id: int) -> Checkpoint | None:
        """The trial's completed checkpoint with the most steps (ties: the latest reported)."""
        with self._session() as s:
            q = (
                select(CheckpointRow)
                .where(CheckpointRow.trial_id == trial_id, CheckpointRow.state == "COMPLETED")
                .order_by(CheckpointRow.steps_completed.desc(), CheckpointRow.reported_at.desc())
                .limit(1)
            )
            row = s.scalars(q).first()
            return convert.checkpoint(row) if row is not None else None

    @repeatable
    def set_checkpoint_state(self, uuid: str, state: str) -> None:
        with self._session() as s:
            s.execute(update(CheckpointRow).where(CheckpointRow.uuid == uuid).values(state=state))
