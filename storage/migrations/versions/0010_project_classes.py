"""Team projects with named classes (schema version 10).

A project with named classes keeps them in its settings (``projects.params["classes"]``) and its members'
answers in ``labels.answer_class`` (version 8); ``adjudications.answer_class`` holds the class an owner
settled a disagreement on (``value`` is then 1). Yes / no projects leave it empty: every row already stored
keeps its meaning. Written out here, not taken from the models, so that it stays what it was.

Revision ID: 0010_project_classes
Revises: 0009_multi_label_answers
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_project_classes"
down_revision = "0009_multi_label_answers"
branch_labels = None
depends_on = None

#: the ``schema_info.version`` this revision brings the database to
schema_version = 10


def upgrade() -> None:
    op.add_column("adjudications", sa.Column("answer_class", sa.SmallInteger(), nullable=True))
    op.execute(sa.text("UPDATE schema_info SET version = :version").bindparams(version=schema_version))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN on both (SQLite from 3.35), as 0008 does
    op.execute(sa.text("ALTER TABLE adjudications DROP COLUMN answer_class"))
    op.execute(sa.text("UPDATE schema_info SET version = 9"))
