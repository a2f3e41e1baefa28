"""Answers in sessions with named classes (schema version 8).

``labels.answer_class`` holds the class answered (its place among the session's classes, which the
session's settings name); ``label_corrections.old_class`` and ``new_class`` the class before and after
a change. Two-class sessions leave them empty: every row already stored keeps its meaning. Written out
here, not taken from the models, so that it stays what it was.

Revision ID: 0008_answer_classes
Revises: 0007_browser_sign_ins
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_answer_classes"
down_revision = "0007_browser_sign_ins"
branch_labels = None
depends_on = None

#: the ``schema_info.version`` this revision brings the database to
schema_version = 8


def upgrade() -> None:
    op.add_column("labels", sa.Column("answer_class", sa.SmallInteger(), nullable=True))
    op.add_column("label_corrections", sa.Column("old_class", sa.SmallInteger(), nullable=True))
    op.add_column("label_corrections", sa.Column("new_class", sa.SmallInteger(), nullable=True))
    op.execute(sa.text("UPDATE schema_info SET version = :version").bindparams(version=schema_version))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN on both (SQLite from 3.35): a batch copy of ``labels`` would delete its
    # corrections through their ON DELETE CASCADE
    for table, column in (
        ("label_corrections", "new_class"),
        ("label_corrections", "old_class"),
        ("labels", "answer_class"),
    ):
        op.execute(sa.text(f"ALTER TABLE {table} DROP COLUMN {column}"))
    op.execute(sa.text("UPDATE schema_info SET version = 7"))
