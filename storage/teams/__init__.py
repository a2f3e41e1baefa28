"""Repository functions for teams: accounts, projects, item reservations and settled answers.

Like ``storage.repository``: each function runs its own short transaction and
returns plain values. The answers of a project are ordinary labels: each member
labels in a labelling session of their own (``project_members.session_id``), so
exports, provenance and the undo guard work for them as for any session.

Order of a project's answers. Every answer, undo and settlement of a project
first locks the project's row (PostgreSQL: ``FOR UPDATE``; a file database's writer
holds the whole database anyway), so they take turns: label ids within one
project grow in the order their transactions commit. A process that has seen
every answer up to label id L therefore needs only the answers after L to catch
up, and ``projects.revision`` / ``projects.edits`` tell it cheaply whether
anything happened and whether it was only new answers.

The public names are importable from here as they always were (``from storage import teams``);
each lives in a module of its own:

- ``accounts``: accounts, their roles and passwords (the last enabled owner kept);
- ``sign_ins``: browser sign-ins (tickets and tokens, by their hashes);
- ``throttles``: sign-in attempts counted per key, and their locks;
- ``projects``: projects, their settings and members;
- ``answers``: the members' answers and the settled answers (adjudication);
- ``reservations``: the item a member holds while answering it;
- ``snapshots``: the project's shared model.
"""

from __future__ import annotations

from storage.teams.accounts import (
    AccountInfo,
    DuplicateAccountError,
    LastOwnerError,
    count_owners,
    create_account,
    get_account,
    get_account_by_id,
    list_accounts,
    record_sign_in,
    set_account_disabled,
    set_account_role,
    set_password_hash,
)
from storage.teams.answers import (
    ItemTakenError,
    ProjectAnswer,
    Settlement,
    project_answers,
    record_answer,
    settle,
    settlements,
    undo_answer,
)
from storage.teams.projects import (
    ProjectInfo,
    add_member,
    answers_needed,
    create_project,
    get_project,
    in_overlap,
    list_projects,
    project_members,
    project_revision,
    project_session_ids,
    set_project_find,
    set_project_status,
)
from storage.teams.reservations import (
    release_reservation,
    reservation_of,
    reserve_item,
    reserved_items,
)
from storage.teams.sign_ins import (
    BROWSER_SIGN_INS_KEPT,
    BrowserSignInInfo,
    browser_sign_ins,
    create_browser_sign_in,
    find_browser_sign_in,
    get_browser_sign_in,
    note_browser_sign_in_used,
    redeem_browser_ticket,
    revoke_browser_sign_ins,
)
from storage.teams.snapshots import (
    ProjectModelSnapshot,
    latest_project_snapshot,
    save_project_snapshot,
)
from storage.teams.throttles import (
    SignInLockedError,
    charge_sign_in,
    clear_sign_in,
)

__all__ = [
    "AccountInfo",
    "BROWSER_SIGN_INS_KEPT",
    "BrowserSignInInfo",
    "DuplicateAccountError",
    "ItemTakenError",
    "LastOwnerError",
    "ProjectAnswer",
    "ProjectInfo",
    "ProjectModelSnapshot",
    "Settlement",
    "SignInLockedError",
    "add_member",
    "answers_needed",
    "browser_sign_ins",
    "charge_sign_in",
    "clear_sign_in",
    "count_owners",
    "create_account",
    "create_browser_sign_in",
    "create_project",
    "find_browser_sign_in",
    "get_account",
    "get_account_by_id",
    "get_browser_sign_in",
    "get_project",
    "in_overlap",
    "latest_project_snapshot",
    "list_accounts",
    "list_projects",
    "note_browser_sign_in_used",
    "project_answers",
    "project_members",
    "project_revision",
    "project_session_ids",
    "record_answer",
    "record_sign_in",
    "redeem_browser_ticket",
    "release_reservation",
    "reservation_of",
    "reserve_item",
    "reserved_items",
    "revoke_browser_sign_ins",
    "save_project_snapshot",
    "set_account_disabled",
    "set_account_role",
    "set_password_hash",
    "set_project_find",
    "set_project_status",
    "settle",
    "settlements",
    "undo_answer",
]
