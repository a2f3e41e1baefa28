"""Stopping rules and recall estimates (core.stopping) on analytic and constructed cases."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import cohen_kappa_score

from core import stopping as st
from core.agreement import cohen_kappa
from core.metrics import roc_auc


def comb_p_value(n: int, k: int, urn: int, big_k: int) -> float:
    """P(X <= k), X ~ Hypergeom(urn, big_k, n), summed term by term with exact integers."""
    total = math.comb(urn, n)
    return float(sum(Fraction(math.comb(big_k, x) * math.comb(urn - big_k, n - x), total) for x in range(k + 1)))


# --------------------------------------------------------------------------- statistical: the test itself


def test_k_target_is_the_fewest_missed_positives_that_put_recall_below_target():
    for tau in (0.8, 0.9, 0.95, 0.99):
        frac = Fraction(str(tau))
        for before in range(0, 120):
            for k in range(0, 4):
                # recall (before + k) / (before + K) < target  <=>  before + k < target * (before + K)
                brute = next(big_k for big_k in range(0, 10_000) if before + k < frac * (before + big_k))
                assert st.k_target(before, k, tau) == brute, (tau, before, k)
    # the rounding trap: 19 / 0.95 is 20.000000000000004 in floating point, K_tar is exactly 2
    assert st.k_target(19, 0, 0.95) == 2
    assert st.k_target(0, 0, 0.95) == 1


@pytest.mark.parametrize(
    "n, k, urn, before",
    [(50, 0, 400, 95), (120, 1, 400, 95), (30, 2, 90, 40), (200, 0, 1000, 300), (7, 0, 20, 3), (0, 0, 100, 10)],
)
def test_hypergeometric_p_value_equals_the_brute_force_sum(n, k, urn, before):
    big_k = st.k_target(before, k, 0.95)
    assert st.hypergeometric_p_value(n, k, urn, before, 0.95) == pytest.approx(
        comb_p_value(n, k, urn, big_k), rel=1e-9, abs=1e-15
    )


def test_pass_and_fail_draws_by_brute_force():
    for urn, before, level in [(400, 95, 0.0304), (2400, 290, 0.03), (300, 10, 0.05), (50, 1, 0.01)]:
        for k in (0, 1, 3):
            n = st.pass_draws(urn, before, k, 0.95, level)
            big_k = st.k_target(before, k, 0.95)
            assert comb_p_value(n, k, urn, big_k) < level
            assert n == k or comb_p_value(n - 1, k, urn, big_k) >= level
        design = st.check_design(urn, before, 0.95, level, 0.05)
        for k in (1, 2, 4):
            g = design.fail_draws(k)
            big_k = st.k_target(before, k, 0.95) - 1  # the most positives with recall still at the target
            if g == -1:
                assert 1 - comb_p_value(k, k - 1, urn, big_k) >= 0.05
                continue
            assert 1 - comb_p_value(g, k - 1, urn, big_k) < 0.05  # P(X >= k) after g draws
            assert g == urn or 1 - comb_p_value(g + 1, k - 1, urn, big_k) >= 0.05
    # an urn that cannot hold K_tar positives: recall is at the target whatever it holds
    assert st.pass_draws(3, 95, 0, 0.95, 0.05) == 0
    assert st.hypergeometric_p_value(0, 0, 3, 95, 0.95) == 0.0


def test_check_budgets_sum_to_one_minus_confidence():
    shares = [st.check_alpha(j, 0.95) for j in range(1, 60)]
    assert shares[0] == pytest.approx(0.045) and shares[1] == pytest.approx(0.0025)
    assert sum(shares) <= 1 - 0.95 and sum(shares) == pytest.approx(0.05, rel=1e-12)
    with pytest.raises(ValueError):
        st.check_alpha(0, 0.95)


def simulate_check(urn, before, positives, design, rng, reps):
    """The check itself, draw by draw over random orders of an urn with ``positives`` positives:
    the share of orders in which it passes with recall below the target."""
    misses = 0
    for _ in range(reps):
        order = rng.permutation(urn) < positives  # True: a positive
        k = 0
        for n in range(0, urn + 1):
            if n >= design.pass_draws(k):
                misses += (before + k) < design.target_recall * (before + positives)
                break
            if order[n]:
                k += 1
                if n + 1 <= design.fail_draws(k):
                    break  # the draws show recall below the target: back to the heuristic
    return misses / reps


def test_sequential_error_matches_a_simulation_of_the_check():
    urn, before = 300, 40
    design = st.CheckDesign(urn, before, 0.95, 0.05, 0.05, "as in the paper", 0.05, float("nan"))
    rng = np.random.default_rng(0)
    reps = 6000
    exact = st._errors(urn, before, 0.95, 0.05, 0.05, np.array([3, 5, 8, 12]))
    for positives, p in zip([3, 5, 8, 12], exact, strict=True):
        simulated = simulate_check(urn, before, positives, design, rng, reps)
        assert abs(simulated - p) < 4 * math.sqrt(max(p * (1 - p), 1e-4) / reps) + 1e-3, (positives, simulated, p)
    assert exact[0] > 0.03  # K = 3 = K_tar(0): the first look alone misses about alpha of the time


def event_error(urn, before, level, beta, positives, target=0.95):
    """The same error computed another way: from one boundary to the next, the positives drawn move by
    hypergeometric increments (scipy.stats.hypergeom) over the items still in the urn."""
    from scipy import stats

    top = 0
    while st.k_target(before, top + 1, target) <= positives:
        top += 1
    design = st.CheckDesign(urn, before, target, level, beta, "test", level, float("nan"))
    events = sorted(
        [(design.pass_draws(j), 0, j) for j in range(top + 1)]
        + [(design.fail_draws(j), 1, j) for j in range(1, top + 1) if design.fail_draws(j) >= 0]
    )
    dist = np.zeros(top + 1)
    dist[0] = 1.0
    at, error = 0, 0.0
    for n, kind, j in events:
        if n > at:
            new = np.zeros(top + 1)
            for x in np.flatnonzero(dist):
                step = np.arange(0, top + 1 - x)
                new[x + step] += dist[x] * stats.hypergeom.pmf(step, urn - at, positives - x, n - at)
            dist, at = new, n
        if kind == 0:
            error += dist[: j + 1].sum()
            dist[: j + 1] = 0.0
        else:
            dist[j:] = 0.0
    return error


def test_sequential_error_equals_a_computation_with_hypergeometric_steps():
    for urn, before, level in [(400, 95, 0.05), (250, 30, 0.02), (1200, 200, 0.03)]:
        ks = np.arange(st.k_target(before, 0, 0.95), st.k_target(before, 0, 0.95) + 12, 3)
        chain = st._errors(urn, before, 0.95, level, 0.05, ks)
        steps = [event_error(urn, before, level, 0.05, int(k)) for k in ks]
        np.testing.assert_allclose(chain, steps, rtol=1e-9, atol=1e-12)


def test_check_design_keeps_the_worst_error_within_its_budget():
    # the paper's rule, one level at every look: the worst case misses more often than the level
    worst, _ = st.sequential_error(400, 95, 0.95, 0.05, 0.05)
    assert worst > 0.055
    for urn, before, budget in [(400, 95, 0.045), (2600, 340, 0.045), (150, 5, 0.0025), (60, 57, 0.045)]:
        design = st.check_design(urn, before, 0.95, budget, 0.05)
        assert design.method == "calibrated" and design.level <= budget
        assert design.worst_error <= budget
        assert st.sequential_error(urn, before, 0.95, design.level, 0.05)[0] == pytest.approx(design.worst_error)
    # above the calibration limit: the union bound over the number of positives drawn
    big = st.check_design(st.CALIBRATE_MAX_URN + 1, 3000, 0.95, 0.045, 0.05)
    assert big.method == "union bound" and big.level_at(0) == pytest.approx(0.045 * 6 / math.pi**2)
    assert st.sequential_error(400, 95, 0.95, ("union", 0.045), 0.05)[0] <= 0.045


# --------------------------------------------------------------------------- statistical: sessions


def _history(*segments):
    """labels and draw flags from (values, drawn) segments."""
    labels = np.concatenate([np.asarray(v, dtype=int) for v, _ in segments])
    drawn = np.concatenate([np.full(len(v), d) for v, d in segments])
    return labels, drawn


def test_recall_check_phases_and_draws_still_needed():
    pool, heuristic = 1000, [1] * 95 + [-1] * 505  # 600 labels, 95 positives, 400 unlabelled
    labels, drawn = _history((heuristic, False))
    check = st.recall_check(labels, drawn, [], checking=False, pool_size=pool)
    assert check.phase == "heuristic" and not check.checking and check.design is None
    # before a check: at least the draws of one look at the whole budget
    assert check.planned == st.pass_draws(400, 95, 0, 0.95, st.check_alpha(1, 0.95))
    # the heuristic went 505 labels without a positive: N_u / K_tar = 400 / 6 -> a check is suggested
    assert check.gap == 505 and check.gap_needed == math.ceil(400 / 6) and check.suggest
    assert "suggested now" in st.statistical_rule(check).message

    design = st.check_design(400, 95, 0.95, st.check_alpha(1, 0.95), 1 - 0.95)
    planned = design.pass_draws(0)
    started = st.recall_check(labels, drawn, [600], checking=True, pool_size=pool)
    assert started.phase == "checking" and started.draws == 0 and started.needed == planned
    assert started.design == design and planned > check.planned  # the calibrated looks need more draws

    labels, drawn = _history((heuristic, False), ([-1] * 30, True))
    check = st.recall_check(labels, drawn, [600], checking=True, pool_size=pool)
    assert check.phase == "checking" and check.draws == 30 and check.needed == planned - 30
    state = st.statistical_rule(check)
    assert not state.stop and state.message.startswith(
        f"statistical: draw {planned - 30} more random items to test recall ≥ 95% at 95% confidence"
    )
    assert check.p_value == pytest.approx(comb_p_value(30, 0, 400, 6))

    labels, drawn = _history((heuristic, False), ([-1] * planned, True))
    check = st.recall_check(labels, drawn, [600], checking=True, pool_size=pool)
    assert check.phase == "passed" and check.p_value < check.level and st.statistical_rule(check).stop
    one_short = st.recall_check(labels[:-1], drawn[:-1], [600], checking=True, pool_size=pool)
    assert one_short.phase == "checking" and one_short.needed == 1

    # a positive late in the draws: the check goes on, with the draws that one positive needs
    labels, drawn = _history((heuristic, False), ([-1] * 40 + [1], True))
    going = st.recall_check(labels, drawn, [600], checking=True, pool_size=pool)
    assert going.phase == "checking" and going.positives_drawn == 1
    assert going.needed == design.pass_draws(1) - 41 and design.pass_draws(1) > planned

    # a positive this early shows recall below the target (6 positives, the most an urn at the target holds,
    # give one in the first 3 of 400 draws less than 5% of the time): the check fails, back to the heuristic
    assert design.fail_draws(1) == 3 and 1 - comb_p_value(3, 0, 400, 6) < 0.05 <= 1 - comb_p_value(4, 0, 400, 6)
    labels, drawn = _history((heuristic, False), ([-1, -1, 1], True))
    failed = st.recall_check(labels, drawn, [600], checking=True, pool_size=pool)
    assert failed.phase == "failed" and not failed.checking and st.simulated_analyst(failed) == "heuristic"
    assert "below 95%" in st.statistical_rule(failed).message
    labels, drawn = _history((heuristic, False), ([-1, -1, -1, 1], True))
    assert st.recall_check(labels, drawn, [600], checking=True, pool_size=pool).phase == "checking"
    labels, drawn = _history((heuristic, False), ([-1, -1, 1], True), ([1, -1, -1], False))
    later = st.recall_check(labels, drawn, [600], checking=False, pool_size=pool)
    assert later.phase == "heuristic" and later.check_number == 2
    assert later.alpha == pytest.approx(st.check_alpha(2, 0.95))
    assert later.found_before == 97 and later.urn == 400 - 3 - 3

    # a start beyond the labels (undone since) is ignored
    labels, drawn = _history((heuristic, False))
    assert st.recall_check(labels, drawn, [650], checking=True, pool_size=pool).phase == "heuristic"


def test_check_suggested_agrees_with_recall_check():
    rng = np.random.default_rng(4)
    for _ in range(200):
        n = int(rng.integers(1, 400))
        labels = np.where(rng.random(n) < 0.2, 1, -1)
        labels[n - int(rng.integers(0, n + 1)) :] = -1  # a run of negatives of any length at the end
        full = st.recall_check(labels, np.zeros(n, dtype=bool), [], checking=False, pool_size=500)
        assert st.check_suggested(labels, 500) == full.suggest


def test_two_checks_in_a_row_keep_their_own_draws():
    heuristic = [1] * 95 + [-1] * 505
    labels, drawn = _history((heuristic, False), ([-1] * 5, True), ([-1] * 7, True))
    runs = st.check_runs(labels, drawn, [600, 605], pool_size=1000)
    assert [(r.start, r.draws) for r in runs] == [(600, 5), (605, 7)]
    check = st.recall_check(labels, drawn, [600, 605], checking=True, pool_size=1000)
    assert check.check_number == 2 and check.draws == 7 and check.urn == 395


def simulate_screening(
    seed: int,
    *,
    pool: int = 600,
    positives: int = 60,
    hidden: float = 0.15,
    confidence: float = 0.95,
    target: float = 0.95,
    start: str = "knee",
    record: bool = False,
    separation: float = 3.0,
    hidden_at: float = 0.0,
):
    """A screening session with a fixed ranking that hides some positives among the negatives;
    the analyst follows the statistical rule (heuristic, then checks; ``start``: when a check starts).
    Returns (recall, labels) at stop, and with ``record`` the first check's (urn, positives found before it,
    positives in its urn)."""
    rng = np.random.default_rng(seed)
    y = np.full(pool, -1)
    y[:positives] = 1
    rng.shuffle(y)
    score = rng.normal(size=pool) + separation * (y > 0)
    hide = rng.choice(np.flatnonzero(y > 0), int(hidden * positives), replace=False)
    score[hide] = rng.normal(size=len(hide)) + hidden_at  # (at 0: ranked like negatives, found late)
    order = np.argsort(-score)
    labels, _, starts = st.follow_ranking(order, y, rng=rng, start=start, target_recall=target, confidence=confidence)
    first = None
    if starts:  # (urn, positives found before, positives in the urn) of the first check
        before = sum(v > 0 for v in labels[: starts[0]])
        first = (pool - starts[0], before, positives - before)
    if record:
        return sum(v > 0 for v in labels) / positives, len(labels), first
    return sum(v > 0 for v in labels) / positives, len(labels)


@pytest.mark.slow  # 160 simulated screenings (several seconds)
def test_statistical_rule_reaches_the_target_in_95_percent_of_seeds():
    results = [simulate_screening(seed) for seed in range(100)]
    recall = np.array([r for r, _ in results])
    assert np.mean(recall >= 0.95) >= 0.95
    # a negative control: at 50% confidence the same sessions stop short of the target far more often,
    # so this simulation can tell a valid rule from an invalid one
    weak = np.array([simulate_screening(seed, confidence=0.5)[0] for seed in range(60)])
    assert np.mean(weak >= 0.95) < 0.93


# --------------------------------------------------------------------------- knee, consecutive, margin


def piecewise_gain(rates_and_lengths):
    """Labels whose positives are spread evenly: (positives, labels) per segment."""
    labels = []
    for pos, length in rates_and_lengths:
        seg = -np.ones(length, dtype=int)
        seg[np.round(np.linspace(0, length - 1, pos)).astype(int)] = 1 if pos else -1
        labels.extend(seg.tolist())
    return np.array(labels)


def test_knee_point_is_the_point_farthest_from_the_chord():
    labels = piecewise_gain([(90, 100), (4, 400)])
    gain = st.gain_curve(labels)
    s = len(gain)
    x, g = np.arange(1, s), gain[:-1]
    # Euclidean distance from the line through (0, 0) and (s, relret), by brute force
    dist = np.abs(gain[-1] * x - s * g) / math.hypot(gain[-1], s)
    assert st.knee_point(gain) == int(x[np.argmax(dist)])
    assert abs(st.knee_point(gain) - 100) <= 2


def test_knee_rule_on_a_synthetic_gain_curve():
    # 180 positives in the first 300 labels, then 3 in the next 600: relret = 183 >= 150, threshold 6
    labels = piecewise_gain([(180, 300), (3, 600)])
    state = st.knee_rule(labels)
    gain = st.gain_curve(labels)
    knee = st.knee_point(gain)
    rho = (gain[knee - 1] / knee) / ((gain[-1] - gain[knee - 1] + 1) / (len(gain) - knee))
    assert state.value == pytest.approx(rho)
    assert rho >= 6 and state.stop and "you can stop" in state.message
    # the same shape with few positives needs a far larger slope ratio (156 - relret)
    few = piecewise_gain([(20, 100), (1, 300)])
    state = st.knee_rule(few)
    assert "stops at 135" in state.message and not state.stop
    # the adjusted threshold alone needs 156 labels: 100 positives first, then 55 or 56 negatives
    assert not st.knee_rule(piecewise_gain([(100, 100), (0, 55)])).stop
    assert st.knee_rule(piecewise_gain([(100, 100), (0, 56)])).stop
    # a larger minimum effort makes the rule wait, whatever the slope ratio
    state = st.knee_rule(labels, min_labels=1000)
    assert not state.stop and state.needed == 100 and state.value == pytest.approx(rho)
    assert not st.knee_rule([-1] * 200).stop


def test_consecutive_rule_counts_negatives_since_the_last_positive():
    assert not st.consecutive_rule([-1] * 80, 50).stop  # no positive yet
    labels = [1] + [-1] * 49
    state = st.consecutive_rule(labels, 50)
    assert not state.stop and state.value == 49 and state.needed == 1
    state = st.consecutive_rule(labels + [-1], 50)
    assert state.stop and state.value == 50
    assert st.consecutive_rule(labels + [-1, 1], 50).value == 0


def test_margin_rule():
    assert not st.margin_rule(0, [-1, -1]).stop  # waits for both classes
    assert st.margin_rule(0, [1, -1]).stop
    state = st.margin_rule(12, [1, -1])
    assert not state.stop and state.message == "margin: 12 unlabelled items the model is unsure of"
    assert st.margin_rule(3, [1, -1], tolerance=3).stop
    assert not st.margin_rule(float("nan"), [1, -1]).stop


# --------------------------------------------------------------------------- stability


def test_cohens_kappa_is_the_agreement_modules_kappa_of_the_signs():
    """One implementation: the stability rule's kappa is core.agreement's, bit for bit, NaN where that is None."""
    rng = np.random.default_rng(11)
    cases = [(np.zeros(10), np.zeros(10)), (np.ones(7), np.ones(7)), (np.ones(5), -np.ones(5)), ([], [])]
    for n in (4, 60, 2000):
        for _ in range(30):
            a = rng.normal(size=n) + rng.normal()
            cases.append((a, np.where(rng.random(n) < 0.8, a, rng.normal(size=n))))
    for a, b in cases:
        ours = st.cohens_kappa(a, b)
        shared = cohen_kappa(np.asarray(a) > 0, np.asarray(b) > 0).value
        assert (math.isnan(ours) and shared is None) or ours == shared


def test_cohens_kappa_matches_scikit_learn():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.random(300) < rng.random()
        b = np.where(rng.random(300) < 0.8, a, rng.random(300) < 0.5)
        if len(set(a)) == 1 and len(set(b)) == 1:
            continue
        assert st.cohens_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    assert math.isnan(st.cohens_kappa(np.zeros(10), np.zeros(10)))  # both constant and equal: undefined
    assert st.cohens_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == 1.0


def test_stability_tracker_and_rule():
    tracker = st.StabilityTracker(stop_set=np.arange(50), step=10)
    rng = np.random.default_rng(0)
    base = rng.normal(size=50)
    for n, flip in [(10, 20), (20, 5), (30, 0), (40, 0), (50, 0), (60, 0)]:
        scores = base.copy()
        scores[:flip] *= -1
        tracker.record(n, scores)
    kappas = tracker.kappas()
    assert [n for n, _ in kappas] == [20, 30, 40, 50, 60]
    assert kappas[-1][1] == 1.0 and kappas[0][1] < 1.0
    state = st.stability_rule(kappas, step=10)
    assert state.stop and state.value == 1.0
    assert not st.stability_rule(kappas[:3], step=10).stop  # the mean of the last three is below 0.99
    tracker.forget_after(30)
    assert sorted(tracker.checkpoints) == [10, 20, 30]
    again = st.StabilityTracker.from_arrays(tracker.to_arrays())
    assert again.step == 10 and sorted(again.checkpoints) == [10, 20, 30]
    for n in (10, 20, 30):
        assert np.array_equal(again.checkpoints[n], tracker.checkpoints[n])
    assert not st.stability_rule([(10, float("nan"))] * 3).stop  # undefined kappas do not count
    with pytest.raises(ValueError):
        tracker.record(40, np.zeros(3))
    # a tracker without any checkpoint yet (a snapshot before the first one) saves and loads too
    empty = st.StabilityTracker(stop_set=np.arange(50), step=10)
    again = st.StabilityTracker.from_arrays(empty.to_arrays())
    assert again.checkpoints == {} and np.array_equal(again.stop_set, empty.stop_set)


def test_stop_set_is_fixed_by_the_seed():
    a, b = st.stop_set(5000, seed=1), st.stop_set(5000, seed=1)
    assert np.array_equal(a, b) and len(a) == st.STOP_SET_SIZE and len(np.unique(a)) == len(a)
    assert len(st.stop_set(300, seed=1)) == 300


# --------------------------------------------------------------------------- estimates


def test_urn_interval_covers_the_truth_in_95_percent_of_samples():
    rng = np.random.default_rng(5)
    urn, draws, covered, reps = 600, 120, 0, 600
    for _ in range(reps):
        truth = int(rng.integers(0, 40))
        k = int(np.sum(rng.permutation(urn)[:draws] < truth))
        low, high = st.urn_interval(urn, draws, k, 0.95)
        covered += low <= truth <= high
    assert covered / reps >= 0.95
    # and the bounds are the exact tail inversions
    low, high = st.urn_interval(1000, 100, 5, 0.95)
    assert comb_p_value(100, 5, 1000, high) > 0.025 >= comb_p_value(100, 5, 1000, high + 1)
    assert 1 - comb_p_value(100, 4, 1000, low) > 0.025 >= 1 - comb_p_value(100, 4, 1000, low - 1)


def test_estimate_from_draws_subtracts_the_positives_labelled_since():
    labels, drawn = _history(([1] * 95 + [-1] * 505, False), ([-1] * 99 + [1], True), ([1, 1, -1], False))
    est = st.estimate_remaining(labels, drawn, [600], pool_size=1000)
    assert est.method == "random draws"
    low, high = st.urn_interval(400, 100, 1, 0.95)
    assert est.remaining == pytest.approx(max(0.0, 1 * 400 / 100 - 3))
    assert est.remaining_low == max(0, low - 3) and est.remaining_high == high - 3
    assert est.recall == pytest.approx(98 / (98 + est.remaining))
    assert est.recall_low <= est.recall <= est.recall_high
    assert "random" in est.in_words()


def test_platt_scaling_recovers_a_logistic_model():
    rng = np.random.default_rng(1)
    f = rng.normal(scale=2.0, size=20_000)
    y = np.where(rng.random(len(f)) < 1 / (1 + np.exp(-(1.5 * f - 0.5))), 1, -1)
    a, b = st.platt_scaling(f, y)
    assert a == pytest.approx(1.5, abs=0.08) and b == pytest.approx(-0.5, abs=0.08)
    # Platt's smoothed targets barely matter with this many labels: plain logistic regression agrees
    ref = LogisticRegression(C=1e6).fit(f[:, None], y)
    assert a == pytest.approx(ref.coef_[0, 0], abs=0.01) and b == pytest.approx(ref.intercept_[0], abs=0.01)


def test_the_calibration_check_uses_the_metrics_modules_roc_auc(monkeypatch):
    """One implementation of ROC AUC: the model-based estimate asks core.metrics.roc_auc whether scores rank."""
    calls = []

    def counted(y, scores):
        calls.append(len(y))
        return roc_auc(y, scores)

    monkeypatch.setattr(st, "roc_auc", counted)
    rng = np.random.default_rng(4)
    f = rng.normal(scale=2.0, size=400)
    y = np.where(f + rng.normal(size=400) > 0, 1, -1)
    est = st.estimate_from_model(f[200:], f[:200], y[:200], found=int(np.sum(y[:200] > 0)))
    assert calls == [200] and est.method == "model-based" and not math.isnan(est.remaining)


def test_model_based_estimate_is_labelled_and_covers_a_calibrated_truth():
    rng = np.random.default_rng(2)
    covered = 0
    for _ in range(40):
        f = rng.normal(scale=2.0, size=3000)
        y = np.where(rng.random(len(f)) < 1 / (1 + np.exp(-(f - 1.0))), 1, -1)
        asked = rng.random(len(f)) < 0.3  # scored when asked, then labelled
        est = st.estimate_from_model(f[~asked], f[asked], y[asked], found=int(np.sum(y[asked] > 0)))
        covered += est.remaining_low <= np.sum(y[~asked] > 0) <= est.remaining_high
        assert est.method == "model-based" and "no guarantee" in est.description
    assert covered >= 34
    empty = st.estimate_from_model(np.zeros(5), [0.1, 0.2], [1, 1], found=2)
    assert math.isnan(empty.remaining) and "cannot estimate yet" in empty.in_words()


@settings(max_examples=150, deadline=None)
@given(data=hs.data())
def test_the_estimate_is_never_above_the_unlabelled_items(data):
    pool = data.draw(hs.integers(1, 120), label="pool")
    n = data.draw(hs.integers(0, pool), label="labels")
    labels = np.array(data.draw(hs.lists(hs.sampled_from([1, -1]), min_size=n, max_size=n)), dtype=int)
    start = data.draw(hs.integers(0, n), label="check start")
    drawn = np.arange(n) >= start if data.draw(hs.booleans(), label="a check") else np.zeros(n, dtype=bool)
    starts = [start] if drawn.any() else []
    rng = np.random.default_rng(data.draw(hs.integers(0, 2**16), label="seed"))
    spread = data.draw(hs.sampled_from([0.1, 3.0, 30.0]), label="spread")
    unlabelled = rng.normal(loc=data.draw(hs.sampled_from([-5.0, 0.0, 5.0])), scale=spread, size=pool - n)
    asked = rng.normal(scale=spread, size=n) + 2.0 * labels
    target = data.draw(hs.sampled_from([0.8, 0.95]), label="target")
    confidence = data.draw(hs.sampled_from([0.9, 0.95, 0.99]), label="confidence")
    est = st.estimate_remaining(
        labels,
        drawn,
        starts,
        pool_size=pool,
        unlabelled_scores=unlabelled,
        asked_scores=asked,
        target_recall=target,
        confidence=confidence,
    )
    words = est.in_words()
    if est.known:
        assert 0 <= est.remaining_low <= est.remaining <= est.remaining_high <= pool - n
        shares = [r for r in (est.recall_low, est.recall, est.recall_high) if np.isfinite(r)]  # 0 / 0: none
        assert shares == sorted(shares) and all(0 <= r <= 1 for r in shares)
        assert est.method in ("random draws", "model-based", "all labelled") and est.method in words
    else:
        assert "cannot estimate yet" in words and est.method in words
        assert not drawn.any()
        assert (
            min(np.sum(labels > 0), np.sum(labels < 0)) < st.MIN_CALIBRATION_LABELS
            or roc_auc(labels, asked) < st.MIN_CALIBRATION_AUC
        )


def test_the_estimate_in_words_gives_shares_to_two_significant_digits():
    # recall 21 / 191 = 10.995%: "11%", not "10.99%"; 21 / 211 = 9.95%: "10%"
    est = st._finish("model-based", "test", 21, 170.0, 137.0, 190.0, 0.95, unlabelled=190)
    words = est.in_words()
    assert "About 170 positives still unlabelled (95% interval 137–190); recall 11% (10%–13%)" in words
    assert st._pct(0.0805) == "8.1%" and st._pct(0.5) == "50%"
    assert st._pct(0.09111) == "9.1%" and st._pct(0.1105) == "11%" and st._pct(0.0996) == "10%"
    assert st._pct(1.0) == "100%" and st._pct(0.00123) == "0.12%" and st._pct(0.0) == "0%"
    # a setting keeps its digits: a target of 97.5% is not shown as 98%
    state = st.statistical_rule(
        st.recall_check(
            [1] * 40 + [-1] * 10, [False] * 50, (), checking=False, pool_size=500, target_recall=0.975, confidence=0.9
        )
    )
    assert "recall ≥ 97.5% at 90% confidence" in state.message


def test_the_estimate_says_it_cannot_estimate_yet_instead_of_a_number():
    rng = np.random.default_rng(3)
    labels = np.array([1, 1, 1, -1, -1, -1, -1, -1, -1, -1])  # three positives scored when asked: too few
    est = st.estimate_remaining(
        labels,
        np.zeros(10, dtype=bool),
        [],
        pool_size=200,
        unlabelled_scores=rng.normal(size=190),
        asked_scores=rng.normal(size=10),
    )
    words = est.in_words()
    assert not est.known and words.startswith("Positives still unlabelled: cannot estimate yet.")
    assert "model-based" in words and "(3 and 7 so far)" in words and "random draws" in words
    assert not any(ch.isdigit() for ch in words.split("—")[0])  # no number before the reason
    # with a recall check's draws it can: unbiased, from the draws
    labels2 = np.concatenate([labels, [-1] * 20])
    drawn = np.arange(30) >= 10
    est = st.estimate_remaining(labels2, drawn, [10], pool_size=200)
    assert est.known and est.method == "random draws" and est.remaining_high <= 170
    # labels asked mostly by largest-positive: the model's scores are calibrated on the top of the ranking only
    labels3 = np.array([1] * 12 + [-1] * 8)
    args = dict(
        pool_size=200, unlabelled_scores=rng.normal(size=180) - 1, asked_scores=2.0 * labels3 + rng.normal(size=20)
    )
    by = ["random (cold start)"] * 4 + ["largest-positive"] * 16
    est = st.estimate_remaining(labels3, np.zeros(20, dtype=bool), [], asked_by=by, **args)
    assert not est.known and "random draws" in est.in_words()
    # the heuristic in the screener's words, not its code name
    assert "Most likely relevant first" in est.in_words() and "largest-positive" not in est.in_words()
    assert st.estimate_remaining(labels3, np.zeros(20, dtype=bool), [], asked_by=["near-boundary"] * 20, **args).known
    # scores when asked that do not rank the positives above the negatives calibrate nothing: not yet
    flat = st.estimate_remaining(
        labels3,
        np.zeros(20, dtype=bool),
        [],
        pool_size=200,
        unlabelled_scores=args["unlabelled_scores"],
        asked_scores=-labels3 * 0.5,
    )
    assert not flat.known and (
        "do not yet tell positives from negatives (a positive scored above a negative in 0% of the pairs; the "
        "estimate needs 70%)" in flat.in_words()
    )
    # no model scores kept (a pool too large): says so
    est = st.estimate_remaining(labels, np.zeros(10, dtype=bool), [], pool_size=200)
    assert not est.known and "cannot estimate yet" in est.in_words()
    # every item labelled: nothing left, and said so
    done = st.estimate_remaining(np.array([1, -1]), np.zeros(2, dtype=bool), [], pool_size=2)
    assert done.known and done.remaining == done.remaining_high == 0 and done.recall == 1


def test_the_estimate_honours_the_sessions_target_and_confidence():
    # a check whose 15th draw is its first positive: against a 95% target that shows recall too low (the check
    # ends there; the draws after it are not its own), against an 80% target it does not
    labels, drawn = _history(([1] * 20 + [-1] * 80, False), ([-1] * 14 + [1] + [-1] * 40, True))
    runs95 = st.check_runs(labels, drawn, [100], 1000, 0.95, 0.95)
    runs80 = st.check_runs(labels, drawn, [100], 1000, 0.8, 0.95)
    assert runs95[0].failed_at is not None and runs80[0].failed_at is None
    at95 = st.estimate_remaining(labels, drawn, [100], pool_size=1000, target_recall=0.95)
    at80 = st.estimate_remaining(labels, drawn, [100], pool_size=1000, target_recall=0.8)
    assert at95.description.startswith("1 positive in 15 items")
    assert at80.description.startswith("1 positive in 55 items")
    assert at95.remaining != at80.remaining
    # and the confidence sets the interval's level
    at99 = st.estimate_remaining(labels, drawn, [100], pool_size=1000, target_recall=0.8, confidence=0.99)
    assert at99.remaining_high > at80.remaining_high and "99% interval" in at99.in_words()


def test_too_few_positives_found_say_so_instead_of_a_gap_longer_than_the_pool():
    # the demo pool after 8 labels, one of them positive: K_tar = 1, so the gap would be every unlabelled item
    check = st.recall_check([-1] * 7 + [1], [False] * 8, (), checking=False, pool_size=1797)
    state = st.statistical_rule(check)
    assert "too few positives found (1)" in state.message and "1789" not in state.message
    assert not check.suggest
    # with enough positives found, the gap is said in labels as before
    check = st.recall_check([1] * 40 + [-1] * 100, [False] * 140, (), checking=False, pool_size=1797)
    words = st.statistical_rule(check).message
    # said plainly: how long a run without a positive, and how long the current one is
    assert f"suggested once {check.gap_needed} labels in a row bring no positive" in words
    assert "or after 277 while fewer than 150 positives are found; now: 100 in a row" in words
    assert "without a positive" not in words and "so far" not in words
    check = st.recall_check([1] * 40 + [-1] * 100, [False] * 140, (), checking=False, pool_size=1797, start="knee")
    words = st.statistical_rule(check).message
    assert "once the gain curve shows its knee (slope ratio 100.0, needs 116 and 10 more labels)" in words


# --------------------------------------------------------------------------- names and all rules


def test_parse_rules():
    specs = st.parse_rules("statistical,knee,margin,stability,consecutive:50")
    assert [str(s) for s in specs] == ["statistical", "knee", "margin", "stability", "consecutive:50"]
    assert str(st.parse_rules("margin:3")[0]) == "margin:3"
    for bad, words in [
        ("knee:3", "takes no parameter"),
        ("consecutive", "consecutive:50"),
        ("consecutive:x", "not a whole number"),
        ("consecutive:0", "at least 1"),
        ("oracle", "unknown stopping rule"),
        ("knee,knee", "twice"),
        ("", "at least one"),
    ]:
        with pytest.raises(ValueError, match=words):
            st.parse_rules(bad)
    with pytest.raises(ValueError, match="target recall"):
        st.check_target(1.0, 0.95)
    with pytest.raises(ValueError, match="confidence"):
        st.check_target(0.95, "high")


def test_evaluate_reports_every_rule_in_words():
    labels = np.array([1] * 40 + [-1] * 200)
    view = st.SessionView(
        labels=labels,
        drawn=np.zeros(len(labels), dtype=bool),
        check_starts=(),
        checking=False,
        pool_size=2000,
        n_in_margin=12.0,
        kappas=((230, 0.95),),
        stop_set_size=2000,
    )
    states = st.evaluate(st.DEFAULT_RULES, view)
    assert [s.rule for s in states] == ["statistical", "knee", "margin", "stability", "consecutive:50"]
    assert states[2].message == "margin: 12 unlabelled items the model is unsure of"
    assert states[4].stop and not states[2].stop
    assert all(s.message.startswith(s.rule.split(":")[0]) for s in states)


def test_with_every_item_labelled_the_statistical_rule_says_stop():
    labels, drawn = _history(([1] * 30 + [-1] * 170, False))
    check = st.recall_check(labels, drawn, [], checking=False, pool_size=200)  # nothing left unlabelled
    state = st.statistical_rule(check)
    assert state.stop and state.needed == 0
    assert "every item of the pool is labelled" in state.message and "draw at least 0" not in state.message
    one_left = st.recall_check(labels[:-1], drawn[:-1], [], checking=False, pool_size=200)
    assert not st.statistical_rule(one_left).stop


# --------------------------------------------------------------------------- when a check starts, what it needs


def test_the_earlier_rules_are_kept_by_name_statistical_knee_starts_at_the_knee():
    assert [str(s) for s in st.parse_rules("statistical-knee,statistical-run")] == [
        "statistical-knee",
        "statistical-run",
    ]
    with pytest.raises(ValueError, match="takes no parameter"):
        st.parse_rules("statistical-run:3")
    # the gain curve bends at label 100 (90 of 94 positives), then 300 labels find 4 more and 150 none: the
    # knee is clear (slope ratio 0.9 / (5 / 450) = 81 >= 156 - 94) and the run of 150 negatives is half of
    # N_u / K_tar = 1450 / 5 = 290 (but not all of it)
    labels = piecewise_gain([(90, 100), (4, 300), (0, 150)])
    n, pool = len(labels), 2000
    assert st.suggested_gap(labels, pool, 0.95) == 290 and st.labels_since_last_positive(labels) == 150
    assert st.knee_rule(labels).stop
    assert st.check_suggested(labels, pool, start="knee") and not st.check_suggested(labels, pool, start="run")
    # the knee alone, or half the run alone, is not enough
    assert not st.check_suggested(labels[:-6], pool, start="knee")
    half_run = piecewise_gain([(5, 50), (0, 200)])  # 200 negatives of the 350 the run needs, no knee
    assert st.suggested_gap(half_run, 600, 0.95) == 350 and not st.knee_rule(half_run).stop
    assert not st.check_suggested(half_run, 600, start="knee")
    knee = st.recall_check(labels, np.zeros(n, dtype=bool), [], checking=False, pool_size=pool, start="knee")
    run = st.recall_check(labels, np.zeros(n, dtype=bool), [], checking=False, pool_size=pool, start="run")
    assert knee.suggest and not run.suggest
    assert "suggested now" in st.statistical_rule(knee).message
    early = st.recall_check(labels[:-6], np.zeros(n - 6, dtype=bool), [], checking=False, pool_size=pool, start="knee")
    half = math.ceil(early.gap_needed / 2)
    assert early.gap == 144 < half and not early.suggest
    assert (
        f"or after {half} once the gain curve shows its knee (it does); now: 144 in a row"
        in st.statistical_rule(early).message
    )
    assert st.statistical_rule(run).rule == "statistical-run"
    assert st.statistical_rule(run).message.startswith("statistical-run: a random check is suggested once")
    view = st.SessionView(labels=labels, drawn=np.zeros(n, dtype=bool), check_starts=(), checking=False, pool_size=pool)
    states = st.evaluate("statistical-knee,statistical-run", view)
    assert [s.rule for s in states] == ["statistical-knee", "statistical-run"]
    # after a failed check the knee (which has not moved) no longer starts one: a run of negatives does
    failed_labels, drawn = _history((labels, False), ([-1, 1], True))
    after = st.recall_check(failed_labels, drawn, [n], checking=False, pool_size=pool, start="knee")
    assert after.phase == "failed" and not after.suggest
    assert not st.check_suggested(failed_labels, pool, checks_done=1, start="knee")


def test_the_default_starts_at_the_knee_once_waiting_no_longer_pays_and_the_knee_rule_is_kept_by_name():
    assert st.CHECK_STARTS == {"statistical": "yield", "statistical-knee": "knee", "statistical-run": "run"}
    assert [str(s) for s in st.parse_rules("statistical,statistical-knee")] == ["statistical", "statistical-knee"]
    pool = 5000
    # 480 positives in 600 labels, 10 in the next 300, then 2 in 100 and 50 negatives: a clear knee; the run
    # of 50 is short of half of N_u / K_tar (3,950 / 26 = 152, half 76)
    labels = piecewise_gain([(480, 600), (10, 300), (2, 100), (0, 50)])
    n = len(labels)
    assert st.knee_rule(labels).stop and st.suggested_gap(labels, pool, 0.95) == 152
    assert st.labels_since_last_positive(labels) == 50
    # with 2 positives in the last 150 labels, one more heuristic label finds 2 / 150 of a positive, which would
    # save f * (b_1 - b_0) draws if a check met it (f = b_0 / N_u): less than the label costs
    urn, alpha = pool - n, st.check_alpha(1, 0.95)
    b0, b1 = st.pass_draws(urn, 492, 0, 0.95, alpha), st.pass_draws(urn, 492, 1, 0.95, alpha)
    share = b0 / urn
    assert 2 / 150 * share * st.EXTRA_DRAWS_PER_POSITIVE * urn / st.k_target(492, 0, 0.95) < 1 - share
    assert abs(st.EXTRA_DRAWS_PER_POSITIVE * urn / st.k_target(492, 0, 0.95) - (b1 - b0)) < 0.1 * (b1 - b0)
    assert not st.waiting_pays(labels, pool)
    assert st.check_suggested(labels, pool)  # the default
    assert not st.check_suggested(labels, pool, start="knee") and not st.check_suggested(labels, pool, start="run")
    check = st.recall_check(labels, np.zeros(n, dtype=bool), [], checking=False, pool_size=pool)
    assert check.suggest and check.rule == "statistical" and "suggested now" in st.statistical_rule(check).message
    kept = st.recall_check(labels, np.zeros(n, dtype=bool), [], checking=False, pool_size=pool, start="knee")
    assert not kept.suggest and kept.rule == "statistical-knee"
    assert (
        "or after 76 once the gain curve shows its knee (it does); now: 50 in a row"
        in st.statistical_rule(kept).message
    )
    # 20 positives in the last 150 labels: waiting pays, and no check is suggested before half the run
    busy = piecewise_gain([(480, 600), (10, 300), (20, 100), (0, 50)])
    assert st.knee_rule(busy).stop and st.waiting_pays(busy, pool) and not st.check_suggested(busy, pool)
    words = st.statistical_rule(
        st.recall_check(busy, np.zeros(len(busy), dtype=bool), [], checking=False, pool_size=pool)
    ).message
    assert "sooner at the knee once the last 150 labels find too few positives" in words
    # after a check that drew items, only the whole run suggests the next one
    assert not st.check_suggested(labels, pool, checks_done=1)
    # fewer than 150 positives found (the knee's threshold 156 - 60 is not reached on this straight gain
    # curve): half the run alone suggests the first check; the knee start waits for the whole run
    few = piecewise_gain([(60, 900), (0, 310)])
    assert not st.knee_rule(few).stop and st.suggested_gap(few, 3500, 0.95) == 573
    assert st.check_suggested(few, 3500) and not st.check_suggested(few, 3500, start="knee")
    assert not st.check_suggested(few[:-30], 3500)  # 280 < 290: not yet half the run (2,320 / 4 = 580)
    assert (
        "or after 290 while fewer than 150 positives are found; now: 280 in a row"
        in st.statistical_rule(
            st.recall_check(few[:-30], np.zeros(len(few) - 30, dtype=bool), [], checking=False, pool_size=3500)
        ).message
    )
    with pytest.raises(ValueError, match="'yield'"):
        st.check_suggested(labels, pool, start="soon")


def first_check_error(seed: int, start: str, confidence: float = 0.95) -> tuple[float, bool, int]:
    """(exact probability that the session's first check stops below the target, given the urn when it started;
    whether the simulated session stopped below the target; its labels at stop)."""
    recall, n_labels, first = simulate_screening(seed, confidence=confidence, start=start, record=True)
    if first is None:  # (every item labelled before a check was suggested)
        return 0.0, recall < 0.95, n_labels
    urn, before, positives = first
    budget = st.check_alpha(1, confidence)
    design = st.check_design(urn, before, 0.95, budget, 1 - confidence)
    exact = (
        float(st._errors(urn, before, 0.95, design.level, 1 - confidence, np.array([positives]))[0])
        if positives >= st.k_target(before, 0, 0.95)
        else 0.0
    )
    return exact, recall < 0.95, n_labels


@pytest.mark.slow
@pytest.mark.parametrize("start", ["yield", "knee"])
def test_sessions_stop_below_the_target_as_often_as_the_exact_hypergeometric_computation_says(start):
    # 240 seeded sessions that start their check when waiting no longer pays (the default) or at the knee: how
    # often they stopped below the target agrees with the exact probability (scipy.stats.hypergeom, draw by
    # draw, given each session's urn when its check started) and stays within 1 - confidence; at 50%
    # confidence the same holds at a larger error
    for confidence, seeds in ((0.95, range(240)), (0.5, range(100))):
        results = [first_check_error(seed, start, confidence) for seed in seeds]
        exact = np.array([e for e, _, _ in results])
        missed = np.array([m for _, m, _ in results])
        reps = len(results)
        bound = float(np.mean(exact))
        assert bound <= 1 - confidence
        # later checks add at most the rest of the budget (0.1 of it) to the first check's error
        slack = 4 * math.sqrt(max(bound * (1 - bound), 0.01) / reps) + 0.1 * (1 - confidence)
        assert abs(np.mean(missed) - bound) < slack, (confidence, np.mean(missed), bound)
    assert np.mean(missed) > 0.1  # the weak control does miss: the simulation can see a miss


@settings(max_examples=150, deadline=None)
@given(
    segments=hs.lists(
        hs.tuples(hs.lists(hs.booleans(), min_size=0, max_size=120), hs.booleans()), min_size=1, max_size=4
    ),
    pool_extra=hs.integers(0, 400),
    start=hs.sampled_from(["yield", "knee", "run"]),
    checking=hs.booleans(),
)
def test_the_rule_never_says_stop_before_its_sample_is_complete(segments, pool_extra, start, checking):
    # any history: heuristic segments and runs of random draws, a check started before each run of draws
    labels, drawn, starts = [], [], []
    for values, is_draw in segments:
        if is_draw:
            starts.append(len(labels))
        labels += [1 if v else -1 for v in values]
        drawn += [is_draw] * len(values)
    if not labels:
        labels, drawn, starts = [1], [False], []
    if not any(v > 0 for v in labels):
        labels[0] = 1
    pool = len(labels) + pool_extra
    check = st.recall_check(labels, drawn, starts, checking=checking, pool_size=pool, start=start)
    state = st.statistical_rule(check)
    if state.stop:
        if check.urn > 0:  # (nothing left unlabelled: recall is 1)
            run = check.last
            design = check.design or st.check_design(
                run.urn, run.found_before, 0.95, st.check_alpha(check.check_number - (check.design is None), 0.95), 0.05
            )
            assert run.failed_at is None and run.draws >= design.pass_draws(run.positives)
    else:
        assert state.needed is None or state.needed >= 0
    assert not (check.suggest and check.checking)
    probable = st.probable_labels(check)
    if probable is not None:
        assert check.needed <= probable <= max(check.urn - check.draws, 0)


def test_probable_labels_are_the_median_of_the_draws_the_check_will_need():
    labels, drawn = _history(([1] * 95 + [-1] * 505, False), ([-1] * 30 + [1] + [-1] * 19, True))
    check = st.recall_check(labels, drawn, [600], checking=True, pool_size=1000)
    probable = st.probable_labels(check)
    assert check.needed <= probable <= 350
    # the same by simulation: the urn holds the point estimate (1 positive in 50 draws of 400: 8), with 7 left
    # among the 350 items not yet drawn; draw on until the check passes or fails
    design = check.design
    rng = np.random.default_rng(7)
    ends = []
    for _ in range(2000):
        rest = np.zeros(350, dtype=bool)
        rest[:7] = True
        rng.shuffle(rest)
        k, n, end = 1, 50, math.inf  # (a check that fails never gives the guarantee)
        for hit in rest:
            if n >= design.pass_draws(k):
                end = n - 50
                break
            n, k = n + 1, k + int(hit)
            if hit and n <= design.fail_draws(k):
                break
        ends.append(end)
    assert abs(probable - float(np.median(ends))) <= max(3.0, 0.05 * probable), (probable, np.median(ends))
    words = st.statistical_rule(check).message
    assert "probably" in words
    # no positive drawn yet: the fewest draws, and the words say so
    labels, drawn = _history(([1] * 95 + [-1] * 505, False), ([-1] * 30, True))
    check = st.recall_check(labels, drawn, [600], checking=True, pool_size=1000)
    assert st.probable_labels(check) == check.needed


def test_the_outlook_in_plain_words_before_during_and_after_a_check():
    heuristic = [1] * 95 + [-1] * 505
    for draws, words in [
        ([], "Guarantee: at least 161 random draws once a random check starts"),
        ([-1] * 30, "Guarantee: 141 more random draws, if none of them is a positive"),
        ([-1] * 30 + [1] + [-1] * 19, "Guarantee: probably about 260 more random draws (at least 170"),
        ([-1] * 10 + [1, 1], "Guarantee: not yet; a new random check"),
    ]:
        labels, drawn = _history((heuristic, False), (draws, True))
        for start in ("yield", "knee", "run"):  # the guarantee's line does not depend on when the check started
            check = st.recall_check(
                labels, drawn, [600] if draws else [], checking=bool(draws), pool_size=1000, start=start
            )
            assert st.outlook(check).startswith(words), (start, st.outlook(check))
    # about 260: the median, to two significant digits
    labels, drawn = _history((heuristic, False), ([-1] * 30 + [1] + [-1] * 19, True))
    check = st.recall_check(labels, drawn, [600], checking=True, pool_size=1000)
    assert round(st.probable_labels(check), -1) == 260


def test_the_outlook_says_plainly_when_a_check_now_would_read_most_of_what_is_left():
    early = st.recall_check([1] * 3 + [-1] * 17, [False] * 20, [], checking=False, pool_size=400)
    share = min(early.planned, early.urn) / early.urn
    assert share > st.READ_MOST_SHARE
    assert st.outlook(early) == (
        f"Guarantee: a random check now would mean reading about {st._pct(share)} of "
        f"what is left (at least {early.planned:,} random draws of {early.urn} unlabelled "
        "items): keep labelling first; the check is suggested when the model's picks stop finding positives."
    )
    later = st.recall_check([1] * 95 + [-1] * 505, [False] * 600, [], checking=False, pool_size=1000)
    assert later.planned <= st.READ_MOST_SHARE * later.urn
    assert st.outlook(later).startswith("Guarantee: at least 161 random draws once a random check starts")


STRICTER = "more than the first: each new check must pass a stricter test so that the guarantee holds over all of them"


def test_a_later_check_needs_more_draws_than_the_first_and_the_outlook_says_why():
    """A new user saw "at least 1,688" before the first check and "at least 1,760" after three draws of a check
    stopped early: the second check spends a smaller share of the error budget (``check_alpha``), so it must
    pass a stricter test, and the outlook says so."""
    heuristic = [1] * 10 + [-1] * 20
    first = st.recall_check(heuristic, [False] * 30, [], checking=False, pool_size=1800)
    labels, drawn = _history((heuristic, False), ([-1] * 3, True))
    second = st.recall_check(labels, drawn, [30], checking=False, pool_size=1800)
    assert (first.check_number, second.check_number) == (1, 2) and second.phase == "heuristic"
    # the reason is the stricter level alone: the first check's level on the same urn needs fewer draws
    as_first = st.pass_draws(second.urn, second.found_before, 0, 0.95, st.check_alpha(1, 0.95))
    assert as_first < first.planned < second.planned
    assert second.alpha == st.check_alpha(2, 0.95) < st.check_alpha(1, 0.95)
    assert STRICTER in st.outlook(second) and STRICTER not in st.outlook(first)
    assert f"at least {second.planned:,} random draws" in st.outlook(second)
    # (a later check on a pool where the guarantee needs few draws: the same words, in the other sentence)
    heuristic = [1] * 300 + [-1] * 300
    labels, drawn = _history((heuristic, False), ([-1] * 3, True), ([-1] * 10, False))
    later = st.recall_check(labels, drawn, [600], checking=False, pool_size=1000)
    assert later.check_number == 2 and later.planned <= st.READ_MOST_SHARE * later.urn
    assert st.outlook(later).startswith(f"Guarantee: at least {later.planned:,} random draws once a random check")
    assert STRICTER in st.outlook(later)


def test_an_estimate_from_a_few_draws_of_a_stopped_check_is_too_early_its_numbers_unchanged():
    """Three draws of a check stopped early gave "0–1,249 (95% interval); recall 1.2%–100%": the estimate from
    draws follows the model-based estimate's rule (``too_early``) in words; its numbers stay as they were."""
    heuristic = [1] * 10 + [-1] * 20
    labels, drawn = _history((heuristic, False), ([-1] * 3, True))
    stopped = st.estimate_remaining(labels, drawn, [30], pool_size=1800, checking=False)
    low, high = st.urn_interval(1770, 3, 0, 0.95)
    assert (stopped.remaining, stopped.remaining_low, stopped.remaining_high) == (0.0, low, high)
    assert stopped.method == "random draws" and stopped.too_early
    words = stopped.in_words()
    assert words.startswith(
        "Positives still unlabelled: too early to estimate from 3 random draws; draw more in a random check."
    ), words
    assert f"{high:,}" not in words and "stopped" in words
    # while the check is on, the same words without "stopped"; the same numbers
    on = st.estimate_remaining(labels, drawn, [30], pool_size=1800, checking=True)
    assert on.too_early and "stopped" not in on.in_words()
    assert (on.remaining_low, on.remaining_high) == (low, high)
    # many draws: the numbers, as before
    labels, drawn = _history(([1] * 95 + [-1] * 505, False), ([-1] * 99 + [1], True))
    enough = st.estimate_remaining(labels, drawn, [600], pool_size=1000, checking=False)
    assert not enough.too_early and enough.in_words().startswith("About 3 positives still unlabelled")
    assert "stopped" in enough.description


def test_the_start_button_is_told_when_a_check_now_would_read_most_of_what_is_left():
    early = st.recall_check([1] * 3 + [-1] * 17, [False] * 20, [], checking=False, pool_size=400)
    share = st._pct(min(early.planned, early.urn) / early.urn)
    assert st.check_caution(early) == (
        f"A check now would mean reading about {share} of what is left: keep labelling first (your choice)."
    )
    assert st.check_blocked(early) is None  # not blocked: the analyst may still start it
    later = st.recall_check([1] * 95 + [-1] * 505, [False] * 600, [], checking=False, pool_size=1000)
    assert st.check_caution(later) is None
    none_yet = st.recall_check([-1] * 10, [False] * 10, [], checking=False, pool_size=100)
    assert st.check_caution(none_yet) is None


def test_a_check_cannot_start_before_a_positive_nor_with_nothing_left_and_says_why():
    none_yet = st.recall_check([-1] * 10, [False] * 10, [], checking=False, pool_size=100)
    assert st.check_blocked(none_yet) == "A random check can start once a positive is labelled."
    assert st.outlook(none_yet) == st.CHECK_NEEDS_A_POSITIVE
    assert st.check_blocked(st.recall_check([1] + [-1] * 9, [False] * 10, [], checking=False, pool_size=100)) is None
    everything = st.recall_check([1] + [-1] * 9, [False] * 10, [], checking=False, pool_size=10)
    assert st.check_blocked(everything) == "Every item is labelled: there is nothing left to check."


# --------------------------------------------------------------------------- ranked check (replays)


def test_ranked_levels_share_the_budget():
    budget = 0.05
    levels = [st.ranked_level(j, budget) for j in range(20000)]
    assert levels[0] == pytest.approx(budget * st.RANKED_FIRST_SHARE)
    assert all(a > b for a, b in zip(levels, levels[1:], strict=False))
    assert budget - 1e-4 * budget < sum(levels) <= budget  # the rest of the 1 / j^2 series is below 1e-4 of it
    with pytest.raises(ValueError, match="cannot be negative"):
        st.ranked_level(-1, budget)


@pytest.mark.parametrize(("urn", "found", "unpassed", "level"), [(60, 19, 0, 0.05), (60, 40, 2, 0.1), (45, 0, 1, 0.3)])
def test_ranked_draws_are_the_fewest_by_brute_force(urn, found, unpassed, level):
    big_k = math.floor(Fraction(found) * Fraction(1, 19)) + 1 + unpassed  # missed positives below 95% recall, + j
    fewest = next(n for n in range(unpassed, urn + 1) if comb_p_value(n, unpassed, urn, big_k) <= level)
    assert st.ranked_draws(urn, found, unpassed, 0.95, level) == fewest


def test_ranked_draws_need_none_when_the_urn_cannot_hold_enough_positives():
    # 380 found: 21 missed put recall below 95%; an urn of 20 items cannot hold them
    assert st.ranked_draws(20, 380, 0, 0.95, 0.05) == 0


def test_the_ranked_replay_refuses_a_ranking_that_is_not_one_of_the_pool():
    with pytest.raises(ValueError, match="each of the 4 pool items once"):
        st.follow_ranking_ranked([0, 1, 1, 3], [1, -1, -1, 1], rng=np.random.default_rng(0))


def ranked_misses(y: np.ndarray, confidence: float, sessions: int) -> tuple[float, float]:
    """How often the ranked check stopped below 95% recall over seeded sessions on ``y`` ranked as it stands,
    and the bound of its error computed with scipy: sum over j of P(X <= j), X ~ Hypergeom(N, m* + j, n*_j),
    m* the fewest missed positives below the target and n*_j the fewest draws with that at most a_j."""
    order, total = np.arange(len(y)), int(np.sum(y > 0))
    missed, start = [], None
    for seed in range(sessions):
        labels, drawn, starts = st.follow_ranking_ranked(
            order, y, rng=np.random.default_rng(seed), start="run", confidence=confidence
        )
        assert start is None or starts == [start]  # the start reads the ranking's labels only
        start = starts[0]
        missed.append(sum(v > 0 for v in labels) < 0.95 * total)
    urn = len(y) - start
    in_urn = int(np.sum(y[start:] > 0))
    m_star = math.floor(Fraction(total, 20)) + 1
    bound = 0.0
    for j in range(in_urn - m_star + 1):  # the last m* + j positives of the urn must exist
        big_k, level = m_star + j, st.ranked_level(j, 1 - confidence)
        fewest = next(n for n in range(urn + 1) if stats.hypergeom.cdf(j, urn, big_k, n) <= level)
        bound += float(stats.hypergeom.cdf(j, urn, big_k, fewest))
    return float(np.mean(missed)), bound


@pytest.mark.slow
def test_the_ranked_check_stops_below_the_target_no_more_often_than_its_exact_bound():
    # 50 positives among the first 60 ranked items, then 540 negatives and the missed positives: last in the
    # ranking (the worst case: the ranking never reaches them) or spread through the rest at random
    rng = np.random.default_rng(7)
    for tail, spread in ((3, False), (10, True)):
        y = np.array([1] * 50 + [-1] * 550 + [1] * tail)
        if spread:
            y[60:] = rng.permutation(y[60:])
        for confidence, sessions in ((0.95, 200), (0.5, 300)):
            rate, bound = ranked_misses(y, confidence, sessions)
            assert bound <= 1 - confidence
            assert rate <= bound + 4 * math.sqrt(max(bound * (1 - bound), 0.01) / sessions), (tail, confidence)
            if confidence == 0.5:
                assert rate > 0.1  # the simulation can see a miss


def test_the_knee_rule_on_a_pool_smaller_than_its_minimum_effort_says_it_cannot_stop_before_the_end():
    """Cormack & Grossman's knee rule waits for 150 labels: on a pool of 60 items it cannot fire before every item
    is labelled, and says so instead of "135 more" labels than the pool holds; the words read as a screener's."""
    labels = np.array([1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1])
    view = st.SessionView(
        labels=labels, drawn=np.zeros(len(labels), dtype=bool), check_starts=(), checking=False, pool_size=60
    )
    (state,) = st.evaluate("knee", view)
    assert not state.stop and state.needed is None
    assert "more than the 60 items of the pool" in state.message and "more)" not in state.message
    # on a large pool the minimum effort is still said with the labels it needs
    (state,) = st.evaluate("knee", dataclasses.replace(view, pool_size=5000))
    assert state.needed == 150 - len(labels) and f"({150 - len(labels)} more)" in state.message
    assert "slope ratio" not in state.message and "as often before label" in state.message


def test_the_knee_rule_says_finding_has_not_slowed_when_its_adjusted_ratio_is_below_one():
    """Eight positives in nine labels, then a negative: the rule's adjusted slope ratio (one positive added after
    the knee) is 0.89, which was said as "finding slowed 0.9-fold"; the words say it has not slowed."""
    labels = np.array([1, 1, 1, -1, 1, 1, 1, 1, 1, -1])
    view = st.SessionView(
        labels=labels, drawn=np.zeros(len(labels), dtype=bool), check_starts=(), checking=False, pool_size=5000
    )
    (state,) = st.evaluate("knee", view)
    assert state.value is not None and state.value < 1
    assert "fold" not in state.message and "slowed 0" not in state.message
    assert "finding has not slowed after label 9" in state.message
    # a real slowing says how many times as often the positives came before
    (slow,) = st.evaluate("knee", dataclasses.replace(view, labels=np.array([1, 1, -1, 1, 1, 1, 1, 1, -1, -1])))
    assert slow.value is not None and slow.value > 1 and f"{slow.value:.1f}× as often before label" in slow.message
