"""The dual coordinate descent solver (``dual-cd``): the review model on sparse rows.

Held to the ramp solver's solution of the same problem, to liblinear's LinearSVC as ASReview uses it,
to its KKT conditions after every step, to retraining for unlearning, to its own saved state, and, in
the active-learning loop, to the order in which the ramp solver had the bundled abstracts read.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from core.datasets import load_bundled
from core.loop import ActiveLearningLoop
from core.presets import DOCUMENT_REVIEW, solver_for
from core.solvers import make_solver
from core.solvers.base import OnlineSolver
from core.solvers.dual_cd import DualCDSVM

REVIEW = DOCUMENT_REVIEW["solver_params"]
LINEAR = {k: v for k, v in REVIEW.items() if k != "max_nonsv"}


@pytest.fixture(scope="module")
def abstracts():
    data = load_bundled("arxiv")
    X = sp.csr_matrix(data.X)
    return X, np.where(np.asarray(data.y) > 0, 1.0, -1.0)


def labelled_order(y: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """n documents, a third of them positives (as a review's labels are, more than the pool's share)."""
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    k = min(len(pos), n // 3)
    order = np.concatenate([rng.choice(pos, k, replace=False), rng.choice(neg, n - k, replace=False)])
    rng.shuffle(order)
    return order


def test_the_same_model_as_the_ramp_solver_after_every_label(abstracts):
    X, y = abstracts
    ramp = make_solver("ramp", X, **REVIEW, random_state=0)
    dcd = make_solver("dual-cd", X, **LINEAR, random_state=0)
    for i in labelled_order(y, 80):
        r = ramp.learn(int(i), y[i])
        d = dcd.learn(int(i), y[i])
        assert r.status == d.status == "ok"
        assert d.kkt_gap <= 1e-6 and dcd.kkt_gap() <= 1e-6
        # both within tol 1e-6 of the one optimum: decision values over the whole pool agree to ~tol
        assert np.abs(ramp.decision_function() - dcd.decision_function()).max() < 2e-5
    assert np.allclose(ramp.alpha, dcd.alpha, atol=2e-5)
    assert dcd.dual_objective() == pytest.approx(ramp.dual_objective(), rel=1e-7)


def test_liblinear_s_model_with_asreview_s_weights(abstracts):
    """ASReview's model: LinearSVC(C=0.11, squared hinge, intercept_scaling=1: the intercept a penalised
    weight of a constant feature), negatives weighted n_pos / (9.8 n_neg), all weights summing to the
    labels: the review model's class weights with ratio 9.8."""
    from sklearn.svm import LinearSVC

    X, y = abstracts
    order = labelled_order(y, 120, seed=3)
    dcd = make_solver("dual-cd", X, **LINEAR, random_state=0)
    dcd.learn_many(order, y[order])
    yo = y[order]
    weight = np.where(yo > 0, 1.0, (yo > 0).sum() / (9.8 * (yo < 0).sum()))
    weight *= len(yo) / weight.sum()
    model = LinearSVC(
        C=0.11,
        loss="squared_hinge",
        dual=True,
        fit_intercept=True,
        intercept_scaling=1.0,
        tol=1e-10,
        max_iter=1_000_000,
    ).fit(X[order], yo, sample_weight=weight)
    assert np.abs(model.decision_function(X) - dcd.decision_function()).max() < 1e-5
    assert dcd.kkt_gap() <= 1e-6


def test_kkt_within_tol_after_every_learn_and_unlearn(abstracts):
    X, y = abstracts
    dcd = make_solver("dual-cd", X, **LINEAR, random_state=1)
    order = labelled_order(y, 60, seed=1)
    for i in order:
        step = dcd.learn(int(i), y[i])
        assert step.status == "ok" and step.kkt_gap <= dcd.tol and dcd.kkt_gap() <= dcd.tol
    for i in order[::7]:
        step = dcd.unlearn(int(i))
        assert step.status == "ok" and dcd.kkt_gap() <= dcd.tol
        assert np.all(dcd.alpha >= 0) and dcd.alpha[i] == 0 and dcd.y[i] == 0


def test_unlearning_gives_the_model_trained_without_the_example(abstracts):
    X, y = abstracts
    order = labelled_order(y, 70, seed=2)
    dcd = make_solver("dual-cd", X, **LINEAR, random_state=0)
    for i in order:
        dcd.learn(int(i), y[i])
    gone = [int(order[5]), int(order[40])]
    for i in gone:
        dcd.unlearn(i)
    rest = np.array([i for i in order if int(i) not in gone])
    fresh = make_solver("dual-cd", X, **LINEAR, random_state=0)
    for i in rest:
        fresh.learn(int(i), y[i])
    assert np.abs(dcd.decision_function() - fresh.decision_function()).max() < 2e-5
    assert fresh.class_weights_ == dcd.class_weights_


def test_a_restored_state_continues_bit_for_bit(abstracts, tmp_path):
    X, y = abstracts
    order = labelled_order(y, 50, seed=4)
    dcd = make_solver("dual-cd", X, **LINEAR, random_state=7)
    for i in order[:30]:
        dcd.learn(int(i), y[i])
    dcd.save(tmp_path / "s.npz")
    back = OnlineSolver.load(tmp_path / "s.npz")
    assert isinstance(back, DualCDSVM)
    assert np.array_equal(back.f, dcd.f) and np.array_equal(back.w, dcd.w) and back.s == dcd.s
    for i in order[30:]:
        dcd.learn(int(i), y[i])
        back.learn(int(i), y[i])
    assert np.array_equal(back.alpha, dcd.alpha) and np.array_equal(back.f, dcd.f)


def test_refusals_name_what_is_wrong():
    X = sp.csr_matrix(np.eye(3))
    with pytest.raises(ValueError, match="kernel 'linear', or 'poly' with degree 1"):
        DualCDSVM(X, kernel="rbf")
    with pytest.raises(ValueError, match="degree=2"):
        DualCDSVM(X, kernel="poly", degree=2, gamma=1.0)
    with pytest.raises(ValueError, match="squared hinge only"):
        DualCDSVM(X, kernel="linear", loss="hinge")
    with pytest.raises(ValueError, match="sparse"):
        DualCDSVM(np.eye(3), kernel="linear")
    with pytest.raises(ValueError, match="balance_ratio"):
        DualCDSVM(X, kernel="linear", balance_ratio=0.0)


def test_the_review_preset_picks_dual_cd_on_sparse_rows_only():
    X = sp.csr_matrix(np.eye(3))
    assert solver_for("ramp", dict(REVIEW, random_state=3), X) == ("dual-cd", dict(LINEAR, random_state=3))
    assert solver_for("ramp", REVIEW, X.toarray()) == ("ramp", REVIEW)  # dense rows: the ramp solver
    other = dict(REVIEW, C=1.0)  # not the preset: as given
    assert solver_for("ramp", other, X) == ("ramp", other)
    assert solver_for("incremental", {"kernel": "linear"}, X) == ("incremental", {"kernel": "linear"})


def review_loop(X, solver: str | None = None, seed: int = 0) -> ActiveLearningLoop:
    loop = ActiveLearningLoop(X, strategy="largest-positive", solver="ramp", solver_params=REVIEW, seed=seed)
    if solver == "ramp":  # the review model as it was learned before: the ramp solver
        loop._made = ("ramp", loop.solver_params)
        loop.solver = loop._new_solver()
    return loop


def read_order(loop: ActiveLearningLoop, y: np.ndarray, n: int) -> list[int]:
    """The next n documents the loop asks for, each answered with its true label."""
    order = []
    for _ in range(n):
        q = loop.next_query()
        order.append(q.index)
        loop.teach(q.index, int(y[q.index]))
    return order


def test_the_review_loop_reads_the_abstracts_in_the_same_order_as_with_the_ramp_solver(abstracts):
    """150 labels of cs.RO on the bundled abstracts (cold start included): the same documents in the same
    order; a difference would have to come from scores that tie to the solvers' tolerance."""
    X, y = abstracts
    new = review_loop(X)
    assert isinstance(new.solver, DualCDSVM) and new.config()["solver"] == "ramp"
    old = review_loop(X, "ramp")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no step short of its tolerance
        order_new = read_order(new, y, 150)
        order_old = read_order(old, y, 150)
    assert order_new == order_old
    assert np.abs(new.solver.decision_function() - old.solver.decision_function()).max() < 2e-5


def test_the_review_loop_resumes_and_undoes_with_its_solver(abstracts):
    X, y = abstracts
    loop = review_loop(X, seed=2)
    read_order(loop, y, 40)
    arrays, meta = loop.to_state()
    back = ActiveLearningLoop.from_state(arrays, meta, X)
    assert isinstance(back.solver, DualCDSVM)
    assert read_order(loop, y, 10) == read_order(back, y, 10)
    assert np.array_equal(loop.pool_scores(), back.pool_scores())
    before = loop.solver.f.copy()
    q = loop.next_query()
    loop.teach(q.index, int(y[q.index]))
    loop.undo()
    assert np.array_equal(loop.solver.f, before) and loop.next_query().index == q.index


def test_a_loop_saved_with_the_ramp_solver_resumes_with_it(abstracts):
    X, y = abstracts
    old = review_loop(X, "ramp", seed=1)
    read_order(old, y, 20)
    back = ActiveLearningLoop.from_state(*old.to_state(), X)
    assert back.solver.name == "ramp"
    assert read_order(back, y, 5) == read_order(old, y, 5)


def random_sparse(seed: int, n: int = 400, d: int = 300) -> tuple[sp.csr_matrix, np.ndarray]:
    """Short sparse rows (2-12 nonzeros over d features), labels from a sparse linear rule with noise."""
    rng = np.random.default_rng(seed)
    rows, cols, vals = [], [], []
    for i in range(n):
        k = int(rng.integers(2, 13))
        rows += [i] * k
        cols += rng.choice(d, k, replace=False).tolist()
        vals += rng.random(k).tolist()
    X = sp.csr_matrix((vals, (rows, cols)), shape=(n, d))
    truth = np.where(rng.random(d) < 0.1, rng.normal(size=d), 0.0)
    y = np.where(X @ truth + 0.1 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def test_the_passes_leave_w_as_weight_vector_makes_it_from_the_weights():
    """The compiled passes end with w made again from a (the bits ``weight_vector`` gives), over the
    block of the rows, which is the same made in one call or extended row by row."""
    from core.solvers._dual_cd_jit import block_append, dcd_passes, weight_vector

    X, y = random_sparse(5)
    rows = np.arange(0, 300, 2, dtype=np.intp)
    empty = (np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0), np.zeros(0, np.int64), 0)
    whole = block_append(X.indptr, X.indices, X.data, rows, 0, *empty, np.full(X.shape[1], -1, np.int32))
    grown, local = empty, np.full(X.shape[1], -1, np.int32)
    done = 0
    for m in (1, 2, 40, 41, len(rows)):  # (one row, one more, then several at once)
        grown = block_append(X.indptr, X.indices, X.data, rows[:m], done, *grown, local)
        done = m
    ptr, idx, val, feats, n_feats = whole
    assert n_feats == grown[4] and np.array_equal(feats[:n_feats], grown[3][:n_feats])
    assert np.array_equal(ptr[: len(rows) + 1], grown[0][: len(rows) + 1])
    nnz = ptr[len(rows)]
    assert np.array_equal(idx[:nnz], grown[1][:nnz]) and np.array_equal(val[:nnz], grown[2][:nnz])
    assert np.array_equal(feats[idx[:nnz]], X[rows].indices) and np.array_equal(val[:nnz], X[rows].data)

    yr = y[rows]
    ridge = np.full(len(rows), 0.5)
    qdiag = np.asarray(X.multiply(X).sum(axis=1)).ravel()[rows] + 1.0 + ridge
    alpha, w, s = np.zeros(len(rows)), np.zeros(X.shape[1]), np.zeros(1)
    passes, code, moved = dcd_passes(*whole, yr, alpha, qdiag, ridge, w, s, 1.0, 1.0, 1e-6, 1000, 3)
    assert code == 0 and passes > 1 and moved > 0
    again = np.zeros(X.shape[1])
    scratch = np.full(X.shape[1], -1, dtype=np.int64)
    weight_vector(X.indptr, X.indices, X.data, rows, alpha * yr, again, np.zeros(0, np.int64), scratch)
    assert np.array_equal(w, again)


def test_the_kept_block_gives_the_bits_of_a_fresh_one():
    """A solver that kept its block over the labels (and made it again after unlearning) and one made from
    its saved state, whose first passes copy all the learned rows at once: the same bits."""
    X, y = random_sparse(7)
    order = np.random.default_rng(3).permutation(X.shape[0])[:90]
    dcd = make_solver("dual-cd", X, kernel="linear", C=0.5, tol=1e-6, class_weight="balanced", random_state=4)
    for i in order[:60]:
        dcd.learn(int(i), y[i])
    dcd.unlearn(int(order[10]))
    arrays, meta = dcd.to_state()
    back = DualCDSVM.from_state(arrays, meta)
    assert back._block is None and dcd._block is not None
    for i in order[60:]:
        dcd.learn(int(i), y[i])
        back.learn(int(i), y[i])
        assert np.array_equal(back.alpha, dcd.alpha) and np.array_equal(back.f, dcd.f)


@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_random_sparse_problems_against_liblinear_after_learning_unlearning_and_resuming(class_weight, tmp_path):
    """KKT within tol after every step, decision values of liblinear's LinearSVC (squared hinge, dual, no
    intercept; the class weights as sample weights), after unlearning too, and a saved state that
    continues bit for bit."""
    from sklearn.svm import LinearSVC

    X, y = random_sparse(11)
    params = dict(kernel="linear", C=0.5, tol=1e-6, class_weight=class_weight, balance_ratio=3.0)
    dcd = make_solver("dual-cd", X, **params, random_state=2)
    order = np.random.default_rng(1).permutation(X.shape[0])[:150]

    def reference(learned: np.ndarray) -> np.ndarray:
        w_pos, w_neg = dcd.class_weights_
        weight = np.where(y[learned] > 0, w_pos, w_neg)
        model = LinearSVC(C=0.5, loss="squared_hinge", dual=True, fit_intercept=False, tol=1e-10, max_iter=10**6)
        return model.fit(X[learned], y[learned], sample_weight=weight).decision_function(X)

    for i in order[:120]:
        step = dcd.learn(int(i), y[i])
        assert step.status == "ok" and step.kkt_gap <= 1e-6 and dcd.kkt_gap() <= 1e-6
    assert np.abs(dcd.decision_function() - reference(order[:120])).max() < 1e-5
    for i in order[:120:9]:
        assert dcd.unlearn(int(i)).status == "ok" and dcd.kkt_gap() <= 1e-6
    kept = np.array([i for i in order[:120] if i not in set(order[:120:9].tolist())])
    assert np.abs(dcd.decision_function() - reference(kept)).max() < 1e-5
    dcd.save(tmp_path / "s.npz")
    back = OnlineSolver.load(tmp_path / "s.npz")
    for i in order[120:]:
        dcd.learn(int(i), y[i])
        back.learn(int(i), y[i])
    assert np.array_equal(back.alpha, dcd.alpha) and np.array_equal(back.f, dcd.f) and np.array_equal(back.w, dcd.w)
