"""Sign-in throttles per name and client, instead of one lock per account (schema version 6).

An account locked after repeated failures was locked for everyone: anybody could keep an owner
out. ``sign_in_throttles`` counts failed attempts under a key (a name from one client, and a
client under any name) and locks only that key; ``accounts.locked_until`` goes. Every other
column and row is kept. Written out here, not taken from the models, so that it stays what it was.

Revision ID: 0006_sign_in_throttles
Revises: 0005_project_snapshots
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_sign_in_throttles"
down_revision = "0005_project_snapshots"
branch_labels = None
depends_on = None

#: the ``schema_info.version`` this revision brings the database to
schema_version = 6


def upgrade() -> None:
    op.create_table(
        "sign_in_throttles",
        sa.Column("key", sa.String(length=72), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_index("ix_sign_in_throttle_updated_at", "sign_in_throttles", ["updated_at"], unique=False)
    with op.batch_alter_table("accounts") as batch:
        batch.drop_column("locked_until")
    op.execute(sa.text("UPDATE schema_info SET version = :version").bindparams(version=schema_version))


def downgrade() -> None:
    with op.batch_alter_table("accounts") as batch:
        batch.add_column(sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True))
    op.drop_index("ix_sign_in_throttle_updated_at", table_name="sign_in_throttles")
    op.drop_table("sign_in_throttles")
    op.execute(sa.text("UPDATE schema_info SET version = 5"))
