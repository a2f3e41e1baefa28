"""Sign-ins kept by a browser (schema version 7): ``browser_sign_ins``.

A sign-in held per tab: a reload or a new tab asked again. ``browser_sign_ins`` keeps a
sign-in per browser, under the SHA-256 of a random token the browser holds in an HttpOnly
cookie (the token itself is never stored), with its expiry and its revocation. No other table
changes. Written out here, not taken from the models, so that it stays what it was.

Revision ID: 0007_browser_sign_ins
Revises: 0006_sign_in_throttles
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_browser_sign_ins"
down_revision = "0006_sign_in_throttles"
branch_labels = None
depends_on = None

#: the ``schema_info.version`` this revision brings the database to
schema_version = 7


def upgrade() -> None:
    op.create_table(
        "browser_sign_ins",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=True),
        sa.Column("ticket_hash", sa.String(length=64), nullable=True),
        sa.Column("ticket_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("session_epoch", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
        sa.UniqueConstraint("ticket_hash"),
    )
    op.create_index("ix_browser_sign_in_account", "browser_sign_ins", ["account_id"], unique=False)
    op.create_index("ix_browser_sign_in_expires_at", "browser_sign_ins", ["expires_at"], unique=False)
    op.execute(sa.text("UPDATE schema_info SET version = :version").bindparams(version=schema_version))


def downgrade() -> None:
    op.drop_index("ix_browser_sign_in_expires_at", table_name="browser_sign_ins")
    op.drop_index("ix_browser_sign_in_account", table_name="browser_sign_ins")
    op.drop_table("browser_sign_ins")
    op.execute(sa.text("UPDATE schema_info SET version = 6"))
