"""Label history: corrections of earlier labels, and a name for each session (schema version 2).

``label_corrections`` records every later change or removal of a label (who,
when, from which answer to which) without touching the answer as it was
given; ``labelling_sessions.name`` lets an analyst call a session something
other than its number.

Revision ID: 0002_label_history
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_label_history"
down_revision = "0001"
branch_labels = None
depends_on = None

#: the ``schema_info.version`` this revision brings the database to (one more than the revision it revises)
schema_version = 2


def upgrade() -> None:
    # a plain ADD COLUMN (no table copy: with foreign keys on, copying a table could cascade)
    op.add_column("labelling_sessions", sa.Column("name", sa.String(length=200), nullable=True))
    op.create_table(
        "label_corrections",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("label_id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("old_value", sa.SmallInteger(), nullable=False),
        sa.Column("new_value", sa.SmallInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("kind IN ('change', 'remove')", name="ck_correction_kind"),
        sa.CheckConstraint("old_value IN (-1, 0, 1)", name="ck_correction_old_value"),
        sa.CheckConstraint(
            "(kind = 'remove' AND new_value IS NULL) OR (kind = 'change' AND new_value IN (-1, 1))",
            name="ck_correction_new_value",
        ),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotators.id"]),
        sa.ForeignKeyConstraint(["label_id"], ["labels.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["session_id"], ["labelling_sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_correction_label", "label_corrections", ["label_id", "id"], unique=False)
    op.create_index("ix_correction_session", "label_corrections", ["session_id", "id"], unique=False)
    op.execute(sa.text("UPDATE schema_info SET version = :version").bindparams(version=schema_version))


def downgrade() -> None:
    op.drop_index("ix_correction_session", table_name="label_corrections")
    op.drop_index("ix_correction_label", table_name="label_corrections")
    op.drop_table("label_corrections")
    with op.batch_alter_table("labelling_sessions") as batch:
        batch.drop_column("name")
