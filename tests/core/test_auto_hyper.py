"""C and gamma (and the class weight) chosen from the labels (``core.solvers.auto_hyper``): the
leave-one-out values by exact unlearning against retraining without the example, with and without class
weights; the choice deterministic, stored with its label count, undone below it; the model after a choice
is the plain model with the chosen values; the loop's kept pool scores after a change of gamma; a resumed
loop continuing bit for bit, a state saved before the class weight could be chosen among them; a grid over
the re-choice target refused; a choice in the background, and the model with its values prebuilt in the
background and continued at the label it is due at, bit for bit the model relearned in place (with and without
a new gamma or class weight, after an undo, a correction and a resume), and not used when it no longer
matches the labels; the labels given once its job finished fed into it one by one, the same bits, and a label fed
then undone or corrected sending the due label back to relearning in place."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from core.loop import ActiveLearningLoop
from core.metrics import roc_auc
from core.solvers import make_solver
from core.solvers.auto_hyper import (
    MIN_PER_CLASS,
    balanced_error,
    check_auto,
    loo_decision_values,
    median_heuristic,
    rank,
)
from core.solvers.base import stepped_balanced_weights

EXACT = ["incremental", "active-set"]
SMALL = dict(auto_moments=[10, 20, 30], auto_grid={"C": [0.5, 5.0], "gamma": [0.5, 2.0]})


def curved(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.7 * X[:, 1] ** 2 + 0.4 * rng.normal(size=n) > 0.6, 1.0, -1.0)
    return X, y


def answered(loop, y, n):
    """``loop`` after ``n`` of its queries answered from ``y``."""
    for _ in range(n):
        q = loop.next_query()
        loop.teach(q.index, int(y[q.index]))
    return loop


def learned(s, y, idx):
    for i in idx:
        assert s.learn(int(i), float(y[i])).success
    return s


@pytest.mark.parametrize("solver", EXACT)
@pytest.mark.parametrize("C", [0.3, 3.0, 100.0])
@pytest.mark.parametrize("shortcut", [False, True])
def test_leave_one_out_by_unlearning_equals_retraining_without_the_example(solver, C, shortcut):
    X, y = curved(40, seed=int(C * 10))
    s = learned(make_solver(solver, X, C=C, gamma=0.7, tol=1e-6), y, range(30))
    order = s.labelled_.copy()
    loo = loo_decision_values(s, shortcut=shortcut)
    for k, i in enumerate(order.tolist()):
        without = learned(make_solver(solver, X, C=C, gamma=0.7, tol=1e-6), y, [j for j in range(30) if j != i])
        assert loo[k] == pytest.approx(float(without.decision_function([i])[0]), abs=1e-9)
    # the solver keeps the labels it had (every example learned again)
    assert sorted(s.labelled_.tolist()) == list(range(30))


@pytest.mark.parametrize("solver", EXACT)
def test_the_choice_is_deterministic_and_stored_with_its_label_count(solver):
    X, y = curved(60, seed=3)
    runs = [learned(make_solver(solver, X, auto=("C", "gamma"), **SMALL), y, range(25)) for _ in range(2)]
    a, b = runs
    assert a.hyper_choices == b.hyper_choices
    assert [c["n_labels"] for c in a.hyper_choices] == [0, 10, 20]
    assert np.array_equal(a.decision_function(), b.decision_function())
    # a second choice over the same labels gives the same answer
    assert a.choose() == b.choose()


@pytest.mark.parametrize("solver", EXACT)
def test_after_a_choice_the_model_is_the_plain_model_with_the_chosen_values(solver):
    X, y = curved(60, seed=4)
    s = learned(make_solver(solver, X, auto=("C", "gamma"), **SMALL), y, range(20))
    last = s.hyper_choices[-1]
    assert (s.C, s.kernel.gamma) == (last["C"], last["gamma"])
    assert last["gamma"] in [m * median_heuristic(X, np.arange(20)) for m in SMALL["auto_grid"]["gamma"]]
    plain = learned(make_solver(solver, X, C=last["C"], gamma=last["gamma"]), y, range(20))
    assert np.allclose(s.decision_function(), plain.decision_function(), atol=1e-9)


@pytest.mark.parametrize("solver", EXACT)
def test_unlearning_below_a_choice_goes_back_to_the_values_before_it(solver):
    X, y = curved(60, seed=5)
    s = learned(make_solver(solver, X, C=1.0, gamma=0.3, auto=("C", "gamma"), **SMALL), y, range(22))
    first = s.hyper_choices[1]
    s.unlearn(21)
    s.unlearn(20)
    s.unlearn(19)  # 19 labels: the choice at 20 goes
    assert [c["n_labels"] for c in s.hyper_choices] == [0, 10]
    assert (s.C, s.kernel.gamma) == (first["C"], first["gamma"])
    plain = learned(make_solver(solver, X, C=first["C"], gamma=first["gamma"]), y, range(19))
    assert np.allclose(s.decision_function(), plain.decision_function(), atol=1e-9)
    for i in range(18, 8, -1):
        s.unlearn(i)  # 9 labels: back to the starting values
    assert s.hyper_choices == [] and (s.C, s.kernel.gamma) == (1.0, 0.3)


def test_only_C_keeps_the_given_gamma_and_a_choice_waits_for_three_of_each_class():
    assert MIN_PER_CLASS == 3
    X, y = curved(80, seed=6)
    y[:15] = -1.0
    positives = np.flatnonzero(y > 0)[:3]
    s = learned(make_solver("incremental", X, gamma=0.4, auto="C", **SMALL), y, range(12))
    assert s.hyper_choices == []  # one class at the moment 10: not chosen yet
    learned(s, y, positives[:2])
    assert s.hyper_choices == []  # two positives: not yet
    learned(s, y, positives[2:])
    assert [c["n_labels"] for c in s.hyper_choices] == [0, 15]
    last = s.hyper_choices[-1]
    assert (last["moment"], last["based_on"], last["first"]) == (10, 10, False)  # the last 10 labels: 3 positives
    assert s.kernel.gamma == 0.4 and s.C in SMALL["auto_grid"]["C"]


def test_bad_input_is_refused_with_a_clear_message():
    X, _ = curved(10, seed=0)
    with pytest.raises(ValueError, match="re-choose at 160 labels, over the 2 s"):
        make_solver("incremental", X, auto=("C", "gamma"), auto_grid={"C": np.logspace(-3, 3, 13)})
    with pytest.raises(ValueError, match="re-choose at 320 labels"):
        make_solver("incremental", X, auto=("C", "gamma"), auto_moments=[20, 40, 80, 160, 320])
    make_solver("incremental", X, auto="C", auto_moments=[20, 40, 80, 160, 320])  # 4 points: 1.6 s
    with pytest.raises(ValueError, match="'C', 'gamma' and/or 'class_weight'"):
        check_auto(["C", "degree"])
    with pytest.raises(ValueError, match="auto_moments"):
        make_solver("incremental", X, auto="C", auto_moments=[40, 20])


@pytest.mark.parametrize("solver", EXACT)
def test_loop_scores_follow_a_new_gamma_and_a_resumed_loop_continues_bit_for_bit(solver):
    X, y = curved(300, seed=7)
    Xe, ye = curved(80, seed=8)
    config = dict(
        strategy="near-boundary", solver=solver, seed=2, initial=4, solver_params=dict(auto=["C", "gamma"], **SMALL)
    )

    whole = answered(ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **config), y, 35)
    assert [c["n_labels"] for c in whole.solver.hyper_choices] == [0, 10, 20, 30]
    # the kept pool scores are those of the model with the chosen kernel
    assert np.allclose(whole.pool_scores(), whole.solver.decision_function(np.arange(len(X))), atol=1e-12)
    assert np.allclose(whole.evaluation_scores(), whole.solver.decision_function(X=Xe), atol=1e-12)
    part = answered(ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **config), y, 15)
    resumed = answered(ActiveLearningLoop.from_state(*part.to_state(), X, eval_X=Xe, eval_y=ye), y, 20)
    assert resumed.events == whole.events
    assert resumed.solver.hyper_choices == whole.solver.hyper_choices
    assert np.array_equal(resumed.solver.decision_function(), whole.solver.decision_function())
    assert np.array_equal(resumed.pool_scores(), whole.pool_scores())
    assert [r.auc for r in resumed.history] == [r.auc for r in whole.history]
    # undo across a moment: the model before the label that made the choice
    while whole.n_labels > 19:
        whole.undo()
    assert [c["n_labels"] for c in whole.solver.hyper_choices] == [0, 10]
    assert np.allclose(whole.pool_scores(), whole.solver.decision_function(np.arange(len(X))), atol=1e-12)


def test_the_choices_in_plain_words():
    from core.solvers.auto_hyper import describe_choices

    X, y = curved(60, seed=9)
    s = make_solver("incremental", X, C=1.0, gamma=0.25, auto=("C", "gamma"), **SMALL)
    assert describe_choices(make_solver("incremental", X)) is None
    learned(s, y, range(5))
    assert describe_choices(s) == (
        "C 1, gamma 0.25: the starting values; C and gamma are chosen from the labels "
        "from 10 labels on (5 so far). Next choice at 10 labels (with at least 3 of each class "
        "labelled)."
    )
    learned(s, y, range(5, 21))
    first, second = s.hyper_choices[1:]
    assert describe_choices(s) == (
        f"C {second['C']:.3g}, gamma {second['gamma']:.3g}, C and gamma chosen from the first 20 labels by "
        f"leave-one-out (at 10: C {first['C']:.3g}, gamma {first['gamma']:.3g}; before: C 1, gamma 0.25). "
        "Next choice at 30 labels (with at least 3 of each class labelled)."
    )


def test_the_choices_in_a_screener_s_words_say_when_the_first_choice_can_come():
    from core.solvers.auto_hyper import describe_choices_for_screeners

    X, y = curved(60, seed=9)
    s = make_solver("incremental", X, C=1.0, gamma=0.25, auto=("C", "gamma"), **SMALL)
    assert describe_choices_for_screeners(make_solver("incremental", X)) is None
    learned(s, y, range(5))
    said = describe_choices_for_screeners(s)
    # the wait the choice keeps (MIN_PER_CLASS of each answer), not only "both answers"; no model terms
    assert said == (
        f"Model settings: the usual ones until 10 labels, then chosen from your labels (once they hold at least "
        f"{MIN_PER_CLASS} of each answer)."
    )
    assert not any(term in said for term in ("C ", "gamma", "leave-one-out"))
    learned(s, y, range(5, 21))
    assert (
        describe_choices_for_screeners(s)
        == "Model settings chosen from your labels at label 20; next choice at 30 labels."
    )


def test_a_batch_past_the_moments_chooses_from_the_first_labels_of_the_last_moment_it_passed():
    X, y = curved(60, seed=10)
    batch = make_solver("active-set", X, auto=("C", "gamma"), **SMALL)
    batch.learn_many(np.arange(45), y[:45])
    last = batch.hyper_choices[-1]
    assert (last["n_labels"], last["moment"], last["based_on"], last["first"]) == (45, 30, 30, True)
    alone = make_solver(
        "active-set",
        X,
        C=1.0,
        gamma=batch.hyper_choices[0]["gamma"],
        auto=("C", "gamma"),
        **dict(SMALL, auto_moments=[40]),
    )  # (no choice of its own before it is asked)
    alone.learn_many(np.arange(30), y[:30])
    assert alone.hyper_choices == []
    assert {k: alone.choose()[k] for k in ("C", "gamma")} == {k: last[k] for k in ("C", "gamma")}


def test_a_corrected_label_keeps_the_choices_made_before_it_and_gives_their_model_of_the_corrected_labels():
    X, y = curved(200, seed=11)
    loop = ActiveLearningLoop(
        X,
        strategy="near-boundary",
        solver="incremental",
        seed=1,
        initial=4,
        solver_params=dict(auto=["C", "gamma"], **SMALL),
    )
    for _ in range(25):
        q = loop.next_query()
        loop.teach(q.index, int(y[q.index]))
    choices = [dict(c) for c in loop.solver.hyper_choices]
    item, label = loop.events[3]
    loop.change_label(item, -label)
    assert loop.solver.hyper_choices == choices  # (made at 10 and 20 labels; the count never went below)
    last = choices[-1]
    plain = make_solver("incremental", X, C=last["C"], gamma=last["gamma"])
    for i, yi in loop.events:
        plain.learn(i, yi)
    assert np.allclose(loop.solver.decision_function(), plain.decision_function(), atol=1e-9)
    assert np.allclose(loop.pool_scores(), plain.decision_function(), atol=1e-9)


def retrained_loo_scores(X, y, idx, grid) -> dict:
    """{(C, gamma): (AUC, balanced error)} of the leave-one-out values over ``idx``, each value from
    scikit-learn's SVC retrained without the example (independent of the solvers)."""
    svm = pytest.importorskip("sklearn.svm")
    metrics = pytest.importorskip("sklearn.metrics")
    scores = {}
    for C, gamma in grid:
        f = np.array(
            [
                svm.SVC(C=C, gamma=gamma, tol=1e-10)
                .fit(X[np.delete(idx, k)], y[np.delete(idx, k)])
                .decision_function(X[[k]])[0]
                for k in range(len(idx))
            ]
        )
        ber = 0.5 * (np.mean(f[y[idx] > 0] <= 0) + np.mean(f[y[idx] < 0] >= 0))
        scores[(C, gamma)] = (metrics.roc_auc_score(y[idx], f), float(ber))
    return scores


@pytest.mark.parametrize("solver", EXACT)
def test_the_choice_is_the_grid_point_whose_leave_one_out_values_rank_best_by_retraining(solver):
    """The criterion is the ROC AUC of the leave-one-out decision values (highest first, then the balanced error),
    each value here from scikit-learn's SVC retrained without the example."""
    X, y = curved(60, seed=4)
    idx = np.arange(30)
    s = learned(
        make_solver(solver, X, C=1.0, gamma=0.5, auto=("C", "gamma"), **dict(SMALL, auto_moments=[100])), y, idx
    )
    scores = retrained_loo_scores(X, y, idx, s.grid_points())
    best = max(scores, key=lambda p: scores[p][0])
    assert sorted(auc for auc, _ in scores.values())[-2] < scores[best][0] - 0.01  # (no near tie)
    assert min(scores, key=lambda p: scores[p][1]) != best  # (the lowest balanced error is another point)
    assert scores[best][1] < 0.5
    choice = s.choose()
    assert (choice["C"], choice["gamma"]) == best
    assert (choice["auc"], choice["balanced_error"]) == pytest.approx(scores[best], abs=1e-9)


def test_ties_go_to_the_values_nearest_the_current_ones():
    rng = np.random.default_rng(12)
    y = np.where(np.arange(40) % 2 == 0, 1.0, -1.0)
    X = rng.normal(scale=0.05, size=(40, 2)) + 3.0 * y[:, None]  # two tight clusters far apart: every C is perfect
    s = learned(
        make_solver(
            "incremental", X, C=1.0, gamma=0.5, auto="C", auto_grid={"C": [0.3, 2.0, 50.0]}, auto_moments=[10, 20]
        ),
        y,
        range(20),
    )
    first, second = s.hyper_choices[1:]
    assert (first["balanced_error"], first["auc"]) == (0.0, 1.0)
    assert first["C"] == 2.0  # |log 2| < |log 0.3| < |log 50|: not the smallest C, the nearest
    assert second["C"] == 2.0 and s.C == 2.0


# -- the class weight -------------------------------------------------------------------------------

WEIGHED = dict(SMALL, auto=("C", "gamma", "class_weight"))


def rare(n, seed):
    """About 18% positives on a curved boundary (the class weights matter)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.7 * X[:, 1] ** 2 + 0.4 * rng.normal(size=n) > 1.6, 1.0, -1.0)
    return X, y


def loo_scores(solver, X, y, idx, C, gamma, class_weight):
    """(balanced error, AUC) of the leave-one-out values of a plain solver over ``idx``."""
    s = learned(make_solver(solver, X, C=C, gamma=gamma, class_weight=class_weight), y, idx)
    f = loo_decision_values(s)
    return balanced_error(y[idx], f), roc_auc(y[idx], f)


@pytest.mark.parametrize("solver", EXACT)
@pytest.mark.parametrize("C", [0.3, 3.0])
def test_leave_one_out_of_a_weighted_model_by_unlearning_equals_retraining_without_the_example(solver, C):
    X, y = rare(40, seed=int(C * 10))
    weights = stepped_balanced_weights(int(np.sum(y[:30] > 0)), int(np.sum(y[:30] < 0)))
    assert weights[0] >= 1.5  # (the positives weigh more)
    cw = {1: weights[0], -1: weights[1]}
    s = learned(make_solver(solver, X, C=C, gamma=0.7, tol=1e-6, class_weight=cw), y, range(30))
    order = s.labelled_.copy()
    loo = loo_decision_values(s, shortcut=True)
    for k, i in enumerate(order.tolist()):
        without = learned(
            make_solver(solver, X, C=C, gamma=0.7, tol=1e-6, class_weight=cw), y, [j for j in range(30) if j != i]
        )
        assert loo[k] == pytest.approx(float(without.decision_function([i])[0]), abs=1e-9)


@pytest.mark.parametrize("solver", EXACT)
def test_the_class_weight_is_chosen_at_the_chosen_values_by_the_same_criterion_and_stored(solver):
    X, y = rare(120, seed=1)
    runs = [learned(make_solver(solver, X, **WEIGHED), y, range(35)) for _ in range(2)]
    a, b = runs
    assert a.hyper_choices == b.hyper_choices
    assert np.array_equal(a.decision_function(), b.decision_function())
    assert [c["n_labels"] for c in a.hyper_choices] == [0, 14, 20, 30]  # (three of each class first at 14)
    assert a.hyper_choices[0]["class_weight"] is None  # the starting value
    assert [c["class_weight"] for c in a.hyper_choices[1:]] == [None, None, "balanced"]
    for before, choice in zip(a.hyper_choices[1:], a.hyper_choices[2:], strict=False):
        # each moment: C and gamma with the class weight held then; the other one at them; the better kept
        idx = list(range(choice["moment"]))
        n_pos, n_neg = int(np.sum(y[idx] > 0)), int(np.sum(y[idx] < 0))
        w = stepped_balanced_weights(n_pos, n_neg)
        scores = {
            cw: loo_scores(solver, X, y, idx, choice["C"], choice["gamma"], None if cw is None else {1: w[0], -1: w[1]})
            for cw in (None, "balanced")
        }
        assert (choice["balanced_error"], choice["auc"]) == pytest.approx(scores[choice["class_weight"]], abs=1e-12)
        other = scores[None if choice["class_weight"] == "balanced" else "balanced"]
        assert rank(other[1], other[0]) >= rank(choice["auc"], choice["balanced_error"])
        if choice["class_weight"] != before["class_weight"]:  # (a change needs a strictly better score)
            assert rank(other[1], other[0]) > rank(choice["auc"], choice["balanced_error"])
    # the model is the plain one with the chosen values, its weights those of all its labels
    last = a.hyper_choices[-1]
    assert (a.C, a.kernel.gamma, a.class_weight) == (last["C"], last["gamma"], "balanced")
    plain = learned(make_solver(solver, X, C=last["C"], gamma=last["gamma"], class_weight="balanced"), y, range(35))
    assert a.class_bounds_ == plain.class_bounds_
    assert np.allclose(a.decision_function(), plain.decision_function(), atol=1e-9)


@pytest.mark.parametrize("solver", EXACT)
def test_unlearning_below_the_moment_that_chose_the_weights_drops_them(solver):
    X, y = rare(120, seed=1)
    s = learned(make_solver(solver, X, **WEIGHED), y, range(31))
    assert s.class_weight == "balanced" and s.hyper_choices[-1]["n_labels"] == 30
    s.unlearn(30)
    assert s.class_weight == "balanced"  # (30 labels: the choice stays)
    s.unlearn(29)
    before = s.hyper_choices[-1]
    assert [c["n_labels"] for c in s.hyper_choices] == [0, 14, 20]
    assert (s.C, s.kernel.gamma, s.class_weight, s.class_bounds_) == (
        before["C"],
        before["gamma"],
        None,
        (before["C"], before["C"]),
    )
    plain = learned(make_solver(solver, X, C=before["C"], gamma=before["gamma"]), y, range(29))
    assert np.allclose(s.decision_function(), plain.decision_function(), atol=1e-9)
    s.learn(29, y[29])  # the moment again: the same choice
    again = learned(make_solver(solver, X, **WEIGHED), y, range(30))
    assert s.hyper_choices == again.hyper_choices
    assert np.allclose(s.decision_function(), again.decision_function(), atol=1e-9)


@pytest.mark.parametrize("solver", EXACT)
def test_a_loop_choosing_the_weights_resumes_bit_for_bit_and_undoes_across_the_moment(solver):
    X, y = rare(300, seed=10)
    Xe, ye = rare(80, seed=8)
    config = dict(
        strategy="near-boundary",
        solver=solver,
        seed=1,
        initial=4,
        solver_params=dict(WEIGHED, auto=list(WEIGHED["auto"])),
    )

    whole = answered(ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **config), y, 35)
    assert "balanced" in [c["class_weight"] for c in whole.solver.hyper_choices]
    part = answered(ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **config), y, 25)
    resumed = answered(ActiveLearningLoop.from_state(*part.to_state(), X, eval_X=Xe, eval_y=ye), y, 10)
    assert resumed.events == whole.events
    assert resumed.solver.hyper_choices == whole.solver.hyper_choices
    assert resumed.solver.class_weight == whole.solver.class_weight
    assert np.array_equal(resumed.solver.decision_function(), whole.solver.decision_function())
    assert np.array_equal(resumed.pool_scores(), whole.pool_scores())
    while whole.n_labels > 9:
        whole.undo()
    assert whole.solver.hyper_choices == [] and whole.solver.class_weight is None
    assert np.allclose(whole.pool_scores(), whole.solver.decision_function(np.arange(len(X))), atol=1e-12)


DATA = Path(__file__).resolve().parents[1] / "data"


def test_a_state_saved_before_the_class_weight_could_be_chosen_loads_and_continues_as_it_did():
    """tests/data/loop_state_auto_C_gamma.*: an incremental loop with auto=["C", "gamma"] saved at 25 labels
    (choices at 10 and 20, without a class weight) by the version before the class weight could be chosen,
    and that version's decision values 10 labels later."""
    X, y = curved(120, seed=21)
    Xe, ye = curved(40, seed=22)
    with np.load(DATA / "loop_state_auto_C_gamma.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads((DATA / "loop_state_auto_C_gamma.json").read_text(encoding="utf-8"))
    with np.load(DATA / "loop_state_auto_C_gamma_after_10.npz", allow_pickle=False) as z:
        expected, events = z["decision"], z["events"]
    loop = ActiveLearningLoop.from_state(arrays, meta, X, eval_X=Xe, eval_y=ye)
    assert [set(c) for c in loop.solver.hyper_choices][1] >= {"C", "gamma"}
    assert all("class_weight" not in c for c in loop.solver.hyper_choices)
    answered(loop, y, 10)
    assert np.array_equal(np.array(loop.events, dtype=np.int64), events)
    assert [c["n_labels"] for c in loop.solver.hyper_choices] == [0, 10, 20, 30]
    assert np.array_equal(loop.solver.decision_function(), expected)
    while loop.n_labels > 19:  # undo below a choice stored without a class weight
        loop.undo()
    assert [c["n_labels"] for c in loop.solver.hyper_choices] == [0, 10] and loop.solver.class_weight is None


def test_the_class_weight_in_the_budget_and_the_plain_words():
    from core.solvers.auto_hyper import describe_choices

    X, y = rare(120, seed=1)
    assert check_auto("class_weight") == ("class_weight",)
    assert check_auto(["class_weight", "gamma", "C"]) == ("C", "gamma", "class_weight")
    five = [20, 40, 80, 160, 320]
    make_solver("incremental", X, auto="C", auto_moments=five)  # 4 points at 320 labels: 1.6 s
    with pytest.raises(ValueError, match="and the other class weight\\) would take about 2 s to re-choose at 320"):
        make_solver("incremental", X, auto=("C", "class_weight"), auto_moments=five)  # 5 points: 2.05 s
    with pytest.raises(ValueError, match="starts from None or 'balanced'"):
        make_solver("incremental", X, auto=("C", "class_weight"), class_weight={1: 2.0, -1: 1.0})
    s = make_solver("incremental", X, C=1.0, gamma=0.25, **WEIGHED)
    learned(s, y, range(5))
    assert describe_choices(s) == (
        "C 1, gamma 0.25, both classes weighted alike: the starting values; C, gamma and "
        "the class weights are chosen from the labels from 10 labels on (5 so far). Next "
        "choice at 10 labels (with at least 3 of each class labelled)."
    )
    learned(s, y, range(5, 31))
    c14, c20, c30 = s.hyper_choices[1:]
    assert describe_choices(s) == (
        f"C {c30['C']:.3g}, gamma {c30['gamma']:.3g}, the rarer class weighted up, C, gamma and the class weights "
        f"chosen from the first 30 labels by leave-one-out (at 20: C {c20['C']:.3g}, gamma {c20['gamma']:.3g}, both "
        f"classes weighted alike; at 14: C {c14['C']:.3g}, gamma {c14['gamma']:.3g}, both classes weighted alike; "
        "before: C 1, gamma 0.25, both classes weighted alike). No later choice."
    )


def test_the_class_weight_costs_one_grid_point_and_none_when_its_weights_are_one(monkeypatch):
    from core.solvers.auto_hyper import ChoiceSpec

    made = []
    scratch = ChoiceSpec.scratch
    monkeypatch.setattr(ChoiceSpec, "scratch", lambda self, *a: made.append(a) or scratch(self, *a))
    X, y = rare(120, seed=1)
    s = learned(make_solver("incremental", X, C=1.0, gamma=0.5, **dict(WEIGHED, auto_moments=[100])), y, range(30))
    made.clear()
    s.choose()  # 5 positives of 30: balanced weights 2.5 and 0.625
    assert len(made) == 4 + 1 and made[-1][2] == {1: 2.5, -1: 0.625}
    made.clear()
    alike = np.concatenate([np.flatnonzero(y[:30] > 0), np.flatnonzero(y[:30] < 0)[:6]])
    assert s.choose(alike)["class_weight"] is None  # 5 and 6 labels: weights 1 and 1, the same model
    assert len(made) == 4


# -- a choice computed in the background, applied a stated number of labels later -----------------------------
LAGGED = dict(SMALL, auto=["C", "gamma"], auto_lag=4)


def same_solver(a, b) -> None:
    """``a`` and ``b`` hold the same model, bit for bit, and the same choices (made and pending)."""
    assert a.hyper_choices == b.hyper_choices
    assert a.hyper_pending == b.hyper_pending
    assert (a.C, a.kernel.gamma) == (b.C, b.kernel.gamma)
    assert np.array_equal(a.decision_function(), b.decision_function())


@pytest.mark.parametrize("solver", EXACT)
@pytest.mark.parametrize("worker", ["late", "early"])
def test_a_choice_in_the_background_gives_the_model_of_the_choice_computed_in_the_foreground(
    solver, worker, monkeypatch
):
    import threading

    from core.solvers import auto_hyper

    release, waited, learning = threading.Event(), [], [False]
    if worker == "late":  # the background choice finishes only once the label it is due at waits for it
        monkeypatch.setattr(auto_hyper, "worker_hook", lambda key: release.wait())
    monkeypatch.setattr(auto_hyper, "wait_hook", lambda key: waited.append(learning[0]) or release.set())
    X, y = curved(60, seed=3)
    fore = make_solver(solver, X, **LAGGED, auto_background=False)
    back = make_solver(solver, X, **LAGGED)
    for n, i in enumerate(range(40), start=1):
        fore.learn(i, float(y[i]))
        learning[0] = True
        back.learn(i, float(y[i]))
        learning[0] = False
        release.clear()
        if worker == "early" and back.hyper_pending is not None:
            back.wait_for_choice()  # (the background thread finishes before the next label)
        same_solver(fore, back)
        if n in (10, 13):
            assert back.hyper_pending is not None and back.hyper_pending["due"] == 14
    # started at 10, 20 and 30 labels, applied 4 labels later, based on the first 10, 20 and 30
    assert [(c.get("started"), c["n_labels"], c["based_on"]) for c in back.hyper_choices] == [
        (None, 0, 0),
        (10, 14, 10),
        (20, 24, 20),
        (30, 34, 30),
    ]
    # late: the label each choice is due at waited for it; early: none did
    assert waited == ([True] * 3 if worker == "late" else [False] * len(waited))
    # the same values as the choices made and applied at 10, 20 and 30 labels (the same labels, the same start)
    at_once = learned(make_solver(solver, X, **SMALL, auto=["C", "gamma"]), y, range(40))
    values = ("C", "gamma", "auc", "balanced_error")
    assert [{k: c[k] for k in values} for c in back.hyper_choices] == [
        {k: c[k] for k in values} for c in at_once.hyper_choices
    ]


@pytest.mark.parametrize("solver", EXACT)
def test_a_loop_resumed_or_undone_across_a_pending_choice_continues_bit_for_bit(solver):
    X, y = curved(300, seed=7)
    Xe, ye = curved(80, seed=8)
    config = dict(strategy="near-boundary", solver=solver, seed=2, initial=4, solver_params=LAGGED)

    whole = answered(ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **config), y, 35)
    assert [(c.get("started"), c["n_labels"]) for c in whole.solver.hyper_choices] == [
        (None, 0),
        (10, 14),
        (20, 24),
        (30, 34),
    ]
    # saved at 12 labels, a choice pending (started at 10, due at 14): the resumed loop applies it at 14
    part = answered(ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **config), y, 12)
    assert part.solver.hyper_pending["due"] == 14
    resumed = ActiveLearningLoop.from_state(*part.to_state(), X, eval_X=Xe, eval_y=ye)
    assert resumed.solver.hyper_pending == part.solver.hyper_pending
    answered(resumed, y, 23)
    assert resumed.events == whole.events
    same_solver(resumed.solver, whole.solver)
    assert np.array_equal(resumed.pool_scores(), whole.pool_scores())
    assert [r.auc for r in resumed.history] == [r.auc for r in whole.history]
    # undo within the pending choice's labels keeps it; below the label it started at drops it
    back = answered(ActiveLearningLoop(X, eval_X=Xe, eval_y=ye, **config), y, 33)
    back.undo()
    assert back.solver.hyper_pending["started"] == 30
    while back.n_labels > 28:
        back.undo()
    assert back.solver.hyper_pending is None and [c["n_labels"] for c in back.solver.hyper_choices] == [0, 14, 24]
    # the same answers again give the same model as the loop that never undid
    answered(back, y, 7)
    assert back.events == whole.events
    same_solver(back.solver, whole.solver)
    assert np.array_equal(back.pool_scores(), whole.pool_scores())


def test_an_undone_background_choice_is_given_up_and_a_lag_is_checked(monkeypatch):
    import threading

    from core.solvers import auto_hyper

    release = threading.Event()
    monkeypatch.setattr(auto_hyper, "worker_hook", lambda key: release.wait())
    X, y = curved(60, seed=3)
    s = learned(make_solver("incremental", X, **LAGGED), y, range(10))
    job = auto_hyper._running[s._lineage]
    assert not job.done()
    s.unlearn(9)  # below the label the choice started at
    release.set()
    assert s.hyper_pending is None and s._lineage not in auto_hyper._running
    assert job.result() is None  # given up, not handed over
    for bad in (-1, 2.5, True, "10"):
        with pytest.raises(ValueError, match="auto_lag is the number of labels"):
            make_solver("incremental", X, **dict(LAGGED, auto_lag=bad))


@pytest.mark.parametrize("solver", EXACT)
def test_a_class_weight_chosen_in_the_background_gives_the_foreground_s_model(solver, monkeypatch):
    import threading

    from core.solvers import auto_hyper

    release = threading.Event()  # each choice finishes late, at the label it is due at
    monkeypatch.setattr(auto_hyper, "worker_hook", lambda key: release.wait())
    monkeypatch.setattr(auto_hyper, "wait_hook", lambda key: release.set())
    paths: list[bool] = []
    X, y = rare(300, seed=10)
    config = dict(WEIGHED, auto=list(WEIGHED["auto"]), auto_lag=3, class_weight="balanced")
    fore = make_solver(solver, X, **config, auto_background=False)
    back = make_solver(solver, X, **config)
    for i in range(60):
        fore.learn(i, float(y[i]))
        monkeypatch.setattr(auto_hyper, "apply_hook", paths.append)  # (the background solver's path only)
        back.learn(i, float(y[i]))
        monkeypatch.setattr(auto_hyper, "apply_hook", None)
        release.clear()
        same_solver(fore, back)
        assert back.class_weight == fore.class_weight and back.class_weights_ == fore.class_weights_
    assert len(back.hyper_choices) >= 3  # (the starting values and two choices or more)
    assert [c.get("started") for c in back.hyper_choices[1:]] == [c["n_labels"] - 3 for c in back.hyper_choices[1:]]
    # the first choice's model relearned in place ("balanced" weights moved by the labels during the lag), the
    # second's continued from the one prebuilt in the background
    assert paths == [False, True]


def test_a_corrected_label_under_a_pending_choice_starts_it_again_from_the_labels_then():
    X, y = curved(200, seed=11)
    loop = ActiveLearningLoop(
        X, strategy="near-boundary", solver="incremental", seed=1, initial=4, solver_params=LAGGED
    )
    answered(loop, y, 22)  # the choice of 20 labels started at 20, due at 24
    assert loop.solver.hyper_pending["started"] == 20
    item, label = loop.events[3]
    loop.change_label(item, -label)  # one of the labels it is based on
    # dropped when the label was unlearned, and started again then (21 labels) from the first 20 in learning
    # order, which the corrected label, learned after them, is not among
    pending = loop.solver.hyper_pending
    assert pending["started"] == 21 and pending["due"] == 25 and item not in pending["based"]
    based = np.asarray(pending["based"])
    assert np.array_equal(np.asarray(pending["labels"]), loop.solver.y[based]) and loop.solver.y[item] == -label
    answered(loop, y, 3)
    assert [c["n_labels"] for c in loop.solver.hyper_choices] == [0, 14, 25]


# -- the relearning after a background choice, prebuilt in the background too -------------------------------------
def applied_paths(monkeypatch) -> list[bool]:
    """How each applied choice that changed the values was taken: True when the model prebuilt in the background
    was continued, False when the labels were relearned in place."""
    from core.solvers import auto_hyper

    paths: list[bool] = []
    monkeypatch.setattr(auto_hyper, "apply_hook", paths.append)
    return paths


@pytest.mark.parametrize("solver", EXACT)
@pytest.mark.parametrize("auto", [["C", "gamma"], ["C"]])
@pytest.mark.parametrize("worker", ["late", "early"])
def test_the_model_prebuilt_in_the_background_is_the_model_relearned_in_place(solver, auto, worker, monkeypatch):
    import threading

    from core.solvers import auto_hyper

    release = threading.Event()
    if worker == "late":  # the background job (choice and prebuilt model) finishes only once its due label waits
        monkeypatch.setattr(auto_hyper, "worker_hook", lambda key: release.wait())
        monkeypatch.setattr(auto_hyper, "wait_hook", lambda key: release.set())
    paths = applied_paths(monkeypatch)
    X, y = curved(60, seed=3)
    config = dict(LAGGED, auto=auto, auto_grid={"C": [0.5, 5.0, 50.0], "gamma": [0.5, 2.0]})
    fore = make_solver(solver, X, **config, auto_background=False)
    back = make_solver(solver, X, **config)
    fore_paths, back_paths = [], []
    for i in range(40):
        fore.learn(i, float(y[i]))
        fore_paths += paths
        paths.clear()
        back.learn(i, float(y[i]))
        back_paths += paths
        paths.clear()
        release.clear()
        if worker == "early" and back.hyper_pending is not None:
            back.wait_for_choice()
        same_solver(fore, back)
    # every choice that changed the values: relearned in place in the foreground, prebuilt in the background
    assert fore_paths and fore_paths == [False] * len(fore_paths)
    assert back_paths == [True] * len(fore_paths)
    gammas = {c["gamma"] for c in back.hyper_choices}
    assert len(gammas) > 1 if auto == ["C", "gamma"] else len(gammas) == 1


def side_by_side(solver, paths: list[bool], after_back):
    """Two loops over the same items, one applying each choice in the foreground, one in the background, and
    ``both(step)``: the step taken by each (``after_back(back)`` after the background one's), then the same model
    and pool scores checked; it returns how the background loop applied its choices meanwhile (``paths``)."""
    X, y = curved(300, seed=7)
    params = dict(LAGGED, auto_grid={"C": [0.5, 5.0, 50.0], "gamma": [0.5, 2.0]})
    config = dict(strategy="near-boundary", solver=solver, seed=2, initial=4)
    fore = ActiveLearningLoop(X, **config, solver_params=dict(params, auto_background=False))
    back = ActiveLearningLoop(X, **config, solver_params=params)

    def both(step) -> list[bool]:
        step(fore)
        paths.clear()
        step(back)
        after_back(back)
        taken = list(paths)
        same_solver(fore.solver, back.solver)
        assert np.array_equal(fore.pool_scores(), back.pool_scores())
        return taken

    return X, y, fore, back, both


@pytest.mark.parametrize("solver", EXACT)
def test_a_prebuilt_model_after_an_undo_a_correction_and_a_resume_is_the_model_relearned_in_place(solver, monkeypatch):
    import threading

    from core.solvers import auto_hyper

    release = threading.Event()  # each background job finishes late, at the label it is due at
    monkeypatch.setattr(auto_hyper, "worker_hook", lambda key: release.wait())
    monkeypatch.setattr(auto_hyper, "wait_hook", lambda key: release.set())
    paths = applied_paths(monkeypatch)
    X, y, fore, back, both = side_by_side(solver, paths, lambda back: release.clear())

    taken: list[bool] = []
    for _ in range(22):  # the choice of 20 labels started at 20, due at 24
        taken += both(lambda loop: answered(loop, y, 1))
    assert back.solver.hyper_pending["started"] == 20
    both(lambda loop: loop.undo())  # a label after the start undone
    item, label = back.events[-1]
    assert item not in back.solver.hyper_pending["based"]
    both(lambda loop: loop.change_label(item, -label))  # and one corrected: the labels before the start unchanged
    assert back.solver.hyper_pending["started"] == 20
    for _ in range(9):
        taken += both(lambda loop: answered(loop, y, 1))
    assert [c["n_labels"] for c in back.solver.hyper_choices] == [0, 14, 24]
    assert taken and all(taken)  # continued from the prebuilt model, undo and correction notwithstanding
    # saved with a choice pending (started at 30): the restored loop has no background job and relearns in place,
    # the loop that goes on continues its prebuilt model; the same model
    assert back.solver.hyper_pending["started"] == 30
    resumed = ActiveLearningLoop.from_state(*back.to_state(), X)
    for _ in range(5):
        answered(back, y, 1)
        release.clear()
        taken_back = list(paths)
        paths.clear()
        answered(resumed, y, 1)
        taken_resumed = list(paths)
        paths.clear()
        assert taken_back == [True] * len(taken_resumed) and taken_resumed == [False] * len(taken_back)
        same_solver(resumed.solver, back.solver)
        assert np.array_equal(resumed.pool_scores(), back.pool_scores())
    assert [c["n_labels"] for c in back.solver.hyper_choices] == [0, 14, 24, 34]


def test_a_prebuilt_model_that_no_longer_matches_the_labels_is_not_used(monkeypatch):
    import threading

    from core.solvers import auto_hyper

    release = threading.Event()
    monkeypatch.setattr(auto_hyper, "worker_hook", lambda key: release.wait())
    monkeypatch.setattr(auto_hyper, "wait_hook", lambda key: release.set())
    paths = applied_paths(monkeypatch)
    X, y = curved(60, seed=3)
    config = dict(LAGGED, auto_grid={"C": [0.5, 5.0, 50.0], "gamma": [0.5, 2.0]})
    # the first 10 labels hold fewer than 3 positives: the choice waits until the last 10 labels do, so the labels
    # before those can be corrected under it (it is based on the last 10 only)
    order = np.r_[np.flatnonzero(y < 0)[:9], np.flatnonzero(y > 0)[:6], np.flatnonzero(y < 0)[9:20]]
    fore = learned(make_solver("incremental", X, **config, auto_background=False), y, order[:12])
    back = learned(make_solver("incremental", X, **config), y, order[:12])
    assert back.hyper_pending is not None and back.hyper_pending["started"] == 12
    learned(fore, y, order[12:14])
    learned(back, y, order[12:14])
    first = int(order[0])
    assert first not in back.hyper_pending["based"]
    for s in (fore, back):  # the first label corrected: the labels before the start are no longer those learned
        s.unlearn(first)
        s.learn(first, -float(y[first]))
    assert back.hyper_pending["started"] == 12  # (still pending: not one of its labels, not below its start)
    for i in order[14:19]:
        fore.learn(int(i), float(y[i]))
        back.learn(int(i), float(y[i]))
        release.clear()
        same_solver(fore, back)
    assert paths and not any(paths)  # relearned in place, both of them


@pytest.mark.parametrize("solver", EXACT)
@pytest.mark.parametrize(
    ("start", "data", "seed", "chosen"),
    [(None, curved, 12, [None, "balanced", "balanced", "balanced"]), ("balanced", rare, 11, ["balanced"] + [None] * 3)],
)
def test_a_class_weight_chosen_in_the_background_is_prebuilt_with_its_weights(
    solver, start, data, seed, chosen, monkeypatch
):
    paths = applied_paths(monkeypatch)
    X, y = data(300, seed)
    config = dict(WEIGHED, auto=list(WEIGHED["auto"]), auto_lag=3, class_weight=start)
    fore = make_solver(solver, X, **config, auto_background=False)
    back = make_solver(solver, X, **config)
    taken: list[bool] = []
    for i in range(60):
        fore.learn(i, float(y[i]))
        paths.clear()
        back.learn(i, float(y[i]))
        taken += paths
        if back.hyper_pending is not None:
            back.wait_for_choice()  # (the background job finishes before the next label)
        same_solver(fore, back)
        assert back.class_weight == fore.class_weight and back.class_weights_ == fore.class_weights_
    assert [c.get("class_weight") for c in back.hyper_choices] == chosen
    assert taken == [True] * 3  # (each choice that changed the values: continued from the prebuilt model)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_prebuilt_model_reads_the_rows_in_place_and_is_not_used_once_the_store_grew(sparse, monkeypatch):
    import scipy.sparse as sp

    from core.solvers import auto_hyper

    paths = applied_paths(monkeypatch)
    X, y = curved(80, seed=3)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    config = dict(LAGGED, auto_grid={"C": [0.5, 5.0, 50.0], "gamma": [0.5, 2.0]})
    fore = make_solver("incremental", X[:60], **config, auto_background=False)
    back = make_solver("incremental", X[:60], **config)
    learned(fore, y, range(10))
    learned(back, y, range(10))
    job = auto_hyper._running[back._lineage]
    job.result()
    store = job._prebuilt.solver.store  # (the rows the background read: the solver's arrays, not a copy)
    if sparse:
        assert store._data is back.store._data and store._indices is back.store._indices
    else:
        assert store._dense is back.store._dense
    learned(fore, y, range(10, 14))
    learned(back, y, range(10, 14))
    assert paths == [False, True]
    same_solver(fore, back)
    learned(fore, y, range(14, 20))
    learned(back, y, range(14, 20))
    for s in (fore, back):  # the store grows under the choice started at 20
        s.add_points(X[60:])
    paths.clear()
    learned(fore, y, range(20, 26))
    learned(back, y, range(20, 26))
    assert paths == [False, False]  # (the prebuilt model's store is the smaller one: relearned in place)
    same_solver(fore, back)


def test_a_prebuilt_model_is_let_go_with_the_solver_that_started_it():
    import gc

    from core.solvers import auto_hyper

    X, y = curved(60, seed=3)
    s = learned(make_solver("incremental", X, **dict(LAGGED, auto_grid={"C": [0.5, 5.0, 50.0]})), y, range(10))
    job = auto_hyper._running[s._lineage]
    job.result()
    assert job._prebuilt is not None  # (the values change at this choice: a model is prebuilt)
    del s
    gc.collect()
    assert job._prebuilt is None and job.result() is not None  # (the choice itself, a few numbers, is kept)


# -- the labels given after the background job finished, fed into its prebuilt model as they come -----------------
@pytest.mark.parametrize("solver", EXACT)
@pytest.mark.parametrize("auto", [["C", "gamma"], ["C"]])
def test_the_labels_given_after_the_job_finished_are_fed_into_the_prebuilt_model_one_by_one(solver, auto, monkeypatch):
    from core.solvers import auto_hyper

    paths = applied_paths(monkeypatch)
    X, y = curved(60, seed=3)
    config = dict(LAGGED, auto=auto, auto_grid={"C": [0.5, 5.0, 50.0], "gamma": [0.5, 2.0]})
    fore = make_solver(solver, X, **config, auto_background=False)
    back = make_solver(solver, X, **config)
    held, taken = [], []  # (the labels the prebuilt model holds before each label under a pending choice)
    for i in range(40):
        fore.learn(i, float(y[i]))
        job = auto_hyper._running.get(back._lineage)
        if back.hyper_pending is not None and job is not None and job._prebuilt is not None:
            held.append((len(back.labelled_), len(job._prebuilt.order)))
        paths.clear()
        back.learn(i, float(y[i]))
        taken += paths
        if back.hyper_pending is not None:
            back.wait_for_choice()  # (the job finishes before the next label: each label after it is fed)
        same_solver(fore, back)
    # before each label after a choice's start the prebuilt model already held every label learned
    assert held and all(n == k for n, k in held)
    ch = back.hyper_choices  # (a model is prebuilt for each choice that changed the values)
    starts = [c["started"] for a, c in zip(ch, ch[1:], strict=False) if (a["C"], a["gamma"]) != (c["C"], c["gamma"])]
    assert starts and sorted({n for n, _ in held}) == [n for s in starts for n in range(s, s + 4)]
    assert taken == [True] * len(starts)


@pytest.mark.parametrize("solver", EXACT)
def test_an_undo_or_a_correction_of_a_label_fed_sends_the_due_label_back_to_relearning_in_place(solver, monkeypatch):
    paths = applied_paths(monkeypatch)

    def finished(back) -> None:
        if back.solver.hyper_pending is not None:
            back.solver.wait_for_choice()  # (the job finishes at once: each label after it is fed)

    X, y, fore, back, both = side_by_side(solver, paths, finished)

    taken: list[bool] = []
    for _ in range(12):  # the choice of 10 labels started at 10, due at 14; labels 11 and 12 fed
        taken += both(lambda loop: answered(loop, y, 1))
    assert back.solver.hyper_pending["started"] == 10 and not taken
    item, label = back.events[-1]
    both(lambda loop: loop.change_label(item, -label))  # a label fed corrected: not unlearned there (not in bits)
    assert back.solver.hyper_pending["started"] == 10
    for _ in range(2):
        taken += both(lambda loop: answered(loop, y, 1))
    assert [c["n_labels"] for c in back.solver.hyper_choices] == [0, 14] and taken == [False]
    for _ in range(8):  # the choice of 20 labels started at 20, due at 24; labels 21 and 22 fed
        taken += both(lambda loop: answered(loop, y, 1))
    both(lambda loop: loop.undo())  # a label fed undone
    assert back.solver.hyper_pending["started"] == 20
    for _ in range(3):
        taken += both(lambda loop: answered(loop, y, 1))
    assert [c["n_labels"] for c in back.solver.hyper_choices] == [0, 14, 24] and taken == [False, False]
    # resumed with a choice pending and labels fed: the restored loop relearns in place, the one that goes on
    # continues its fed model; the same model
    for _ in range(8):  # (the choice of 30 labels: fed 31 and 32)
        taken += both(lambda loop: answered(loop, y, 1))
    assert back.solver.hyper_pending["started"] == 30
    resumed = ActiveLearningLoop.from_state(*back.to_state(), X)
    taken_back, taken_resumed = [], []
    for _ in range(2):
        paths.clear()
        answered(back, y, 1)
        taken_back += paths
        paths.clear()
        answered(resumed, y, 1)
        taken_resumed += paths
        same_solver(resumed.solver, back.solver)
        assert np.array_equal(resumed.pool_scores(), back.pool_scores())
    assert [c["n_labels"] for c in back.solver.hyper_choices] == [0, 14, 24, 34]
    assert taken_back == [True] and taken_resumed == [False]
