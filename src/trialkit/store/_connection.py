"""Opening the store's database: URL normalisation, pool sizing, SQLite pragmas, and the session
hooks that mark a session that wrote (so a commit without an answer is in doubt only where it
wrote)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import ORMExecuteState, Session, sessionmaker

from .._json import dumps
from ._errors import StoreError, driver_reason


def sqlite_url(path: str | os.PathLike[str]) -> str:
    return f"sqlite:///{Path(path)}"


def normalize_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` mean psycopg 3 (SQLAlchemy would pick psycopg2)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def shown(url: str) -> str:
    """The URL as errors may print it: without its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except SQLAlchemyError:
        return url


#: Connections the pool keeps: one per thread the master's FastAPI app runs sync routes on
#: (anyio's default limiter, 40), so a burst of trial reports does not queue for a connection
#: behind SQLAlchemy's default of 5 (+10 overflow); the overflow serves the master's own threads.
POOL_SIZE = 40
POOL_OVERFLOW = 10


def _pool_kwargs(url: str) -> dict[str, Any]:
    """Pool sizing for a server or file database; in-memory SQLite keeps its own pool."""
    database = make_url(url).database
    if url.startswith("sqlite") and (not database or database == ":memory:"):
        return {}
    return {"pool_size": POOL_SIZE, "max_overflow": POOL_OVERFLOW}


def open_engine(url: str) -> Engine:
    is_sqlite = url.startswith("sqlite")
    kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False}} if is_sqlite else {}
    try:
        kwargs.update(_pool_kwargs(url))
    except SQLAlchemyError:
        pass  # an unparsable URL: create_engine below says so in its one-line error
    try:
        engine = create_engine(url, json_serializer=dumps, **kwargs)
    except ImportError as e:
        hint = " (pip install 'trialkit[postgres]')" if url.startswith("postgres") else ""
        raise StoreError(f"cannot open the store at {shown(url)}: {e}{hint}") from e
    except SQLAlchemyError as e:
        raise StoreError(f"cannot open the store at {shown(url)}: {driver_reason(e)}") from e
    if is_sqlite:
        _configure_sqlite(engine)
    return engine


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()


#: ``Session.info`` key: the session flushed or executed a write (its commit decides it).
WROTE = "trialkit_wrote"


def note_writes(sessions: sessionmaker[Session]) -> None:
    """Mark each session that writes, so that a commit without an answer is known to be in
    doubt only where it was (``_retry``: a read-only one is run again)."""

    def flushed(session: Session, _context: Any) -> None:
        session.info[WROTE] = True

    def executed(state: ORMExecuteState) -> None:
        if not state.is_select:
            state.session.info[WROTE] = True

    event.listen(sessions, "after_flush", flushed)
    event.listen(sessions, "do_orm_execute", executed)


def rollback(session: Session) -> None:
    """Roll back what failed; on a connection the server dropped there is nothing to undo."""
    with contextlib.suppress(SQLAlchemyError):
        session.rollback()
