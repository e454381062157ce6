"""SQLAlchemy tables. Generic column types only, so a PostgreSQL URL works as well as SQLite."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class ExperimentRow(Base):
    __tablename__ = "experiments"
    __table_args__ = {"sqlite_autoincrement": True}  # ids never reused (revision 0002)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(256))
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    labels: Mapped[list[str]] = mapped_column(JSON, default=list)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    model_def: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    state: Mapped[str] = mapped_column(String(32), index=True)
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    unmanaged: Mapped[bool] = mapped_column(Boolean, default=False)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    searcher_state: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[float] = mapped_column(Float)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)


class TrialRow(Base):
    __tablename__ = "trials"
    __table_args__ = {"sqlite_autoincrement": True}  # ids never reused (revision 0002)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id"), index=True)
    request_id: Mapped[str] = mapped_column(String(64))
    hparams: Mapped[dict[str, Any]] = mapped_column(JSON)
    seed: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(32), index=True)
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    run_id: Mapped[int] = mapped_column(Integer, default=0)
    op_length: Mapped[int | None] = mapped_column(Integer, nullable=True)
    op_complete: Mapped[bool] = mapped_column(Boolean, default=True)
    closed: Mapped[bool] = mapped_column(Boolean, default=False)
    stop_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    acked_run_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    early_exit: Mapped[str | None] = mapped_column(String(32), nullable=True)
    progress: Mapped[float | None] = mapped_column(Float, nullable=True)
    status: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: Why the trial's last run failed: its exception line, or exit code/signal and last log lines.
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    pid_started: Mapped[float | None] = mapped_column(Float, nullable=True)
    log_offset: Mapped[int] = mapped_column(Integer, default=0)
    slots: Mapped[list[int]] = mapped_column(JSON, default=list)
    created_at: Mapped[float] = mapped_column(Float)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)


class MetricRow(Base):
    __tablename__ = "metrics"
    __table_args__ = {"sqlite_autoincrement": True}  # ids never reused (revision 0002)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"), index=True)
    run_id: Mapped[int] = mapped_column(Integer, default=0)
    group: Mapped[str] = mapped_column(String(64))
    steps_completed: Mapped[int] = mapped_column(Integer)
    values: Mapped[dict[str, Any]] = mapped_column(JSON)
    batch_metrics: Mapped[list[dict[str, Any]] | None] = mapped_column(
        JSON(none_as_null=True), nullable=True
    )
    reported_at: Mapped[float] = mapped_column(Float)


class MetricBatchRow(Base):
    """A metric batch already stored, so a resend of it (the reply was lost) is not stored twice.

    Written in the same transaction as the batch's metric rows. ``sender`` is random per metric
    shipper (one per trial process and rank), ``seq`` counts that shipper's batches.
    """

    __tablename__ = "metric_batches"

    trial_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sender: Mapped[str] = mapped_column(String(32), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    stored_at: Mapped[float] = mapped_column(Float)


class CheckpointRow(Base):
    __tablename__ = "checkpoints"

    uuid: Mapped[str] = mapped_column(String(64), primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"), index=True)
    experiment_id: Mapped[int] = mapped_column(Integer, index=True)
    run_id: Mapped[int] = mapped_column(Integer, default=0)
    steps_completed: Mapped[int] = mapped_column(Integer)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON)
    resources: Mapped[dict[str, int]] = mapped_column(JSON)
    storage: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(32))
    reported_at: Mapped[float] = mapped_column(Float)


class StorageSecretRow(Base):
    """Checkpoint storage credentials, kept out of the JSON that is shown (revision 0003): the
    experiment config's (``checkpoint_uuid`` "") and those of a checkpoint whose reported
    storage had other credentials than its experiment's (``checkpoint_uuid`` its uuid)."""

    __tablename__ = "storage_secrets"

    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id"), primary_key=True)
    checkpoint_uuid: Mapped[str] = mapped_column(String(64), primary_key=True)
    secrets: Mapped[dict[str, str]] = mapped_column(JSON)


class LogRow(Base):
    __tablename__ = "logs"
    __table_args__ = {"sqlite_autoincrement": True}  # ids never reused (revision 0002)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"), index=True)
    run_id: Mapped[int] = mapped_column(Integer, default=0)
    line: Mapped[str] = mapped_column(Text)
    ts: Mapped[float] = mapped_column(Float)
