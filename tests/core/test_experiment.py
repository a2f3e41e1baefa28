"""Side-by-side comparison of strategies (core.experiment)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from core.datasets import load_bundled, make_gaussians
from core.experiment import ROW_COLUMNS, format_summary, run_comparison
from core.metrics import learning_curve_area

TIMING = ["update_ms", "query_ms"]


@pytest.fixture(scope="module")
def digits_subset():
    ds = load_bundled("digits", positive=8)
    sub = np.random.default_rng(0).choice(len(ds.X), 700, replace=False)
    return ds.X[sub], ds.y[sub]


@pytest.fixture(scope="module")
def near_boundary_vs_random(digits_subset):
    X, y = digits_subset
    return run_comparison(
        X,
        y,
        strategies=["near-boundary", "random"],
        solver="incremental",
        solver_params={"C": 10.0},
        budget=60,
        seeds=[0, 1, 2, 3],
        initial=10,
    )


def test_near_boundary_beats_random_on_digits(near_boundary_vs_random):
    res = near_boundary_vs_random
    s = res.summary.set_index("strategy")
    # Same solver, same seeds, same split and the same ten initial labels: the
    # only difference is the query rule.  Over these fixed seeds near-boundary's
    # normalised area is 0.03-0.05 higher on every seed; assert a margin it clears.
    assert s.loc["near-boundary", "alc_mean"] > s.loc["random", "alc_mean"] + 0.015
    assert s.loc["near-boundary", "wins"] >= 3
    assert s.loc["near-boundary", "final_auc"] > s.loc["random", "final_auc"]


def test_rows_are_tidy_and_budget_counts_every_label(near_boundary_vs_random):
    res = near_boundary_vs_random
    assert list(res.rows.columns[: len(ROW_COLUMNS)]) == ROW_COLUMNS
    for (_, _), g in res.rows.groupby(["strategy", "seed"]):
        assert list(g["n_labels"]) == list(range(1, 61))  # initial labels included
        assert g["cold_start"].iloc[:10].all()
    # both strategies started from the same initial labels on each seed
    for seed in range(4):
        a = res.rows[(res.rows.strategy == "near-boundary") & (res.rows.seed == seed)]["item"].iloc[:10]
        b = res.rows[(res.rows.strategy == "random") & (res.rows.seed == seed)]["item"].iloc[:10]
        assert list(a) == list(b)


def test_summary_is_computed_from_the_rows(near_boundary_vs_random):
    res = near_boundary_vs_random
    ref = res.references.set_index("seed")["auc"]
    for r in res.runs.itertuples():
        g = res.rows[(res.rows.strategy == r.strategy) & (res.rows.seed == r.seed)]
        assert r.alc == pytest.approx(learning_curve_area(g.n_labels, g.auc, reference=ref[r.seed]))
        hit = g[g.auc >= 0.99 * ref[r.seed]]
        assert (r.labels_99 if pd.notna(r.labels_99) else None) == (int(hit.n_labels.iloc[0]) if len(hit) else None)
    s = res.summary.set_index("strategy")
    nb = res.runs[res.runs.strategy == "near-boundary"]["alc"]
    assert s.loc["near-boundary", "alc_mean"] == pytest.approx(nb.mean())
    assert s.loc["near-boundary", "alc_std"] == pytest.approx(nb.std(ddof=1))
    upd = res.rows[res.rows.strategy == "random"]["update_ms"]
    assert s.loc["random", "update_ms_p95"] == pytest.approx(np.percentile(upd, 95))
    assert s.loc["near-boundary", "wins"] + s.loc["near-boundary", "ties"] + s.loc["near-boundary", "losses"] == 4
    text = format_summary(res.summary)
    assert "near-boundary" in text and "baseline" in text


def test_seeded_runs_are_reproducible_in_parallel_processes():
    X, y = make_gaussians(160, np.random.default_rng(3), separation=2.5)
    kw = dict(strategies="randomized-search,ramp-region", budget=25, seeds=2, initial=4, solver_params={"C": 1.0})
    one = run_comparison(X, y, n_jobs=1, **kw)
    calls = []
    two = run_comparison(X, y, n_jobs=2, progress=lambda d, t, desc: calls.append((d, t)), **kw)
    pd.testing.assert_frame_equal(one.rows.drop(columns=TIMING), two.rows.drop(columns=TIMING))
    pd.testing.assert_frame_equal(one.runs, two.runs)
    assert set(one.rows.strategy) == {"randomized-search", "ramp-region"}  # what was asked, no random added
    assert "vs random" not in format_summary(one.summary)  # (nothing to win or lose against)
    assert calls[-1][0] == calls[-1][1] == len(calls)
    ramp = one.runs[one.runs.strategy == "ramp-region"]
    assert (ramp.items_seen >= ramp.labels_asked).all()


def test_bad_arguments_are_refused():
    X, y = make_gaussians(40, np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown strategy"):
        run_comparison(X, y, strategies="nearest", budget=5, seeds=1)
    with pytest.raises(ValueError, match="one class"):
        run_comparison(X, np.ones(40), strategies="random", budget=5, seeds=1)
    with pytest.raises(ValueError, match="binary"):
        run_comparison(X, np.arange(40) % 3, strategies="random", budget=5, seeds=1)
    with pytest.raises(ValueError, match="budget"):
        run_comparison(X, y, strategies="random", budget=0, seeds=1)


# --------------------------------------------------------------------------- recall and stopping rules


@pytest.fixture(scope="module")
def digits_pool():
    ds = load_bundled("digits", positive=8)
    sub = np.random.default_rng(1).choice(len(ds.X), 900, replace=False)
    from core.datasets import standardize

    return standardize(ds.X[sub])[0], ds.y[sub]


@pytest.fixture(scope="module")
def stopping_comparison(digits_pool):
    X, y = digits_pool
    return run_comparison(
        X,
        y,
        strategies=["largest-positive", "random"],
        budget=450,
        seeds=[0, 1],
        test_fraction=0,
        stopping="statistical,knee,margin,stability,consecutive:30",
    )


def test_test_fraction_zero_reports_recall_without_auc(stopping_comparison, digits_pool):
    res = stopping_comparison
    _, y = digits_pool
    assert res.references.empty and res.rows["auc"].isna().all()
    positives = int(np.sum(y > 0))
    for r in res.runs.itertuples():
        g = res.rows[(res.rows.strategy == r.strategy) & (res.rows.seed == r.seed)]
        found = np.cumsum(g["label"].to_numpy() > 0)
        assert r.positives_total == positives and r.pool_size == len(y)
        assert np.allclose(g["recall"], found / positives)
        for level in (50, 80, 95):
            need = math.ceil(level * positives / 100)
            expected = int(np.argmax(found >= need)) + 1 if found[-1] >= need else None
            got = getattr(r, f"labels_recall_{level}")
            assert (None if pd.isna(got) else int(got)) == expected
        if expected is not None:
            assert r.wss_95 == pytest.approx((len(y) - expected) / len(y) - 0.05)
    s = res.summary.set_index("strategy")
    assert s.loc["largest-positive", "labels_recall_50"] < s.loc["random", "labels_recall_50"]
    text = format_summary(res.summary)
    assert "recall 95%" in text and "WSS@95" in text and "n/a" in text


def test_stop_rows_are_where_each_rule_first_says_stop(stopping_comparison):
    from core import stopping as st
    from core.experiment import STOP_COLUMNS

    res = stopping_comparison
    assert list(res.stops.columns) == STOP_COLUMNS
    assert len(res.stops) == 2 * 2 * 5  # strategies (with the random baseline) x seeds x rules
    for r in res.stops.itertuples():
        g = res.rows[(res.rows.strategy == r.strategy) & (res.rows.seed == r.seed)]
        labels, margin = g["label"].to_numpy(), g["n_in_margin"].to_numpy()
        if r.rule in ("knee", "margin", "consecutive:30"):
            first = None
            for n in range(1, len(labels) + 1):
                state = (
                    st.knee_rule(labels[:n])
                    if r.rule == "knee"
                    else st.margin_rule(margin[n - 1], labels[:n])
                    if r.rule == "margin"
                    else st.consecutive_rule(labels[:n], 30)
                )
                if state.stop:
                    first = n
                    break
            assert (None if pd.isna(r.n_labels_at_stop) else int(r.n_labels_at_stop)) == first, r
        if not pd.isna(r.n_labels_at_stop) and r.rule != "statistical":
            assert r.recall_at_stop == pytest.approx(g["recall"].iloc[int(r.n_labels_at_stop) - 1])
        if not pd.isna(r.n_labels_at_stop):
            assert r.n_labels_at_stop <= 450 and 0 <= r.recall_at_stop <= 1
    summary = res.stop_summary.set_index(["strategy", "rule"])
    part = res.stops[(res.stops.strategy == "largest-positive") & (res.stops.rule == "knee")].dropna()
    assert summary.loc[("largest-positive", "knee"), "stopped"] == len(part)
    if len(part):
        assert summary.loc[("largest-positive", "knee"), "labels_at_stop"] == pytest.approx(
            part.n_labels_at_stop.astype(float).mean()
        )
    assert "reached 95%" in res.summary_text()


@pytest.mark.parametrize("rule", ["statistical", "statistical-knee", "statistical-run"])
def test_statistical_branch_equals_a_session_run_from_scratch(digits_pool, rule):
    """A statistical rule's session starts from the run's saved loop state at the label where it first
    suggests a check; replaying the same protocol from a fresh loop must give the same stop (each rule's
    own start: at the knee, or after a run of negatives)."""
    from core import stopping as st
    from core.experiment import StoppingSetup, _run_strategy, _split
    from core.loop import ActiveLearningLoop

    X, y = digits_pool
    X, y = X[:500], y[:500]
    setup = StoppingSetup(st.parse_rules(rule), 0.9, 0.9)
    _, stops = _run_strategy(X, y, "largest-positive", "incremental", {}, {}, 500, 3, 10, 0.0, "random", setup)
    (stop,) = stops
    assert stop["rule"] == rule
    # from scratch: the same pool (the split with nothing held out still shuffles it), loop and random draws
    X, y = _split(X, y, 3, 0.0)[:2]
    loop = ActiveLearningLoop(X, strategy="largest-positive", solver="incremental", seed=3, initial=10, oracle_y=y)
    labels, drawn, starts, checking = [], [], [], False
    rng = np.random.default_rng([3, 0x57A7])
    while True:
        check = st.recall_check(
            labels,
            drawn,
            starts,
            checking=checking,
            pool_size=len(X),
            target_recall=0.9,
            confidence=0.9,
            start=st.CHECK_STARTS[rule],
        )
        action = st.simulated_analyst(check)
        checking = checking and check.phase != "failed"
        if action == "stop" or len(labels) >= 500:
            break
        if action == "start":
            starts.append(len(labels))
            checking = True
            continue
        if action == "draw":
            item = int(rng.choice(np.flatnonzero(~loop.labelled_mask)))
        else:
            checking = False
            item = int(loop.next_query().index)
        loop.teach(item, int(y[item]))
        labels.append(int(y[item]))
        drawn.append(action == "draw")
    assert action == "stop" and any(drawn)  # the check ran and passed
    assert stop["n_labels_at_stop"] == len(labels)
    assert stop["recall_at_stop"] == pytest.approx(np.sum(np.array(labels) > 0) / np.sum(y > 0))


def test_stopping_arguments_are_checked():
    X, y = make_gaussians(40, np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown stopping rule"):
        run_comparison(X, y, strategies="random", budget=5, seeds=1, stopping="oracle")
    with pytest.raises(ValueError, match="target recall"):
        run_comparison(X, y, strategies="random", budget=5, seeds=1, stopping="knee", target_recall=1.5)
    with pytest.raises(ValueError, match="test_fraction"):
        run_comparison(X, y, strategies="random", budget=5, seeds=1, test_fraction=1.0)


def test_stops_are_the_same_in_parallel_processes():
    X, y = make_gaussians(300, np.random.default_rng(5), separation=2.0)
    kw = dict(
        strategies="largest-positive",
        budget=150,
        seeds=2,
        initial=4,
        test_fraction=0,
        stopping="statistical,knee,margin,stability,consecutive:10",
        target_recall=0.9,
        confidence=0.9,
    )
    one = run_comparison(X, y, n_jobs=1, **kw)
    two = run_comparison(X, y, n_jobs=2, **kw)
    pd.testing.assert_frame_equal(one.stops, two.stops)
    pd.testing.assert_frame_equal(one.stop_summary, two.stop_summary)


def test_label_progress_reports_every_label_and_an_exception_from_it_cancels_the_comparison():
    X, y = make_gaussians(300, np.random.default_rng(3), n_features=4)
    seen = []

    def on_label(done, total, description, labels, budget):
        seen.append((done, total, description, labels, budget))

    result = run_comparison(
        X, y, strategies=["near-boundary", "random"], budget=20, seeds=1, initial=4, label_progress=on_label
    )
    runs = sorted({d for d, *_ in seen})
    # tasks: the full-data references of incremental and lasvm (the training items they learn, one
    # at a time: 210 of the 300 items), then near-boundary and random (their labels)
    assert len(result.runs) == 2 and runs == [0, 1, 2, 3]
    for run in (0, 1):
        items = [(n, of) for d, _, desc, n, of in seen if d == run]
        assert items == [(k, 210) for k in range(1, 211)]
        assert all(desc.startswith("full-data") for d, _, desc, *_ in seen if d == run)
    for run in (2, 3):
        labels = [n for d, _, _, n, _ in seen if d == run]
        assert labels == list(range(labels[0], 21)) and labels[0] <= 5  # every label, in order, to the budget
        assert {b for d, *_, b in seen if d == run} == {20}
    assert {t for _, t, *_ in seen} == {4}

    class Cancelled(Exception):
        pass

    calls = []

    def cancel_at_7(done, total, description, labels, budget):
        calls.append(labels)
        if labels == 7:
            raise Cancelled

    with pytest.raises(Cancelled):
        run_comparison(X, y, strategies=["near-boundary"], budget=20, seeds=2, initial=4, label_progress=cancel_at_7)
    assert calls == list(range(1, 8))  # stopped inside the first reference: nothing ran after the cancel


def test_the_full_data_reference_learns_a_stratified_subsample_of_a_large_pool(monkeypatch):
    """Above REFERENCE_MAX_ITEMS training items the reference learns that many, drawn per class in
    proportion: the same model as a solver given exactly those rows, and the result says so."""
    import core.experiment as experiment
    from core.experiment import full_data_reference, reference_items
    from core.solvers import make_solver

    y_pool = np.where(np.arange(1000) % 10 == 0, 1.0, -1.0)  # 10% positives
    picked = reference_items(y_pool, seed=3, limit=200)
    assert len(picked) == 200 and np.all(np.diff(picked) > 0)
    assert int(np.sum(y_pool[picked] > 0)) == 20  # the classes in proportion
    assert np.array_equal(picked, reference_items(y_pool, seed=3, limit=200))  # seeded
    assert not np.array_equal(picked, reference_items(y_pool, seed=4, limit=200))
    assert np.array_equal(reference_items(y_pool, seed=3, limit=5000), np.arange(1000))  # small pools: all
    rare = np.full(1000, -1.0)
    rare[7] = 1.0
    assert 7 in reference_items(rare, seed=0, limit=50)  # at least one of each class

    X, y = make_gaussians(600, np.random.default_rng(2), separation=2.0, n_features=3)
    monkeypatch.setattr(experiment, "REFERENCE_MAX_ITEMS", 150)
    ref = full_data_reference(X, y, "incremental", {"C": 1.0}, seed=1, test_fraction=0.3)
    assert (ref["n_train"], ref["n_pool"]) == (150, 420)
    # the same as the solver learning those rows itself, in the reference's order
    Xtr, ytr, Xte, yte = experiment._split(X, y, 1, 0.3)
    rows = reference_items(ytr, 1, 150)
    solver = make_solver("incremental", Xtr[rows], C=1.0, random_state=1)
    for i in np.random.default_rng([1, 0xF011]).permutation(150):
        solver.learn(int(i), float(ytr[rows][i]))
    solver.finish()
    from core.metrics import roc_auc

    assert ref["auc"] == pytest.approx(roc_auc(yte, solver.decision_function(X=Xte)), abs=1e-12)

    result = run_comparison(X, y, strategies=["near-boundary"], solver="incremental", budget=15, seeds=[0], initial=5)
    assert set(result.references["n_pool"]) == {420}
    assert "subsample of 150 of the 420 training items" in result.summary_text()
    monkeypatch.setattr(experiment, "REFERENCE_MAX_ITEMS", 4000)
    whole = run_comparison(X, y, strategies=["near-boundary"], solver="incremental", budget=15, seeds=[0], initial=5)
    assert whole.reference_note() is None and "subsample" not in whole.summary_text()


def test_a_comparison_of_an_exact_and_another_solver_with_c_and_gamma_from_the_labels():
    """The command line's default gives ``auto`` to the solver parameters of a run that mixes an exact solver
    (near-boundary: incremental) with another (random: lasvm); the other solver's runs and full-data
    reference keep the starting values (a lasvm refused the keyword before)."""
    from core.experiment import full_data_reference

    X, y = make_gaussians(80, np.random.default_rng(4), separation=2.0)
    start = {"kernel": "rbf", "C": 1.0, "gamma": "scale"}
    chosen = full_data_reference(X, y, "lasvm", {**start, "auto": ["C", "gamma"]}, seed=0, test_fraction=0.3)
    plain = full_data_reference(X, y, "lasvm", start, seed=0, test_fraction=0.3)
    assert (chosen["auc"], chosen["n_sv"]) == (plain["auc"], plain["n_sv"])
    result = run_comparison(
        X,
        y,
        strategies=["near-boundary", "random"],
        budget=30,
        seeds=[0],
        initial=4,
        solver_params={**start, "auto": ["C", "gamma"]},
    )
    assert set(result.rows["strategy"]) == {"near-boundary", "random"}
