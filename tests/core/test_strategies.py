"""Query strategies pick what their definitions say (core.strategies)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.strategies import (
    DEFAULT_SOLVER,
    STRATEGY_NAMES,
    Pool,
    autoactive,
    autoactive_delta,
    get_strategy,
    gradient,
    largest_positive,
    near_boundary,
    one_class_cold_start,
    ramp_region,
    random_query,
    randomized_search,
)


class FixedScores:
    """A model whose decision values are given (a test double for strategy rules)."""

    def __init__(self, f, delta=None, tol=1e-3):
        self.f = np.asarray(f, dtype=np.float64)
        self.n_points = len(self.f)
        self.tol = tol
        if delta is not None:
            self.delta_ = delta
        self.calls = 0

    def decision_function(self, idx=None, X=None):
        idx = np.arange(self.n_points) if idx is None else np.asarray(idx, dtype=np.intp)
        self.calls += len(idx)
        return self.f[idx]


def pool_of(f, labelled=(), scores=False, oracle_y=None):
    avail = np.ones(len(f), dtype=bool)
    avail[list(labelled)] = False
    return Pool(avail, scores=np.asarray(f, dtype=float) if scores else None, oracle_y=oracle_y)


def test_names_and_default_solvers_follow_the_design():
    assert set(STRATEGY_NAMES) == set(DEFAULT_SOLVER)
    assert DEFAULT_SOLVER["largest-positive"] == DEFAULT_SOLVER["near-boundary"] == "incremental"
    for s in ("randomized-search", "autoactive", "gradient", "random"):
        assert DEFAULT_SOLVER[s] == "lasvm"
    assert DEFAULT_SOLVER["ramp-region"] == "ramp"
    with pytest.raises(ValueError, match="unknown strategy"):
        get_strategy("closest")


def test_largest_positive_takes_the_largest_unlabelled_value():
    f = [0.2, 3.0, -5.0, 1.5, 2.9]
    m = FixedScores(f)
    q = largest_positive(m, pool_of(f, labelled=[1]))
    assert q.index == 4 and q.score == 2.9 and q.strategy == "largest-positive"


@pytest.mark.parametrize("kept", [False, True])
def test_near_boundary_takes_the_smallest_absolute_value_over_the_whole_pool(kept):
    f = [0.9, -0.05, 0.3, 0.01, -2.0, 0.08]
    m = FixedScores(f)
    q = near_boundary(m, pool_of(f, labelled=[3], scores=kept))
    assert q.index == 1 and q.score == -0.05
    # a pool given as plain candidate indices works too
    assert near_boundary(m, np.array([0, 2, 4])).index == 2


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=2, max_size=60), st.integers(0, 2**31))
def test_near_boundary_equals_brute_force(values, seed):
    f = np.asarray(values)
    rng = np.random.default_rng(seed)
    labelled = rng.choice(len(f), size=rng.integers(0, len(f)), replace=False)
    pool = pool_of(f, labelled=labelled)
    q = near_boundary(FixedScores(f), pool)
    cand = np.setdiff1d(np.arange(len(f)), labelled)
    assert q.index in cand
    assert abs(f[q.index]) == np.min(np.abs(f[cand]))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, -0.0, 0.5, -0.5, 1.0, -2.0, np.inf, -np.inf]), min_size=1, max_size=40),
    st.integers(0, 2**31),
)
def test_kept_scores_give_the_pick_of_the_gathered_scores(values, seed):
    """With the scores kept over the whole store, near-boundary and largest-positive read them in one
    compiled pass; the pick is that of numpy's argmin / argmax over the gathered candidates, ties (many
    here, infinities and signed zeros included) to the lowest index."""
    f = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    labelled = rng.choice(len(f), size=rng.integers(0, len(f)), replace=False)
    cand = np.setdiff1d(np.arange(len(f)), labelled)
    for fn, pick in ((near_boundary, lambda v: int(np.argmin(np.abs(v)))), (largest_positive, np.argmax)):
        kept = fn(FixedScores(f), pool_of(f, labelled=labelled, scores=True))
        gathered = fn(FixedScores(f), pool_of(f, labelled=labelled))
        if len(cand) == 0:
            assert kept is None and gathered is None
            continue
        assert kept.index == gathered.index == int(cand[pick(f[cand])])
        assert kept.reason == gathered.reason


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, -0.0, 0.5, -0.5, 1.0, -2.0, np.inf, -np.inf]), min_size=1, max_size=40),
    st.lists(st.booleans(), min_size=40, max_size=40),
    st.integers(1, 4),
)
def test_masked_scans_split_across_threads_give_the_one_pass_pick(values, available, threads):
    """On a large pool the scans run on the kernel threads, each over a range; the ranges' picks
    combine into the pick of one pass (lowest index on ties across ranges, the first available item
    when every score is infinite, -1 when none is available) and the counts into its count."""
    import core.kernels as kernels
    import core.threads as threads_module
    from core.threads import set_kernel_threads

    f = np.asarray(values, dtype=float)
    mask = np.asarray(available[: len(f)])
    cand = np.flatnonzero(mask)
    before, split = threads_module._n_threads, kernels._SCAN_SPLIT
    try:
        set_kernel_threads(threads)
        kernels._SCAN_SPLIT = 1.0  # (a range per thread at any size)
        nearest, largest = kernels.masked_argmin_abs(f, mask), kernels.masked_argmax(f, mask)
        inside = kernels.masked_count_abs_below(f, mask, 1.0)
    finally:
        kernels._SCAN_SPLIT = split
        set_kernel_threads(before)
    if len(cand) == 0:
        assert nearest == largest == -1 and inside == 0
        return
    assert nearest == int(cand[np.argmin(np.abs(f[cand]))])
    assert largest == int(cand[np.argmax(f[cand])])
    assert inside == int(np.count_nonzero(np.abs(f[cand]) < 1.0))


def test_masked_scans_name_a_length_mismatch_and_an_empty_mask():
    from core.kernels import masked_argmax, masked_argmin_abs, masked_count_abs_below

    f = np.array([0.5, -0.25, 3.0, -0.75])
    mask = np.array([True, False, True, True])
    assert masked_argmin_abs(f, mask) == 0 and masked_argmax(f, mask) == 2
    assert masked_count_abs_below(f, mask, 1.0) == 2  # 0.5 and -0.75; -0.25 is not available
    assert masked_argmin_abs(f, np.zeros(4, bool)) == masked_argmax(f, np.zeros(4, bool)) == -1
    assert masked_count_abs_below(f, np.zeros(4, bool), 1.0) == 0
    with pytest.raises(ValueError, match="differ in length: 4 and 3"):
        masked_argmin_abs(f, mask[:3])


def test_strategies_return_none_on_an_empty_pool():
    f = [0.1, 0.2]
    m = FixedScores(f)
    rng = np.random.default_rng(0)
    empty = pool_of(f, labelled=[0, 1])
    for fn in (largest_positive, near_boundary, random_query, randomized_search, autoactive):
        assert fn(m, empty, rng) is None
    assert ramp_region(m, empty, rng, order=np.arange(2)) is None


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 400), st.integers(1, 80), st.integers(0, 2**31))
def test_randomized_search_returns_the_best_of_what_it_drew(n, m, seed):
    rng = np.random.default_rng(seed)
    f = rng.normal(size=n)
    labelled = rng.choice(n, size=n // 3, replace=False)
    model = FixedScores(f)
    q = randomized_search(model, pool_of(f, labelled=labelled), np.random.default_rng(seed), sample_size=m)
    cand = np.setdiff1d(np.arange(n), labelled)
    assert len(q.drawn) == min(m, len(cand)) == len(np.unique(q.drawn))
    assert np.all(np.isin(q.drawn, cand))
    assert q.index in q.drawn
    assert abs(q.score) == np.min(np.abs(f[q.drawn]))
    # only the drawn items were scored, and the draw is reproducible
    assert model.calls == len(q.drawn)
    again = randomized_search(model, pool_of(f, labelled=labelled), np.random.default_rng(seed), sample_size=m)
    assert again.index == q.index and np.array_equal(again.drawn, q.drawn)


def test_randomized_search_default_draws_59_and_is_exact_when_the_pool_is_smaller():
    rng = np.random.default_rng(1)
    f = rng.normal(size=10_000)
    q = randomized_search(FixedScores(f), pool_of(f), np.random.default_rng(2))
    assert len(q.drawn) == 59
    small = f[:40]
    q = randomized_search(FixedScores(small), pool_of(small), np.random.default_rng(2))
    assert q.index == int(np.argmin(np.abs(small)))


def test_randomized_search_lands_in_the_best_five_percent_most_of_the_time():
    # Bordes et al. 4.3: P(best of 59 in the top 5%) = 1 - 0.95**59 > 0.95.
    f = np.linspace(-3, 3, 2001)
    cutoff = np.quantile(np.abs(f), 0.05)
    hits = 0
    for seed in range(200):
        q = randomized_search(FixedScores(f), pool_of(f), np.random.default_rng(seed))
        hits += abs(q.score) <= cutoff
    assert hits >= 180  # expected 190; binomial sd about 3


def test_autoactive_stops_at_the_fifth_item_inside_the_window():
    rng = np.random.default_rng(3)
    f = np.where(rng.random(1000) < 0.2, rng.uniform(-1, 1, 1000), rng.uniform(2, 4, 1000))
    model = FixedScores(f, delta=0.0)
    q = autoactive(model, pool_of(f), np.random.default_rng(4))
    inside = np.abs(f[q.drawn]) <= 1.0
    assert inside.sum() == 5 and inside[-1]  # stopped exactly at the 5th
    assert len(q.drawn) < 100
    assert abs(q.score) == np.min(np.abs(f[q.drawn]))
    # the same draws one at a time give the same stopping point
    order = Pool(np.ones(1000, bool)).sample(np.random.default_rng(4), 100)
    stop = np.flatnonzero(np.cumsum(np.abs(f[order]) <= 1.0) == 5)[0] + 1
    assert np.array_equal(q.drawn, order[:stop])


def test_autoactive_draws_at_most_100_and_uses_the_lasvm_delta():
    f = np.full(500, 1.4)
    f[::7] = 1.2
    # delta = 0: nothing inside |f| <= 1, so the draw limit is reached
    q = autoactive(FixedScores(f, delta=0.0), pool_of(f), np.random.default_rng(0))
    assert len(q.drawn) == 100 and abs(q.score) == 1.2
    # delta = 1 (LASVM's delta_): window 1.5 holds every item, stop after 5
    q = autoactive(FixedScores(f, delta=1.0), pool_of(f), np.random.default_rng(0))
    assert len(q.drawn) == 5
    # without delta_ the solver tolerance is used
    assert autoactive_delta(FixedScores(f, tol=0.25)) == 0.25
    assert autoactive_delta(FixedScores(f, delta=0.5, tol=0.25)) == 0.5


def test_ramp_region_only_asks_inside_the_ramp_region_and_counts_what_it_passes_over():
    f = np.array([3.0, -2.0, 0.5, 1.5, -0.9, 4.0, 0.0])
    model = FixedScores(f)
    order = np.array([5, 0, 3, 2, 1, 4, 6])
    q = ramp_region(model, pool_of(f), order=order, cursor=0, block=2)
    assert q.index == 2 and q.passed_over == 3 and q.cursor == 4
    # continue from the cursor, with item 1 already labelled (stepped over, not counted)
    q = ramp_region(model, pool_of(f, labelled=[1, 2]), order=order, cursor=q.cursor)
    assert q.index == 4 and q.passed_over == 0
    # wrap around to a new pass
    q = ramp_region(model, pool_of(f, labelled=[2, 4, 6]), order=order, cursor=6)
    assert q is None  # nothing left with |f| <= 1
    q = ramp_region(model, pool_of(f, labelled=[2, 4]), order=order, cursor=6)
    assert q.index == 6 and q.cursor == 0


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 300), st.integers(0, 2**31), st.booleans())
def test_ramp_region_never_asks_about_an_item_outside_the_ramp_region(n, seed, kept):
    rng = np.random.default_rng(seed)
    f = rng.normal(scale=2.0, size=n)
    order = rng.permutation(n)
    pool = pool_of(f, labelled=rng.choice(n, size=n // 4, replace=False), scores=kept)
    cursor = int(rng.integers(0, n))
    q = ramp_region(FixedScores(f), pool, order=order, cursor=cursor, block=int(rng.integers(1, 50)))
    walk = np.roll(order, -cursor)
    walk = walk[pool.available[walk]]
    inside = np.flatnonzero(np.abs(f[walk]) <= 1)
    if len(inside) == 0:
        assert q is None
    else:
        assert abs(q.score) <= 1 and q.index == walk[inside[0]] and q.passed_over == inside[0]


def test_random_draws_only_unlabelled_items_uniformly():
    f = np.zeros(10)
    labelled = [0, 3, 7]
    counts = np.zeros(10)
    rng = np.random.default_rng(5)
    for _ in range(2100):
        counts[random_query(FixedScores(f), pool_of(f, labelled=labelled), rng).index] += 1
    assert counts[labelled].sum() == 0
    assert counts[counts > 0].min() > 220 and counts.max() < 380  # 300 expected each


def test_pool_sampling_by_rejection_on_a_large_pool():
    avail = np.ones(1_000_000, dtype=bool)
    avail[::3] = False
    s = Pool(avail).sample(np.random.default_rng(0), 59)
    assert len(s) == 59 == len(np.unique(s)) and avail[s].all()


def test_gradient_takes_the_most_misclassified_and_needs_the_truth():
    f = np.array([0.5, -2.0, 1.5, 0.1])
    y = np.array([1, 1, -1, -1])
    q = gradient(FixedScores(f), pool_of(f, oracle_y=y))
    assert q.index == 1  # y f = -2.0
    q = gradient(FixedScores(f), pool_of(f, labelled=[1], oracle_y=y))
    assert q.index == 2  # y f = -1.5
    with pytest.raises(ValueError, match="true labels"):
        gradient(FixedScores(f), pool_of(f))


def test_one_class_cold_start_follows_the_ranking():
    f = np.zeros(5)
    ranking = np.array([3, 1, 4, 0, 2])
    q = one_class_cold_start(FixedScores(f), pool_of(f, labelled=[3]), ranking=ranking)
    assert q.index == 1 and q.strategy == "one-class"


def test_ramp_region_with_the_ramp_solver_on_a_rare_class():
    # OnlineASVMR end to end (Algorithm 3) on a stream with 10% positives: every asked item lies in
    # the solver's own ramp region when it is asked, every item passed over lies outside it, and
    # the score recorded is the solver's f(x) at that moment
    from core.solvers import make_solver

    rng = np.random.default_rng(4)
    n = 400
    y = np.where(rng.random(n) < 0.1, 1.0, -1.0)
    X = rng.normal(size=(n, 2)) + 1.5 * (y[:, None] > 0)
    solver = make_solver("ramp", X, C=10.0, gamma=1.0)
    order = rng.permutation(n)
    available = np.ones(n, dtype=bool)
    cursor, asked, passed_total = 0, 0, 0
    while asked < 60:
        cold = not ((solver.y > 0).any() and (solver.y < 0).any())
        q = ramp_region(
            solver, Pool(available), order=order, cursor=cursor, threshold=np.inf if cold else 1.0, block=16
        )
        if q is None:
            break
        walk = np.roll(order, -cursor)
        walk = walk[available[walk]]
        passed = walk[: q.passed_over]
        assert walk[q.passed_over] == q.index
        assert q.score == solver.decision_function([q.index])[0]
        if not cold:
            assert solver.in_ramp_region([q.index])[0]
            assert not solver.in_ramp_region(passed).any()
            passed_total += len(passed)
        solver.learn(q.index, y[q.index])
        available[q.index] = False
        cursor, asked = q.cursor, asked + 1
    assert asked == 60 and passed_total > 0 and (solver.y[solver.labelled_] > 0).sum() >= 2
