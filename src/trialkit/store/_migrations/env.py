"""Alembic's environment: runs on the connection ``.._schema`` opened (in its transaction, under
its lock); there is no alembic.ini and no URL here."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, transactional_ddl=True, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
