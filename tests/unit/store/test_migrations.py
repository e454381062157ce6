"""Schema migrations on SQLite: a new store, a store made before migrations (by main e202128,
tests/integration/test_migrations_data), idempotence, a newer store refused, concurrent opens,
ids never reused after a delete (revision 0002), and storage credentials moved out of the
stored configs (revision 0003)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from tests import paths
from trialkit.store import Store, StoreError, sqlite_url
from trialkit.store._migrations._baseline import metadata as baseline
from trialkit.store._models import Base
from trialkit.store._schema import HEAD_REVISION, SCRIPTS, scripts

PRE_ALEMBIC = paths.REPO / "tests/integration/test_migrations_data/pre_alembic.db"
TABLES = ("experiments", "trials", "metrics", "checkpoints", "logs", "metric_batches")


def _rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(db) as con:
        return {t: sorted(con.execute(f"SELECT * FROM {t}"), key=repr) for t in TABLES}


def _schema_sql(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return sorted(
            r[0] for r in con.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")
        )


def _revision(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return [r[0] for r in con.execute("SELECT version_num FROM alembic_version")]


def _differences(db: Path, metadata: object) -> list[object]:
    """What Alembic's autogenerate finds between the store and ``metadata`` ([] = the same)."""
    engine = create_engine(sqlite_url(db))
    try:
        with engine.connect() as conn:
            return compare_metadata(MigrationContext.configure(conn), metadata)  # type: ignore[arg-type]
    finally:
        engine.dispose()


def _pre_alembic_copy(tmp_path: Path) -> Path:
    db = tmp_path / "home" / "trialkit.db"
    db.parent.mkdir()
    shutil.copy(PRE_ALEMBIC, db)
    return db


def test_head_constant_is_the_last_revision() -> None:
    assert scripts().get_current_head() == HEAD_REVISION


def test_new_store_is_made_by_the_migrations_and_matches_the_models(tmp_path: Path) -> None:
    Store.at(tmp_path / "home").close()
    db = tmp_path / "home" / "trialkit.db"
    assert _revision(db) == [HEAD_REVISION]
    assert _differences(db, Base.metadata) == []


def test_revision_0001_is_the_schema_main_made(tmp_path: Path) -> None:
    db = _pre_alembic_copy(tmp_path)
    assert _differences(db, baseline) == []
    with sqlite3.connect(db) as con:  # the fixture really is pre-migration
        assert not con.execute(
            "SELECT 1 FROM sqlite_master WHERE name='alembic_version'"
        ).fetchall()


def test_pre_alembic_store_is_stamped_and_upgraded_keeping_every_row(tmp_path: Path) -> None:
    db = _pre_alembic_copy(tmp_path)
    before = _rows(db)
    assert len(before["experiments"]) == 2 and len(before["checkpoints"]) == 40
    store = Store.at(db.parent)
    try:
        assert [e.name for e in store.list_experiments()] == [
            "core-api-stage-3",
            "core-api-stage-1",
        ]
        assert len(store.list_metrics(1, "validation")) > 0
    finally:
        store.close()
    assert _revision(db) == [HEAD_REVISION]
    assert _rows(db) == before
    assert _differences(db, Base.metadata) == []
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_upgrade_is_idempotent(tmp_path: Path) -> None:
    db = _pre_alembic_copy(tmp_path)
    Store.at(db.parent).close()
    schema, rows = _schema_sql(db), _rows(db)
    Store.at(db.parent).close()
    assert (_schema_sql(db), _rows(db), _revision(db)) == (schema, rows, [HEAD_REVISION])


def test_store_newer_than_the_code_is_refused(tmp_path: Path) -> None:
    Store.at(tmp_path / "home").close()
    db = tmp_path / "home" / "trialkit.db"
    with sqlite3.connect(db) as con:
        con.execute("UPDATE alembic_version SET version_num = '0042'")
    with pytest.raises(StoreError) as e:
        Store.at(tmp_path / "home")
    message = str(e.value)
    assert "\n" not in message
    assert f"schema revision 0042, newer than this trialkit knows (head {HEAD_REVISION})" in message
    assert "upgrade trialkit" in message
    assert _revision(db) == ["0042"]  # left as it was


def test_ids_are_never_reused_after_a_delete(tmp_path: Path) -> None:
    store = Store.at(tmp_path / "home")
    try:
        first = store.create_experiment(name="a", config={})
        trial = store.create_trial(experiment_id=first.id, request_id="r", hparams={}, seed=1)
        store.delete_experiment_rows(first.id)
        second = store.create_experiment(name="b", config={})
        again = store.create_trial(experiment_id=second.id, request_id="r", hparams={}, seed=1)
        assert second.id != first.id
        assert again.id != trial.id
    finally:
        store.close()


def test_upgraded_store_does_not_reuse_ids_either(tmp_path: Path) -> None:
    db = _pre_alembic_copy(tmp_path)
    store = Store.at(db.parent)
    try:
        made = store.create_experiment(name="new", config={})
        assert made.id == 3  # after the two the old store held
        store.delete_experiment_rows(made.id)
        assert store.create_experiment(name="newer", config={}).id == 4
    finally:
        store.close()


OPEN = """
import sys
from trialkit.store import Store
Store.at(sys.argv[1]).close()
"""


def test_concurrent_opens_migrate_once(tmp_path: Path) -> None:
    """Processes opening one new store at the same moment all succeed on one migrated schema."""
    for name, source in (("new", None), ("old", PRE_ALEMBIC)):
        home = tmp_path / name
        home.mkdir()
        if source:
            shutil.copy(source, home / "trialkit.db")
        procs = [
            subprocess.Popen([sys.executable, "-c", OPEN, str(home)], stderr=subprocess.PIPE)
            for _ in range(4)
        ]
        errors = [p.communicate(timeout=120)[1].decode() for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, errors
        assert _revision(home / "trialkit.db") == [HEAD_REVISION]
        assert _differences(home / "trialkit.db", Base.metadata) == []


def test_in_memory_store_is_migrated_on_its_own_connection() -> None:
    store = Store("sqlite://")
    try:
        first = store.create_experiment(name="a", config={})
        store.delete_experiment_rows(first.id)
        assert store.create_experiment(name="b", config={}).id != first.id
    finally:
        store.close()


# Revision 0003: storage credentials out of the stored configs ----------------------------------

S3 = {"type": "s3", "bucket": "b", "access_key": "AKIA-OLD-ROW", "secret_key": "old-row-secret"}


@pytest.fixture(params=["sqlite", "postgresql"])
def old_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL for a new database, on SQLite (in a home of its own) and on PostgreSQL."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres").new_database())
    (tmp_path / "home").mkdir()
    return sqlite_url(tmp_path / "home" / "trialkit.db")


def _migrate(url: str, revision: str, *, down: bool = False) -> None:
    """Run the shipped revisions on ``url`` up (or down) to ``revision``, as Store would."""
    from alembic import command
    from alembic.config import Config

    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            config = Config()
            config.set_main_option("script_location", str(SCRIPTS))
            config.attributes["connection"] = conn
            (command.downgrade if down else command.upgrade)(config, revision)
    finally:
        engine.dispose()


def _execute(url: str, sql: str, **params: object) -> list[tuple[object, ...]]:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            result = conn.execute(text(sql), params)
            return [tuple(r) for r in result] if result.returns_rows else []
    finally:
        engine.dispose()


def _store_0002_with_credentials(url: str) -> None:
    """A store as trialkit made it at revision 0002: an experiment whose config, and its
    checkpoints' storage (one with other keys), hold s3 credentials in plain text."""
    _migrate(url, "0002")
    _execute(
        url,
        "INSERT INTO experiments (id, name, labels, config, state, archived, unmanaged, "
        "progress, created_at) VALUES (1, 'old', '[]', :config, 'COMPLETED', false, false, 0, 0)",
        config=json.dumps({"name": "old", "checkpoint_storage": S3}),
    )
    _execute(
        url,
        "INSERT INTO trials (id, experiment_id, request_id, hparams, seed, state, restarts, "
        "run_id, op_complete, closed, stop_requested, log_offset, slots, created_at) "
        "VALUES (1, 1, 'r', '{}', 0, 'COMPLETED', 0, 0, true, true, false, 0, '[]', 0)",
    )
    for uuid, storage in (("same", S3), ("other", {**S3, "secret_key": "other-secret"})):
        _execute(
            url,
            "INSERT INTO checkpoints (uuid, trial_id, experiment_id, run_id, steps_completed, "
            "metadata, resources, storage, state, reported_at) "
            "VALUES (:uuid, 1, 1, 0, 1, '{}', '{}', :storage, 'COMPLETED', 0)",
            uuid=uuid,
            storage=json.dumps(storage),
        )


def _plain_text(url: str, table: str) -> str:
    return repr(_execute(url, f"SELECT * FROM {table}"))


def _json_column(url: str, sql: str) -> list[object]:
    return [r[0] if isinstance(r[0], dict) else json.loads(str(r[0])) for r in _execute(url, sql)]


def test_upgrade_moves_credentials_of_existing_rows_out_of_configs(old_store_url: str) -> None:
    url = old_store_url
    _store_0002_with_credentials(url)
    assert "old-row-secret" in _plain_text(url, "experiments")  # as 0002 stored it
    store = Store(url)
    try:
        shown = store.get_experiment(1).config["checkpoint_storage"]
        assert shown == {**S3, "access_key": "********", "secret_key": "********"}
        assert store.get_checkpoint("other").storage["secret_key"] == "********"
        assert store.config_with_secrets(1)["checkpoint_storage"] == S3
        assert store.checkpoint_storage_with_secrets("same") == S3
        assert store.checkpoint_storage_with_secrets("other")["secret_key"] == "other-secret"
    finally:
        store.close()
    for table in ("experiments", "checkpoints"):
        held = _plain_text(url, table)
        assert not [s for s in ("AKIA-OLD-ROW", "old-row-secret", "other-secret") if s in held]
    assert "old-row-secret" in _plain_text(url, "storage_secrets")


def test_downgrade_to_0002_puts_the_credentials_back(old_store_url: str) -> None:
    url = old_store_url
    _store_0002_with_credentials(url)
    configs = "SELECT config FROM experiments ORDER BY id"
    storages = "SELECT storage FROM checkpoints ORDER BY uuid"
    before = (_json_column(url, configs), _json_column(url, storages))
    Store(url).close()
    assert "old-row-secret" not in _plain_text(url, "experiments")  # moved out by 0003
    _migrate(url, "0002", down=True)
    assert _execute(url, "SELECT version_num FROM alembic_version") == [("0002",)]
    engine = create_engine(url)
    try:
        assert not inspect(engine).has_table("storage_secrets")
    finally:
        engine.dispose()
    assert (_json_column(url, configs), _json_column(url, storages)) == before
