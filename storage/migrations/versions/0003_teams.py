"""Teams: accounts that sign in, projects labelled by several annotators, item reservations, adjudications.

Only new tables: nothing of schema version 2 changes, and every row of it is kept.
Written out here, not taken from the models, so that it stays what it was.

Revision ID: 0003_teams
Revises: 0002_label_history
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_teams"
down_revision = "0002_label_history"
branch_labels = None
depends_on = None

#: the ``schema_info.version`` this revision brings the database to
schema_version = 3

#: the tables this revision adds, in the order they are created
TABLES = ("accounts", "projects", "adjudications", "item_reservations", "project_members")


def _when(name: str, nullable: bool) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=True),
        sa.Column("session_epoch", sa.Integer(), nullable=False),
        sa.Column("failed_attempts", sa.Integer(), nullable=False),
        _when("locked_until", True),
        _when("disabled_at", True),
        _when("last_sign_in_at", True),
        _when("created_at", False),
        sa.CheckConstraint("role IN ('owner', 'annotator')", name="ck_account_role"),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotators.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("annotator_id"),
    )
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("strategy", sa.String(length=64), nullable=False),
        sa.Column("solver", sa.String(length=64), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("labels_per_item", sa.Integer(), nullable=False),
        sa.Column("overlap_share", sa.Float(), nullable=False),
        sa.Column("reservation_seconds", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("edits", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        _when("created_at", False),
        _when("updated_at", False),
        sa.CheckConstraint("status IN ('active', 'closed')", name="ck_project_status"),
        sa.CheckConstraint("labels_per_item >= 1", name="ck_project_labels_per_item"),
        sa.CheckConstraint("overlap_share >= 0 AND overlap_share <= 1", name="ck_project_overlap_share"),
        sa.ForeignKeyConstraint(["created_by"], ["annotators.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_index("ix_projects_dataset_id", "projects", ["dataset_id"], unique=False)
    op.create_table(
        "adjudications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.SmallInteger(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=True),
        sa.Column("note", sa.Text(), nullable=False),
        _when("created_at", False),
        sa.CheckConstraint("value IN (-1, 1)", name="ck_adjudication_value"),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotators.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["item_id"], ["items.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project_id", "item_id", name="uq_adjudication_item"),
    )
    op.create_table(
        "item_reservations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        _when("expires_at", False),
        _when("created_at", False),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotators.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["item_id"], ["items.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project_id", "annotator_id", name="uq_reservation_annotator"),
        sa.UniqueConstraint("project_id", "item_id", name="uq_reservation_item"),
    )
    op.create_table(
        "project_members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        _when("created_at", False),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotators.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["session_id"], ["labelling_sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project_id", "annotator_id", name="uq_project_member"),
        sa.UniqueConstraint("session_id"),
    )
    op.create_index("ix_project_members_annotator_id", "project_members", ["annotator_id"], unique=False)

    op.execute(sa.text("UPDATE schema_info SET version = :version").bindparams(version=schema_version))


def downgrade() -> None:
    op.drop_index("ix_project_members_annotator_id", table_name="project_members")
    op.drop_index("ix_projects_dataset_id", table_name="projects")
    for table in reversed(TABLES):
        op.drop_table(table)
    op.execute(sa.text("UPDATE schema_info SET version = 1"))
