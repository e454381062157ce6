"""Schema migrations: opening a store brings it to the code's head revision (Alembic).

One path for every store: a new one is made by running the revisions from 0001; one made before
migrations existed (tables, no ``alembic_version``) is recognised as 0001 and upgraded; one whose
revision this code does not know (made by a newer trialkit) is refused. Migrating happens in one
transaction under a lock (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: an advisory lock), so stores
opened at the same moment by several processes are migrated once.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.pool import NullPool

from ._migrations._baseline import metadata as baseline

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

log = logging.getLogger(__name__)

SCRIPTS = Path(__file__).parent / "_migrations"
BASELINE_REVISION = "0001"
#: The revision the models match: the head of versions/ (a unit test checks it), known without
#: importing Alembic, so opening an up-to-date store stays cheap.
HEAD_REVISION = "0003"
#: Key of the PostgreSQL advisory lock held while migrating ("trialkit" in ASCII, as a bigint).
_PG_LOCK_KEY = int.from_bytes(b"trialkit", "big") & 0x7FFF_FFFF_FFFF_FFFF


class SchemaError(RuntimeError):
    """The store's schema cannot be used by this trialkit (newer, or not migratable)."""


def _quiet_alembic() -> None:
    """Alembic logs plugin set-up and "Context impl SQLiteImpl." at INFO when first used: the
    master's log gets one line per upgrade from here instead."""
    for name in ("alembic.runtime.plugins", "alembic.runtime.migration"):
        logging.getLogger(name).setLevel(logging.WARNING)


@functools.cache
def scripts() -> ScriptDirectory:
    """The revisions shipped in this package."""
    _quiet_alembic()
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(SCRIPTS))


def current_revision(conn: Connection) -> str | None:
    """The store's revision, or None when it has no ``alembic_version`` table."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    found = list(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
    if len(found) > 1:
        raise SchemaError(f"the store has several schema revisions ({', '.join(found)})")
    return found[0] if found else None


def _known(revision: str) -> bool:
    from alembic.util import CommandError

    try:
        return scripts().get_revision(revision) is not None
    except CommandError:
        return False


def _refuse_unknown(revision: str | None, shown: str) -> None:
    if revision is not None and not _known(revision):
        raise SchemaError(
            f"the store at {shown} has schema revision {revision}, newer than this trialkit "
            f"knows (head {HEAD_REVISION}): upgrade trialkit, or use another TRIALKIT_HOME "
            "or database"
        )


def upgrade(engine: Engine, shown: str) -> None:
    """Bring the store behind ``engine`` to the head revision (``shown``: its URL for errors)."""
    with engine.connect() as conn:
        current = current_revision(conn)
    if current == HEAD_REVISION:
        return  # the usual case: no lock, no second engine
    _refuse_unknown(current, shown)
    scripts()  # Alembic quiet before it is imported
    from alembic.util import CommandError

    # An in-memory SQLite database exists only on the engine's own connection: no second one.
    in_memory = engine.dialect.name == "sqlite" and engine.url.database in (None, "", ":memory:")
    migrating = engine if in_memory else _migration_engine(engine)
    try:
        with migrating.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
            _upgrade_locked(conn, shown)
    except CommandError as e:  # Alembic's: a revision file that cannot run
        raise SchemaError(f"cannot upgrade the store at {shown}: {e}") from e
    finally:
        if not in_memory:
            migrating.dispose()


def _upgrade_locked(conn: Connection, shown: str) -> None:
    current = current_revision(conn)  # again: another process may have migrated meanwhile
    _refuse_unknown(current, shown)
    if current == HEAD_REVISION:
        return
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(SCRIPTS))
    config.attributes["connection"] = conn
    stamped = current is None and inspect(conn).has_table("experiments")
    if stamped:  # made before migrations: recognised as 0001
        _complete_baseline(conn)
        command.stamp(config, BASELINE_REVISION)
    command.upgrade(config, "head")
    was = current or ("0001 (made before migrations)" if stamped else "none (a new store)")
    log.info("store %s: schema upgraded from revision %s to %s", shown, was, HEAD_REVISION)


def _complete_baseline(conn: Connection) -> None:
    """Give a store made before migrations the 0001 tables and nullable columns it lacks (older
    versions added them on open); anything else cannot be recognised as 0001."""
    baseline.create_all(conn, checkfirst=True)
    existing = inspect(conn)
    prep = conn.dialect.identifier_preparer
    for table in baseline.sorted_tables:
        have = {c["name"] for c in existing.get_columns(table.name)}
        for column in table.columns:
            if column.name in have:
                continue
            if not column.nullable:
                raise SchemaError(
                    f"the store's table {table.name} lacks column {column.name}, which cannot "
                    "be added in place: use a fresh TRIALKIT_HOME or database"
                )
            kind = column.type.compile(dialect=conn.dialect)
            conn.execute(
                text(
                    f"ALTER TABLE {prep.quote(table.name)} "
                    f"ADD COLUMN {prep.quote(column.name)} {kind}"
                )
            )


def _migration_engine(engine: Engine) -> Engine:
    """A one-connection engine for migrating: on SQLite its transactions are real ones taken with
    ``BEGIN IMMEDIATE`` (DDL included) and foreign keys are off, as a table rebuild needs."""
    migrating = create_engine(engine.url, poolclass=NullPool)
    if migrating.dialect.name == "sqlite":

        @event.listens_for(migrating, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # the driver's own BEGIN handling off
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=OFF")
            cur.close()

        @event.listens_for(migrating, "begin")
        def _on_begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    return migrating
