"""0002: ids are never reused after a delete.

SQLite hands a deleted row's id (the largest) out again unless the table is AUTOINCREMENT, so an
experiment created after ``experiment delete 3`` was 3 again and met the old one's trial
directories and checkpoints. SQLite tables cannot be altered to AUTOINCREMENT: they are rebuilt
(copied into a new table; ``sqlite_sequence`` then starts at the largest id kept). PostgreSQL's
SERIAL sequences never hand an id out twice already: nothing to do there.
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TABLES = ("experiments", "trials", "metrics", "logs")


def _rebuild(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in TABLES:
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
        ):
            pass


def upgrade() -> None:
    _rebuild(autoincrement=True)


def downgrade() -> None:
    _rebuild(autoincrement=False)
