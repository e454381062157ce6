"""The schema of trialkit before migrations (main at e202128, ``store/_models.py`` then), written
out so that revision 0001 does not change when the models do."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

Table(
    "experiments",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(256), nullable=False),
    Column("description", Text),
    Column("labels", JSON, nullable=False),
    Column("config", JSON, nullable=False),
    Column("model_def", LargeBinary),
    Column("state", String(32), nullable=False, index=True),
    Column("archived", Boolean, nullable=False),
    Column("unmanaged", Boolean, nullable=False),
    Column("progress", Float, nullable=False),
    Column("searcher_state", JSON),
    Column("error", Text),
    Column("created_at", Float, nullable=False),
    Column("ended_at", Float),
)

Table(
    "metric_batches",
    metadata,
    Column("trial_id", Integer, primary_key=True),
    Column("run_id", Integer, primary_key=True),
    Column("sender", String(32), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("stored_at", Float, nullable=False),
)

Table(
    "trials",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("experiment_id", Integer, ForeignKey("experiments.id"), nullable=False, index=True),
    Column("request_id", String(64), nullable=False),
    Column("hparams", JSON, nullable=False),
    Column("seed", Integer, nullable=False),
    Column("state", String(32), nullable=False, index=True),
    Column("restarts", Integer, nullable=False),
    Column("run_id", Integer, nullable=False),
    Column("op_length", Integer),
    Column("op_complete", Boolean, nullable=False),
    Column("closed", Boolean, nullable=False),
    Column("stop_requested", Boolean, nullable=False),
    Column("acked_run_id", Integer),
    Column("early_exit", String(32)),
    Column("progress", Float),
    Column("status", Text),
    Column("error", Text),
    Column("pid", Integer),
    Column("pid_started", Float),
    Column("log_offset", Integer, nullable=False),
    Column("slots", JSON, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("ended_at", Float),
)

Table(
    "checkpoints",
    metadata,
    Column("uuid", String(64), primary_key=True),
    Column("trial_id", Integer, ForeignKey("trials.id"), nullable=False, index=True),
    Column("experiment_id", Integer, nullable=False, index=True),
    Column("run_id", Integer, nullable=False),
    Column("steps_completed", Integer, nullable=False),
    Column("metadata", JSON, nullable=False),
    Column("resources", JSON, nullable=False),
    Column("storage", JSON, nullable=False),
    Column("state", String(32), nullable=False),
    Column("reported_at", Float, nullable=False),
)

Table(
    "logs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("trial_id", Integer, ForeignKey("trials.id"), nullable=False, index=True),
    Column("run_id", Integer, nullable=False),
    Column("line", Text, nullable=False),
    Column("ts", Float, nullable=False),
)

Table(
    "metrics",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("trial_id", Integer, ForeignKey("trials.id"), nullable=False, index=True),
    Column("run_id", Integer, nullable=False),
    Column("group", String(64), nullable=False),
    Column("steps_completed", Integer, nullable=False),
    Column("values", JSON, nullable=False),
    Column("batch_metrics", JSON),
    Column("reported_at", Float, nullable=False),
)
