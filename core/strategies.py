"""Query strategies: which unlabelled item to ask about next.

Every strategy is a small pure function ``strategy(model, pool, rng, **params)``
(in the style of modAL) that returns a :class:`Query` record, or ``None`` when
there is nothing left to ask.  ``model`` is any object with
``decision_function(idx)`` over store indices (every solver in
:mod:`core.solvers`); ``pool`` is a :class:`Pool` view of the unlabelled items
(or just an array of candidate indices); ``rng`` is a ``numpy.random.Generator``.
The functions never change the model, the pool or anything else except the
generator's state.

Names, meanings and default solvers (docs/design.md, "Query strategies"):

================== ===================================================================== ==============
name               picks                                                                  default solver
================== ===================================================================== ==============
largest-positive   the item with the largest f(x) (Laskov et al. 2006, §6.2)              incremental
near-boundary      the item with the smallest |f(x)| over the whole pool                  incremental
                   (Laskov et al. §6.2; Bordes et al. 2005, eq. 13)
randomized-search  M random items (default 59), the one with the smallest |f(x)|          lasvm
                   (Bordes et al. §4.3, "ACTIVE")
autoactive         draw items until 5 lie within 1 + delta/2 of the boundary (at most     lasvm
                   100), the one with the smallest |f(x)| (Bordes et al. §4.4)
ramp-region        the pool walked as a stream in a seeded order; an item is asked about  ramp
                   only when |f(x)| <= 1, otherwise passed over (Wang & Vucetic,
                   Algorithm 3, OnlineASVMR)
random             an unlabelled item uniformly at random                                 lasvm
gradient           the most misclassified item, smallest y f(x) given the true label y     lasvm
                   (Bordes et al. eq. 12): needs the true labels, simulations only
================== ===================================================================== ==============

Each strategy is one entry of the registry (:class:`Strategy`: name, function, default solver,
whether it reads the whole pool or walks it as a stream, whether it needs the true labels, its
words for the app); the loop, the comparisons, the command line and the app read every list and
every check from the entries (:mod:`core.registry`).  Adding a strategy is its function (here or
in a module of its own) and one ``register(Strategy(...))``.

Cold start (before both classes have a label) uses :data:`COLD_STARTS`:
``random`` (the default), ``one-class`` (Laskov et al. §6.2: rank the pool by
a one-class incremental SVM and ask about the most anomalous items first) or
``spread`` (k-means++ seeding in the kernel's feature space, ``core.cold_start``).

Why ``random`` is the default cold start: it makes no assumption about which
class is rare or how it lies in feature space.  The one-class ranking pays off
when the positive class is the anomalous one (intrusions among normal traffic,
the setting of Laskov et al.), but it first asks about outliers, which on a
balanced problem or a task whose positives are typical points (digit 8 among
other digits) are often odd items of either class; it also needs a one-class
fit (a nu and a kernel) before the first question can be shown.  Random draws
are unbiased, free, and keep comparisons against the ``random`` baseline fair
because every strategy shares the same start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.kernels import masked_argmax, masked_argmin_abs
from core.registry import Registry

COLD_STARTS = ("random", "one-class", "spread")
#: what the loop appends to the name of the heuristic that asked during the cold start ("random (cold start)")
COLD_START_SUFFIX = " (cold start)"
#: how each cold start picks, in a screener's words (the app shows "... (cold start)" so)
COLD_START_WORDS = {
    "random": "At random",
    "one-class": "Least like the answers so far",
    "spread": "Spread over the data",
}
DEFAULT_COLD_START = "random"

# Bordes et al. (2005) §4.3: the best of 59 random draws lies in the best 5% of
# the pool with probability 1 - 0.95**59 > 0.95.
DEFAULT_SAMPLE_SIZE = 59
# Bordes et al. §4.4 (AUTOACTIVE): stop once 5 draws lie within 1 + delta/2 of
# the boundary, never draw more than 100.
AUTOACTIVE_ENOUGH = 5
AUTOACTIVE_MAX_DRAWS = 100


@dataclass
class Query:
    """One question to the analyst.

    ``score`` is the decision value f(x) the model gave the item when it was
    asked.  ``passed_over`` counts items a stream strategy (``ramp-region``)
    looked at and dismissed without a label before this one; ``drawn`` holds
    the items a sampling strategy drew (the query is the best of them);
    ``cursor`` is the stream position just after the asked item.
    """

    index: int
    score: float
    strategy: str
    reason: str
    passed_over: int = 0
    drawn: np.ndarray | None = None
    cursor: int | None = None
    cold_start: bool = False
    query_ms: float = float("nan")
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary (without the drawn sample)."""
        return {
            "index": int(self.index),
            "score": float(self.score),
            "strategy": self.strategy,
            "reason": self.reason,
            "passed_over": int(self.passed_over),
            "n_drawn": None if self.drawn is None else int(len(self.drawn)),
            "cold_start": bool(self.cold_start),
            "query_ms": float(self.query_ms),
        }


class Pool:
    """The items a strategy may ask about, and their current decision values when known.

    ``available``: boolean mask over the model's store (True = unlabelled and
    not skipped).  ``scores``: f over the whole store when the caller keeps it
    current (the loop does, at any pool size); otherwise ``None`` and
    strategies score only the items they look at.
    ``oracle_y``: true labels over the store (simulations only, ``gradient``).
    """

    def __init__(self, available: np.ndarray, scores: np.ndarray | None = None, oracle_y: np.ndarray | None = None):
        self.available = np.asarray(available, dtype=bool)
        self.scores = scores
        self.oracle_y = oracle_y
        self._candidates: np.ndarray | None = None
        self.n_available = int(np.count_nonzero(self.available))

    @classmethod
    def from_candidates(cls, candidates, n: int, **kw) -> Pool:
        mask = np.zeros(n, dtype=bool)
        mask[np.asarray(candidates, dtype=np.intp)] = True
        return cls(mask, **kw)

    @property
    def candidates(self) -> np.ndarray:
        if self._candidates is None:
            self._candidates = np.flatnonzero(self.available)
        return self._candidates

    def __len__(self) -> int:
        return self.n_available

    @property
    def kept_scores(self) -> np.ndarray | None:
        """The kept scores as a float64 vector over the whole store, when there are such."""
        s = self.scores
        if isinstance(s, np.ndarray) and s.dtype == np.float64 and s.shape == self.available.shape:
            return s
        return None

    def decision(self, model, idx) -> np.ndarray:
        """Current f for store indices ``idx``: from the kept scores, else from the model."""
        idx = np.asarray(idx, dtype=np.intp).reshape(-1)
        if self.scores is not None:
            return np.asarray(self.scores)[idx]
        if len(idx) == 0:
            return np.zeros(0)
        return np.asarray(model.decision_function(idx), dtype=np.float64)

    def sample(self, rng: np.random.Generator, m: int) -> np.ndarray:
        """Up to ``m`` distinct available items drawn uniformly, in draw order.

        When most of the store is available, draws store indices and rejects
        the unavailable ones (O(m), independent of the pool size); otherwise
        draws from the list of candidates.
        """
        m = int(min(m, self.n_available))
        if m <= 0:
            return np.zeros(0, dtype=np.intp)
        n = len(self.available)
        if self.n_available >= n // 2 and n > 4 * m:
            picked: list[int] = []
            seen: set[int] = set()
            while len(picked) < m:
                for i in rng.integers(0, n, size=2 * (m - len(picked)) + 4):
                    i = int(i)
                    if self.available[i] and i not in seen:
                        seen.add(i)
                        picked.append(i)
                        if len(picked) == m:
                            break
            return np.asarray(picked, dtype=np.intp)
        return rng.choice(self.candidates, size=m, replace=False).astype(np.intp)


def _as_pool(model, pool) -> Pool:
    if isinstance(pool, Pool):
        return pool
    cand = np.asarray(pool, dtype=np.intp).reshape(-1)
    n = getattr(model, "n_points", None)
    n = int(n) if n is not None else (int(cand.max()) + 1 if len(cand) else 0)
    return Pool.from_candidates(cand, n)


# ---------------------------------------------------------------------------
# Strategies over the whole pool
# ---------------------------------------------------------------------------


def _best(model, pool: Pool, scan: Callable, pick: Callable) -> tuple[int, float]:
    """The item a whole-pool rule picks and its f: ``scan`` in one pass over the kept scores, else
    ``pick`` over the candidates' gathered scores (the same item: ties to the lowest index)."""
    if pool.kept_scores is not None:
        i = scan(pool.kept_scores, pool.available)
        return i, float(pool.kept_scores[i])
    cand = pool.candidates
    f = pool.decision(model, cand)
    k = int(pick(f))
    return int(cand[k]), float(f[k])


def largest_positive(model, pool, rng: np.random.Generator | None = None) -> Query | None:
    """The unlabelled item with the largest f(x) (Laskov et al. 2006, §6.2)."""
    pool = _as_pool(model, pool)
    if pool.n_available == 0:
        return None
    i, fi = _best(model, pool, masked_argmax, np.argmax)
    return Query(
        i, fi, "largest-positive", f"largest decision value f = {fi:+.3f} among {pool.n_available} unlabelled items"
    )


def near_boundary(model, pool, rng: np.random.Generator | None = None) -> Query | None:
    """The unlabelled item closest to the boundary, smallest |f(x)|, over the whole pool.

    Laskov et al. §6.2; Bordes et al. eq. (13): k* = argmin_k |f(x_k)|.
    Exact: every unlabelled item is compared (ties go to the lowest index).
    """
    pool = _as_pool(model, pool)
    if pool.n_available == 0:
        return None
    i, fi = _best(model, pool, masked_argmin_abs, lambda f: np.argmin(np.abs(f)))
    return Query(
        i,
        fi,
        "near-boundary",
        f"closest to the boundary, |f| = {abs(fi):.3f}, among all {pool.n_available} unlabelled items",
    )


def random_query(model, pool, rng: np.random.Generator) -> Query | None:
    """An unlabelled item drawn uniformly at random."""
    pool = _as_pool(model, pool)
    drawn = pool.sample(rng, 1)
    if len(drawn) == 0:
        return None
    i = int(drawn[0])
    return Query(
        i, float(pool.decision(model, [i])[0]), "random", f"drawn uniformly from {pool.n_available} unlabelled items"
    )


def gradient(model, pool, rng: np.random.Generator | None = None, *, sample_size: int | None = None) -> Query | None:
    """The most misclassified item, argmin_k y_k f(x_k) (Bordes et al. eq. 12).

    Needs the true labels (``pool.oracle_y``), so it exists for simulations
    only.  ``sample_size=None`` searches the whole pool; an integer M applies
    the rule to M random items instead (Bordes et al. §4.3).
    """
    pool = _as_pool(model, pool)
    if pool.oracle_y is None:
        raise ValueError(
            "the 'gradient' strategy needs the true labels (oracle_y): "
            "it picks the most misclassified item and can only run in simulations"
        )
    if sample_size is None:
        cand = pool.candidates
    else:
        if rng is None:
            raise ValueError("gradient with a sample size needs a random generator")
        cand = pool.sample(rng, int(sample_size))
    if len(cand) == 0:
        return None
    f = pool.decision(model, cand)
    margin = np.asarray(pool.oracle_y, dtype=np.float64)[cand] * f
    k = int(np.argmin(margin))
    where = f"all {len(cand)} unlabelled items" if sample_size is None else f"{len(cand)} random items"
    return Query(
        int(cand[k]),
        float(f[k]),
        "gradient",
        f"most misclassified given its true label, y f = {margin[k]:+.3f}, among {where}",
        drawn=None if sample_size is None else cand,
    )


# ---------------------------------------------------------------------------
# Sampling strategies (LASVM, Bordes et al. 2005)
# ---------------------------------------------------------------------------


def randomized_search(model, pool, rng: np.random.Generator, *, sample_size: int = DEFAULT_SAMPLE_SIZE) -> Query | None:
    """LASVM ACTIVE with randomized search (Bordes et al. §4.3).

    Draws M unlabelled items (default 59) and returns the one with the
    smallest |f(x)| among them; only the drawn items are scored.
    """
    if int(sample_size) < 1:
        raise ValueError(f"sample_size must be at least 1, got {sample_size!r}")
    pool = _as_pool(model, pool)
    drawn = pool.sample(rng, int(sample_size))
    if len(drawn) == 0:
        return None
    f = pool.decision(model, drawn)
    k = int(np.argmin(np.abs(f)))
    return Query(
        int(drawn[k]),
        float(f[k]),
        "randomized-search",
        f"closest to the boundary, |f| = {abs(f[k]):.3f}, among {len(drawn)} random items",
        drawn=drawn,
    )


def autoactive_delta(model) -> float:
    """The delta of the AUTOACTIVE window 1 + delta/2.

    LASVM keeps it as ``delta_`` (the gap of the most violating pair after the
    last REPROCESS, Bordes et al. §3.2).  Solvers without it (the exact
    incremental and active-set solvers, ramp) satisfy the KKT conditions to
    within their tolerance ``tol``, so ``tol`` bounds their gap and is used
    instead; a model without either gets 0 (the window is the margin |f| <= 1).
    """
    delta = getattr(model, "delta_", None)
    if delta is None or not np.isfinite(delta):
        delta = getattr(model, "tol", None)
    return max(0.0, float(delta)) if delta is not None else 0.0


def autoactive(
    model,
    pool,
    rng: np.random.Generator,
    *,
    enough: int = AUTOACTIVE_ENOUGH,
    max_draws: int = AUTOACTIVE_MAX_DRAWS,
    delta: float | None = None,
    block: int = 20,
) -> Query | None:
    """LASVM AUTOACTIVE (Bordes et al. §4.4).

    Draws unlabelled items at random and stops as soon as ``enough`` (5) of
    them lie within 1 + delta/2 of the boundary, or after ``max_draws`` (100);
    returns the drawn item with the smallest |f(x)|.  Items are scored in
    blocks of ``block`` draws; the draws after the stopping one are discarded,
    so the result is that of drawing one item at a time.
    """
    if int(enough) < 1 or int(max_draws) < 1:
        raise ValueError("enough and max_draws must be at least 1")
    pool = _as_pool(model, pool)
    if delta is None:
        delta = autoactive_delta(model)
    window = 1.0 + 0.5 * float(delta)
    order = pool.sample(rng, int(max_draws))
    if len(order) == 0:
        return None
    scores: list[np.ndarray] = []
    inside = 0
    stop = len(order)
    for start in range(0, len(order), max(1, int(block))):
        f = pool.decision(model, order[start : start + block])
        hits = np.flatnonzero(np.abs(f) <= window)
        if inside + len(hits) >= enough:
            stop = start + int(hits[enough - inside - 1]) + 1
            scores.append(f[: stop - start])
            break
        inside += len(hits)
        scores.append(f)
    drawn = order[:stop]
    f = np.concatenate(scores)[:stop]
    k = int(np.argmin(np.abs(f)))
    n_in = int(np.count_nonzero(np.abs(f) <= window))
    why = "enough items near the boundary" if n_in >= enough else "draw limit reached"
    return Query(
        int(drawn[k]),
        float(f[k]),
        "autoactive",
        f"closest to the boundary, |f| = {abs(f[k]):.3f}, among {len(drawn)} random items "
        f"({why}: {n_in} within 1 + delta/2 = {window:.3f})",
        drawn=drawn,
        extra={"window": window, "n_within": n_in},
    )


# ---------------------------------------------------------------------------
# Stream gating (OnlineASVMR, Wang & Vucetic, Algorithm 3)
# ---------------------------------------------------------------------------


def ramp_region(
    model,
    pool,
    rng: np.random.Generator | None = None,
    *,
    order: np.ndarray,
    cursor: int = 0,
    threshold: float = 1.0,
    block: int | None = None,
) -> Query | None:
    """OnlineASVMR stream gating (Wang & Vucetic, Algorithm 3).

    The pool is a stream in the fixed ``order`` (a seeded permutation of the
    store, kept by the caller); the walk starts at position ``cursor``.  Each
    available item is looked at in turn: it is asked about only when it lies
    in the ramp region |f(x)| <= ``threshold`` (1), otherwise it is passed
    over without a label (``Query.passed_over`` counts those).  Items already
    labelled or skipped are stepped over without counting.

    Deviation from the paper: Algorithm 3 reads each item of an endless stream
    once.  A labelling pool is finite, so at the end of the order the walk
    starts a new pass over the items still unlabelled; when one whole pass
    finds no item in the ramp region the function returns ``None`` (nothing
    left that the model is unsure about: a stopping signal).

    Rare positive class (e.g. digits "8 vs rest", 10% positives): while only
    one or two positives are labelled, the zero-bias ramp model is weak.
    With negatives only, f(x) = -sum_i a_i K(x_i, x) ranks items by their
    closeness to the labelled negatives, and typical items of the rare class
    (an 8 resembles many digits) can score lower than the negatives (test
    AUC 0.19 on seed 1 before its first positive, the 20th label, arrives).
    This is inherent, not a defect of the gate or the solver: on seed 1 of
    the bundled-digits comparison (C = 10, 10 initial labels) the ramp model
    after 20 and 40 labels (1 and 2 positives) has the test AUC of the exact
    no-bias hinge SVM on the same labels (0.591, 0.805; SVC with a bias:
    0.661, 0.857), and the gate passed over no positive in the first 45
    labels.  An item with |f(x)| > 1 is passed over by design: if its label
    makes y f(x) < -1, eq. 10 gives it weight 0 once the solver's hinge
    warm-up is over; if y f(x) > 1, it is not a support vector.  Prolonging
    the cold start until both classes have 3 or 5 labels was measured and
    rejected: over seeds 0-9 (budget 150) the mean AUC along the learning
    curve fell from 0.896 to 0.887 and 0.885 (random with lasvm: 0.879),
    because those extra labels are random draws.
    """
    pool = _as_pool(model, pool)
    order = np.asarray(order, dtype=np.intp)
    n = len(order)
    if n == 0 or pool.n_available == 0:
        return None
    if block is None:
        block = 4096 if pool.scores is not None else 64
    pos = int(cursor) % n
    walked = 0
    passed = 0
    while walked < n:
        stop = min(n, pos + block, pos + (n - walked))
        seg = order[pos:stop]
        seg_avail = seg[pool.available[seg]]
        if len(seg_avail):
            f = pool.decision(model, seg_avail)
            hit = np.flatnonzero(np.abs(f) <= threshold)
            if len(hit):
                k = int(hit[0])
                i = int(seg_avail[k])
                passed += k
                at = pos + int(np.flatnonzero(seg == i)[0])
                region = "stream order" if not np.isfinite(threshold) else f"|f| = {abs(f[k]):.3f} <= {threshold:g}"
                return Query(
                    i,
                    float(f[k]),
                    "ramp-region",
                    f"next item of the stream inside the ramp region ({region}); {passed} passed over without a label",
                    passed_over=passed,
                    cursor=(at + 1) % n,
                )
            passed += len(seg_avail)
        walked += stop - pos
        pos = stop % n
    return None


# ---------------------------------------------------------------------------
# Cold start: the one-class anomaly ranking (Laskov et al. 2006, §6.2)
# ---------------------------------------------------------------------------


def one_class_ranking(
    X: np.ndarray, rng: np.random.Generator, *, nu: float = 0.1, max_fit: int = 500, **solver_params
) -> np.ndarray:
    """Pool indices ordered from the most to the least anomalous.

    Fits the one-class incremental SVM (Laskov et al. §3, Algorithm 2) on at
    most ``max_fit`` items drawn at random (all of them for small pools) and
    ranks the whole pool by its decision value, lowest (most anomalous) first.
    Fitting on a sample bounds the cost on large pools; the ranking still
    covers every item.
    """
    from core.solvers.incremental import IncrementalOneClassSVM

    X = np.asarray(X, dtype=np.float64)
    n = len(X)
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    fit = np.sort(rng.choice(n, size=min(n, int(max_fit)), replace=False))
    model = IncrementalOneClassSVM(X[fit], nu=nu, **solver_params)
    for i in range(len(fit)):
        model.learn(i)
    scores = np.asarray(model.decision_function(X=X), dtype=np.float64)
    return np.argsort(scores, kind="stable").astype(np.intp)


def one_class_cold_start(model, pool, rng: np.random.Generator | None = None, *, ranking: np.ndarray) -> Query | None:
    """The most anomalous available item of a one-class ``ranking`` (see :func:`one_class_ranking`)."""
    pool = _as_pool(model, pool)
    ranking = np.asarray(ranking, dtype=np.intp)
    avail = ranking[pool.available[ranking]]
    if len(avail) == 0:
        return None
    i = int(avail[0])
    rank = int(np.flatnonzero(ranking == i)[0])
    return Query(
        i,
        float(pool.decision(model, [i])[0]),
        "one-class",
        f"most anomalous unlabelled item by the one-class SVM (rank {rank + 1} of {len(ranking)})",
    )


# ---------------------------------------------------------------------------
# The registry: one entry per strategy; every list of strategies derives from it
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Strategy:
    """One query strategy: its function and what the loop, the app and the command line need to know.

    ``choose(model, pool, rng, **params)`` returns a :class:`Query` or ``None`` (see the module notes).
    ``default_solver``: the solver it runs on unless another is chosen (a name of
    :mod:`core.solvers`).  ``needs_whole_pool``: it reads the decision value of every unlabelled
    item, so the loop keeps them current at any pool size (the others score only what they draw
    or walk past).  ``streams``: it walks the pool as a stream; the loop keeps a seeded order and
    a cursor and calls ``choose(model, pool, rng, order=..., cursor=..., threshold=...)`` (the
    ``threshold`` parameter, 1 by default; ``inf`` in the cold start, when every item of the stream
    is asked about), and counts the items passed over.  ``needs_oracle``: it reads the true labels
    (``pool.oracle_y``), so it runs in simulations only and the app offers it for comparisons, not
    for labelling.  ``relevant_first``: it asks about the items most likely positive first (the
    screener's heuristic: on documents, the app's "auto" model is then the review model).
    ``words``: how it picks the next item in a screener's words (the app's New session form).
    ``meaning``: what that way is good for, in a few words (the forms' help beside ``words``; empty: not said).
    """

    name: str
    choose: Callable[..., Query | None]
    default_solver: str
    needs_whole_pool: bool = False
    streams: bool = False
    needs_oracle: bool = False
    relevant_first: bool = False
    words: str = ""
    meaning: str = ""

    def __post_init__(self):
        if not callable(self.choose):
            raise ValueError(f"strategy {self.name!r}: choose must be a function, got {self.choose!r}")
        if self.needs_whole_pool and self.streams:
            raise ValueError(
                f"strategy {self.name!r}: a strategy reads the whole pool or walks it as a stream, not both"
            )

    @property
    def label(self) -> str:
        """What the app shows for it: its words, else its name."""
        return self.words or self.name


def _check_entry(entry: Strategy) -> None:
    from core import solvers

    if not isinstance(entry, Strategy):
        raise TypeError(f"a strategy entry is a core.strategies.Strategy, got {type(entry).__name__}")
    if entry.default_solver not in solvers.REGISTRY:
        raise ValueError(
            f"strategy {entry.name!r}: unknown default solver {entry.default_solver!r}; choose one of "
            f"{', '.join(solvers.names())}"
        )


REGISTRY: Registry[Strategy] = Registry("strategy", _check_entry)
# register(Strategy(...)) makes a strategy known to the loop, the comparisons, the command line and the app
# (replace=True: in place of the entry of that name); get(name) is its entry (a ValueError naming the
# strategies otherwise); names(); unregister(name)
register, unregister, get, names = REGISTRY.register, REGISTRY.unregister, REGISTRY.get, REGISTRY.names

for _entry in (
    Strategy(
        "largest-positive",
        largest_positive,
        "incremental",
        needs_whole_pool=True,
        relevant_first=True,
        words="Most likely relevant first",
        meaning="finds the positives soonest (screening)",
    ),
    Strategy(
        "near-boundary",
        near_boundary,
        "incremental",
        needs_whole_pool=True,
        words="Most uncertain first",
        meaning="teaches the model fastest",
    ),
    Strategy(
        "randomized-search",
        randomized_search,
        "lasvm",
        words="Most uncertain of a random sample (fast on a large pool)",
    ),
    Strategy("autoactive", autoactive, "lasvm", words="Uncertain items found by sampling (fast on a large pool)"),
    Strategy(
        "ramp-region",
        ramp_region,
        "ramp",
        streams=True,
        words="In turn, asking only about the items the model is unsure of",
    ),
    Strategy("random", random_query, "lasvm", words="Random", meaning="gives an unbiased sample"),
    Strategy(
        "gradient",
        gradient,
        "lasvm",
        needs_oracle=True,
        words="Most misclassified, given the true labels (simulations only)",
    ),
):
    register(_entry)
del _entry

#: the strategy a loop and a new session use unless told otherwise
DEFAULT_STRATEGY = "near-boundary"
#: the strategy every comparison measures the others against (its draws are the cold start's own)
BASELINE = "random"

# The names the contracts promise, as live views of the registry (docs/design.md, "Query strategies")
STRATEGY_NAMES = REGISTRY.name_list()
STRATEGIES = REGISTRY.name_table(lambda e: e.choose)
DEFAULT_SOLVER = REGISTRY.name_table(lambda e: e.default_solver)
# strategies that need the decision value of every unlabelled item; the others score only what they look at
WHOLE_POOL = REGISTRY.name_list(lambda e: e.needs_whole_pool)


def strategy_words(name: str) -> str:
    """What the app shows for the heuristic that asked about an item: a registered strategy's words, a cold
    start's ("random (cold start)" -> "At random, while the model waits for a positive and a negative"); a
    name this version does not know stays as it is."""
    base, cold, _ = str(name).partition(COLD_START_SUFFIX)
    if cold:
        words = COLD_START_WORDS.get(base) or (get(base).label if base in REGISTRY else base)
        return f"{words}, while the model waits for a positive and a negative"
    return get(name).label if name in REGISTRY else str(name)


def get_strategy(name: str) -> Callable[..., Query | None]:
    """The function of strategy ``name``."""
    return get(name).choose


__all__ = [
    "AUTOACTIVE_ENOUGH",
    "AUTOACTIVE_MAX_DRAWS",
    "BASELINE",
    "COLD_STARTS",
    "COLD_START_WORDS",
    "DEFAULT_COLD_START",
    "DEFAULT_SAMPLE_SIZE",
    "DEFAULT_SOLVER",
    "DEFAULT_STRATEGY",
    "Pool",
    "Query",
    "REGISTRY",
    "STRATEGIES",
    "STRATEGY_NAMES",
    "Strategy",
    "autoactive",
    "autoactive_delta",
    "get",
    "get_strategy",
    "gradient",
    "largest_positive",
    "names",
    "near_boundary",
    "one_class_cold_start",
    "one_class_ranking",
    "ramp_region",
    "random_query",
    "randomized_search",
    "register",
    "strategy_words",
    "unregister",
]
