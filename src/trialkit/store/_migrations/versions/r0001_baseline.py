"""0001: the schema of trialkit before migrations (a store made then is stamped 0001)."""

from __future__ import annotations

from alembic import op

from trialkit.store._migrations._baseline import metadata

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    metadata.create_all(op.get_bind())


def downgrade() -> None:
    metadata.drop_all(op.get_bind())
