"""What the active-learning loop records (:mod:`core.loop`): a history row per label, a correction of an
earlier answer, and the undo record of each event."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.undo import SolverCopy

# the undo record's fields saved with the loop's state, in this order (core.loop_state)
UNDO_FIELDS = ("teach", "item", "label", "was_skipped", "cursor", "seen", "passes")


@dataclass
class HistoryRow:
    """What one label did (one row per ``teach``).

    ``score``: the decision value the model gave the item when it was asked
    (before learning it).  ``n_sv`` / ``n_bound``: support vectors in total and
    at the bound C after learning.  ``n_in_margin``: items still unlabelled
    (and not skipped) with |f| < 1, a stopping signal (NaN when the pool is too
    large to track).  ``update_ms``: the solver's ``learn`` plus keeping the
    pool's scores current (and, for non-exact solvers, copying the solver for
    undo).  ``query_ms``: computing the query that asked for this item (NaN
    when the item was taught without being asked).  ``auc`` /
    ``accuracy``: on the evaluation set, NaN without one.  ``seen``: items the
    strategy has looked at so far (asked or passed over; ``ramp-region``).
    """

    step: int
    item: int
    label: int
    n_labels: int
    asked_by: str
    score: float
    n_sv: int
    n_bound: int
    n_in_margin: float
    update_ms: float
    query_ms: float
    kernel_evals: int
    auc: float
    accuracy: float
    seen: int
    status: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Correction:
    """What :meth:`ActiveLearningLoop.change_label` / ``remove_label`` did.

    ``position``: the event's place in ``events`` (0-based); ``old`` / ``new``:
    the answer before and after (``new`` is None for a removal); ``exact``:
    the solver unlearned and learned (True) or was rebuilt from the events
    (False); ``update_ms``: the time it took, pool scores included.
    """

    position: int
    item: int
    old: int
    new: int | None
    exact: bool
    update_ms: float = float("nan")


@dataclass
class UndoEntry:
    """What undoing one event needs: the stream position before it, and for a label of a non-exact
    solver the solver from before it (a copy, or its ``to_state`` after a replay or a resume)."""

    kind: str  # "teach" or "skip"
    item: int
    label: int
    was_skipped: bool
    cursor: int
    seen: int
    passes: int
    snapshot: SolverCopy | None = None  # the solver from before the label (non-exact solvers)
    snapshot_bytes: int = 0  # everything the snapshot (or the state) holds
    state: Any = None  # the same as (arrays, meta) of the solver's to_state, after a resume


__all__ = ["UNDO_FIELDS", "Correction", "HistoryRow", "UndoEntry"]
