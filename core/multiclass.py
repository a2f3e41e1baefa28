"""More than two classes: K one-vs-rest machines of one solver over one pool, and their query strategies.

:class:`OneVsRest` holds K machines of a chosen solver (:mod:`core.solvers`), machine k learning
"class k" (+1) against "every other class" (-1).  The machines share one data store, one kernel
and one :class:`~core.kernels.KernelCache`: a kernel row computed for one machine is a cache hit
for the other K - 1 (the cache's rows are keyed by store index and hold the same bits whichever
machine asked, so sharing it never changes a result).  Each machine keeps its own coefficients
and its own factorisations.  ``decision_function`` evaluates the kernel once against the union of
the machines' support vectors and gives all K columns from that one block.

Labels are single-choice: one class per item.  With an exact solver (``incremental``,
``active-set``) each machine is exactly the binary solver trained on the same items with labels
+1 / -1, and ``unlearn`` equals retraining without the item, per class (tests/core/test_multiclass.py
checks both against K separately trained binary solvers).

:class:`MultiLabel` is the multi-label variant: an item carries any subset of the K classes
(``learn(i, {"cat", "fox"})``), machine k learns +1 when class k is in the set and -1 when it is not,
and the machines are K independent binary problems (the same checks against K separately trained
binary solvers).  A single-choice answer to it, or a multi-label answer to :class:`OneVsRest`, is
refused with a message saying which the model takes.  Its query strategies are in
:data:`MULTILABEL_STRATEGIES` (``least-sure-class``: the smallest min_k |f_k|, the item least sure on
any class; ``random``).

Query strategies for K classes are small pure functions ``strategy(model, pool, rng, **params)``
like those of :mod:`core.strategies`, returning a :class:`~core.strategies.Query` whose reason
says which rule chose the item:

=================== =========================================================================
name                picks
=================== =========================================================================
smallest-margin     the item with the smallest gap between its two largest scores
least-certain-class the class with the smallest mean |f_k| over the pool, then the item
                    nearest that class's boundary (smallest |f_k|)
target-class        the item with the largest f_k for a chosen class k ("screen for class k")
random              an unlabelled item uniformly at random
=================== =========================================================================

Ties go to the lowest store index (and, for classes, to the first class named).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.kernels import add_weighted_rows
from core.solvers import OnlineSolver, StepResult, make_solver
from core.strategies import Pool, Query, _as_pool
from core.threads import single_threaded_blas

# kernel entries per block of decision_function (rows x union of support vectors)
_DECISION_BLOCK_ENTRIES = 1 << 22
# the kept scores' buffer of store rows (one per item that carried a coefficient), shared by the K machines
ROW_BUFFER_BYTES = 256 * 2**20
#: format of ``OneVsRest.to_state``
MODEL_STATE_FORMAT = 1
# kernel entries per block when a restored model computes its kept store rows again
_RESTORE_BLOCK_ENTRIES = 1 << 22


def check_classes(classes) -> tuple[str, ...]:
    """Class names as a tuple of distinct non-empty strings, at least two."""
    if isinstance(classes, str):
        raise ValueError(f"classes must be a list of names, got the single string {classes!r}")
    names = tuple(classes)
    if len(names) < 2:
        raise ValueError(f"a K-class model needs at least two classes, got {len(names)}")
    for c in names:
        if not isinstance(c, str) or not c:
            raise ValueError(f"class names must be non-empty strings, got {c!r}")
    seen: set[str] = set()
    for c in names:
        if c in seen:
            raise ValueError(f"class names must differ: {c!r} is named twice")
        seen.add(c)
    return names


def class_index(classes: Sequence[str], name) -> int:
    """The position of class ``name``; a ValueError naming the classes when it is not one of them."""
    try:
        return list(classes).index(name)
    except ValueError:
        raise ValueError(f"class {name!r} is not in the model (classes: {', '.join(classes)})") from None


class OneVsRest:
    """K named classes as K one-vs-rest machines of ``solver`` sharing one store and kernel cache.

    ``OneVsRest(["cat", "dog", "fox"], "incremental", X, C=1.0, gamma=0.5)``: every machine gets the
    same solver parameters.  ``learn(i, "dog")`` teaches every machine (+1 for the machine of
    "dog", -1 for the others); ``unlearn(i)`` takes the item out of every machine;
    ``decision_function(idx)`` is (n, K), ``predict(idx)`` the names of the top classes.
    """

    def __init__(self, classes, solver: str = "incremental", X=None, *, keep_scores: bool = False, **params):
        self.classes = check_classes(classes)
        self.keep_scores = bool(keep_scores)
        self._F: np.ndarray | None = None  # kept scores (n, K), with keep_scores
        # the coefficients the kept scores are of (K, n), the items that carry one, the biases
        self._beta = np.zeros((len(self.classes), 0))
        self._carried = np.zeros(0, dtype=np.intp)
        self._b = np.zeros(len(self.classes))
        self._rowbuf = np.empty((0, 0))  # store rows of the items that carried a coefficient, by slot
        self._slot_of = np.zeros(0, dtype=np.intp)
        self.solver = solver
        first = make_solver(solver, None, **params)
        self.machines: list[OnlineSolver] = [first]
        for _ in self.classes[1:]:
            m = make_solver(solver, None, **params)
            m.store = first.store  # one store for all
            self.machines.append(m)
        self._label = np.zeros(0, dtype=np.intp)  # class index per store item, -1 unlabelled
        if X is not None:
            self.add_points(X)

    # -- store ---------------------------------------------------------------
    def add_points(self, X) -> np.ndarray:
        """Append examples (unlabelled) to the shared store; return their indices.  The first machine
        checks them and makes the kernel and its cache on the first batch; the others take the same."""
        first = self.machines[0]
        idx = first.add_points(X)
        for m in self.machines[1:]:
            if m.kernel is None:
                m.kernel, m.cache = first.kernel, first.cache
            m._largest_kernel_diag = first._largest_kernel_diag
            m.y = np.concatenate([m.y, np.zeros(len(idx))])
            m._on_store_grown(len(idx))
        self._label = np.concatenate([self._label, np.full(len(idx), -1, dtype=np.intp)])
        self._F = None
        if self.keep_scores:
            self._rescore()  # (kept from now on, through every learn and unlearn)
        return idx

    @property
    def n_points(self) -> int:
        return len(self.machines[0].store)

    @property
    def cache(self):
        """The kernel cache all machines share (None before any data)."""
        return self.machines[0].cache

    @property
    def n_kernel_evals(self) -> int:
        """Kernel entries computed by all machines together (one shared count)."""
        return self.machines[0].n_kernel_evals

    # -- labels --------------------------------------------------------------
    def _one_class(self, label) -> int:
        if isinstance(label, (list, tuple, set, frozenset, np.ndarray)):
            got = list(label)
            if len(got) != 1:
                raise ValueError(f"a single-choice model takes one class per item, got {len(got)}: {got!r}")
            label = got[0]
        return class_index(self.classes, label)

    def _check_item(self, i) -> int:
        i = int(i)
        if not 0 <= i < self.n_points:
            raise IndexError(f"item {i} is not in the store (size {self.n_points})")
        return i

    def label_of(self, i: int) -> str | None:
        k = int(self._label[self._check_item(i)])
        return None if k < 0 else self.classes[k]

    @property
    def labelled_(self) -> np.ndarray:
        """Labelled store indices in the order they were learned."""
        return self.machines[0].labelled_

    @property
    def labels_(self) -> np.ndarray:
        """Class index per store item (-1: no label)."""
        return self._label.copy()

    def learn(self, i: int, label) -> StepResult:
        """Teach item ``i`` the class named ``label``: +1 to its machine, -1 to every other.

        A class not in the model, more than one class, or an item that already has a label (unlearn it
        first to change it) raise ValueError before any machine changes.  When a machine fails midway,
        the machines already taught are untaught and the error is raised again.
        """
        i = self._check_item(i)
        k = self._one_class(label)
        if self._label[i] >= 0:
            raise ValueError(
                f"item {i} already has the label {self.classes[self._label[i]]!r}; unlearn it first to change it"
            )
        return self._teach(i, [1.0 if c == k else -1.0 for c in range(len(self.classes))], k)

    def _teach(self, i: int, targets: Sequence[float], mark: int) -> StepResult:
        """Machine k learns item ``i`` with label ``targets[k]``; then ``_label[i] = mark``.  When a
        machine fails midway, the machines already taught are untaught and the error is raised again."""
        done: list[OnlineSolver] = []
        steps = []
        t0, evals0 = time.perf_counter(), self.n_kernel_evals
        try:
            for m, target in zip(self.machines, targets, strict=True):
                steps.append(m.learn(i, target))
                done.append(m)
        except BaseException:
            for m in done:
                m.unlearn(i)
            raise
        self._label[i] = mark
        self._update_scores()
        return self._combined(steps, t0, evals0)

    def unlearn(self, i: int) -> StepResult:
        """Take item ``i`` out of every machine (exact per class for the exact solvers)."""
        i = self._check_item(i)
        if self._label[i] < 0:
            raise ValueError(f"item {i} has no label")
        t0, evals0 = time.perf_counter(), self.n_kernel_evals
        steps = [m.unlearn(i) for m in self.machines]
        self._label[i] = -1
        self._update_scores()
        return self._combined(steps, t0, evals0)

    def _combined(self, steps: list[StepResult], t0: float, evals0: int) -> StepResult:
        failed = [s for s in steps if not s.success]
        return StepResult(
            status=failed[0].status if failed else "ok",
            iterations=sum(s.iterations for s in steps),
            kernel_evals=self.n_kernel_evals - evals0,
            seconds=time.perf_counter() - t0,
            kkt_gap=max((s.kkt_gap for s in steps), default=float("nan")),
            message="; ".join(f"{self.classes[c]}: {s.message}" for c, s in enumerate(steps) if s.message),
            extra={"per_class": steps},
        )

    # -- kept scores ---------------------------------------------------------
    def _coefficients(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(union of the machines' support vectors, their coefficients (len(union), K), biases (K,))."""
        parts = [
            m.coefficients() if m.kernel is not None else (np.zeros(0, np.intp), np.zeros(0), 0.0)
            for m in self.machines
        ]
        union = np.unique(np.concatenate([np.asarray(sv, dtype=np.intp) for sv, _, _ in parts]))
        coef = np.zeros((len(union), len(parts)))
        for c, (sv, a, _) in enumerate(parts):
            coef[np.searchsorted(union, sv), c] = a
        return union, coef, np.array([float(bias) for _, _, bias in parts])

    @property
    def scores_(self) -> np.ndarray | None:
        """The kept scores (n, K) of every stored item (``keep_scores=True``), else None."""
        if self.keep_scores and self._F is None and self.n_points:
            self._rescore()
        return None if self._F is None else self._F.T

    def _rescore(self) -> None:
        union, coef, b = self._coefficients()
        n, K = self.n_points, len(self.classes)
        self._F = np.ascontiguousarray(self._block_scores(np.arange(n), union, coef, b).T)  # (K, n)
        self._beta = np.zeros((K, n))
        self._beta[:, union] = coef.T
        self._carried, self._b = union, b
        self._rowbuf, self._slot_of = np.empty((0, n)), np.full(n, -1, dtype=np.intp)

    def _row_slot(self, j: int) -> int:
        """Item j's slot in the row buffer (its store row put there on first use), or -1 when the
        buffer is full (``ROW_BUFFER_BYTES``)."""
        k = int(self._slot_of[j])
        if k >= 0:
            return k
        used = int(np.count_nonzero(self._slot_of >= 0))
        n = self.n_points
        if used == len(self._rowbuf):
            cap = min(max(16, 2 * used), ROW_BUFFER_BYTES // (8 * n))
            if cap <= used:
                return -1
            grown = np.empty((cap, n))
            grown[:used] = self._rowbuf[:used]
            self._rowbuf = grown
        self._rowbuf[used] = self.cache.row(j, keep=False)
        self._slot_of[j] = used
        return used

    @single_threaded_blas
    def _update_scores(self) -> None:
        """Kept scores after a change: for each machine, f_k += sum_j delta_kj K(x_j, store) over the
        items j whose coefficient changed in it.  Each store row is computed once and held in one
        buffer that all K machines read (rows beyond the buffer come from the shared cache)."""
        if self._F is None:
            return
        union, coef, b = self._coefficients()
        carried = np.union1d(self._carried, union)
        after = np.zeros((len(self.classes), len(carried)))
        after[:, np.searchsorted(carried, union)] = coef.T
        delta = after - self._beta[:, carried]
        self._beta[:, carried] = after
        self._carried = union
        moved = np.any(delta != 0.0, axis=0)
        changed, delta = carried[moved], delta[:, moved]
        slots = np.array([self._row_slot(j) for j in changed.tolist()], dtype=np.intp)
        for k in range(len(self.classes)):
            on = delta[k] != 0.0
            inbuf, outside = on & (slots >= 0), on & (slots < 0)
            add_weighted_rows(
                self._F[k],
                self._rowbuf,
                slots[inbuf],
                delta[k, inbuf],
                [self.cache.row(j) for j in changed[outside].tolist()],
                delta[k, outside].tolist(),
            )
        self._F += (b - self._b)[:, None]
        self._b = b

    # -- state ---------------------------------------------------------------
    def to_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The model as plain arrays + a JSON-able dict (no pickle): each machine's own state
        (``to_state(include_data=False)``, arrays under ``class{k}.``), the labels, and with
        ``keep_scores`` the kept scores and the bookkeeping of their updates.  The store's points are not
        included: ``load_state`` puts the state into a model made over the same points."""
        arrays: dict[str, np.ndarray] = {"labels": self._label.copy()}
        machines = []
        for k, m in enumerate(self.machines):
            got, meta = m.to_state(include_data=False)
            arrays.update({f"class{k}.{name}": value for name, value in got.items()})
            machines.append(meta)
        self._save_labels(arrays)
        if self._F is not None:
            slotted = np.flatnonzero(self._slot_of >= 0)
            arrays.update(
                scores=self._F.copy(),
                carried=self._carried.copy(),
                carried_coef=self._beta[:, self._carried].copy(),
                bias=self._b.copy(),
                row_items=slotted[np.argsort(self._slot_of[slotted])],
            )
        meta = {
            "format": MODEL_STATE_FORMAT,
            "model": type(self).__name__,
            "classes": list(self.classes),
            "solver": self.solver,
            "n_points": self.n_points,
            "machines": machines,
        }
        json.dumps(meta)  # fail early if anything is not JSON-able
        return arrays, meta

    def _save_labels(self, arrays: dict[str, np.ndarray]) -> None:
        """(``MultiLabel``: each item's set of classes too.)"""

    def load_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Put a state saved by ``to_state`` into this model, made with the same classes, solver and
        parameters over the same points and having learned nothing; it then continues exactly as the saved
        model would, bit for bit, its machines still sharing one store and kernel cache.  A state that does
        not fit (another model, classes, solver, parameters, points, or labels that are not its machines')
        raises ValueError; the model is then to be made again."""
        K, n = len(self.classes), self.n_points
        if len(self.labelled_):
            raise ValueError("a state is put into a model that has learned nothing")
        if meta.get("format") != MODEL_STATE_FORMAT:
            raise ValueError(f"unknown model state format {meta.get('format')!r}")
        if meta.get("model") != type(self).__name__ or tuple(meta.get("classes", ())) != self.classes:
            raise ValueError("the state is for another model or other classes")
        if meta.get("solver") != self.solver or int(meta.get("n_points", -1)) != n or len(meta["machines"]) != K:
            raise ValueError("the state is for another solver or other points")
        for k, (m, saved) in enumerate(zip(self.machines, meta["machines"], strict=True)):
            mine = json.loads(json.dumps(m.get_params()))
            kernel = None if m.kernel is None else json.loads(json.dumps(m.kernel.to_dict()))
            if saved.get("params") != mine or saved.get("kernel") != kernel:
                raise ValueError(f"machine {k}'s state has other parameters")
            prefix = f"class{k}."
            m.load_state({name[len(prefix) :]: v for name, v in arrays.items() if name.startswith(prefix)}, saved)
        label = np.asarray(arrays["labels"], dtype=np.intp)
        if label.shape != (n,) or np.any((label < -1) | (label >= K)):
            raise ValueError("the state's labels do not fit the model")
        self._label = label.copy()
        self._load_labels(arrays)
        if self.keep_scores:
            self._load_scores(arrays)

    def _targets(self) -> np.ndarray:
        """(K, n): what machine k learned for each item (+1 / -1; 0 for an item without a label)."""
        targets = np.where(self._label[None, :] == np.arange(len(self.classes))[:, None], 1.0, -1.0)
        targets[:, self._label < 0] = 0.0
        return targets

    def _load_labels(self, arrays: dict[str, np.ndarray]) -> None:
        """The labels read back must be what every machine learned."""
        learned = np.array([m.y for m in self.machines])
        if not np.array_equal(learned, self._targets()):
            raise ValueError("the state's labels are not what its machines learned")

    def _load_scores(self, arrays: dict[str, np.ndarray]) -> None:
        K, n = len(self.classes), self.n_points
        F = np.asarray(arrays["scores"], dtype=np.float64)
        carried = np.asarray(arrays["carried"], dtype=np.intp)
        coef = np.asarray(arrays["carried_coef"], dtype=np.float64)
        bias = np.asarray(arrays["bias"], dtype=np.float64)
        rows = np.asarray(arrays["row_items"], dtype=np.intp)
        if F.shape != (K, n) or bias.shape != (K,) or coef.shape != (K, len(carried)):
            raise ValueError("the state's kept scores do not fit the model")
        if (
            np.any((carried < 0) | (carried >= n))
            or np.any((rows < 0) | (rows >= n))
            or len(np.unique(rows)) != len(rows)
        ):
            raise ValueError("the state's kept scores name items outside the store")
        self._F = np.array(F, order="C")  # (a copy: the kept scores change in place)
        self._beta = np.zeros((K, n))
        self._beta[:, carried] = coef
        self._carried, self._b = carried.copy(), bias.copy()
        # the kept store rows, in their slots (the same bits as computed one at a time: core.kernels)
        self._rowbuf, self._slot_of = np.empty((len(rows), n)), np.full(n, -1, dtype=np.intp)
        step = max(1, _RESTORE_BLOCK_ENTRIES // max(n, 1))
        for s in range(0, len(rows), step):
            self._rowbuf[s : s + step] = self.cache.compute(rows[s : s + step], np.arange(n))
        self._slot_of[rows] = np.arange(len(rows))

    # -- read-outs -----------------------------------------------------------
    @single_threaded_blas
    def decision_function(self, idx=None, X=None) -> np.ndarray:
        """Scores (n, K) for store indices ``idx`` (default: all), or new points ``X``: column k is
        machine k's f.  One kernel block against the union of the machines' support vectors (or the
        kept scores, with ``keep_scores``)."""
        F = self.scores_
        if X is None and F is not None:
            return F.copy() if idx is None else F[np.asarray(idx, dtype=np.intp).reshape(-1)]
        union, coef, b = self._coefficients()
        if X is not None:
            n = X.shape[0]
            if len(union) == 0 or n == 0:
                return np.tile(b, (n, 1))
            return self.cache.against(X, union) @ coef + b
        idx = np.arange(self.n_points) if idx is None else np.asarray(idx, dtype=np.intp).reshape(-1)
        return self._block_scores(idx, union, coef, b)

    def _block_scores(self, idx: np.ndarray, union: np.ndarray, coef: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = np.tile(b, (len(idx), 1))
        if len(union) == 0 or len(idx) == 0:
            return out
        chunk = max(1, _DECISION_BLOCK_ENTRIES // len(union))
        for s in range(0, len(idx), chunk):
            out[s : s + chunk] += self.cache.block(idx[s : s + chunk], union) @ coef
        return out

    def predict(self, idx=None, X=None) -> np.ndarray:
        """The name of the class with the largest score, per item (ties: the first class named)."""
        F = self.decision_function(idx, X)
        return np.asarray(self.classes, dtype=object)[np.argmax(F, axis=1)]


# ---------------------------------------------------------------------------
# Query strategies for K classes
# ---------------------------------------------------------------------------


def _pool_scores(model, pool):
    """(the pool, its candidates, their scores (n, K)), or None when nothing is left to ask."""
    pool = _as_pool(model, pool)
    if pool.n_available == 0:
        return None
    cand = pool.candidates
    F = np.asarray(model.decision_function(cand), dtype=np.float64).reshape(len(cand), len(model.classes))
    return pool, cand, F


def _scores_of(model, F_row) -> dict[str, float]:
    return {c: float(f) for c, f in zip(model.classes, F_row, strict=True)}


def smallest_margin(model, pool, rng: np.random.Generator | None = None) -> Query | None:
    """The item whose two largest class scores are closest (the smallest top-two margin)."""
    got = _pool_scores(model, pool)
    if got is None:
        return None
    pool, cand, F = got
    top2 = np.sort(F, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    k = int(np.argmin(margin))
    first, second = np.argsort(-F[k], kind="stable")[:2]
    a, b = model.classes[first], model.classes[second]
    return Query(
        int(cand[k]),
        float(margin[k]),
        "smallest-margin",
        f"smallest margin between the top two classes, {a!r} (f = {F[k, first]:+.3f}) and "
        f"{b!r} (f = {F[k, second]:+.3f}): {margin[k]:.3f}, among {pool.n_available} unlabelled items",
        extra={"classes": (a, b), "scores": _scores_of(model, F[k])},
    )


def least_certain_class(model, pool, rng: np.random.Generator | None = None) -> Query | None:
    """Near-boundary on the least certain class: the class with the smallest mean |f_k| over the
    pool, then the item with the smallest |f_k| for that class."""
    got = _pool_scores(model, pool)
    if got is None:
        return None
    pool, cand, F = got
    A = np.abs(F)
    mean = A.mean(axis=0)
    c = int(np.argmin(mean))
    k = int(np.argmin(A[:, c]))
    name = model.classes[c]
    return Query(
        int(cand[k]),
        float(F[k, c]),
        "least-certain-class",
        f"near the boundary of the least certain class {name!r} (mean |f| = {mean[c]:.3f} over the "
        f"pool): |f| = {A[k, c]:.3f}, among {pool.n_available} unlabelled items",
        extra={"class": name, "scores": _scores_of(model, F[k])},
    )


def target_class(model, pool, rng: np.random.Generator | None = None, *, target: str) -> Query | None:
    """Screen for one class: the item with the largest score for class ``target``."""
    c = class_index(model.classes, target)
    got = _pool_scores(model, pool)
    if got is None:
        return None
    pool, cand, F = got
    k = int(np.argmax(F[:, c]))
    return Query(
        int(cand[k]),
        float(F[k, c]),
        "target-class",
        f"screening for class {target!r}: largest f = {F[k, c]:+.3f} for that class among "
        f"{pool.n_available} unlabelled items",
        extra={"class": target, "scores": _scores_of(model, F[k])},
    )


def random_class_query(model, pool, rng: np.random.Generator) -> Query | None:
    """An unlabelled item drawn uniformly at random (its score: the largest class score)."""
    pool = _as_pool(model, pool)
    for i in pool.sample(rng, 1).tolist():  # (none when the pool is empty)
        F = np.asarray(model.decision_function(np.array([i])), dtype=np.float64).reshape(-1)
        return Query(
            i,
            float(F.max()),
            "random",
            f"drawn uniformly from {pool.n_available} unlabelled items",
            extra={"scores": _scores_of(model, F)},
        )
    return None


MULTICLASS_STRATEGIES: dict[str, Callable[..., Query | None]] = {
    "smallest-margin": smallest_margin,
    "least-certain-class": least_certain_class,
    "target-class": target_class,
    "random": random_class_query,
}

# ---------------------------------------------------------------------------
# K-class simulation: true labels as the oracle, a held-out part for the scores
# ---------------------------------------------------------------------------


@dataclass
class Simulation:
    """One K-class run: ``rows`` (labels, accuracy, macro_auc, chosen_by) at each evaluation, the items
    asked in order (store indices of X), the held-out items and the model at the end."""

    rows: list[dict]
    asked: list[int]
    test: np.ndarray
    model: OneVsRest


def _stratified_split(
    labels: np.ndarray, classes: Sequence[str], fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    test = []
    for c in classes:
        members = rng.permutation(np.flatnonzero(labels == c))
        test.append(members[: int(np.round(fraction * len(members)))])
    held = np.sort(np.concatenate(test)).astype(np.intp)
    return np.setdiff1d(np.arange(len(labels)), held), held


def simulate(
    X,
    labels,
    classes=None,
    *,
    strategy: str = "smallest-margin",
    solver: str = "incremental",
    budget: int,
    seed: int = 0,
    initial: int = 10,
    test_fraction: float = 0.25,
    eval_every: int = 10,
    target: str | None = None,
    **solver_params,
) -> Simulation:
    """A K-class active-learning run with the true ``labels`` (class names, one per row of X) as the oracle.

    A stratified ``test_fraction`` is held out; the rest is the pool.  The first ``initial`` labels
    are drawn at random, then ``strategy`` (a name of :data:`MULTICLASS_STRATEGIES`; ``target`` for
    ``target-class``) chooses.  Every ``eval_every`` labels and at the end: accuracy and macro AUC
    (the mean over the classes of the one-vs-rest AUC of each column) on the held-out part.
    """
    from core.metrics import accuracy, roc_auc

    labels = np.asarray(labels, dtype=object)
    classes = check_classes(sorted(set(labels.tolist())) if classes is None else classes)
    unknown = sorted(set(labels.tolist()) - set(classes))
    if unknown:
        counts = ", ".join(f"{u!r} ({int(np.count_nonzero(labels == u))} items)" for u in unknown)
        raise ValueError(f"labels name classes not in classes: {counts}; the classes: {', '.join(classes)}")
    if strategy not in MULTICLASS_STRATEGIES:
        raise ValueError(f"unknown K-class strategy {strategy!r}; choose one of {', '.join(MULTICLASS_STRATEGIES)}")
    choose = MULTICLASS_STRATEGIES[strategy]
    params = {"target": target} if strategy == "target-class" else {}
    rng = np.random.default_rng(seed)
    pool_idx, test = _stratified_split(labels, classes, test_fraction, rng)
    model = OneVsRest(classes, solver, X[pool_idx], keep_scores=True, **solver_params)
    available = np.ones(len(pool_idx), dtype=bool)
    rows, asked = [], []
    truth = labels[test]
    for t in range(1, min(budget, len(pool_idx)) + 1):
        q = (
            random_class_query(model, Pool(available), rng)
            if t <= initial
            else choose(model, Pool(available), rng, **params)
        )
        if q is None:  # (nothing left to ask: the budget is capped at the pool, so only a strategy's own refusal)
            break
        model.learn(q.index, labels[pool_idx[q.index]])
        available[q.index] = False
        asked.append(int(pool_idx[q.index]))
        if t % eval_every == 0 or t == min(budget, len(pool_idx)):
            F = model.decision_function(X=X[test])
            aucs = [roc_auc(truth == c, F[:, k]) for k, c in enumerate(classes)]
            rows.append(
                {
                    "labels": t,
                    "accuracy": accuracy(truth, model.predict(X=X[test])),
                    "macro_auc": float(np.nanmean(aucs)) if not np.all(np.isnan(aucs)) else float("nan"),
                    "chosen_by": q.strategy,
                }
            )
    return Simulation(rows, asked, test, model)


# ---------------------------------------------------------------------------
# Multi-label: any subset of the K classes per item
# ---------------------------------------------------------------------------


class MultiLabel(OneVsRest):
    """K named classes of which an item may carry any subset (none, one, several, all): K independent
    binary machines of ``solver`` sharing one store and kernel cache, machine k learning +1 when class
    k is in the item's set and -1 when it is not.

    ``MultiLabel(["cat", "dog", "fox"], "incremental", X, C=1.0, gamma=0.5)``; ``learn(i, {"cat",
    "fox"})``; ``learn(j, set())`` (none of the classes); ``unlearn(i)`` takes the item out of every
    machine (exact per class with the exact solvers); ``predict(idx)`` gives each item's classes with
    f_k > 0.  A single class name as the answer (a single-choice answer) is refused: give it as a set
    of one.  Everything else (kept scores, shared cache, ``decision_function``) is :class:`OneVsRest`'s.
    """

    multi_label = True

    def __init__(self, classes, solver: str = "incremental", X=None, *, keep_scores: bool = False, **params):
        self._member = np.zeros((0, len(check_classes(classes))), dtype=bool)  # (n, K), rows of labelled items
        super().__init__(classes, solver, X, keep_scores=keep_scores, **params)

    def add_points(self, X) -> np.ndarray:
        idx = super().add_points(X)
        self._member = np.vstack([self._member, np.zeros((len(idx), len(self.classes)), dtype=bool)])
        return idx

    def _class_set(self, label) -> np.ndarray:
        """The answer as a membership row (K,), checked."""
        if isinstance(label, (str, bytes)) or not isinstance(label, (list, tuple, set, frozenset, np.ndarray)):
            raise ValueError(
                f"a multi-label model takes a set of classes per item (any of {', '.join(self.classes)}; "
                f"an empty set for none), got the single class {label!r}: give it as [{label!r}]"
            )
        row = np.zeros(len(self.classes), dtype=bool)
        for name in list(label):
            row[class_index(self.classes, name)] = True
        return row

    def label_of(self, i: int) -> tuple[str, ...] | None:  # type: ignore[override]
        """The classes item ``i`` carries (in the model's order; () for none), or None without a label."""
        i = self._check_item(i)
        if self._label[i] < 0:
            return None
        return tuple(c for c, on in zip(self.classes, self._member[i], strict=True) if on)

    @property
    def labels_(self) -> np.ndarray:
        """(n, K): +1 where the item carries the class, -1 where it does not, 0 on items without a label."""
        out = np.where(self._member, 1, -1).astype(np.int8)
        out[self._label < 0] = 0
        return out

    def learn(self, i: int, label) -> StepResult:
        """Teach item ``i`` the set of classes ``label`` (+1 to their machines, -1 to the others).

        A single class name, a class not in the model, or an item that already has a label (unlearn it
        first) raise ValueError before any machine changes; a machine failing midway is undone as in
        :meth:`OneVsRest.learn`."""
        i = self._check_item(i)
        row = self._class_set(label)
        if self._label[i] >= 0:
            raise ValueError(
                f"item {i} already has the labels {list(self.label_of(i) or ())!r}; unlearn it first to change them"
            )
        step = self._teach(i, np.where(row, 1.0, -1.0).tolist(), 0)
        self._member[i] = row  # (after every machine learned: a failed learn leaves no trace)
        return step

    def _save_labels(self, arrays: dict[str, np.ndarray]) -> None:
        arrays["member"] = self._member.copy()

    def _load_labels(self, arrays: dict[str, np.ndarray]) -> None:
        member = np.asarray(arrays["member"], dtype=bool)
        if member.shape != self._member.shape or np.any(member[self._label < 0]) or np.any(self._label > 0):
            raise ValueError("the state's sets of classes do not fit the model")
        self._member = member.copy()
        super()._load_labels(arrays)

    def _targets(self) -> np.ndarray:
        targets = np.where(self._member.T, 1.0, -1.0)
        targets[:, self._label < 0] = 0.0
        return targets

    def unlearn(self, i: int) -> StepResult:
        """Take item ``i`` out of every machine (exact per class for the exact solvers)."""
        step = super().unlearn(i)
        self._member[int(i)] = False
        return step

    def predict(self, idx=None, X=None) -> np.ndarray:
        """Per item, the tuple of the classes whose score is positive (in the model's order)."""
        F = self.decision_function(idx, X)
        out = np.empty(len(F), dtype=object)
        for r, row in enumerate(F > 0):
            out[r] = tuple(c for c, on in zip(self.classes, row, strict=True) if on)
        return out


def least_sure_class(model, pool, rng: np.random.Generator | None = None) -> Query | None:
    """Multi-label: the item least sure on any class, the smallest min_k |f_k| (ties: the lowest index,
    then the first class named)."""
    got = _pool_scores(model, pool)
    if got is None:
        return None
    pool, cand, F = got
    A = np.abs(F)
    nearest = np.argmin(A, axis=1)
    k = int(np.argmin(A[np.arange(len(cand)), nearest]))
    c = int(nearest[k])
    name = model.classes[c]
    return Query(
        int(cand[k]),
        float(F[k, c]),
        "least-sure-class",
        f"least sure on any class: nearest the boundary of class {name!r} (f = {F[k, c]:+.3f}, the "
        f"smallest |f| over all classes and items), among {pool.n_available} unlabelled items",
        extra={"class": name, "scores": _scores_of(model, F[k])},
    )


MULTILABEL_STRATEGIES: dict[str, Callable[..., Query | None]] = {
    "least-sure-class": least_sure_class,
    "random": random_class_query,
}


__all__ = [
    "MODEL_STATE_FORMAT",
    "MULTICLASS_STRATEGIES",
    "OneVsRest",
    "Simulation",
    "check_classes",
    "class_index",
    "least_certain_class",
    "random_class_query",
    "simulate",
    "smallest_margin",
    "target_class",
]
__all__ += ["MULTILABEL_STRATEGIES", "MultiLabel", "least_sure_class"]
