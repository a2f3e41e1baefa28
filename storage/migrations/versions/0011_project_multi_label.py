"""Multi-label team projects (schema version 11).

A multi-label project keeps its classes in its settings with ``params["multi_label"]`` set, and its members'
answers as sets in ``labels.answer_classes`` (version 9); ``adjudications.answer_classes`` holds the set an
owner settled a disagreement on, as bits (bit k: the project's class k; 0: none of them; ``value`` is then 1).
The other projects leave it empty: every row already stored keeps its meaning. Written out here, not taken
from the models, so that it stays what it was.

Revision ID: 0011_project_multi_label
Revises: 0010_project_classes
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_project_multi_label"
down_revision = "0010_project_classes"
branch_labels = None
depends_on = None

#: the ``schema_info.version`` this revision brings the database to
schema_version = 11


def upgrade() -> None:
    op.add_column("adjudications", sa.Column("answer_classes", sa.SmallInteger(), nullable=True))
    op.execute(sa.text("UPDATE schema_info SET version = :version").bindparams(version=schema_version))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN on both (SQLite from 3.35), as 0010 does
    op.execute(sa.text("ALTER TABLE adjudications DROP COLUMN answer_classes"))
    op.execute(sa.text("UPDATE schema_info SET version = 10"))
