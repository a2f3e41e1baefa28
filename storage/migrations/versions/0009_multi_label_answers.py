"""Answers in multi-label sessions (schema version 9).

``labels.answer_classes`` holds the set of classes answered as bits (bit k: the session's class k; 0: none of
them); ``label_corrections.old_classes`` and ``new_classes`` the set before and after a change. The other
sessions leave them empty: every row already stored keeps its meaning. Written out here, not taken from the
models, so that it stays what it was.

Revision ID: 0009_multi_label_answers
Revises: 0008_answer_classes
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_multi_label_answers"
down_revision = "0008_answer_classes"
branch_labels = None
depends_on = None

#: the ``schema_info.version`` this revision brings the database to
schema_version = 9


def upgrade() -> None:
    op.add_column("labels", sa.Column("answer_classes", sa.SmallInteger(), nullable=True))
    op.add_column("label_corrections", sa.Column("old_classes", sa.SmallInteger(), nullable=True))
    op.add_column("label_corrections", sa.Column("new_classes", sa.SmallInteger(), nullable=True))
    op.execute(sa.text("UPDATE schema_info SET version = :version").bindparams(version=schema_version))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN on both (SQLite from 3.35): a batch copy of ``labels`` would delete its
    # corrections through their ON DELETE CASCADE
    for table, column in (
        ("label_corrections", "new_classes"),
        ("label_corrections", "old_classes"),
        ("labels", "answer_classes"),
    ):
        op.execute(sa.text(f"ALTER TABLE {table} DROP COLUMN {column}"))
    op.execute(sa.text("UPDATE schema_info SET version = 8"))
