"""Typed SQLAlchemy models: the whole MarginLab state in one database.

Arrays are stored as plain bytes (little-endian float64 feature matrices,
``numpy.savez`` archives for model snapshots), never pickled. Deleting a
dataset removes everything that hangs off it through ``ON DELETE CASCADE``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

#: bump when the tables change; ``init_db`` refuses databases from a newer version
SCHEMA_VERSION = 11

DISPLAY_KINDS = ("table", "image", "text")
SESSION_STATUSES = ("active", "closed")
ROLES = ("owner", "annotator")
PROJECT_STATUSES = ("active", "closed")
LABEL_VALUES = (-1, 0, 1)  # negative, skip, positive


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """Timezone-aware UTC datetimes on every backend, also those that store no zone."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Any) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given; use timezone-aware UTC datetimes")
        return value.astimezone(dt.UTC)

    def process_result_value(self, value: dt.datetime | None, dialect: Any) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


class Base(DeclarativeBase):
    type_annotation_map = {
        dict[str, Any]: JSON,
        list[str]: JSON,
        dt.datetime: UTCDateTime,
    }


class SchemaInfo(Base):
    """A single row recording which schema version wrote the database."""

    __tablename__ = "schema_info"

    id: Mapped[int] = mapped_column(primary_key=True)
    version: Mapped[int] = mapped_column(Integer)


class Dataset(Base):
    __tablename__ = "datasets"
    __table_args__ = (
        CheckConstraint("display_kind IN ('table', 'image', 'text')", name="ck_dataset_display_kind"),
        CheckConstraint("n_rows > 0 AND n_features > 0", name="ck_dataset_shape"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(Text, default="")
    feature_names: Mapped[list[str]]
    n_rows: Mapped[int]
    n_features: Mapped[int]
    #: empty: the feature matrix is stored in pieces (``DatasetChunk``, schema version 4).  Up to schema
    #: version 3 it was here whole; in a database with one blob of hundreds of MB per row, reading any
    #: column after it, or one row of it, walked the whole blob (about 0.15 s at 1M x 20 on SQLite)
    features: Mapped[bytes] = mapped_column(LargeBinary)
    #: optional true labels for evaluation, one signed byte (+1/-1) per row
    true_labels: Mapped[bytes | None] = mapped_column(LargeBinary)
    display_kind: Mapped[str] = mapped_column(String(16), default="table")
    image_width: Mapped[int | None]
    image_height: Mapped[int | None]
    #: name of the text column shown for each item, when display_kind == "text"
    text_column: Mapped[str | None] = mapped_column(String(200))
    #: sha256 over features, names, true labels and item keys/texts
    content_hash: Mapped[str] = mapped_column(String(64), unique=True)
    #: free-form extras, e.g. how the label column was mapped to +1/-1
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)


class DatasetChunk(Base):
    """A piece of a dataset's stored feature matrix: its bytes from byte ``start`` on.

    The matrix is row-major little-endian float64 (n_rows * n_features * 8 bytes) when the dataset's
    meta has no feature format, else that format's archive (``storage.validation``); a dense matrix
    is cut at row boundaries (every row in one piece), about 1 MB a piece.
    """

    __tablename__ = "dataset_chunks"

    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), primary_key=True)
    start: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Item(Base):
    __tablename__ = "items"
    __table_args__ = (UniqueConstraint("dataset_id", "position", name="uq_item_position"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    #: row index in the dataset's feature matrix, 0..n-1
    position: Mapped[int]
    external_key: Mapped[str | None] = mapped_column(String(500))
    display_text: Mapped[str | None] = mapped_column(Text)


class Annotator(Base):
    __tablename__ = "annotators"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)


class LabellingSession(Base):
    __tablename__ = "labelling_sessions"
    __table_args__ = (
        CheckConstraint("status IN ('active', 'closed')", name="ck_session_status"),
        Index("ix_session_dataset_status", "dataset_id", "status"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"))
    strategy: Mapped[str] = mapped_column(String(64))
    solver: Mapped[str] = mapped_column(String(64))
    solver_params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    seed: Mapped[int | None]
    status: Mapped[str] = mapped_column(String(16), default="active")
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utc_now)
    #: a name the analyst gave the session (None: it is called by its number)
    name: Mapped[str | None] = mapped_column(String(200))


class Label(Base):
    """One answer of an annotator: +1, -1 or 0 (skip), with its provenance; in a session with named classes,
    1 and the class (``answer_class``), or 0 (skip).

    Undo sets ``undone_at`` instead of deleting, so the audit trail stays. At
    most one *active* (not undone) label exists per (session, item).
    """

    __tablename__ = "labels"
    __table_args__ = (
        CheckConstraint("value IN (-1, 0, 1)", name="ck_label_value"),
        Index("ix_label_session_order", "session_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("labelling_sessions.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), index=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"), index=True)
    value: Mapped[int] = mapped_column(SmallInteger)
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)
    strategy: Mapped[str] = mapped_column(String(64))
    solver: Mapped[str] = mapped_column(String(64))
    #: f(x) the model gave the item when it was asked (None before the first model)
    decision_value: Mapped[float | None] = mapped_column(Float)
    #: number of labels the model had learned before this one
    model_version: Mapped[int]
    update_ms: Mapped[float | None] = mapped_column(Float)
    query_ms: Mapped[float | None] = mapped_column(Float)
    undone_at: Mapped[dt.datetime | None]
    #: a session with named classes (schema version 8): the class answered, by its place among the session's
    #: classes (0-based; ``value`` is then 1, or 0 for a skip with no class); None in a two-class session
    answer_class: Mapped[int | None] = mapped_column(SmallInteger)
    #: a multi-label session (schema version 9): the set of classes answered, bit k for the session's class k
    #: (0: none of them; ``value`` is then 1, or 0 for a skip with no set); None in the other sessions
    answer_classes: Mapped[int | None] = mapped_column(SmallInteger)


#: ``Label`` columns that say how the answer was asked for; label events and exports carry them under these names
LABEL_PROVENANCE_COLUMNS = ("strategy", "solver", "decision_value", "model_version", "update_ms", "query_ms")

# At most one active label per (session, item): a partial unique index, which
# SQLite and PostgreSQL both support.
Index(
    "uq_active_label_per_item",
    Label.session_id,
    Label.item_id,
    unique=True,
    sqlite_where=Label.undone_at.is_(None),
    postgresql_where=Label.undone_at.is_(None),
)


CORRECTION_KINDS = ("change", "remove")


class LabelCorrection(Base):
    """A later change or removal of a label: who did it, when, from which answer to which.

    The label's own row keeps the answer as it was given. A change leaves that
    row as it is (the session's events read the newest change's ``new_value``);
    a removal also takes the label back as undo does (``labels.undone_at``), so
    that the item can be labelled again.
    """

    __tablename__ = "label_corrections"
    __table_args__ = (
        CheckConstraint("kind IN ('change', 'remove')", name="ck_correction_kind"),
        CheckConstraint("old_value IN (-1, 0, 1)", name="ck_correction_old_value"),
        CheckConstraint(
            "(kind = 'remove' AND new_value IS NULL) OR (kind = 'change' AND new_value IN (-1, 1))",
            name="ck_correction_new_value",
        ),
        Index("ix_correction_label", "label_id", "id"),
        Index("ix_correction_session", "session_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    label_id: Mapped[int] = mapped_column(ForeignKey("labels.id", ondelete="CASCADE"))
    session_id: Mapped[int] = mapped_column(ForeignKey("labelling_sessions.id", ondelete="CASCADE"))
    #: who made the change
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"))
    kind: Mapped[str] = mapped_column(String(16))
    #: the label's answer just before this change (+1, -1, or 0 for a skip)
    old_value: Mapped[int] = mapped_column(SmallInteger)
    #: the answer after a change; None for a removal
    new_value: Mapped[int | None] = mapped_column(SmallInteger)
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)
    #: a session with named classes (schema version 8): the class just before (None: a skip) and after a change
    old_class: Mapped[int | None] = mapped_column(SmallInteger)
    new_class: Mapped[int | None] = mapped_column(SmallInteger)
    #: a multi-label session (schema version 9): the set of classes (bits, as ``Label.answer_classes``) just
    #: before (None: a skip) and after a change
    old_classes: Mapped[int | None] = mapped_column(SmallInteger)
    new_classes: Mapped[int | None] = mapped_column(SmallInteger)


class ModelSnapshot(Base):
    """Model state after the first ``n_events`` active label events of a session."""

    __tablename__ = "model_snapshots"
    __table_args__ = (Index("ix_snapshot_session_events", "session_id", "n_events"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("labelling_sessions.id", ondelete="CASCADE"))
    n_events: Mapped[int]
    #: id of the last label event the snapshot reflects (None when n_events == 0)
    last_label_id: Mapped[int | None]
    #: ``numpy.savez`` archive; loaded with ``allow_pickle=False``
    arrays: Mapped[bytes] = mapped_column(LargeBinary)
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)


class ComparisonResult(Base):
    """A side-by-side comparison of query strategies: tidy rows + summary."""

    __tablename__ = "comparison_results"

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int | None] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    config: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: tidy rows as CSV text (header + one line per row)
    rows_csv: Mapped[str] = mapped_column(Text)
    summary: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)


# --------------------------------------------------------------------------- teams (schema version 2)


class Account(Base):
    """A person who can sign in: an annotator with a role and a password hash (argon2id).

    Labels stay under ``annotators``; the account says who may sign in as that
    annotator. ``password_hash`` is None for an account that signs in only through
    an identity provider (OIDC). ``session_epoch`` changes when the password
    changes or the account is disabled, which ends every sign-in made before.
    ``failed_attempts`` counts the failed sign-ins since the last one that succeeded,
    from anywhere (shown to owners); what locks sign-ins is ``SignInThrottle``.
    """

    __tablename__ = "accounts"
    __table_args__ = (CheckConstraint("role IN ('owner', 'annotator')", name="ck_account_role"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    password_hash: Mapped[str | None] = mapped_column(String(255))
    session_epoch: Mapped[int] = mapped_column(Integer, default=0)
    failed_attempts: Mapped[int] = mapped_column(Integer, default=0)
    disabled_at: Mapped[dt.datetime | None]
    last_sign_in_at: Mapped[dt.datetime | None]
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)


class SignInThrottle(Base):
    """Sign-in attempts counted under a key (schema version 6): one name from one client, or one client.

    ``key`` is a hash, so that what people type in the name box is not stored.
    ``failures`` counts attempts since the last successful one (an attempt is
    counted before its password is checked); ``locked_until``: no attempt under
    the key is checked before this moment. A row untouched for a day is forgotten.
    """

    __tablename__ = "sign_in_throttles"
    __table_args__ = (Index("ix_sign_in_throttle_updated_at", "updated_at"),)

    key: Mapped[str] = mapped_column(String(72), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer)
    locked_until: Mapped[dt.datetime | None]
    updated_at: Mapped[dt.datetime]


class BrowserSignIn(Base):
    """A sign-in kept by a browser (schema version 7): every tab of it that sends the cookie is signed in.

    The browser holds a random token in an HttpOnly cookie; only its SHA-256 (``token_hash``) is
    stored, so the table holds nothing a browser could present. A sign-in starts with a one-time
    ticket (``ticket_hash``, valid until ``ticket_expires_at``) that the signed-in page hands to the
    server for the cookie; redeeming it sets ``token_hash`` and clears the ticket. It holds until
    ``expires_at`` unless ``revoked_at`` is set (signing out, a new password or role, a disabled
    account) or the account's ``session_epoch`` is no longer the one it was made under.
    """

    __tablename__ = "browser_sign_ins"
    __table_args__ = (
        Index("ix_browser_sign_in_account", "account_id"),
        Index("ix_browser_sign_in_expires_at", "expires_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True)
    ticket_hash: Mapped[str | None] = mapped_column(String(64), unique=True)
    ticket_expires_at: Mapped[dt.datetime | None]
    session_epoch: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime]
    last_used_at: Mapped[dt.datetime | None]
    expires_at: Mapped[dt.datetime]
    revoked_at: Mapped[dt.datetime | None]


class Project(Base):
    """A dataset labelled by a team: one heuristic, one solver, one shared model.

    ``labels_per_item`` answers are collected on the share ``overlap_share`` of
    the items (dual screening when 2); every other item gets one answer.
    ``revision`` changes with every answer, undo and settlement; ``edits`` only
    with those that change answers already given (undo, settlement), so a process
    holding the shared model knows whether appending the new answers suffices.
    """

    __tablename__ = "projects"
    __table_args__ = (
        CheckConstraint("status IN ('active', 'closed')", name="ck_project_status"),
        CheckConstraint("labels_per_item >= 1", name="ck_project_labels_per_item"),
        CheckConstraint("overlap_share >= 0 AND overlap_share <= 1", name="ck_project_overlap_share"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    strategy: Mapped[str] = mapped_column(String(64))
    solver: Mapped[str] = mapped_column(String(64))
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    seed: Mapped[int] = mapped_column(Integer, default=0)
    labels_per_item: Mapped[int] = mapped_column(Integer, default=1)
    overlap_share: Mapped[float] = mapped_column(Float, default=0.0)
    #: seconds an item stays reserved for the annotator it was handed to
    reservation_seconds: Mapped[int] = mapped_column(Integer, default=600)
    status: Mapped[str] = mapped_column(String(16), default="active")
    revision: Mapped[int] = mapped_column(Integer, default=0)
    edits: Mapped[int] = mapped_column(Integer, default=0)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("annotators.id", ondelete="SET NULL"))
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utc_now)


class ProjectMember(Base):
    """An annotator of a project, with the labelling session that holds their answers."""

    __tablename__ = "project_members"
    __table_args__ = (UniqueConstraint("project_id", "annotator_id", name="uq_project_member"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"), index=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("labelling_sessions.id", ondelete="CASCADE"), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)


class ItemReservation(Base):
    """An item handed to one annotator of a project until ``expires_at`` (one holder per item)."""

    __tablename__ = "item_reservations"
    __table_args__ = (
        UniqueConstraint("project_id", "item_id", name="uq_reservation_item"),
        UniqueConstraint("project_id", "annotator_id", name="uq_reservation_annotator"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"))
    expires_at: Mapped[dt.datetime]
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)


class ProjectSnapshot(Base):
    """A project's shared model as a process held it: the loop's state after learning ``model_labels``
    (in ``meta``), when the project was at ``revision`` / ``edits``.
    A process opening the project starts from it and catches up with the answers, undos and
    settlements after it, as a process that had been running would."""

    __tablename__ = "project_snapshots"
    __table_args__ = (Index("ix_project_snapshot_revision", "project_id", "revision"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    revision: Mapped[int]
    edits: Mapped[int]
    #: ``numpy.savez`` archive; loaded with ``allow_pickle=False``
    arrays: Mapped[bytes] = mapped_column(LargeBinary)
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)


class Adjudication(Base):
    """The owner's settled answer for an item the annotators of a project disagreed on."""

    __tablename__ = "adjudications"
    __table_args__ = (
        CheckConstraint("value IN (-1, 1)", name="ck_adjudication_value"),
        UniqueConstraint("project_id", "item_id", name="uq_adjudication_item"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    value: Mapped[int] = mapped_column(SmallInteger)
    #: in a project with named classes: the class settled on (its place among the project's classes; ``value``
    #: is then 1); empty in a yes / no project
    answer_class: Mapped[int | None] = mapped_column(SmallInteger)
    #: in a multi-label project (schema version 11): the set of classes settled on, as bits (as
    #: ``Label.answer_classes``; ``value`` is then 1); empty in the other projects
    answer_classes: Mapped[int | None] = mapped_column(SmallInteger)
    annotator_id: Mapped[int | None] = mapped_column(ForeignKey("annotators.id", ondelete="SET NULL"))
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(default=utc_now)
