"""Stopping on the class looked for, with every way to pick items of a session with named classes (one class
per item): the class named at the start or later, stored with the stopping settings; the figures are a two-class
session's over the same answers read as that class against the rest.  Service checks, then the pages."""

from __future__ import annotations

import numpy as np
import pytest

from app.services import MarginLab, ServiceError
from core import stopping as rules
from storage import repository as repo
from tests.app import test_app
from tests.app.test_app import as_shown, shown_item, start_app
from tests.app.test_app_classes import (
    CLASSES,
    answer_all,
    click_class,
    kind_session,
    start_classes_session,
    three_blobs,
)
from tests.app.test_app_multi_label import CLASSES as ML_CLASSES
from tests.app.test_app_multi_label import answer_all as answer_sets
from tests.app.test_app_multi_label import four_groups, start_multi_label_session

pytestmark = pytest.mark.app

db_url = test_app.db_url


def two_class_copy(svc: MarginLab, run, dataset_id: int, t: int):
    """A two-class session on the same dataset and seed holding ``run``'s answers, in order, as class ``t``
    (positive) against the rest (negative)."""
    copy = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random", seed=run.seed)
    rows = "\n".join(f"{a.item_index},{'positive' if a.holds(t) else 'negative'}" for a in run.answers)
    outcome = copy.import_labels(f"item_key,label\n{rows}\n".encode(), key_column="item_key", label_column="label")
    assert outcome.ok, outcome.message
    return copy


def check_both(run, copy, n: int, answer, positive) -> None:
    """A recall check started in ``run`` and its two-class ``copy``: up to ``n`` draws, the same item in both
    (Skip refused), answered ``answer(item)`` in ``run`` and ``positive(item)`` as +1 / -1 in ``copy``."""
    assert run.start_check().ok and copy.start_check().ok
    for _ in range(n):
        if not (run.checking and copy.checking):
            break
        item = run.shown.item_index
        assert copy.shown.item_index == item and not run.skip(item_index=item).ok
        assert run.answer(answer(item), item_index=item).ok
        assert copy.answer(1 if positive(item) else -1, item_index=item).ok


def label_only(status) -> dict[str, str]:
    """The rules whose state comes from the labels alone (not the model's scores), by name."""
    return {s.rule: s.message for s in status.states if s.rule not in ("margin", "stability")}


@pytest.mark.parametrize("strategy", ["smallest-margin", "least-certain-class", "random"])
def test_a_k_class_session_stops_on_the_class_looked_for_as_a_two_class_session_of_the_same_answers(db_url, strategy):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy=strategy, classes=CLASSES, target=CLASSES[1], seed=3
    )
    assert run.stop_class == CLASSES[1] and run.info.params["stopping"]["class"] == CLASSES[1]
    assert run.settings.strategy_params == {}  # (the class is for stopping; the heuristic takes none)
    answer_all(run, truth, 14)
    copy = two_class_copy(svc, run, dataset_id, 1)
    mine, theirs = run.stopping_status(), copy.stopping_status()
    assert mine.gain.equals(theirs.gain) and list(mine.gain["found"])[-1] == sum(
        truth[a.item_index] == 1 for a in run.answers
    )
    assert label_only(mine) == label_only(theirs)
    assert mine.check == theirs.check and mine.outlook == theirs.outlook
    # the model-based estimate is given as for the two-class near-boundary and random heuristics (not top-first):
    # core.stopping's over that class's machine and the scores when asked
    labels = np.array([1 if a.answer_class == 1 else -1 for a in run.answers])
    unlabelled = np.setdiff1d(np.arange(45), [a.item_index for a in run.answers])
    expected = rules.estimate_remaining(
        labels,
        np.zeros(len(labels), dtype=bool),
        (),
        pool_size=45,
        unlabelled_scores=run.model.decision_function()[unlabelled, 1],
        # (an answer given before the model could rate items carries the machines' placeholder, as a two-class
        # session's cold start does: the estimate's measured coverage is with them, docs/stopping.md)
        asked_scores=np.array([a.scores[1] for a in run.answers]),
        asked_by=[a.strategy for a in run.answers],
    )
    assert mine.estimate.in_words() == expected.in_words()
    np.testing.assert_array_equal(
        [mine.estimate.remaining, mine.estimate.remaining_high], [expected.remaining, expected.remaining_high]
    )
    assert "most labels were asked by" not in mine.estimate.in_words()
    # the recall check: the same random draws as the two-class session's, the same test and estimate from them
    check_both(run, copy, 4, lambda item: int(truth[item]), lambda item: truth[item] == 1)
    mine, theirs = run.stopping_status(), copy.stopping_status()
    assert mine.check == theirs.check and mine.estimate.in_words() == theirs.estimate.in_words()
    assert label_only(mine) == label_only(theirs)


def test_most_likely_for_the_class_stopped_on_gives_no_model_based_estimate_as_largest_positive(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy="target-class", classes=CLASSES, target=CLASSES[0], seed=3
    )
    assert run.stop_class == CLASSES[0] and "class" not in run.info.params["stopping"]
    answer_all(run, truth, 16)
    words = run.stopping_status().estimate.in_words()
    assert "cannot estimate yet" in words and f'most labels were picked by "Most likely {CLASSES[0]}"' in words
    # stopping on another class: "Most likely cat" is not top-first for it
    assert run.set_stop_class(CLASSES[2]).ok and run.stop_class == CLASSES[2]
    assert "most labels were asked by" not in run.stopping_status().estimate.in_words()
    assert run.strategy_name == f"Most likely {CLASSES[0]}"  # (the heuristic is unchanged)


def test_the_class_looked_for_is_changed_kept_by_undo_and_restart_and_refused_when_wrong(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="smallest-margin", classes=CLASSES)
    assert run.stop_class is None and run.stopping_status() is None
    answer_all(run, truth, 10)
    assert run.set_stopping(rule="knee").ok is False  # (no class yet: refused)
    outcome = run.set_stop_class(CLASSES[2])
    assert outcome.ok and CLASSES[2] in outcome.message
    assert run.set_stopping(rule="knee", target_recall=0.9).ok
    found = list(run.stopping_status().gain["found"])
    assert found == list(np.cumsum([truth[a.item_index] == 2 for a in run.answers]))
    # a class that is not one: said, nothing stored
    bad = run.set_stop_class("cow")
    assert not bad.ok and "'cow' is not a class" in bad.message
    assert repo.get_session(svc.engine, run.session_id).params["stopping"]["class"] == CLASSES[2]
    # undo and a restart keep it, and the settings with it
    assert run.undo().ok and run.stop_class == CLASSES[2]
    svc.forget_runs()
    again = MarginLab.from_url(db_url).open_session(run.session_id)
    assert again.stop_class == CLASSES[2]
    status = again.stopping_status()
    assert (status.rule, status.target_recall) == ("knee", 0.9) and list(status.gain["found"]) == found[:-1]
    # during a recall check the class stays (its draws test the class it started on)
    assert again.start_check().ok
    refused = again.set_stop_class(CLASSES[0])
    assert not refused.ok and "Stop the random check first" in refused.message and again.stop_class == CLASSES[2]
    n = len(repo.list_sessions(svc.engine))
    with pytest.raises(ServiceError, match="is not one of the classes"):
        svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random", classes=CLASSES, target="cow")
    assert len(repo.list_sessions(svc.engine)) == n


# --------------------------------------------------------------------------- the pages


def test_the_form_keeps_the_class_looked_for_with_any_heuristic_one_class_or_several_per_item(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    at = start_app()
    start_classes_session(at, dataset_id, ", ".join(CLASSES), strategy="least-certain-class", target=CLASSES[1])
    (session,) = repo.list_sessions(svc.engine)
    assert session.strategy == "least-certain-class" and session.params["stopping"]["class"] == CLASSES[1]
    click_class(at, int(truth[shown_item(at)]))
    heading = [as_shown(m.value) for m in at.markdown if "When can I stop finding" in m.value]
    assert heading == [f"**When can I stop finding {CLASSES[1]}?**"]
    # several classes per item: the class typed is kept as well (a set that holds it is a positive)
    start_multi_label_session(at, dataset_id, ", ".join(CLASSES), strategy="random", target=CLASSES[2])
    several = max(repo.list_sessions(svc.engine), key=lambda s: s.id)
    assert several.params["multi_label"] and several.params["stopping"]["class"] == CLASSES[2]
    words = [as_shown(c.value) for c in at.caption]
    assert any(f"an answer whose classes include {CLASSES[2]}" in w for w in words), words
    assert at.selectbox(key=f"stop_class_{several.id}").value == CLASSES[2]
    # a class that is not one: said in the form, nothing stored
    at.text_input(key="new_target").input("cow")
    at.button(key="start_session").click().run()
    assert any("'cow', is not one of the classes" in as_shown(e.value) for e in at.error), [e.value for e in at.error]
    assert len(repo.list_sessions(svc.engine)) == 2


def test_a_multi_label_session_stops_on_a_class_as_a_two_class_session_of_the_sets_that_hold_it(db_url):
    """Several classes per item: an answer whose set holds the class is a positive, any other (none of these
    too) a negative; the figures are the two-class session's over that reading, the recall check's draws too."""
    svc = MarginLab.from_url(db_url)
    dataset_id, sets = four_groups(svc)
    run = svc.start_session(
        dataset_id=dataset_id,
        annotator="ada",
        strategy="least-sure-class",
        classes=", ".join(ML_CLASSES),
        multi_label=True,
        seed=2,
    )
    assert run.stop_class is None and run.stopping_status() is None
    answer_sets(run, sets, 12)
    assert run.set_stop_class(ML_CLASSES[0]).ok and run.stop_class == ML_CLASSES[0]
    copy = two_class_copy(svc, run, dataset_id, 0)
    mine, theirs = run.stopping_status(), copy.stopping_status()
    assert list(mine.gain["found"]) == list(np.cumsum([0 in sets[a.item_index] for a in run.answers]))
    assert mine.gain.equals(theirs.gain) and label_only(mine) == label_only(theirs) and mine.check == theirs.check
    check_both(run, copy, 3, lambda item: [ML_CLASSES[k] for k in sets[item]], lambda item: 0 in sets[item])
    mine, theirs = run.stopping_status(), copy.stopping_status()
    assert mine.check == theirs.check and mine.estimate.in_words() == theirs.estimate.in_words()
    # undo and a restart keep the class
    assert run.undo().ok
    svc.forget_runs()
    again = MarginLab.from_url(db_url).open_session(run.session_id)
    assert again.stop_class == ML_CLASSES[0] and again.stopping_status().gain.equals(run.stopping_status().gain)


# (personal sessions are labelled by owners: an annotator works in team projects, whose classes have no stopping)
@pytest.mark.parametrize("kind", ["table", "image", "text", "molecule"])
def test_the_label_page_names_and_changes_the_class_looked_for_for_every_kind_of_item(db_url, kind):
    from tests.app.test_app_item_display import assert_item_shown

    svc = MarginLab.from_url(db_url)
    at, session = kind_session(svc, kind)
    # no class named yet: the panel asks for one
    assert not [m for m in at.markdown if "When can I stop finding" in m.value]
    picker = at.selectbox(key=f"stop_class_{session.id}")
    assert picker.value is None and picker.options == ["one", "two", "three"]
    for k in (0, 1, 2, 0):
        click_class(at, k)
    assert_item_shown(at, kind, shown_item(at), svc.engine)
    at.selectbox(key=f"stop_class_{session.id}").select("two").run()
    assert not at.exception, at.exception
    assert repo.get_session(svc.engine, session.id).params["stopping"]["class"] == "two"
    assert [as_shown(m.value) for m in at.markdown if "When can I stop finding" in m.value] == [
        "**When can I stop finding two?**"
    ]
    assert any("positives still unlabelled" in as_shown(m.value).lower() for m in at.markdown)
    assert at.button(key="start_check") is not None
    # changed: the panel follows; undo and a new app keep it
    at.selectbox(key=f"stop_class_{session.id}").select("three").run()
    assert repo.get_session(svc.engine, session.id).params["stopping"]["class"] == "three"
    (undo,) = [b for b in at.button if b.key and b.key.startswith("undo_")]
    undo.click().run()
    assert not at.exception, at.exception
    assert (
        len(repo.label_events(svc.engine, session.id)) == 3
        and at.selectbox(key=f"stop_class_{session.id}").value == "three"
    )
    fresh = start_app("olga")
    assert fresh.selectbox(key=f"stop_class_{session.id}").value == "three"
    assert [as_shown(m.value) for m in fresh.markdown if "When can I stop finding" in m.value] == [
        "**When can I stop finding three?**"
    ]
    assert_item_shown(fresh, kind, shown_item(fresh), svc.engine)
