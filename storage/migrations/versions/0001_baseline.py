"""Baseline: the schema MarginLab's first release created (schema version 1).

A database that version created (tables made by ``create_all``, a
``schema_info`` row with version 1, no ``alembic_version`` table) is stamped
with this revision instead of running it; see ``storage.migrations``.
Written out here, not taken from the models, so that it stays what version 1 was.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

#: the ``schema_info.version`` this revision brings the database to
schema_version = 1

#: the tables of schema version 1 (a version-1 database without them is not MarginLab's)
TABLES = (
    "annotators",
    "datasets",
    "schema_info",
    "comparison_results",
    "items",
    "labelling_sessions",
    "labels",
    "model_snapshots",
)


def upgrade() -> None:
    op.create_table(
        "annotators",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("feature_names", sa.JSON(), nullable=False),
        sa.Column("n_rows", sa.Integer(), nullable=False),
        sa.Column("n_features", sa.Integer(), nullable=False),
        sa.Column("features", sa.LargeBinary(), nullable=False),
        sa.Column("true_labels", sa.LargeBinary(), nullable=True),
        sa.Column("display_kind", sa.String(length=16), nullable=False),
        sa.Column("image_width", sa.Integer(), nullable=True),
        sa.Column("image_height", sa.Integer(), nullable=True),
        sa.Column("text_column", sa.String(length=200), nullable=True),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("meta", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("display_kind IN ('table', 'image', 'text')", name="ck_dataset_display_kind"),
        sa.CheckConstraint("n_rows > 0 AND n_features > 0", name="ck_dataset_shape"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("content_hash"),
    )
    op.create_table(
        "schema_info",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "comparison_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=True),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("rows_csv", sa.Text(), nullable=False),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_comparison_results_dataset_id"), "comparison_results", ["dataset_id"], unique=False)
    op.create_table(
        "items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("external_key", sa.String(length=500), nullable=True),
        sa.Column("display_text", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("dataset_id", "position", name="uq_item_position"),
    )
    op.create_table(
        "labelling_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("strategy", sa.String(length=64), nullable=False),
        sa.Column("solver", sa.String(length=64), nullable=False),
        sa.Column("solver_params", sa.JSON(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("status IN ('active', 'closed')", name="ck_session_status"),
        sa.ForeignKeyConstraint(
            ["annotator_id"],
            ["annotators.id"],
        ),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_session_dataset_status", "labelling_sessions", ["dataset_id", "status"], unique=False)
    op.create_table(
        "labels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.SmallInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("strategy", sa.String(length=64), nullable=False),
        sa.Column("solver", sa.String(length=64), nullable=False),
        sa.Column("decision_value", sa.Float(), nullable=True),
        sa.Column("model_version", sa.Integer(), nullable=False),
        sa.Column("update_ms", sa.Float(), nullable=True),
        sa.Column("query_ms", sa.Float(), nullable=True),
        sa.Column("undone_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("value IN (-1, 0, 1)", name="ck_label_value"),
        sa.ForeignKeyConstraint(
            ["annotator_id"],
            ["annotators.id"],
        ),
        sa.ForeignKeyConstraint(["item_id"], ["items.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["session_id"], ["labelling_sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_label_session_order", "labels", ["session_id", "id"], unique=False)
    op.create_index(op.f("ix_labels_annotator_id"), "labels", ["annotator_id"], unique=False)
    op.create_index(op.f("ix_labels_item_id"), "labels", ["item_id"], unique=False)
    op.create_index(
        "uq_active_label_per_item",
        "labels",
        ["session_id", "item_id"],
        unique=True,
        sqlite_where=sa.text("undone_at IS NULL"),
        postgresql_where=sa.text("undone_at IS NULL"),
    )
    op.create_table(
        "model_snapshots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("n_events", sa.Integer(), nullable=False),
        sa.Column("last_label_id", sa.Integer(), nullable=True),
        sa.Column("arrays", sa.LargeBinary(), nullable=False),
        sa.Column("meta", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["session_id"], ["labelling_sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_snapshot_session_events", "model_snapshots", ["session_id", "n_events"], unique=False)

    op.execute(sa.text("INSERT INTO schema_info (id, version) VALUES (1, :version)").bindparams(version=schema_version))


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_table(table)
