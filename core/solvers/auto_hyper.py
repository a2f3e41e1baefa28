"""C and gamma (and the class weight) chosen from the labels while they are given (mixin of the exact
solvers).

``auto=("C", "gamma")`` makes a solver choose its box constraint C and (rbf kernel) its width gamma
(with "class_weight" in ``auto`` also its class weight, below) from the labels it has learned, at stated
moments: when the number of labels first reaches 20, 40, 80 and 160 (``auto_moments``) with at least
``MIN_PER_CLASS`` (3) of each class among them; the choice made at 160 then stays.
Before the first moment the solver learns with the C and gamma it was given (the starting values).

The estimator is exact leave-one-out, which the exact solvers give cheaply by decremental
unlearning (Cauwenberghs & Poggio 2001; Laskov et al. 2006, §6): for each point of a small grid, a
model of the labels is learned, and for each labelled example i that carries a coefficient
(a margin or error vector) i is unlearned, its decision value f_{-i}(x_i) read, and i learned
again.  An example without a coefficient (a_i = 0) is not needed: the model without it is the
same model (its KKT condition is the only one it enters), so f_{-i}(x_i) = f(x_i) (the known
shortcut of leave-one-out for SVMs; it holds exactly when the bias is fixed by a free margin
vector, and otherwise i is unlearned as the others are, since the midpoint bias may move).

The grid: C in ``grid["C"]`` (default 0.1, 1, 10, 100) and gamma in ``grid["gamma"]`` times the
median heuristic (default 0.5, 1, 2 times 1 / median ||x_i - x_j||^2 over the labelled pairs), for
the rbf kernel only (for the other kernels gamma is not searched).  Without "C" in ``auto`` the
grid's C is the given one; without "gamma", the given gamma.

The criterion (``rank``): first the grid points whose leave-one-out values separate the classes by their
sign better than chance (balanced error rate, the mean of the two classes' error rates, under 1/2: not
C = 0.1 calling every example negative, which can rank them perfectly), then the ROC AUC of the
leave-one-out decision values (higher is better), then their balanced error (lower is better), then
the grid point nearest the current values (in log scale: no flapping between equally
good values), then the smaller C and the smaller gamma.  Every step is deterministic, so the choice is a
function of the labels in their learning order.  The AUC comes first because it is what the choice is
for (ranking the pool) and it is the steadier of the two when the positives are few: on the 2%-positive
digits pool (benchmarks/bench_auto_hyper.py) the balanced error first chose values worse than the fixed
defaults at 100 and 200 labels; ranked first by the AUC, the held-out AUC there and on the other datasets
rose (docs/benchmarks.md, "C and gamma from the labels").

A choice waits until the labels it is based on hold ``MIN_PER_CLASS`` (3) of each class.  With one
positive, leaving it out leaves a model without positives: every grid point has balanced error 1/2 and an
AUC of noise, and the choice that followed (the smallest gamma, on that pool) lowered the held-out AUC at
30 labels and anchored later ties (nearest the current values) there.  With 1, 2, 3 and 5 measured, 3
was the smallest that brought the held-out AUC at 30 labels level with the defaults'.

The class weight (``auto`` with "class_weight"; the solver starts from ``class_weight`` None or
"balanced", not fixed weights): after C and gamma are chosen with the class weight held now, the other
one of None and "balanced" is scored at the chosen C and gamma by the same leave-one-out and criterion,
and wins only with a higher AUC, or the same and a lower balanced error (a tie keeps the one held now).
"balanced" is scored with the weights ``stepped_balanced_weights`` gives the labels the choice is based
on, fixed while an example is left out (the weights, like C, are the value under test), so the choice
stays a function of the labels in learning order; once chosen, the solver's "balanced" weights follow its
learned labels as ever (``ClassWeights``).  It costs one grid point more per moment, and none when those
weights are 1 and 1 (the two classes within a factor sqrt(2) of each other: the same model, the same
score).  The grid itself is scored with the weights the held class weight gives the labels, fixed too.
Each choice then also stores its ``class_weight``; a choice stored without one (a state saved before the
class weight could be chosen) leaves the class weight as it is when undone.

A choice at moment m is based on the first m labels in learning order (so a batch that jumps past a
moment, ``learn_many``, costs what the moment costs), or, when those hold fewer than ``MIN_PER_CLASS``
of a class, on the m labels up to now, at the first label with which those hold enough of each.  Each
choice is kept with the number of labels learned when it was made and the number it was based on
(``hyper_choices``, saved with the solver's state); unlearning below the first drops it and relearns the
model with the values before it, so undo and corrections stay exact, and a restored solver continues
exactly as the saved one.  After a choice the model is relearned from all its labels, in learning order,
with the chosen values (``ClassWeights._relearn``; with a lag, mostly in the background, below).

A re-choice costs about |grid| x (n + 2 |SV|) learn / unlearn steps at n labels, each about O(n):
for the default grid at 160 labels, 1.2 s on a 2-core machine at load 2 (5 features), 1.3-3.2 s at
load 14 on the datasets of benchmarks/bench_auto_hyper.py.  The class weight's point is the chosen C
and gamma, often among the costliest of the grid: the CPU time of a re-choice at 160 labels on those
datasets was 0.84-1.40 times the one without it (load 10-12; the estimate counts it as one point: 13
for the default grid).  A grid whose estimated time at the last moment exceeds ``RECHOICE_TARGET_S`` (2 s) is
refused when the solver is made, with a message that names the grid and the estimate.

In the background, a stated number of labels later (``auto_lag``).  With ``auto_lag=0`` (the default) the
choice runs at the label that reaches the moment, which then takes the seconds above.  With ``auto_lag=L``
(the app's sessions and ``compare``: ``DEFAULT_LAG``, 10) that label only fixes what the choice reads
(``hyper_pending``: the moment, the label count it started at, the items it is based on and their labels,
the values held and the box weights; JSON-able, saved with the solver's state) and queues its computation
(``ChoiceSpec.run``) on a background thread; the choice is applied at the label count L later (recorded in
the choice as ``n_labels``, the start as ``started``), and if it has not finished then, that label waits for
it.  So the model stays a function of the labels in learning order, whatever the thread's timing: the
thread's result is the one ``ChoiceSpec.run`` gives in the foreground, which a restored solver, a relearned
one and ``auto_background=False`` compute at the label it is due at (the tests force the thread to finish
early and late and compare the models bit for bit).  No new choice starts while one is pending.

The relearning with the chosen values is prebuilt in the background too (``RelearnSpec``): once the choice is
made, the thread learns the labels learned at its start, in learning order, with the chosen values in a fresh
solver of its own (the steps ``_relearn`` takes for those labels, with the weights ``_apply`` would set), and the
label it is due at only continues that solver with the labels learned since, in learning order
(``_continue_prebuilt``): ``_relearn`` learns one label at a time in learning order, so the same steps on the same
numbers, the same model bit for bit (the kernel cache returns the same bits whatever it holds).  The label then
costs the labels learned since the start (about the lag) instead of all of them.  It is used only when it still
matches: the labels it learned still the first ones in learning order with the same answers, the weights the
labels give at the due label those it used, the parameters, the store's size and its largest kernel value
unchanged; otherwise (a label before the start corrected or unlearned under a pending choice, "balanced" weights
moved by the labels since), and when there is no background job (a lag of 0, a restored solver), the labels are
relearned in place as before.  Undoing or correcting labels learned after the start keeps it while they are not
fed (below).  Once the job is done (checked without waiting), each label the labelling thread learns also feeds
the labels learned since into the prebuilt solver, in learning order (``Prebuilt.feed``, the same steps taken
earlier, so the same bits), and the due label has only its own label left to learn.  A label fed and then undone,
unlearned or corrected is not unlearned there (an exact solver's unlearning is exact in value, not in bits): the
prebuilt solver is let go and the due label relearns in place.  The pool is still rescored at the due label (its
scores are of the model with the due label learned).  When the choice
keeps the values, nothing is prebuilt (nothing is relearned).  The prebuilt solver reads the solver's rows
through a store of its own over the same arrays (``_shared_rows``: not copied; the labelling thread only ever
writes past them), has a kernel cache of its own (the solver's budget; the one the due label keeps, the old one
then freed) and is handed over once (``ChoiceJob.take_prebuilt``); a job given up stops between two of its
steps, and a job whose solver is gone before its due label (a session closed or dropped) lets its prebuilt
solver go (``ChoiceJob.owner_gone``).

What the thread reads is its own: the rows of the items the choice is based on, copied into a ``DataStore``
of their own (items 0..k-1 in learning order, with or without a lag), their labels, the
solver's parameters, and kernel caches it makes; the scratch solvers it learns are its own.  The labelling
thread goes on changing the solver, its store and its kernel cache, none of which the thread touches.
Unlearning below the label count a pending choice started at, or unlearning or changing one of its labels,
drops it (a correction then starts it again at once, from the labels then, applied the lag later); its
thread is given up between two of its steps (each solver lineage, which undo copies and relearned selves
share, keeps its thread in ``_running``).  Two daemon threads serve the queued choices; they
are started once, with the first solver that has a lag (starting one made the label that started a choice
wait ~10 ms on a loaded machine), and a choice starts ``START_DELAY_S`` (20 ms) after it is queued, so that
the label that queued it finishes first.

The thread holds the GIL while it runs Python; the compiled steps of the incremental solver (``drive``,
~20% of a choice's time) do not release it either.  Measured (benchmarks/bench_auto_hyper.py ``--latency``;
docs/benchmarks.md, "C and gamma from the labels"): the labels given while a choice runs took the time of the
labels elsewhere (median 0.2-0.9 ms at load 4-11), so neither releasing the GIL in the compiled loops nor a process
(which would have to copy the rows and parameters over without pickle) was needed.  A shorter switch interval
while the thread runs (0.5 ms) changed nothing measurable and was left out.
"""

from __future__ import annotations

import copy
import itertools
import math
import queue
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from core.kernels import DataStore, Kernel, KernelCache
from core.metrics import roc_auc
from core.solvers.base import stepped_balanced_weights
from core.threads import single_threaded_blas

AUTO_NAMES = ("C", "gamma", "class_weight")
# the class weights compared at the chosen C and gamma (``auto`` with "class_weight")
CLASS_WEIGHTS = (None, "balanced")
_KEEP = object()  # (a choice stored without a class weight leaves the solver's as it is)
DEFAULT_GRID = {"C": (0.1, 1.0, 10.0, 100.0), "gamma": (0.5, 1.0, 2.0)}
DEFAULT_MOMENTS = (20, 40, 80, 160)
# The wait the analyst may see at the one label of a re-choice moment, and the time a re-choice is
# estimated to take: SECONDS_PER_POINT_LABEL2 x grid points x n^2 at n labels (each grid point learns
# the n labels and unlearns / relearns its support vectors, each step costing about n; measured by
# benchmarks/bench_auto_hyper.py on a 2-core machine at load 2: 1.2 s for the default 12 points at
# 160 labels, rbf kernel, incremental solver).  So the default moments end at 160 labels: at 320 the
# default grid would take about 5 s.
RECHOICE_TARGET_S = 2.0
SECONDS_PER_POINT_LABEL2 = 4e-6
# A choice waits until the labels it is based on hold this many of each class (see the module notes).
MIN_PER_CLASS = 3
# The labels between the label a choice starts at and the label it is applied at, in the app and the CLI's
# labelling (``auto_lag``; the solver's own default, 0, chooses and applies at the same label).
DEFAULT_LAG = 10
# Test hooks (None in use): ``worker_hook(key)`` runs in the background thread after a choice is computed and
# before it is handed over; ``wait_hook(key)`` runs in the labelling thread when it is about to wait for one.
worker_hook: Callable[[tuple], None] | None = None
wait_hook: Callable[[tuple], None] | None = None
# ``apply_hook(prebuilt)`` runs in the labelling thread when a choice that changes the values is applied: True when
# the model prebuilt in the background was continued, False when the labels were relearned in place.
apply_hook: Callable[[bool], None] | None = None
_lineages = itertools.count(1)
_running: dict[int, ChoiceJob] = {}  # the background choice of each solver lineage (undo copies share one)
_running_lock = threading.Lock()
_queue: queue.SimpleQueue[ChoiceJob] = queue.SimpleQueue()  # the choices waiting for a background thread
_threads: list[threading.Thread] = []  # the threads that compute them, started once
N_THREADS = 2
# A background choice starts this long after it is queued: the label that queued it finishes first (without
# the pause, the label that starts a choice took 1-20 ms at load 16 against 0.5 ms; measured by
# benchmarks/bench_auto_hyper.py --latency).  Only when the choice ends depends on it, never what it is.
START_DELAY_S = 0.02


def _serve() -> None:
    while True:
        _queue.get()._run()


def _start_threads() -> None:
    """The background threads, started before the first choice needs one (a label that starts a choice then only
    queues it: starting a thread waits until the new thread has run, ~10 ms on a loaded machine).  Daemon
    threads: a process that ends does not wait for a choice it no longer needs."""
    with _running_lock:
        while len(_threads) < N_THREADS:
            thread = threading.Thread(target=_serve, name="marginlab-rechoice", daemon=True)
            thread.start()
            _threads.append(thread)


def check_auto(auto) -> tuple[str, ...]:
    """``auto`` as a tuple of names among "C", "gamma" and "class_weight" (a string is one name); a clear
    error otherwise."""
    if auto is None:
        return ()
    names = (auto,) if isinstance(auto, str) else tuple(auto)
    for name in names:
        if name not in AUTO_NAMES:
            raise ValueError(
                f"auto names the hyperparameters chosen from the labels: 'C', 'gamma' and/or "
                f"'class_weight', got {name!r}"
            )
    return tuple(n for n in AUTO_NAMES if n in names)


def check_grid(grid) -> dict[str, tuple[float, ...]]:
    out = dict(DEFAULT_GRID)
    for key, values in dict(grid or {}).items():
        if key not in DEFAULT_GRID:
            raise ValueError(
                f"auto_grid has values for 'C' and 'gamma' (gamma as multiples of the median "
                f"heuristic), got the key {key!r}"
            )
        vals = tuple(float(v) for v in values)
        if not vals or not all(math.isfinite(v) and 0 < v <= 1e6 for v in vals):
            raise ValueError(f"auto_grid[{key!r}] must be one or more positive numbers, got {values!r}")
        out[key] = tuple(sorted(set(vals)))
    return out


def check_lag(lag) -> int:
    if isinstance(lag, (bool, np.bool_)) or not isinstance(lag, (int, np.integer)) or not 0 <= int(lag) <= 1000:
        raise ValueError(
            f"auto_lag is the number of labels from the start of a choice to its use: a whole number from 0 to "
            f"1000, got {lag!r}"
        )
    return int(lag)


def _key(pending: dict[str, Any]) -> tuple:
    """What identifies a pending choice (its moment, the label count it started at and its labels)."""
    return (pending["moment"], pending["started"], tuple(pending["based"]), tuple(pending["labels"]))


def check_moments(moments) -> tuple[int, ...]:
    vals = tuple(int(m) for m in (DEFAULT_MOMENTS if moments is None else moments))
    if not vals or any(m < 2 for m in vals) or list(vals) != sorted(set(vals)):
        raise ValueError(f"auto_moments must be increasing label counts of at least 2, got {moments!r}")
    return vals


def estimated_seconds(n_points: int, n_labels: int) -> float:
    """The estimated time of a re-choice over a grid of ``n_points`` at ``n_labels`` labels."""
    return SECONDS_PER_POINT_LABEL2 * n_points * n_labels**2


def check_budget(auto: tuple[str, ...], grid: dict, moments: tuple[int, ...], kernel: str) -> None:
    """Refuse a grid whose re-choice at the last moment would exceed ``RECHOICE_TARGET_S``."""
    n_points = grid_size(auto, grid, kernel)
    last = moments[-1]
    seconds = estimated_seconds(n_points, last)
    if seconds > RECHOICE_TARGET_S:
        raise ValueError(
            f"the grid of {n_points} values (C: {len(grid['C']) if 'C' in auto else 1}, gamma: "
            f"{len(grid['gamma']) if 'gamma' in auto and kernel == 'rbf' else 1}"
            f"{', and the other class weight' if 'class_weight' in auto else ''}) would take about {seconds:.0f} s "
            f"to re-choose at {last} labels, over the {RECHOICE_TARGET_S:g} s a re-choice may take; give fewer "
            f"values or an earlier last moment"
        )


def grid_size(auto: tuple[str, ...], grid: dict, kernel: str) -> int:
    n_c = len(grid["C"]) if "C" in auto else 1
    n_g = len(grid["gamma"]) if ("gamma" in auto and kernel == "rbf") else 1
    return n_c * n_g + (1 if "class_weight" in auto else 0)  # (the other class weight at the chosen values)


def weights_of(class_weight, labels: np.ndarray) -> dict[int, float] | None:
    """The fixed weights a class weight gives ``labels`` (None: no weights; "balanced": the weights the
    solver's "balanced" boxes hold for these labels)."""
    if class_weight is None:
        return None
    w_pos, w_neg = stepped_balanced_weights(int(np.count_nonzero(labels > 0)), int(np.count_nonzero(labels < 0)))
    return {1: w_pos, -1: w_neg}


def median_heuristic(X, idx: np.ndarray) -> float:
    """1 / median ||x_i - x_j||^2 over the distinct pairs of rows ``idx`` (1.0 if every pair coincides)."""
    rows = X[np.asarray(idx, dtype=np.intp)]
    if sp.issparse(rows):
        gram = np.asarray((rows @ rows.T).toarray(), dtype=np.float64)
    else:
        rows = np.asarray(rows, dtype=np.float64)
        gram = rows @ rows.T
    sq = np.diag(gram)
    d2 = sq[:, None] + sq[None, :] - 2.0 * gram
    upper = d2[np.triu_indices(len(sq), k=1)]
    upper = upper[upper > 1e-12 * max(1.0, float(sq.max(initial=0.0)))]
    return 1.0 / float(np.median(upper)) if len(upper) else 1.0


def enough_of_each(y: np.ndarray) -> bool:
    """Whether the labels ``y`` hold at least ``MIN_PER_CLASS`` of each class (enough to choose from)."""
    return min(int(np.count_nonzero(y > 0)), int(np.count_nonzero(y < 0))) >= MIN_PER_CLASS


def rank(auc: float, ber: float) -> tuple[bool, float, float]:
    """The criterion's order of a grid point's leave-one-out AUC and balanced error (smaller first): values
    whose sign separates the classes better than chance (balanced error under 1/2) before those that do not,
    then the higher AUC, then the lower balanced error."""
    return (ber >= 0.5, -auc, ber)


def balanced_error(y: np.ndarray, f: np.ndarray) -> float:
    """Mean of the two classes' error rates of sign(f) (f = 0 counts as an error)."""
    pos, neg = y > 0, y < 0
    err_pos = float(np.mean(f[pos] <= 0)) if pos.any() else 0.0
    err_neg = float(np.mean(f[neg] >= 0)) if neg.any() else 0.0
    return 0.5 * (err_pos + err_neg)


def loo_decision_values(solver, shortcut: bool = True, cancelled: threading.Event | None = None) -> np.ndarray:
    """Exact leave-one-out decision values f_{-i}(x_i) of the learned examples, in ``labelled_`` order.

    Each example with a coefficient is unlearned (exact decremental step), its decision value read,
    and learned again; the solver ends with the same labels (the last ones in a new learning order).
    With ``shortcut``, an example without a coefficient takes the full model's value when the bias is
    fixed by a free margin vector (see the module notes).
    """
    order = solver.labelled_.copy()
    labels = solver.y[order].copy()
    values = np.asarray(solver.decision_function(order), dtype=np.float64).copy()
    sv, coef, _ = solver.coefficients()
    carries = np.isin(order, np.asarray(sv, dtype=np.intp))
    free = _has_free_margin_vector(solver, sv, coef)
    for k, (i, y) in enumerate(zip(order.tolist(), labels.tolist(), strict=True)):
        if shortcut and free and not carries[k]:
            continue
        if cancelled is not None and cancelled.is_set():
            raise _Cancelled
        solver.unlearn(i)
        values[k] = float(solver.decision_function([i])[0])
        solver.learn(i, y)
    return values


def _has_free_margin_vector(solver, sv, coef) -> bool:
    if len(sv) == 0:
        return False
    bounds = solver._upper_bounds(np.asarray(sv, dtype=np.intp))
    a = np.abs(np.asarray(coef, dtype=np.float64))
    return bool(np.any((a > 1e-9 * bounds) & (a < bounds * (1.0 - 1e-9))))


class _Cancelled(Exception):
    """A background choice given up (its labels were undone)."""


@dataclass
class ChoiceSpec:
    """A choice's inputs, its own copies (``AutoHyper._choice_spec``), and its computation (``run``): the grid
    scored by exact leave-one-out over the items 0..k-1 of ``store`` (the rows of the labels it is based on,
    in learning order) with ``labels``.  It reads nothing a solver changes while it runs."""

    solver_class: Any
    params: dict[str, Any]
    kernel: dict[str, Any]
    store: DataStore
    labels: np.ndarray
    C_now: float
    g_now: float
    weights_now: tuple[float, float]
    auto: tuple[str, ...]
    grid: dict[str, tuple[float, ...]]
    cache_bytes: int
    largest_diag: Any

    def grid_points(self) -> list[tuple[float, float]]:
        Cs = self.grid["C"] if "C" in self.auto else (self.C_now,)
        if "gamma" in self.auto and self.kernel["name"] == "rbf":
            g0 = median_heuristic(self.store.X, np.arange(len(self.store)))
            gammas = tuple(m * g0 for m in self.grid["gamma"])
        else:
            gammas = (self.g_now,)
        return [(float(C), float(g)) for g in gammas for C in Cs]

    def scratch(self, C: float, cache: KernelCache, class_weight: Any = _KEEP):
        """A plain solver of this kind (no choice of its own) with C and the cache's kernel over this store, and
        the solver's class weight, or ``class_weight`` (None or fixed weights) when given."""
        params = dict(self.params, C=C, gamma=cache.kernel.gamma)
        if class_weight is not _KEEP:
            params["class_weight"] = class_weight
        kernel = params.pop("kernel")
        scratch = self.solver_class(kernel=kernel, **params)
        scratch.store, scratch.kernel, scratch.cache = self.store, cache.kernel, cache
        scratch._largest_kernel_diag = self.largest_diag
        scratch.y = np.zeros(len(self.store))
        scratch._on_store_grown(len(self.store))
        scratch._weights = self.weights_now if class_weight is _KEEP else scratch._fixed_weights or (1.0, 1.0)
        scratch._class_bounds_changed()
        return scratch

    @single_threaded_blas  # (once for the thousands of steps inside, which then skip setting it)
    def run(self, cancelled: threading.Event | None = None) -> dict[str, Any]:
        """The best grid point (see the module notes); ``cancelled`` set gives up between steps."""
        order, labels = np.arange(len(self.store)), self.labels
        class_weight_now = self.params.get("class_weight")
        # with "class_weight" in auto, the grid is scored with the current class weight and the other one at
        # the best grid point, each with its weights of these labels, fixed while leaving one out
        weighing = "class_weight" in self.auto
        weights = {cw: weights_of(cw, labels) for cw in CLASS_WEIGHTS} if weighing else {}
        best: dict[str, Any] | None = None
        best_key = None
        caches: dict[float, KernelCache] = {}

        def score(C: float, gamma: float, class_weight) -> tuple[float, float]:
            cache = caches.get(gamma)
            if cache is None:
                kernel = Kernel(**{**self.kernel, "gamma": gamma})
                cache = caches[gamma] = KernelCache(kernel, self.store, self.cache_bytes // 4)
            scratch = self.scratch(C, cache, weights[class_weight] if weighing else _KEEP)
            for i, y in zip(order.tolist(), labels.tolist(), strict=True):
                if cancelled is not None and cancelled.is_set():
                    raise _Cancelled
                scratch.learn(i, y)
            f = loo_decision_values(scratch, cancelled=cancelled)
            return float(roc_auc(labels, f)), float(balanced_error(labels, f))

        for C, gamma in self.grid_points():
            auc, ber = score(C, gamma, class_weight_now)
            distance = abs(math.log(C / self.C_now)) + abs(math.log(gamma / self.g_now))
            key = (*rank(auc, ber), distance, C, gamma)
            if best_key is None or key < best_key:
                best_key, best = key, dict(C=C, gamma=gamma, auc=auc, balanced_error=ber)
        assert best is not None, "the grid is never empty (check_grid)"
        if weighing:
            # the other class weight wins only with a higher AUC, or the same and a lower balanced error; when
            # the balanced weights of these labels are 1 and 1 (classes within a factor sqrt(2) of each other),
            # it is the same model, scored the same: not learned
            best["class_weight"] = class_weight_now
            other = next(cw for cw in CLASS_WEIGHTS if cw != class_weight_now)
            if weights["balanced"] != {1: 1.0, -1: 1.0}:
                auc, ber = score(best["C"], best["gamma"], other)
                if rank(auc, ber) < rank(best["auc"], best["balanced_error"]):
                    best.update(auc=auc, balanced_error=ber, class_weight=other)
        return best


def _shared_rows(store: DataStore) -> DataStore:
    """A store over ``store``'s rows as they are now: the same arrays (not copied), read by the background thread.

    The labelling thread may go on appending to ``store``: it writes past the rows held now or into new arrays,
    never into these rows ("indices never change once given"), and this store, not owning the arrays, would copy
    them before growing itself.  Its own are the row terms (a copy, one number a row) and the lazily made views;
    a sparse store's inverted index is shared when it covers these rows (its arrays are never changed)."""
    view = DataStore(dtype=store.dtype, copy=False)
    view.n_features = store.n_features
    view._sparse = store._sparse
    view._dense, view._indptr, view._indices, view._data = store._dense, store._indptr, store._indices, store._data
    view._owned = False
    view._n = len(store)
    view._sq = np.array(store.sq_norms, dtype=np.float64)
    inv = store._inv
    if inv is not None and inv[0] == len(store):
        view._inv = inv
    return view


_HYPER_KEYS = ("hyper_choices", "hyper_pending")


def _plain(params: dict[str, Any]) -> dict[str, Any]:
    """A solver's parameters without its record of choices (what a prebuilt model must have been made with)."""
    return {k: v for k, v in params.items() if k not in _HYPER_KEYS}


@dataclass
class Prebuilt:
    """A model learned in the background with a choice's values, of the labels up to the choice's start (in
    learning order): what ``_relearn`` would hold after those labels (``RelearnSpec.build``)."""

    solver: Any
    order: np.ndarray  # the items it learned, in this order, with these labels
    labels: np.ndarray
    C: float
    gamma: float
    class_weight: Any
    params: dict[str, Any]  # the solver's parameters when the choice started (without its choices)
    kernel: dict[str, Any]
    n_store: int
    largest_diag: Any

    def feed(self, solver) -> bool:
        """Learn into the prebuilt solver the labels ``solver`` has learned beyond those it holds, in learning order
        (the labelling thread, once the job is done: the steps ``AutoHyper._continue_prebuilt`` would take at the
        due label, taken one label at a time as they come, so the same model bit for bit).  False when it no longer
        matches ``solver``'s labels (a label it learned unlearned, undone or corrected, fewer labels than it holds,
        the store grown) or a step failed: not usable, the due label relearns in place.  An exact solver's
        unlearning is exact in value, not in bits, so a label fed is never unlearned here."""
        order, k = solver.labelled_, len(self.order)
        if not (
            len(order) >= k
            and len(solver.store) == self.n_store
            and np.array_equal(order[:k], self.order)
            and np.array_equal(solver.y[self.order], self.labels)
        ):
            return False
        if len(order) == k:
            return True
        items = order[k:].copy()
        labels = solver.y[items].copy()
        fresh = self.solver
        fresh._relearning = True
        try:
            for i, y in zip(items.tolist(), labels.tolist(), strict=True):
                fresh.learn(i, y)
        except Exception:  # (half fed: not usable; the due label relearns in place and meets it in the open)
            return False
        finally:
            fresh._relearning = False
        self.order = np.concatenate([self.order, items])
        self.labels = np.concatenate([self.labels, labels])
        return True


@dataclass
class RelearnSpec:
    """What the relearning after a choice reads, copied at the choice's start (``AutoHyper._relearn_spec``): the
    labels learned then, in learning order, the solver's parameters, kernel, box weights and class weight, and
    its rows (``_shared_rows``).  ``build`` learns them with the chosen values in a solver of its own, with a
    kernel cache of its own, the steps ``_relearn`` takes for the same labels."""

    solver_class: Any
    params: dict[str, Any]
    kernel: dict[str, Any]
    store: DataStore
    order: np.ndarray
    labels: np.ndarray
    weights_now: tuple[float, float]
    cache_bytes: int
    largest_diag: Any

    @single_threaded_blas
    def build(self, choice: dict[str, Any], cancelled: threading.Event | None = None) -> Prebuilt | None:
        """The prefix model with the choice's values; None when they are the values held (no relearning) or
        it could not be built (the labelling thread then relearns in place, as without it)."""
        C, gamma = float(choice["C"]), float(choice["gamma"])
        class_weight_now = self.params.get("class_weight")
        class_weight = choice.get("class_weight", _KEEP)
        new_weight = class_weight is not _KEEP and class_weight != class_weight_now
        if (C, gamma) == (float(self.params["C"]), float(self.kernel["gamma"])) and not new_weight:
            return None
        try:
            return self._learn(C, gamma, class_weight if new_weight else class_weight_now, new_weight, cancelled)
        except _Cancelled:
            raise
        except Exception:  # (relearned in place at the label it is due at, which then meets it in the open)
            return None

    def _learn(self, C, gamma, class_weight, new_weight, cancelled) -> Prebuilt:
        # as ``ClassWeights._relearn`` after ``AutoHyper._apply``: the weights of a class weight just chosen are
        # those of the labels (checked against the labels at the due label), else the weights held
        if not new_weight:
            weights = self.weights_now
        elif class_weight is None:
            weights = (1.0, 1.0)
        else:
            weights = stepped_balanced_weights(
                int(np.count_nonzero(self.labels > 0)), int(np.count_nonzero(self.labels < 0))
            )
        params = dict(self.params, C=C, class_weight=class_weight)
        if gamma != float(self.kernel["gamma"]):
            params["gamma"] = gamma
        name = params.pop("kernel")
        fresh = self.solver_class(kernel=name, **params)
        fresh.store = self.store
        fresh.kernel = Kernel(**{**self.kernel, "gamma": gamma})
        fresh.cache = KernelCache(fresh.kernel, self.store, self.cache_bytes)
        fresh._largest_kernel_diag = self.largest_diag
        fresh.y = np.zeros(len(self.store))
        fresh._on_store_grown(len(self.store))
        fresh._weights = weights
        fresh._class_bounds_changed()
        fresh._relearning = True
        for i, y in zip(self.order.tolist(), self.labels.tolist(), strict=True):
            if cancelled is not None and cancelled.is_set():
                raise _Cancelled
            fresh.learn(i, y)
        fresh._relearning = False
        return Prebuilt(
            solver=fresh,
            order=self.order,
            labels=self.labels,
            C=C,
            gamma=gamma,
            class_weight=class_weight,
            params=_plain(self.params),
            kernel=dict(self.kernel),
            n_store=len(self.store),
            largest_diag=self.largest_diag,
        )


class ChoiceJob:
    """A choice computing in a background thread (``ChoiceSpec.run``); ``result()`` waits for it.  Copies of a
    solver (undo) share it: ``key`` says which pending choice it is."""

    __slots__ = ("key", "_spec", "_relearn", "_prebuilt", "_owner_gone", "_done", "_cancelled", "_result", "_error")

    def __init__(self, key: tuple, spec: ChoiceSpec, relearn: RelearnSpec | None = None) -> None:
        self.key = key
        self._spec: ChoiceSpec | None = spec
        self._relearn: RelearnSpec | None = relearn
        self._prebuilt: Prebuilt | None = None
        self._owner_gone = False
        self._done, self._cancelled = threading.Event(), threading.Event()
        self._result: dict[str, Any] | None = None
        self._error: BaseException | None = None
        _start_threads()
        _queue.put(self)

    def _run(self) -> None:
        try:
            assert self._spec is not None
            self._cancelled.wait(START_DELAY_S)
            result = self._spec.run(self._cancelled)
            if self._relearn is not None and not self._owner_gone:
                self._prebuilt = self._relearn.build(result, self._cancelled)
                if self._owner_gone:  # (the solver went while it was built)
                    self._prebuilt = None
            if worker_hook is not None:
                worker_hook(self.key)
            if self._cancelled.is_set():
                raise _Cancelled
            self._result = result
        except BaseException as exc:  # (handed to the thread that waits for the result)
            self._error = exc
        finally:
            self._spec = self._relearn = None
            self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def cancel(self) -> None:
        self._cancelled.set()

    def result(self) -> dict[str, Any] | None:
        """The choice (waiting for it); None if it was given up."""
        if not self._done.is_set() and wait_hook is not None:
            wait_hook(self.key)
        self._done.wait()
        if isinstance(self._error, _Cancelled):
            return None
        if self._error is not None:
            raise self._error
        return self._result

    def feed(self, solver) -> None:
        """Once done: the labels ``solver`` learned since, fed into the prebuilt model (``Prebuilt.feed``), which
        is let go when it no longer matches them."""
        prebuilt = self._prebuilt
        if prebuilt is None or not self._done.is_set() or self._error is not None:
            return
        if not prebuilt.feed(solver):
            self._prebuilt = None

    def owner_gone(self) -> None:
        """The solver that started the job is gone (its session closed or dropped before the due label): the
        prebuilt model, a solver with its kernel cache, is let go (the choice itself, a few numbers, is kept for
        the copies of that solver, which relearn in place)."""
        self._owner_gone = True
        self._prebuilt = None

    def take_prebuilt(self) -> Prebuilt | None:
        """The model prebuilt with the choice's values (``RelearnSpec.build``), handed over once (None if none
        was built: the values did not change, the job was given up or the build failed); call after ``result``."""
        prebuilt, self._prebuilt = self._prebuilt, None
        return prebuilt

    def __copy__(self) -> ChoiceJob:
        return self

    def __deepcopy__(self, memo) -> ChoiceJob:
        return self


class AutoHyper:
    """C and gamma chosen from the labels at stated moments (see the module notes); a mixin that comes
    before ``ClassWeights`` in an exact solver's bases (it extends ``_rebalanced``, which every learn,
    learn_many and unlearn of those solvers ends with)."""

    # What the exact solver that mixes this in holds (named here for the type checker; nothing is set).
    store: Any
    kernel: Any
    cache: Any
    cache_bytes: int
    labelled_: Any
    learned_order: Any
    y: np.ndarray
    C: float
    class_weight: Any
    class_weights_: Any
    _fixed_weights: Any
    _weights: Any
    _largest_kernel_diag: Any
    rng: Any
    n_reweighted_: int
    get_params: Any
    _on_store_grown: Any
    _class_bounds_changed: Any

    def _init_auto(self, auto, auto_grid, auto_moments, hyper_choices, kernel: str) -> None:
        self.auto = check_auto(auto)
        self.auto_grid = check_grid(auto_grid)
        self.auto_moments = check_moments(auto_moments)
        if self.auto:
            check_budget(self.auto, self.auto_grid, self.auto_moments, kernel)
        if "class_weight" in self.auto and self.class_weight not in CLASS_WEIGHTS:
            raise ValueError(
                f"a class weight chosen from the labels (auto with 'class_weight') starts from None or "
                f"'balanced', not fixed weights; got class_weight={self.class_weight!r}"
            )
        # each choice: {"n_labels", "moment", "C", "gamma", "auc", "balanced_error"} and, with "class_weight"
        # in auto, "class_weight" (None or "balanced"); the first entry, n_labels 0, holds the starting values
        # (recorded at the first choice).  With a lag, also "started": the label count it started at.
        self.hyper_choices: list[dict[str, Any]] = [dict(c) for c in (hyper_choices or [])]

    def _init_lag(self, auto_lag=0, auto_background=True, pending=None) -> None:
        self.auto_lag = check_lag(auto_lag)
        if not isinstance(auto_background, (bool, np.bool_)):
            raise ValueError(f"auto_background must be True or False, got {auto_background!r}")
        self.auto_background = bool(auto_background)
        # the choice started and not yet applied: its inputs (see ``_start_if_due``), JSON-able
        self.hyper_pending: dict[str, Any] | None = None if pending is None else dict(pending)
        self._lineage = next(_lineages)  # (shared by this solver's undo copies and relearned selves)
        if self.auto_lag and self.auto_background:
            _start_threads()

    def _auto_params(self) -> dict[str, Any]:
        params: dict[str, Any] = dict(
            auto=list(self.auto),
            auto_grid={k: list(v) for k, v in self.auto_grid.items()},
            auto_moments=list(self.auto_moments),
            hyper_choices=[dict(c) for c in self.hyper_choices],
        )
        if self.auto_lag or self.hyper_pending is not None:  # (a state saved before the lag reads the same)
            params.update(auto_lag=self.auto_lag, auto_background=self.auto_background)
            params["hyper_pending"] = None if self.hyper_pending is None else dict(self.hyper_pending)
        return params

    def _rebalanced(self, result):
        result = super()._rebalanced(result)
        if not self.auto or self._relearning:
            return result
        t0 = time.perf_counter()
        n = len(self.learned_order)
        self._drop_pending_if_undone(n)
        changed = self._drop_choices_above(n)
        if not changed:
            if self.hyper_pending is None:
                self._start_if_due()
            changed = self._apply_if_due()
            if not changed:
                self._feed_prebuilt()
        self._cancel_orphans()
        if not changed:
            return result
        C, gamma = self._current()
        based_on = self.hyper_choices[-1]["n_labels"] if self.hyper_choices else 0
        hyper = dict(C=C, gamma=gamma, n_labels=based_on)
        if "class_weight" in self.auto:
            hyper["class_weight"] = self.class_weight
        return type(result)(
            status=result.status,
            iterations=result.iterations,
            kernel_evals=result.kernel_evals,
            seconds=result.seconds + time.perf_counter() - t0,
            kkt_gap=self.kkt_gap(),
            message=result.message,
            extra=dict(result.extra, hyper=hyper),
        )

    def _relearn(self, C: float | None = None, gamma: float | None = None):
        lineage = self._lineage  # (the fresh solver that takes this one's place continues its lineage)
        out = super()._relearn(C=C, gamma=gamma)  # type: ignore[misc]  # (ClassWeights, next in the bases)
        self._lineage = lineage
        return out

    # -- the choices -----------------------------------------------------------------
    def _current(self) -> tuple[float, float]:
        return float(self.C), float(self.kernel.gamma)

    def _drop_choices_above(self, n: int) -> bool:
        """Unlearning below a choice's label count: drop it, relearn with the values before it."""
        if len(self.hyper_choices) < 2 or self.hyper_choices[-1]["n_labels"] <= n:
            return False
        while len(self.hyper_choices) > 1 and self.hyper_choices[-1]["n_labels"] > n:
            self.hyper_choices.pop()
        back = self.hyper_choices[-1]
        if len(self.hyper_choices) == 1:
            self.hyper_choices.pop()  # back to the starting values (recorded again at the next choice)
        self._apply(float(back["C"]), float(back["gamma"]), back.get("class_weight", _KEEP))
        return True

    def _drop_pending_if_undone(self, n: int) -> None:
        """Unlearning below the label count a pending choice started at, or one of the labels it is based on
        (or changing its answer): the choice is dropped (started again, from the labels then, when due)."""
        pending = self.hyper_pending
        if pending is None:
            return
        based = np.asarray(pending["based"], dtype=np.intp)
        if n < pending["started"] or not np.array_equal(self.y[based], np.asarray(pending["labels"])):
            self.hyper_pending = None

    def _cancel_orphans(self) -> None:
        """Give up a background choice of this lineage that no pending choice waits for (undone)."""
        job = _running.get(self._lineage)
        if job is not None and (self.hyper_pending is None or job.key != _key(self.hyper_pending)):
            with _running_lock:
                if _running.get(self._lineage) is job:
                    del _running[self._lineage]
            job.cancel()

    def _due_moment(self, n: int) -> int | None:
        done = self.hyper_choices[-1]["moment"] if self.hyper_choices else 0
        due = [m for m in self.auto_moments if done < m <= n]
        return due[-1] if due else None

    def _start_if_due(self) -> None:
        """At the label that reaches a moment: fix the labels the choice is based on and the values it starts
        from (``hyper_pending``), due ``auto_lag`` labels later; in the background unless the lag is 0."""
        n = len(self.learned_order)
        moment = self._due_moment(n)
        if moment is None or self.kernel is None:
            return
        y = self.y[self.labelled_]
        # the first `moment` labels (the cost stays that of the moment when a batch jumps past it); when
        # they hold too few of a class, the `moment` labels up to now
        order = self.labelled_
        first = enough_of_each(y[:moment])
        based = order[:moment] if first else order[-moment:]
        if not (first or enough_of_each(y[-moment:])):
            return  # too few of a class: chosen at the first label with enough
        C, gamma = self._current()
        self.hyper_pending = dict(
            moment=moment,
            started=n,
            due=n + self.auto_lag,
            based=[int(i) for i in based],
            labels=[float(v) for v in self.y[based]],
            first=bool(first),
            C=C,
            gamma=gamma,
            weights=[float(w) for w in self._weights],
        )
        if self.auto_lag and self.auto_background:
            job = ChoiceJob(_key(self.hyper_pending), self._pending_spec(self.hyper_pending), self._relearn_spec())
            weakref.finalize(self, job.owner_gone)
            with _running_lock:
                old = _running.get(self._lineage)
                _running[self._lineage] = job
            if old is not None:
                old.cancel()

    def _pending_spec(self, pending: dict[str, Any]) -> ChoiceSpec:
        return self._choice_spec(
            pending["based"], pending["labels"], pending["C"], pending["gamma"], pending["weights"]
        )

    def _relearn_spec(self) -> RelearnSpec:
        """What relearning the labels learned now with a choice's values reads (see ``RelearnSpec``), copied."""
        order = self.labelled_.copy()
        return RelearnSpec(
            solver_class=type(self),
            params=copy.deepcopy(self.get_params()),
            kernel=self.kernel.to_dict(),
            store=_shared_rows(self.store),
            order=order,
            labels=self.y[order].copy(),
            weights_now=(float(self._weights[0]), float(self._weights[1])),
            cache_bytes=int(self.cache_bytes),
            largest_diag=self._largest_kernel_diag,
        )

    def wait_for_choice(self) -> dict[str, Any] | None:
        """The pending choice's result (waiting for its background computation, or computing it now); None
        when no choice is pending."""
        return self._pending_result(take=False)[0]

    def _pending_result(self, take: bool = True) -> tuple[dict[str, Any] | None, Prebuilt | None]:
        """The pending choice's result and, when its background job prebuilt one (and ``take``), the model with
        its values, taken from the job."""
        pending = self.hyper_pending
        if pending is None:
            return None, None
        job = _running.get(self._lineage)
        result = job.result() if job is not None and job.key == _key(pending) else None
        if result is None:  # (no background computation: a lag of 0, a restored solver, or one given up)
            return self._pending_spec(pending).run(), None
        assert job is not None
        return result, job.take_prebuilt() if take else None

    def _feed_prebuilt(self) -> None:
        """Under a pending choice whose background job is done (checked without waiting): the labels learned since
        fed into its prebuilt model now, label by label, so that the due label has only its own left to learn."""
        pending = self.hyper_pending
        job = _running.get(self._lineage)
        if pending is not None and job is not None and job.done() and job.key == _key(pending):
            job.feed(self)

    def _apply_if_due(self) -> bool:
        """At (or past) the label a pending choice is due at: record it and relearn with its values."""
        pending = self.hyper_pending
        n = len(self.learned_order)
        if pending is None or n < pending["due"]:
            return False
        choice, prebuilt = self._pending_result()
        assert choice is not None
        with _running_lock:
            _running.pop(self._lineage, None)
        self.hyper_pending = None
        if not self.hyper_choices:
            start = dict(
                n_labels=0,
                moment=0,
                C=pending["C"],
                gamma=pending["gamma"],
                auc=None,
                balanced_error=None,
                based_on=0,
                first=True,
            )
            if "class_weight" in self.auto:
                start["class_weight"] = self.class_weight
            self.hyper_choices.append(start)
        record = dict(choice, n_labels=n, moment=pending["moment"], based_on=len(pending["based"]))
        record["first"] = pending["first"]
        if self.auto_lag:
            record["started"] = pending["started"]
        self.hyper_choices.append(record)
        class_weight = choice.get("class_weight", _KEEP)
        if (choice["C"], choice["gamma"]) != self._current() or (
            class_weight is not _KEEP and class_weight != self.class_weight
        ):
            continued = prebuilt is not None and self._continue_prebuilt(prebuilt, class_weight)
            if not continued:
                self._apply(choice["C"], choice["gamma"], class_weight)
            if apply_hook is not None:
                apply_hook(continued)
        return True

    def _continue_prebuilt(self, prebuilt: Prebuilt, class_weight: Any) -> bool:
        """Take the model prebuilt in the background and learn the labels learned since the choice started, in
        learning order: the steps ``_apply`` takes (a fresh solver learning every label in learning order with
        the chosen values and the weights ``_apply`` sets), split in two, so the same model bit for bit.  False
        (nothing changed) when the prebuilt model no longer matches: the labels it learned are no longer the
        first ones in learning order with those answers (undone, unlearned or corrected), the weights the labels
        now give differ, or the parameters, the store or its rows' largest kernel value changed."""
        fresh = prebuilt.solver
        order, k = self.labelled_, len(prebuilt.order)
        if class_weight is _KEEP or class_weight == self.class_weight:
            class_weight, weights = self.class_weight, tuple(self._weights)
        else:
            weights = (1.0, 1.0) if class_weight is None else self._balanced_weights()
        if not (
            len(order) >= k
            and np.array_equal(order[:k], prebuilt.order)
            and np.array_equal(self.y[prebuilt.order], prebuilt.labels)
            and class_weight == prebuilt.class_weight
            and weights == tuple(fresh._weights)
            and len(self.store) == prebuilt.n_store
            and self._largest_kernel_diag == prebuilt.largest_diag
            and self.kernel.to_dict() == prebuilt.kernel
            and _plain(self.get_params()) == prebuilt.params
        ):
            return False
        lineage, old_cache = self._lineage, self.cache
        fresh.store = fresh.cache.store = self.store  # (the same rows: the labelling thread's store from now on)
        fresh.cache.n_evals += old_cache.n_evals
        fresh.rng = self.rng
        fresh.n_reweighted_ = self.n_reweighted_
        fresh.hyper_choices = [dict(c) for c in self.hyper_choices]
        fresh.hyper_pending = None
        fresh._relearning = True
        try:
            for i, y in zip(order[k:].tolist(), self.y[order[k:]].tolist(), strict=True):
                fresh.learn(i, y)
        finally:
            fresh._relearning = False
        self.__dict__.update(fresh.__dict__)
        self._lineage = lineage
        return True

    def _balanced_weights(self) -> tuple[float, float]:
        return stepped_balanced_weights(int(np.count_nonzero(self.y > 0)), int(np.count_nonzero(self.y < 0)))

    def grid_points(self, items=None) -> list[tuple[float, float]]:
        """The (C, gamma) pairs searched over the labelled ``items`` (default: all; gamma from the median
        heuristic of their rows)."""
        C_now, g_now = self._current()
        Cs = self.auto_grid["C"] if "C" in self.auto else (C_now,)
        if "gamma" in self.auto and self.kernel.name == "rbf":
            g0 = median_heuristic(self.store.X, self.labelled_ if items is None else items)
            gammas = tuple(m * g0 for m in self.auto_grid["gamma"])
        else:
            gammas = (g_now,)
        return [(float(C), float(g)) for g in gammas for C in Cs]

    def choose(self, items=None) -> dict[str, Any]:
        """Score every grid point by exact leave-one-out over the labelled ``items`` (default: every
        learned example; learned in this order) and return the best (``balanced_error`` and ``auc`` of
        its leave-one-out values, ``C``, ``gamma``).  The model itself is not changed."""
        order = (self.labelled_ if items is None else np.asarray(items, dtype=np.intp)).copy()
        return self._choice_spec(order, self.y[order], *self._current(), self._weights).run()

    def _choice_spec(self, order, labels, C_now: float, g_now: float, weights_now) -> ChoiceSpec:
        """Everything a choice over the labelled ``order`` reads, copied: the rows of those items (a store of
        their own), their labels, the values held and the box weights (``weights_now``) when it starts, so that
        it can run in another thread while this solver learns on."""
        rows = self.store.X[np.asarray(order, dtype=np.intp)]
        params = self.get_params()
        params.update(auto=[], hyper_choices=[], hyper_pending=None, auto_lag=0)
        return ChoiceSpec(
            solver_class=type(self),
            params=params,
            kernel=self.kernel.to_dict(),
            store=DataStore(rows, dtype=self.store.dtype),
            labels=np.array(labels, dtype=np.float64),
            C_now=float(C_now),
            g_now=float(g_now),
            weights_now=(float(weights_now[0]), float(weights_now[1])),
            auto=tuple(self.auto),
            grid={k: tuple(v) for k, v in self.auto_grid.items()},
            cache_bytes=int(self.cache_bytes),
            largest_diag=self._largest_kernel_diag,
        )

    def _apply(self, C: float, gamma: float, class_weight: Any = _KEEP) -> None:
        """Relearn the labels in learning order with C and gamma (a new kernel and cache if gamma changes) and
        the class weight when given (None or "balanced": the weights of the labels learned)."""
        if class_weight is not _KEEP and class_weight != self.class_weight:
            self.class_weight = class_weight
            self._weights = self.class_weights_
        self._relearn(C=C, gamma=gamma)


def describe_choices(solver) -> str | None:
    """Which C and gamma (and class weights) a solver with ``auto`` holds and when they were chosen, in plain
    words (None for a solver without ``auto``)::

        C 10 and gamma 0.027, chosen from the first 80 labels (at 40: C 10, gamma 0.028; at 20: C 1,
        gamma 0.024; before: C 1, gamma 0.016). Next choice at 160 labels.

    With the class weight chosen too, each set of values says "the rarer class weighted up" or "both classes
    weighted alike".
    """
    auto = tuple(getattr(solver, "auto", ()) or ())
    if not auto or solver.kernel is None:
        return None
    with_gamma = solver.kernel.name in ("rbf", "poly")
    weighing = "class_weight" in auto

    def values(C: float, gamma: float, class_weight: Any = None) -> str:
        words = f"C {C:.3g}" + (f", gamma {gamma:.3g}" if with_gamma else "")
        if weighing:
            words += ", the rarer class weighted up" if class_weight == "balanced" else ", both classes weighted alike"
        return words

    choices = list(solver.hyper_choices)
    chosen = [n for n in auto if n == "C" or (n == "gamma" and solver.kernel.name == "rbf")]
    chosen += ["the class weights"] if weighing else []
    names = " and ".join(chosen) if len(chosen) < 3 else f"{', '.join(chosen[:-1])} and {chosen[-1]}"
    n = len(solver.learned_order)
    later = [m for m in solver.auto_moments if m > (choices[-1]["moment"] if choices else 0)]
    pending = getattr(solver, "hyper_pending", None)
    lag = getattr(solver, "auto_lag", 0)
    upcoming = (
        f" Next choice at {later[0]} labels (with at least {MIN_PER_CLASS} of each class labelled)"
        + (f", used {lag} labels later." if lag else ".")
        if later
        else " No later choice."
    )
    if pending is not None:
        upcoming = (
            f" Next choice being made from the labels up to {pending['started']}, used from label {pending['due']}."
        )
    if len(choices) < 2:
        C, gamma = float(solver.C), float(solver.kernel.gamma)
        return (
            f"{values(C, gamma, solver.class_weight)}: the starting values; {names} are chosen from the "
            f"labels from {solver.auto_moments[0]} labels on ({n} so far).{upcoming}"
        )
    last, earlier = choices[-1], choices[-2:0:-1]
    past = "; ".join(f"at {c['n_labels']}: {values(c['C'], c['gamma'], c.get('class_weight'))}" for c in earlier)
    past = (past + "; " if past else "") + (
        "before: " + values(choices[0]["C"], choices[0]["gamma"], choices[0].get("class_weight"))
    )
    k = last.get("based_on", last["n_labels"])
    based = (
        f"the first {k} labels" if last.get("first", True) else f"the last {k} labels up to label {last['n_labels']}"
    )
    return (
        f"{values(last['C'], last['gamma'], last.get('class_weight'))}, {names} chosen from {based} by "
        f"leave-one-out ({past}).{upcoming}"
    )


def describe_choices_for_screeners(solver) -> str | None:
    """When the model's settings are chosen from the labels, in a screener's words (no C, gamma or estimator:
    ``describe_choices`` says those, for Advanced); None for a solver without ``auto``::

        Model settings chosen from your labels at label 40; next choice at 80 labels.
    """
    auto = tuple(getattr(solver, "auto", ()) or ())
    if not auto or solver.kernel is None:
        return None
    choices = list(solver.hyper_choices)
    later = [m for m in solver.auto_moments if m > (choices[-1]["moment"] if choices else 0)]
    upcoming = f"next choice at {later[0]} labels" if later else "no later choice"
    pending = getattr(solver, "hyper_pending", None)
    if pending is not None:
        upcoming = f"new settings from your labels in use from label {pending['due']}"
        if len(choices) < 2:
            return f"Model settings: the usual ones until label {pending['due']}, then chosen from your labels."
    if len(choices) < 2:
        return (
            f"Model settings: the usual ones until {solver.auto_moments[0]} labels, then chosen from your labels "
            f"(once they hold at least {MIN_PER_CLASS} of each answer)."
        )
    return f"Model settings chosen from your labels at label {choices[-1]['n_labels']}; {upcoming}."
