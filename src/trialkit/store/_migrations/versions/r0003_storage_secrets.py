"""0003: checkpoint storage credentials move out of the stored configs into ``storage_secrets``.

Experiment configs (and the storage a trial reported with each checkpoint) were stored, and
served by describe, REST and the web UI, with their s3 keys and Azure connection strings or
credentials in plain text. Upgrading masks them in place (``trialkit._secrets.MASK``) and keeps
the values in the new table; downgrading puts them back and drops it.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from trialkit._secrets import reveal_config, reveal_storage, split_config, split_storage

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_experiments = sa.table("experiments", sa.column("id", sa.Integer), sa.column("config", sa.JSON))
_checkpoints = sa.table(
    "checkpoints",
    sa.column("uuid", sa.String),
    sa.column("experiment_id", sa.Integer),
    sa.column("storage", sa.JSON),
)
_secrets = sa.table(
    "storage_secrets",
    sa.column("experiment_id", sa.Integer),
    sa.column("checkpoint_uuid", sa.String),
    sa.column("secrets", sa.JSON),
)


def upgrade() -> None:
    if not sa.inspect(op.get_bind()).has_table("storage_secrets"):  # a store stamped 0001 may
        _create_table()  # hold every table already (made by create_all, as tests do)
    kept = _mask_experiments()
    _mask_checkpoints(kept)


def _create_table() -> None:
    op.create_table(
        "storage_secrets",
        sa.Column("experiment_id", sa.Integer(), sa.ForeignKey("experiments.id"), nullable=False),
        sa.Column("checkpoint_uuid", sa.String(length=64), nullable=False),
        sa.Column("secrets", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("experiment_id", "checkpoint_uuid"),
    )


def _mask_experiments() -> dict[int, dict[str, str]]:
    """Mask every experiment config's credentials; the credentials kept, by experiment."""
    bind = op.get_bind()
    kept: dict[int, dict[str, str]] = {}
    for exp_id, config in bind.execute(sa.select(_experiments.c.id, _experiments.c.config)):
        if not isinstance(config, dict):
            continue
        masked, secrets = split_config(config)
        if not secrets:
            continue
        kept[exp_id] = secrets
        bind.execute(_experiments.update().where(_experiments.c.id == exp_id).values(config=masked))
        _keep(exp_id, "", secrets)
    return kept


def _mask_checkpoints(experiment_secrets: dict[int, dict[str, str]]) -> None:
    """Mask the credentials of every checkpoint's reported storage; keep them apart only when
    they are not its experiment's."""
    bind = op.get_bind()
    rows = list(
        bind.execute(
            sa.select(_checkpoints.c.uuid, _checkpoints.c.experiment_id, _checkpoints.c.storage)
        )
    )
    for uuid, exp_id, storage in rows:
        if not isinstance(storage, dict):
            continue
        masked, secrets = split_storage(storage)
        if not secrets:
            continue
        bind.execute(
            _checkpoints.update().where(_checkpoints.c.uuid == uuid).values(storage=masked)
        )
        if secrets != experiment_secrets.get(exp_id):
            _keep(exp_id, uuid, secrets)


def _keep(experiment_id: int, checkpoint_uuid: str, secrets: dict[str, Any]) -> None:
    op.get_bind().execute(
        _secrets.insert().values(
            experiment_id=experiment_id, checkpoint_uuid=checkpoint_uuid, secrets=secrets
        )
    )


def downgrade() -> None:
    bind = op.get_bind()
    kept: dict[tuple[int, str], dict[str, str]] = {
        (e, u): s for e, u, s in bind.execute(sa.select(_secrets))
    }
    for (exp_id, uuid), secrets in kept.items():
        if uuid:
            continue
        config = bind.execute(
            sa.select(_experiments.c.config).where(_experiments.c.id == exp_id)
        ).scalar_one()
        bind.execute(
            _experiments.update()
            .where(_experiments.c.id == exp_id)
            .values(config=reveal_config(config, secrets))
        )
    for uuid, exp_id, storage in list(
        bind.execute(
            sa.select(_checkpoints.c.uuid, _checkpoints.c.experiment_id, _checkpoints.c.storage)
        )
    ):
        found = kept.get((exp_id, uuid)) or kept.get((exp_id, ""))
        if found and isinstance(storage, dict):
            bind.execute(
                _checkpoints.update()
                .where(_checkpoints.c.uuid == uuid)
                .values(storage=reveal_storage(storage, found))
            )
    op.drop_table("storage_secrets")
