"""Per-class AUC charts of sessions and team projects with named classes: each class's AUC of the scores the model
gave when it asked (a project: just before it learned the item), against the answers, equal to scikit-learn's on
the same scores; "not yet" (no point) while a class lacks rated items in it and out of it; the chart on the Label
page (single choice and multi-label, every kind of item) with the class names as written, and on Label together
for an owner only."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from app import charts
from app.services import MarginLab
from app.services.classes import auc_column, rated_history, top_class_hits
from tests.app import test_app
from tests.app.test_app import shown_item, start_app
from tests.app.test_app_classes import CLASSES, click_class, start_classes_session, three_blobs
from tests.app.test_app_multi_label import CLASSES as SET_CLASSES
from tests.app.test_app_multi_label import four_groups, start_multi_label_session, submit, toggle

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

TITLE = "How well the model ranks each class first"

#: the AUC caption's reason it reads low: the items asked are the hardest
HARDEST = (
    "the items asked are the ones the model found hardest, so this reads lower than it would on the whole pool, "
    "even below 0.5: it is not an estimate of accuracy"
)


def sklearn_aucs(member: np.ndarray, F: np.ndarray) -> list[float]:
    """Each class's AUC by scikit-learn (NaN where the rows hold no item in it or none out of it)."""
    return [
        float(roc_auc_score(member[:, k], F[:, k])) if 0 < member[:, k].sum() < len(member) else np.nan
        for k in range(member.shape[1])
    ]


def assert_matches_sklearn(history, rated, n_classes: int) -> None:
    """Every row of ``history``: each class's AUC and their mean, as scikit-learn gives them on the rated answers
    so far (NaN: not yet)."""
    assert len(history) and any(not np.isnan(v) for v in history[auc_column(0)])
    for _, row in history.iterrows():
        counted = [(member, scores) for m, member, scores in rated if m <= row["labels"]]
        if not counted:
            assert all(np.isnan(row[auc_column(k)]) for k in range(n_classes)) and np.isnan(row["macro_auc"])
            continue
        expected = sklearn_aucs(np.array([m for m, _ in counted]), np.array([f for _, f in counted]))
        got = [row[auc_column(k)] for k in range(n_classes)]
        np.testing.assert_allclose(got, expected, equal_nan=True)
        defined = [v for v in expected if not np.isnan(v)]
        assert row["macro_auc"] == pytest.approx(np.mean(defined)) if defined else np.isnan(row["macro_auc"])


def test_each_class_s_auc_of_the_scores_when_asked_is_scikit_learn_s_on_the_same_scores(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy="random", classes=", ".join(CLASSES), seed=3
    )
    for turn in range(20):
        item = run.shown.item_index
        k = int(truth[item]) if turn % 4 else (int(truth[item]) + 1) % 3  # every fourth answer another class
        assert run.answer(k, item_index=item).ok
    history = run.history()
    # the scores when asked, as the run kept them, of the answers given once the model had seen two classes
    answered = [a for a in run.answers if a.answer_class is not None]
    first_rated = next(n for n in range(len(answered)) if len({a.answer_class for a in answered[:n]}) >= 2)
    rated = [
        (n + 1, np.eye(3, dtype=bool)[a.answer_class], np.array(a.scores))
        for n, a in enumerate(answered)
        if n >= first_rated
    ]
    assert_matches_sklearn(history, rated, 3)
    last = history.iloc[-1]
    assert 0.0 < min(last[auc_column(k)] for k in range(3)) < 1.0  # (wrong answers: not a perfect ranking)
    # the accuracy as before: the share of rated answers whose class the model rated highest
    F = np.array([f for _, _, f in rated])
    classes = np.array([m.argmax() for _, m, _ in rated])
    assert last["accuracy"] == pytest.approx(np.mean(F.argmax(axis=1) == classes))


def test_a_class_without_rated_items_in_it_and_out_of_it_has_no_auc_yet():
    rows = np.eye(3, dtype=bool)
    rated = [(3, rows[0], np.array([0.5, -1.0, -0.2])), (4, rows[2], np.array([-0.1, -0.8, 0.3]))]
    history = rated_history(rated, 4, 3, top_class_hits)
    assert history["labels"].tolist() == [1, 2, 3, 4]
    assert history.iloc[:3][[auc_column(k) for k in range(3)]].isna().all().all()  # one item rated: no pair yet
    last = history.iloc[-1]
    assert last[auc_column(0)] == 1.0 and last[auc_column(2)] == 1.0 and np.isnan(last[auc_column(1)])
    assert last["macro_auc"] == 1.0 and last["accuracy"] == 1.0
    figure = charts.class_auc_figure(history, ("a", "<b>b</b>", "c"))
    names = [t["name"] for t in figure["data"]]
    assert names == ["a", "&lt;b&gt;b&lt;/b&gt; (not yet)", "c", "average over the classes"]
    assert figure["data"][1]["y"] == [None] * 4  # not yet: no point
    assert figure["data"][0]["y"] == [None, None, None, 1.0]


@pytest.mark.parametrize("multi_label", [False, True])
def test_tied_scores_count_one_half_and_each_prefix_is_scikit_learn_s(multi_label):
    from app.services.multi_label import MultiLabelRun

    rng = np.random.default_rng(7)  # (any draw: the values must equal scikit-learn's on it)
    n, K = 60, 4
    member = rng.random((n, K)) < 0.4 if multi_label else np.eye(K, dtype=bool)[rng.integers(K, size=n)]
    F = np.round(rng.normal(size=(n, K)), 1)  # many ties
    rated = [(m + 3, member[m], F[m]) for m in range(n)]  # (two unrated answers first)
    hits = MultiLabelRun._hits if multi_label else top_class_hits
    history = rated_history(rated, n + 2, K, hits)
    assert_matches_sklearn(history, rated, K)
    if multi_label:
        assert history["accuracy"].iloc[-1] == pytest.approx(np.mean((F > 0) == member))
    else:
        assert history["accuracy"].iloc[-1] == pytest.approx(np.mean(member[np.arange(n), F.argmax(axis=1)]))


def test_a_multi_label_session_s_auc_per_class_is_scikit_learn_s_against_the_answers_holding_the_class(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = four_groups(svc)
    run = svc.start_session(
        dataset_id=dataset_id,
        annotator="ada",
        classes=", ".join(SET_CLASSES),
        multi_label=True,
        strategy="random",
        seed=2,
    )
    for turn in range(16):
        item = run.shown.item_index
        given = set(truth[item]) ^ ({turn % 3} if turn % 5 == 0 else set())  # some answers differ from the group
        assert run.answer([SET_CLASSES[k] for k in sorted(given)], item_index=item).ok
    history = run.history()
    answered = [a for a in run.answers if a.answer_classes is not None]
    rated = []
    for n, a in enumerate(answered):
        before = [set(b.answer_classes) for b in answered[:n]]
        if any(any(k in s for s in before) and any(k not in s for s in before) for k in range(3)):
            member = np.zeros(3, dtype=bool)
            member[list(a.answer_classes)] = True
            rated.append((n + 1, member, np.array(a.scores)))
    assert_matches_sklearn(history, rated, 3)


def test_a_class_project_s_auc_per_class_is_of_the_scores_just_before_the_model_learned_each_item(db_url):
    from core.multiclass import OneVsRest
    from tests.app.test_app_team_classes import blob_project

    _, project_id, run = blob_project(db_url, 14, wrong_every=4)
    history = run.history()
    assert history["labels"].tolist() == list(range(1, 15))
    # the same scores again: a model of the project's kind learning the items in order, scoring each first
    params = {k: v for k, v in run.solver_params.items() if k != "auto"}
    params.setdefault("random_state", run.info.seed)
    model = OneVsRest(run.classes, run.info.solver, run.X, keep_scores=True, **params)
    rated = []
    for n, (item, k) in enumerate(run.model_labels.items()):
        if len(set(list(run.model_labels.values())[:n])) >= 2:
            rated.append((n + 1, np.eye(3, dtype=bool)[k], model.decision_function(np.array([item]))[0]))
        model.learn(item, run.classes[k])
    assert len(rated) == len(run.rated) and len(rated) >= 10
    for (n, member, scores), (m, kept, when) in zip(rated, run.rated, strict=True):
        assert (n, member.tolist()) == (m, kept.tolist())
        np.testing.assert_allclose(when, scores)
    assert_matches_sklearn(history, rated, 3)
    # a reopened project (every answer learned again) has the same read-outs
    again = MarginLab.from_url(db_url).open_project(project_id).history()
    np.testing.assert_allclose(again.to_numpy(dtype=float), history.to_numpy(dtype=float), equal_nan=True)


def test_nine_classes_have_nine_lines_with_distinct_colours_and_rounded_bounded_values():
    import pandas as pd

    names = [f"class {k}" for k in range(9)]
    history = pd.DataFrame(
        {
            "labels": [1, 2],
            "accuracy": [np.nan, 0.5],
            "macro_auc": [np.nan, 0.61234],
            **{auc_column(k): [np.nan, 0.123456 + k / 10] for k in range(9)},
        }
    )
    figure = charts.class_auc_figure(history, names)
    lines = figure["data"][:9]
    assert [t["name"] for t in lines] == names
    assert len({t["line"]["color"] for t in lines}) == 9
    assert lines[0]["y"] == [None, 0.123] and figure["data"][-1]["y"] == [None, 0.612]
    assert all(0 <= v <= 1 for t in figure["data"] for v in t["y"] if v is not None)
    assert "%{fullData.name}" in lines[0]["hovertemplate"] and "%{y:.2f}" in lines[0]["hovertemplate"]
    assert figure["layout"]["legend"]["orientation"] == "h"
    empty = charts.class_auc_figure(history.iloc[:1], names)
    assert empty["layout"]["annotations"][0]["text"] == charts.rated_waiting(per_class=True)


def auc_chart(at) -> dict:
    (chart,) = [
        json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
        if TITLE in json.loads(c.proto.spec)["layout"]["title"]["text"].replace("<br>", " ")
    ]
    return chart


def waiting_text(at, title: str) -> str:
    """The note of the empty chart whose title holds ``title`` ("" when it has a point), in one line."""
    (chart,) = [
        json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
        if title in json.loads(c.proto.spec)["layout"]["title"]["text"].replace("<br>", " ")
    ]
    notes = chart["layout"].get("annotations") or [{"text": ""}]
    return notes[0]["text"].replace("<br>", " ")


def test_the_charts_say_they_wait_for_answers_given_once_the_model_could_rate_items(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, _ = three_blobs(svc)
    at = start_app()
    start_classes_session(at, dataset_id, ", ".join(CLASSES), strategy="random")
    for k in (0, 1):  # answers in two classes, both given before the model could rate an item
        click_class(at, k)
    accuracy = waiting_text(at, "Accuracy and macro AUC")
    per_class = waiting_text(at, TITLE)
    # not "needs answers in two classes" (it has them): what it waits for, in plain words
    for note in (accuracy, per_class):
        assert "two classes" not in note.split("(")[0] and "after the model could rate items" in note, note
    assert "in the class and out of it" in per_class, per_class
    click_class(at, 2)  # rated: the model had answers in two classes when it asked
    assert waiting_text(at, "Accuracy and macro AUC") == ""
    # the notes fit the charts: lines of at most a live chart's width
    assert all(len(line) <= charts.LIVE_TITLE_CHARS + 5 for line in charts.rated_waiting(per_class=True).split("<br>"))
    # several classes per item, and a project's items learned
    several = charts.rated_waiting(per_class=True, multi_label=True)
    assert "with the class and without it" in several.replace("<br>", " "), several
    assert "items learned after" in charts.rated_waiting(per_class=False, given="items learned").replace("<br>", " ")


@pytest.mark.parametrize("kind", ["table", "image", "text", "molecule"])
def test_the_label_page_shows_each_class_s_auc_for_every_kind_of_item(db_url, kind):
    from tests.app.test_app_item_display import assert_item_shown, import_kind

    svc = MarginLab.from_url(db_url)
    dataset_id = import_kind(svc, kind)
    at = start_app("olga")
    names = ("one", "<i>two</i>", "three")
    start_classes_session(at, dataset_id, ", ".join(names), strategy="random")
    assert auc_chart(at)["layout"]["annotations"][0]["text"] == charts.rated_waiting(per_class=True)
    for k in (0, 1, 2, 0):  # the last two are rated (two classes seen): "two" has none in it yet
        click_class(at, k)
    assert_item_shown(at, kind, shown_item(at), svc.engine)
    chart = auc_chart(at)
    assert [t["name"] for t in chart["data"]] == [
        "one",
        "&lt;i&gt;two&lt;/i&gt; (not yet)",
        "three",
        "average over the classes",
    ]
    assert [len([v for v in t["y"] if v is not None]) for t in chart["data"]] == [1, 0, 1, 1]
    assert any("Advanced: the ROC AUC of each class" in c.value for c in at.caption)
    # why it reads low (even below 0.5) when the items asked are the hardest: not an estimate of accuracy
    assert any(HARDEST in c.value for c in at.caption), [c.value for c in at.caption]
    click_class(at, 1)
    assert [t["name"] for t in auc_chart(at)["data"]][:3] == ["one", "&lt;i&gt;two&lt;/i&gt;", "three"]


@pytest.mark.parametrize("kind", ["table", "image", "text", "molecule"])
def test_a_multi_label_session_shows_each_class_s_auc_for_every_kind_of_item(db_url, kind):
    from tests.app.test_app_item_display import assert_item_shown, import_kind

    svc = MarginLab.from_url(db_url)
    dataset_id = import_kind(svc, kind)
    at = start_app("olga")
    start_multi_label_session(at, dataset_id, "red, green, blue", strategy="random")
    for picked in ((0,), (1,), (0, 2), ()):  # the last two are rated: green is in neither
        for k in picked:
            toggle(at, k)
        submit(at)
    assert_item_shown(at, kind, shown_item(at), svc.engine)
    chart = auc_chart(at)
    assert [t["name"] for t in chart["data"]] == ["red", "green (not yet)", "blue", "average over the classes"]
    assert "items without it" in chart["data"][0]["hovertemplate"]
    assert [t["y"][-1] for t in chart["data"]][1] is None and chart["data"][0]["y"][-1] is not None


@pytest.mark.parametrize("kind", ["table", "image", "text", "molecule"])
@pytest.mark.parametrize("role", ["owner", "annotator"])
def test_label_together_shows_each_class_s_auc_to_the_owner_only(db_url, kind, role):
    from tests.app.test_app_item_display import assert_item_shown, label_together_as
    from tests.app.test_app_team_classes import kind_project

    svc, project_id = kind_project(db_url, kind)
    run = svc.open_project(project_id)
    for k in (0, 1, 2, 0, 1):
        shown = run.next_item("ann")
        assert run.answer("ann", shown.item_index, k, shown).ok
    at = label_together_as(role)
    assert_item_shown(at, kind, shown_item(at), svc.engine)
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("Items learned per class" in s for s in specs)
    if role == "annotator":  # (a step of these would tell her whether another member's answer was the guess)
        assert not [s for s in specs if "How well the model ranks" in s or "Accuracy and macro AUC" in s]
        return
    chart = auc_chart(at)
    assert [t["name"] for t in chart["data"]] == ["one", "two", "three", "average over the classes"]
    assert chart["layout"]["xaxis"]["title"]["text"] == "items learned"
    (accuracy,) = [json.loads(s) for s in specs if "Accuracy and macro AUC" in s]
    title = accuracy["layout"]["title"]["text"].replace("<br>", " ")
    assert title == "Accuracy and macro AUC of the scores before learning vs items learned"
    assert chart["layout"]["title"]["text"].replace("<br>", " ").endswith("(scores before learning) vs items learned")
    assert any("just before it learned the item" in c.value and HARDEST in c.value for c in at.caption)
