"""Known items (prior knowledge): search a session's pool and mark items known to be positive or negative.

A screener usually starts knowing a few relevant and irrelevant items. On the Label page they search the
pool -- by words and phrases in a text dataset, by a SMILES substructure in a molecule dataset, by a
column filter in a table -- and mark the hits they know. A marked item is a label like any other, stored
with the provenance ``prior`` (``core.priors.PRIOR``, the label's ``strategy`` column) and learned at
once; before the first question they are what the model learns first. ``RunPriors`` is a part of
``LabellingRun``; the matching functions below need neither Streamlit nor the database.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sqlalchemy.exc import SQLAlchemyError

from app.services.accounts import Identity
from app.services.common import VALUE_NAMES, Outcome, ServiceError
from app.services.readouts import RunReadouts
from app.services.records import Answer, RunState
from app.services.stopping import RunStopping
from core.formatting import count, for_people
from core.priors import PRIOR
from storage import repository as repo
from storage.errors import DuplicateLabelError, StorageError

#: at most this many hits are listed (the count says how many matched)
MAX_HITS = 50
#: at most this many characters of a query
QUERY_CHARS = 300
#: at most this many characters of an item's text in a hit
HIT_CHARS = 240
_COMPARISONS = {
    "<=": operator.le,
    ">=": operator.ge,
    "!=": operator.ne,
    "==": operator.eq,
    "=": operator.eq,
    "<": operator.lt,
    ">": operator.gt,
}
_FILTER = re.compile(r"^\s*(?P<column>.+?)\s*(?P<op><=|>=|!=|==|=|<|>)\s*(?P<value>[^<>=!]+?)\s*$")


@dataclass(frozen=True)
class SearchHit:
    item_index: int
    key: str | None
    text: str  # what the hit shows: the item's text (cut), or the filtered column's value
    answer: str | None  # the item's answer in this session (positive, negative, skip), None when unanswered


@dataclass(frozen=True)
class SearchResult:
    how: str  # "words", "substructure" or "column filter"
    hits: tuple[SearchHit, ...]
    n_matches: int  # items of the pool that match (hits lists at most MAX_HITS)
    n_held_out: int  # matching items held out for evaluation (not listed: they cannot be labelled)

    @property
    def message(self) -> str:
        """What the search found, in words (for people)."""
        if self.n_matches == 0:
            held = (
                f" ({self.n_held_out} matching items are held out for evaluation and cannot be labelled)"
                if self.n_held_out
                else ""
            )
            return f"No item of the pool matches this {self.how} search{held}."
        shown = f"; the first {len(self.hits)} are listed" if len(self.hits) < self.n_matches else ""
        held = f"; {self.n_held_out} more are held out for evaluation" if self.n_held_out else ""
        verb = "matches" if self.n_matches == 1 else "match"
        return f"{count(self.n_matches, 'item')} of the pool {verb}{shown}{held}."


def search_kind(display_kind: str, meta: dict, has_texts: bool) -> str:
    """How a dataset's pool is searched: ``substructure`` (molecules), ``words`` (texts) or ``column filter``."""
    if meta.get("molecule_column"):
        return "substructure"
    if display_kind == "text" and has_texts:
        return "words"
    return "column filter"


def query_terms(query: str) -> list[str]:
    """The words and "quoted phrases" of a query, lower case (all of them must occur in a match)."""
    terms = [t.strip().lower() for pair in re.findall(r'"([^"]*)"|(\S+)', query) for t in pair if t.strip()]
    if not terms:
        raise ServiceError('Type words or a "quoted phrase" to search for.')
    return terms


def match_words(texts: Sequence[str | None], query: str) -> np.ndarray:
    """Items whose text holds every word and phrase of ``query`` (case-insensitive, as substrings)."""
    terms = query_terms(query)
    return np.asarray(
        [i for i, text in enumerate(texts) if text is not None and all(t in str(text).lower() for t in terms)],
        dtype=np.intp,
    )


def match_substructure(smiles: Sequence[str | None], pattern: str) -> np.ndarray:
    """Items whose molecule contains the substructure ``pattern`` (SMARTS, which reads plain SMILES too)."""
    from rdkit import Chem, RDLogger

    pattern = pattern.strip()
    if not pattern:
        raise ServiceError("Type a SMILES or SMARTS substructure to search for (for example C(=O)O).")
    RDLogger.DisableLog("rdApp.*")
    try:
        query = Chem.MolFromSmarts(pattern)
        if query is None:
            raise ServiceError(f"'{pattern}' is not a SMILES or SMARTS substructure RDKit can read.")
        hits = []
        for i, text in enumerate(smiles):
            mol = Chem.MolFromSmiles(str(text)) if text else None
            if mol is not None and mol.HasSubstructMatch(query):
                hits.append(i)
    finally:
        RDLogger.EnableLog("rdApp.*")
    return np.asarray(hits, dtype=np.intp)


def parse_filter(expression: str, columns: Sequence[str]) -> tuple[int, str, float]:
    """``column op number`` (op one of < <= > >= = !=) -> (column position, op, number)."""
    found = _FILTER.match(expression)
    if not found:
        raise ServiceError(
            "Write a column filter as column, comparison, number: for example "
            f"'{columns[0] if columns else 'age'} > 2' (comparisons: < <= > >= = !=)."
        )
    name, op, value = found["column"].strip(), found["op"], found["value"].strip()
    if name not in columns:
        listed = ", ".join(columns[:12]) + (", …" if len(columns) > 12 else "")
        raise ServiceError(f"No column '{name}' in this dataset; its columns: {listed}.")
    try:
        number = float(value)
    except ValueError:
        raise ServiceError(f"'{value}' is not a number: a column filter compares a column with a number.") from None
    if not np.isfinite(number):
        raise ServiceError(f"'{value}' is not a finite number.")
    return list(columns).index(name), op, number


def match_filter(X, columns: Sequence[str], expression: str) -> tuple[np.ndarray, np.ndarray]:
    """(items, their values) whose column satisfies ``expression`` (see :func:`parse_filter`)."""
    col, op, number = parse_filter(expression, columns)
    values = X[:, col]
    values = np.asarray(values.toarray() if sp.issparse(values) else values, dtype=np.float64).reshape(-1)
    with np.errstate(invalid="ignore"):
        keep = _COMPARISONS[op](values, number) & np.isfinite(values)
    items = np.flatnonzero(keep).astype(np.intp)
    return items, values[items]


def pool_search_how(run) -> str:
    """``words``, ``substructure`` or ``column filter``: how ``run``'s pool is searched."""
    texts = run.display.display_values is not None
    return search_kind(run.display.kind, dict(run.dataset.meta or {}), texts)


def search_items(run, query: str, answered: Mapping[int, str]) -> SearchResult:
    """The items of ``run``'s pool (a ``LabellingRun`` or a ``ClassesRun``: its ``display``, ``dataset``,
    ``feature_names`` and ``pool_of_item``) that match ``query`` (see ``pool_search_how``); held-out items are
    counted, not listed.  ``answered``: item -> its answer in words (what a hit says of an answered item)."""
    query = str(query or "")
    if len(query) > QUERY_CHARS:
        raise ServiceError(f"A search is at most {QUERY_CHARS} characters long.")
    how = pool_search_how(run)
    shown: dict[int, str] = {}
    if how == "column filter":
        X, _, _, _ = repo.load_dataset_arrays(run.engine, run.info.dataset_id, writable=False)
        items, values = match_filter(X, run.feature_names, query)
        column = run.feature_names[parse_filter(query, run.feature_names)[0]]
        shown = {int(i): f"{column} = {for_people(v)}" for i, v in zip(items, values, strict=True)}
    elif how == "substructure":
        items = match_substructure(run.display.display_values, query)
    else:
        items = match_words(run.display.display_values, query)
    in_pool = np.asarray([int(i) in run.pool_of_item for i in items], dtype=bool)
    pool_hits = items[in_pool] if len(items) else items
    hits = []
    for item in pool_hits[:MAX_HITS]:
        item = int(item)
        text = shown.get(item)
        if text is None:
            text = str(run.display.display_values[item] or "")
            text = text if len(text) <= HIT_CHARS else text[:HIT_CHARS] + "…"
        keys = run.display.item_keys
        hits.append(SearchHit(item, None if keys is None else keys[item], text, answered.get(item)))
    return SearchResult(how, tuple(hits), int(len(pool_hits)), int(np.count_nonzero(~in_pool)))


#: a known item cannot be marked while a recall check draws (the same words for both kinds of session)
NOT_DURING_CHECK = (
    "Known items cannot be added during the random check: its test needs the random draws alone. Finish or "
    "stop the check first."
)


class RunPriors:
    """Search the pool and mark known items: ``LabellingRun.priors`` (see the module docstring), teaching
    the ``run``'s model (``RunState``); no item is marked during a recall check (``stopping``)."""

    def __init__(self, run: RunState, readouts: RunReadouts, stopping: RunStopping):
        self.run, self.readouts, self.stopping = run, readouts, stopping

    @property
    def search_how(self) -> str:
        """``words``, ``substructure`` or ``column filter``: how this session's pool is searched."""
        return pool_search_how(self.run)

    def search_pool(self, query: str) -> SearchResult:
        """The pool's items that match ``query`` (see ``search_how``); held-out items are counted, not listed."""
        return search_items(self.run, query, {a.item_index: VALUE_NAMES[a.value] for a in self.run.answers})

    def mark_known(self, item_index: int, value: int, *, by: Identity | None = None) -> Outcome:
        """Store item ``item_index`` as a known positive (+1) or negative (-1) with the provenance ``prior``;
        the model learns it at once and asks its next question."""
        value = int(value)
        if value not in (1, -1):
            raise ServiceError(f"A known item is positive (+1) or negative (-1), not {value}.")
        with self.run.lock:
            refused = self.run.refusal(by)
            if refused is not None:
                return refused
            item = int(item_index)
            if not 0 <= item < len(self.run.X):
                return self.run.tell(
                    Outcome(False, f"There is no item {item} in this dataset (0..{len(self.run.X) - 1}).", "error")
                )
            if item not in self.run.pool_of_item:
                return self.run.tell(
                    Outcome(
                        False,
                        f"Item {item} is held out for evaluation (the session's "
                        "evaluation split): it cannot be labelled, so it cannot be a "
                        "known item.",
                        "error",
                    )
                )
            already = next((a for a in self.run.answers if a.item_index == item), None)
            if already is not None:
                return self.run.tell(
                    Outcome(
                        False,
                        f"Item {item} is already answered "
                        f"({VALUE_NAMES[already.value]}); change it on the History "
                        "page.",
                        "warning",
                    )
                )
            if self.stopping.checking:
                return self.run.tell(Outcome(False, NOT_DURING_CHECK, "warning"))
            pool_index = self.run.pool_of_item[item]
            score = float(self.run.loop.solver.decision_function(np.array([pool_index], dtype=np.intp))[0])
            try:
                stored = repo.record_label(
                    self.run.engine,
                    self.run.session_id,
                    item_index=item,
                    value=value,
                    annotator=self.run.info.annotator,
                    strategy=PRIOR,
                    solver=self.run.info.solver,
                    decision_value=score if np.isfinite(score) else None,
                    model_version=len(self.run.answers),
                    update_ms=self.run.last_update_ms,
                    query_ms=None,
                )
            except DuplicateLabelError as error:
                self.run.rebuild()
                return self.run.tell(Outcome(False, f"{error} Nothing was recorded twice.", "warning"))
            except StorageError as error:
                return self.run.tell(Outcome(False, f"Nothing was recorded: {error}", "error"))
            except SQLAlchemyError as error:
                return self.run.not_recorded(error)
            self.run.answers.append(
                Answer(item, value, score if np.isfinite(score) else None, getattr(stored, "label_id", None), PRIOR)
            )
            try:
                row = self.run.loop.teach(pool_index, value, provenance=PRIOR)
                self.run.check_decision_values([pool_index])
            except Exception as error:
                return self.run.cannot_go_on(
                    error,
                    f"Item {item} (known {VALUE_NAMES[value]}) is saved, but "
                    f"session {self.run.session_id}'s model could not learn it",
                )
            self.run.last_update_ms = float(row.update_ms)
            self.stopping.record_checkpoint_at(self.readouts.n_labels, self.readouts.n_positive)
            self.run.version += 1
            self.run.ask()
            return self.run.tell(Outcome(True, f"Item {item}: known {VALUE_NAMES[value]}, learned."))

    @property
    def n_known(self) -> int:
        """Answers stored as known items (provenance ``prior``)."""
        return sum(1 for a in self.run.answers if a.strategy == PRIOR)


__all__ = [
    "HIT_CHARS",
    "MAX_HITS",
    "QUERY_CHARS",
    "RunPriors",
    "SearchHit",
    "SearchResult",
    "NOT_DURING_CHECK",
    "match_filter",
    "match_substructure",
    "match_words",
    "parse_filter",
    "pool_search_how",
    "query_terms",
    "search_items",
    "search_kind",
]
