"""Sessions with named classes (3 to 9, single choice) in the app: the New session form's Classes, a button
per class (keys 1 to 9), Skip and Undo, History changes to any class, the export's class names, resume after a
restart (the same model and next item), and the class names shown as plain text.  Service-level checks of the
run (``app.services.classes.ClassesRun``) first, then the pages through AppTest."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from app.services import MarginLab, ServiceError
from storage import repository as repo
from tests.app import test_app
from tests.app.test_app import as_shown, shown_item, start_app

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

#: class names a person might type, with Markdown that must show as it is
CLASSES = ("cat", "**x**", "![p](http://h/p.png)")


def three_blobs(svc: MarginLab) -> tuple[int, np.ndarray]:
    """A table dataset of three well separated groups (no label column); its id and each row's group."""
    rng = np.random.default_rng(4)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    group = np.repeat([0, 1, 2], 15)
    X = centres[group] + rng.normal(0, 0.6, (45, 2))
    dataset_id = repo.import_dataset(svc.engine, name="blobs", X=X, feature_names=["a", "b"])
    return dataset_id, group


def answer_all(run, truth, n):
    for _ in range(n):
        item = run.shown.item_index
        assert run.answer(int(truth[item]), item_index=item).ok


@pytest.mark.parametrize(
    ("strategy", "solver"),
    [
        ("smallest-margin", "incremental"),
        ("least-certain-class", "active-set"),
        ("target-class", "lasvm"),
        ("random", "incremental"),
        ("smallest-margin", "lasvm"),
    ],
)
def test_a_k_class_run_resumes_with_the_same_model_and_next_item(db_url, strategy, solver):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(
        dataset_id=dataset_id,
        annotator="ada",
        strategy=strategy,
        classes=", ".join(CLASSES),
        target=CLASSES[2],
        seed=5,
        solver=solver,
    )
    assert run.classes == CLASSES and run.info.solver == solver
    answer_all(run, truth, 8)
    assert run.skip(item_index=run.shown.item_index).ok
    answer_all(run, truth, 4)
    # the strategy asks once two classes have answers, and says why in words
    assert run.shown.strategy == strategy
    assert "f(" not in run.shown.reason and "|f|" not in run.shown.reason
    if strategy == "target-class":
        assert run.strategy_name == run.heuristic_words(run.shown.strategy) == f"Most likely {CLASSES[2]}"
        assert run.shown.reason.startswith(f"the highest score for '{CLASSES[2]}'")

    def same_as_after_a_restart(atol):
        scores, shown = run.model.decision_function(), run.shown
        svc.forget_runs()  # as after a restart
        again = MarginLab.from_url(db_url).open_session(run.session_id)
        np.testing.assert_allclose(again.model.decision_function(), scores, rtol=0, atol=atol)
        assert (again.shown.item_index, again.shown.strategy, again.shown.reason) == (
            shown.item_index,
            shown.strategy,
            shown.reason,
        )
        np.testing.assert_allclose(again.shown.scores, shown.scores, rtol=0, atol=atol)
        assert [(a.item_index, a.answer_class) for a in again.answers] == [
            (a.item_index, a.answer_class) for a in run.answers
        ]
        assert again.class_counts() == run.class_counts()
        return again

    same_as_after_a_restart(atol=0)  # bit for bit
    run = svc.open_session(run.session_id)
    asked = run.answers[-1].item_index
    assert run.undo().ok
    assert run.shown.item_index == asked and sum(run.class_counts().values()) == 11
    # an exact solver unlearns (the model trained without the answer, to rounding); the others learn again
    same_as_after_a_restart(atol=1e-12 if solver != "lasvm" else 0)


def test_a_change_in_the_history_gives_the_model_that_learned_it_from_the_start(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="smallest-margin", classes=CLASSES)
    answer_all(run, truth, 10)
    target = run.answers[3]
    new = (target.answer_class + 1) % 3
    outcome = run.change_label(target.label_id, CLASSES[new])
    assert outcome.ok and CLASSES[new] in outcome.message
    assert run.answers[3].answer_class == new
    table = run.label_table()
    row = table[table["label_id"] == target.label_id].iloc[0]
    assert (row["answer"], row["as given"]) == (CLASSES[new], CLASSES[target.answer_class])
    assert "changed it to" in row["changes"]
    # the model is the one that learned the corrected answers from the start, in their order
    fresh = run._new_model()
    for a in run.answers:
        fresh.learn(a.item_index, CLASSES[a.answer_class])
    assert np.array_equal(fresh.decision_function(), run.model.decision_function())
    # a class that is not the session's is refused, naming the classes; nothing is stored
    with pytest.raises(ServiceError, match="is not a class of this session"):
        run.change_label(target.label_id, "cow")
    with pytest.raises(ServiceError, match="is not a class of this session"):
        run.answer("cow", item_index=run.shown.item_index)
    assert len(repo.label_events(svc.engine, run.session_id)) == 10
    assert run.remove_label(target.label_id).ok and len(run.answers) == 9


@pytest.mark.parametrize(
    "typed, words",
    [
        ("cat", "at least 2"),
        ("cat, dog", "Two classes are a yes / no session"),
        (", ".join(f"c{k}" for k in range(10)), "At most 9"),
        ("cat, dog, cat", "'cat' is named twice"),
        ("cat,, dog", "empty"),
    ],
)
def test_bad_class_lists_are_refused_and_nothing_is_stored(db_url, typed, words):
    svc = MarginLab.from_url(db_url)
    dataset_id, _ = three_blobs(svc)
    with pytest.raises(ServiceError, match=words):
        svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="smallest-margin", classes=typed)
    with pytest.raises(ServiceError, match="one of smallest-margin"):
        svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="near-boundary", classes="a, b, c")
    with pytest.raises(ServiceError, match="not one of the classes"):
        svc.start_session(
            dataset_id=dataset_id, annotator="ada", strategy="target-class", classes="a, b, c", target="d"
        )
    assert repo.list_sessions(svc.engine) == []


def class_buttons(at):
    return {b.key: b for b in at.button if b.key and b.key.startswith("class_")}


def click_class(at, k: int) -> None:
    (button,) = [b for key, b in class_buttons(at).items() if key.startswith(f"class_{k}_")]
    button.click().run()
    assert not at.exception, at.exception


def start_classes_session(
    at, dataset_id: int, classes: str, strategy: str = "smallest-margin", target: str | None = None
) -> None:
    """Start a session with named classes on the New session form (``target``: the class looked for, typed)."""
    if target is not None:
        at.text_input(key="new_target").input(target)
    at.selectbox(key="new_dataset").select(dataset_id)
    at.text_input(key="new_classes").input(classes)
    at.selectbox(key="new_class_strategy").select(strategy)
    at.button(key="start_session").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def kind_session(svc: MarginLab, kind: str):
    """A K-class session (one, two, three; random) started on the Label page over a dataset of items of ``kind``
    (table, image, text, molecule) by olga: the app and the session's row."""
    from tests.app.test_app_item_display import import_kind

    dataset_id = import_kind(svc, kind)
    at = start_app("olga")
    start_classes_session(at, dataset_id, "one, two, three", strategy="random")
    (session,) = repo.list_sessions(svc.engine, annotator="olga")
    return at, session


def test_label_page_history_export_and_resume_of_a_k_class_session(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    at = start_app()
    start_classes_session(at, dataset_id, ", ".join(CLASSES))
    (session,) = [s for s in repo.list_sessions(svc.engine) if s.dataset_id == dataset_id]
    assert session.settings.classes == CLASSES
    # one button per class, with its name as written (not as Markdown) and its key
    buttons = class_buttons(at)
    assert len(buttons) == 3
    assert [as_shown(b.label) for b in buttons.values()] == list(
        CLASSES
    )  # the key is the hint beside it, not in the label
    assert [b.proto.shortcut for b in buttons.values()] == ["1", "2", "3"]  # the keys 1 to K
    # ... as plain text: the Markdown in the names is escaped, so no emphasis and no image come out of it
    labels = [b.label for b in buttons.values()]
    assert "\\*\\*x\\*\\*" in labels[1] and "\\!\\[p\\]\\(http" in labels[2], labels
    assert not [url for img in at.get("image") for url in img.value if "h/p.png" in url]
    # label with each class, following the groups
    asked = []
    for _ in range(9):
        item = shown_item(at)
        asked.append(item)
        click_class(at, int(truth[item]))
    events = repo.label_events(svc.engine, session.id)
    assert [(e.item_index, e.answer_class) for e in events] == [(i, int(truth[i])) for i in asked]
    assert {e.answer_class for e in events} == {0, 1, 2}
    # the progress line names each class as written
    (line,) = [m.value for m in at.markdown if "labels (" in as_shown(m.value)]
    assert all(name in as_shown(line) for name in CLASSES) and "\\*\\*x\\*\\*" in line
    assert len(at.get("plotly_chart")) == 3  # accuracy, answers per class, each class's AUC
    # why the item was chosen, in words (no code names), and what stopping is for
    captions = [as_shown(c.value) for c in at.caption]
    chosen = "Chosen by **Least sure between two classes**: the model rates"
    assert any(c.startswith(chosen) for c in captions), captions
    assert not any(
        code in text
        for text in captions + [as_shown(m.value) for m in at.markdown]
        for code in ("smallest-margin", "near-boundary", "f(x)", "|f|")
    ), captions
    assert any(
        "Stopping estimates (when can I stop?) work on one class against the rest: say which class you are "
        "looking for" in c
        for c in captions
    )
    # Undo, then Skip
    (undo,) = [b for b in at.button if b.key and b.key.startswith("undo_")]
    undo.click().run()
    assert shown_item(at) == asked[-1] and len(repo.label_events(svc.engine, session.id)) == 8
    (skip,) = [b for b in at.button if b.key and b.key.startswith("skip_")]
    skip.click().run()
    assert repo.label_events(svc.engine, session.id)[-1].value == 0

    # History: change the first answer to another class
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    first = repo.label_events(svc.engine, session.id)[0]
    at.selectbox(key=next(s.key for s in at.selectbox if s.key and s.key.startswith("history_pick_"))).select(
        first.label_id
    ).run()
    new = (first.answer_class + 1) % 3
    (change,) = [b for b in at.button if b.key == f"change_{first.label_id}_{new}"]
    assert as_shown(change.label) == f"Change to {CLASSES[new]}"
    change.click().run()
    assert not at.exception, at.exception
    assert repo.label_events(svc.engine, session.id)[0].answer_class == new

    # Export: the class names, as written
    at.switch_page("views/export.py").run()
    assert not at.exception, at.exception
    exported = svc.export_labels(session_id=session.id, fmt="csv")
    rows = list(csv.DictReader(io.StringIO(exported.decode() if isinstance(exported, bytes) else exported)))
    assert [r["label"] for r in rows if r["label"] != "skipped"][0] == CLASSES[new]
    assert {r["label"] for r in rows} <= {*CLASSES, "skipped"}

    # My labels: each answer as the export says it (the class's name as written), not the dataset's yes / no
    at.switch_page("views/my_labels.py").run()
    assert not at.exception, at.exception
    (mine,) = [d.value for d in at.dataframe if "score when asked" in d.value]
    # (the export leaves the skip out; My labels lists it, newest first)
    assert [a for a in mine["answer"] if a != "skipped"] == [r["label"] for r in reversed(rows)]
    assert list(mine["answer"]).count("skipped") == 1

    # resume: a new server process gives the same next item
    at.switch_page("views/label.py").run()
    before = shown_item(at)
    from app.ui.state import _service_for

    _service_for.clear()  # as after a restart of the server: the next page view opens the database anew
    again = start_app()
    assert not again.exception
    assert shown_item(again) == before


def test_a_label_column_of_k_values_keeps_every_class_and_its_sessions_have_them(db_url):
    svc = MarginLab.from_url(db_url)
    rng = np.random.default_rng(2)
    kinds = ["setosa", "versicolor", "virginica"]
    group = np.repeat([0, 1, 2], 12)
    X = np.column_stack([3.0 * group, -2.0 * group]) + rng.normal(0, 0.4, (36, 2))
    text = "a,b,species\n" + "".join(f"{x:.3f},{y:.3f},{kinds[g]}\n" for (x, y), g in zip(X, group, strict=True))
    result = svc.import_csv(text.encode(), name="iris-like", label_column="species", keep_classes=True)
    assert result.created, result.message
    dataset = svc.dataset(result.dataset_id)
    assert dataset.meta["class_names"] == kinds and dataset.meta["class_labels"] == group.tolist()
    assert not dataset.has_true_labels  # (no yes / no labels: the binary read-outs have nothing to misread)
    # a session on it has the dataset's classes without typing them
    run = svc.start_session(dataset_id=result.dataset_id, annotator="ada", strategy="least-certain-class")
    assert run.classes == tuple(kinds)
    answer_all(run, group, 6)
    assert sum(run.class_counts().values()) == 6

    # more than 9 values: refused, naming the way out; nothing is stored
    many = "a,b,kind\n" + "".join(f"{k},{k % 3},c{k}\n" for k in range(12))
    with pytest.raises(ServiceError, match="up to 9: choose the positive value"):
        svc.import_csv(many.encode(), name="many", label_column="kind", keep_classes=True)
    assert [d.name for d in svc.datasets()] == ["iris-like"]
    # two values stay a yes / no dataset, as before
    two = "a,b,kind\n" + "".join(f"{k},{k % 3},{'yes' if k % 2 else 'no'}\n" for k in range(12))
    binary = svc.import_csv(two.encode(), name="two", label_column="kind", keep_classes=True)
    assert svc.dataset(binary.dataset_id).has_true_labels
    assert "class_names" not in svc.dataset(binary.dataset_id).meta


@pytest.mark.parametrize("kind", ["table", "image", "text", "molecule"])
def test_a_k_class_session_shows_every_kind_of_item(db_url, kind):
    from tests.app.test_app_item_display import assert_item_shown

    svc = MarginLab.from_url(db_url)
    at, _ = kind_session(svc, kind)
    first = shown_item(at)
    assert_item_shown(at, kind, first, svc.engine)
    click_class(at, 2)
    assert_item_shown(at, kind, shown_item(at), svc.engine)
    (event,) = repo.label_events(svc.engine, repo.list_sessions(svc.engine, annotator="olga")[0].id)
    assert (event.item_index, event.answer_class) == (first, 2)


def test_the_model_state_holds_every_class_machine(db_url):
    import json

    from core.solvers import solver_class

    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="smallest-margin", classes=CLASSES)
    answer_all(run, truth, 9)
    with np.load(io.BytesIO(run.model_state()), allow_pickle=False) as stored:
        meta = json.loads(str(stored["__meta__"]))
        assert meta["classes"] == list(CLASSES) and len(meta["machines"]) == 3
        data = {k.split("/", 1)[1]: stored[k] for k in stored.files if k.startswith("class0/")}
        for k in range(3):  # each machine, restored with the shared points, scores as the run's machine k
            arrays = {
                **data,
                **{name.split("/", 1)[1]: stored[name] for name in stored.files if name.startswith(f"class{k}/")},
            }
            machine = solver_class(run.info.solver).from_state(arrays, meta["machines"][k])
            np.testing.assert_array_equal(
                machine.decision_function(np.arange(45)), run.model.machines[k].decision_function(np.arange(45))
            )
            # (the run keeps its scores current label by label: the same to the last bits or so)
            np.testing.assert_allclose(
                machine.decision_function(np.arange(45)), run.model.decision_function()[:, k], rtol=0, atol=1e-12
            )


def test_a_session_with_named_classes_is_replayed_with_the_heuristics_for_named_classes_only(db_url):
    from app.services.replay import Replays

    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random", classes=CLASSES)
    answer_all(run, truth, 6)
    replays = Replays(svc)
    assert "named classes" in replays.replayable()[f"session:{run.session_id}"]
    with pytest.raises(ServiceError, match="not a heuristic for named classes"):
        replays.run_replay(f"session:{run.session_id}", strategies=["near-boundary"], seeds=1)
    assert svc.comparisons() == []


def test_a_k_class_session_answers_undoes_changes_and_resumes_on_both_databases(engine):
    """The run over SQLite and PostgreSQL (``engine``): answers with their classes, undo, a change, a resume."""
    svc = MarginLab(engine)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy="smallest-margin", classes=CLASSES, solver="lasvm"
    )
    answer_all(run, truth, 7)
    assert run.undo().ok
    first = run.answers[0]
    assert run.change_label(first.label_id, (first.answer_class + 1) % 3).ok
    scores, item = run.model.decision_function(), run.shown.item_index
    svc.forget_runs()
    again = svc.open_session(run.session_id)
    assert np.array_equal(again.model.decision_function(), scores) and again.shown.item_index == item
    assert [(e.item_index, e.answer_class) for e in repo.label_events(engine, run.session_id)] == [
        (a.item_index, a.answer_class) for a in again.answers
    ]
    assert again.answers[0].answer_class == (first.answer_class + 1) % 3


def test_a_most_likely_session_stops_on_its_class_against_the_rest_as_a_two_class_session(db_url):
    """ "Most likely <class>": the stopping rules, the estimate of that class's items still unlabelled and the
    recall check, on the answers as that class (positive) against every other (negative), with the session's
    target and confidence; the check's draws are stored with their provenance and resume."""
    from core import stopping as rules

    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy="target-class", classes=CLASSES, target=CLASSES[1]
    )
    assert run.set_stopping(target_recall=0.9, confidence=0.8).ok
    answer_all(run, truth, 12)
    assert run.skip(item_index=run.shown.item_index).ok
    answer_all(run, truth, 3)
    status = run.stopping_status()
    assert (status.target_recall, status.confidence) == (0.9, 0.8)
    # found: the answers of the class, label by label (the skip left out)
    classes = [a.answer_class for a in run.answers if a.answer_class is not None]
    assert list(status.gain["found"]) == list(np.cumsum([c == 1 for c in classes]))
    # the rules and the estimate are core.stopping's over class 1 against the rest, with machine 1's scores
    labels = np.array([1 if c == 1 else -1 for c in classes])
    labelled = np.array([a.item_index for a in run.answers if a.answer_class is not None])
    unlabelled = np.setdiff1d(np.arange(45), labelled)
    expected = rules.estimate_remaining(
        labels,
        np.zeros(len(labels), dtype=bool),
        (),
        pool_size=45,
        unlabelled_scores=run.model.decision_function()[unlabelled, 1],
        asked_scores=np.array([a.scores[1] for a in run.answers if a.answer_class is not None]),
        # "Most likely" for the class stopped on is the two-class top-first heuristic: no model-based estimate
        asked_by=[
            rules.TOP_FIRST_HEURISTICS[0] if a.strategy == "target-class" else a.strategy
            for a in run.answers
            if a.answer_class is not None
        ],
        target_recall=0.9,
        confidence=0.8,
        # (the estimate's reason names the heuristic as the session does: "Most likely <class>")
        heuristic_words=lambda name: f"Most likely {CLASSES[1]}" if name in rules.TOP_FIRST_HEURISTICS else name,
    )
    assert status.estimate.in_words() == expected.in_words(), (status.estimate, expected)
    knee = rules.knee_rule(labels, pool_size=45)
    assert status.states[[s.rule for s in status.states].index("knee")] == knee
    # the recall check: random draws, no skip, provenance stored, the same state after a restart
    assert run.start_check().ok and run.checking
    shown = run.shown
    assert shown.strategy == rules.CHECK_STRATEGY and "at random" in shown.reason
    assert run.heuristic_words(shown.strategy) == rules.CHECK_WORDS
    skip = run.skip(item_index=shown.item_index)
    assert not skip.ok and "Skip is not available" in skip.message
    drawn = []
    for _ in range(3):
        if not run.checking:
            break
        drawn.append(run.shown.item_index)
        assert run.answer(int(truth[drawn[-1]]), item_index=drawn[-1]).ok
    # undo brings back the same draw
    last, next_item = drawn[-1], run.shown.item_index if run.shown else None
    assert run.undo().ok and run.checking and run.shown.item_index == last
    assert run.answer(int(truth[last]), item_index=last).ok
    assert (run.shown.item_index if run.shown else None) == next_item
    events = repo.label_events(svc.engine, run.session_id)
    assert [e.item_index for e in events[16:]] == drawn
    assert [e.strategy for e in events[16:]] == [rules.CHECK_STRATEGY] * len(drawn)
    svc.forget_runs()
    again = MarginLab.from_url(db_url).open_session(run.session_id)
    assert again.checking == run.checking and again.shown.item_index == run.shown.item_index
    assert again.stopping_status().estimate.in_words() == run.stopping_status().estimate.in_words()
    assert [s.message for s in again.stopping_status().states] == [s.message for s in run.stopping_status().states]
    if again.checking:
        assert again.stop_check().ok and not again.checking
        assert again.shown.strategy == "target-class"
    # another strategy with no class named yet: no stopping status, and a check is refused until one is named
    other = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random", classes=CLASSES)
    assert other.stopping_status() is None
    outcome = other.start_check()
    assert not outcome.ok and "say which class you are looking for" in outcome.message


def test_the_form_starts_a_most_likely_session_for_the_class_named_and_shows_when_to_stop(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    at = start_app()
    start_classes_session(at, dataset_id, ", ".join(CLASSES), strategy="target-class", target=CLASSES[2])
    (session,) = [s for s in repo.list_sessions(svc.engine) if s.dataset_id == dataset_id]
    assert session.settings.strategy_params == {"target": CLASSES[2]}
    for _ in range(4):
        click_class(at, int(truth[shown_item(at)]))
    heading = [m.value for m in at.markdown if "When can I stop finding" in m.value]
    assert [as_shown(h) for h in heading] == [f"**When can I stop finding {CLASSES[2]}?**"]
    assert "\\!\\[p\\]" in heading[0]  # (the class name as written, not an image)
    # the two-class panel, on that class against the rest: the verdict, the estimate, the rules, the check
    words = [as_shown(c.value) for c in at.caption] + [as_shown(m.value) for m in at.markdown]
    assert any(f"a positive is an answer {CLASSES[2]}" in w for w in words), words
    assert any("positives still unlabelled" in w.lower() for w in words)
    assert [i for i in at.info if "Not yet (rule: " in as_shown(i.value)]
    assert not any("Stopping estimates (when can I stop?)" in w for w in words)
    at.button(key="start_check").click().run()
    assert not at.exception, at.exception
    again = MarginLab.from_url(db_url).open_session(session.id)
    assert again.checking and shown_item(at) == again.shown.item_index
    assert any("drawn at random" in as_shown(c.value) for c in at.caption)
    click_class(at, int(truth[shown_item(at)]))
    assert repo.label_events(svc.engine, session.id)[-1].strategy == "random (recall check)"
    if MarginLab.from_url(db_url).open_session(session.id).checking:  # (the draw may have ended the check)
        at.button(key="stop_check").click().run()
        assert not at.exception and not MarginLab.from_url(db_url).open_session(session.id).checking
    # a class to find that is not one of the classes: said in the form, nothing stored
    at.text_input(key="new_target").input("cow")
    at.selectbox(key="new_dataset").select(dataset_id)
    at.button(key="start_session").click().run()
    assert any("'cow', is not one of the classes" in as_shown(e.value) for e in at.error), [e.value for e in at.error]
    assert len(repo.list_sessions(svc.engine, annotator="ada")) == 1


def test_a_k_class_session_whose_settings_this_version_refuses_opens_with_its_answers_and_says_so(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random", classes=CLASSES)
    answer_all(run, truth, 3)
    repo.set_session_setting(svc.engine, run.session_id, "strategy_params", {"width": 3})  # (not random's)
    svc.forget_runs()
    again = svc.open_session(run.session_id)
    assert again.model is None and again.shown is None and "could not be rebuilt" in again.problem
    assert again.classes == CLASSES and len(again.answers) == 3 and again.n_labels == 3
    outcome = again.answer(0)
    assert not outcome.ok and outcome.message == again.problem
    assert len(repo.label_events(svc.engine, run.session_id)) == 3


def test_known_items_of_a_k_class_session_are_stored_as_priors_with_their_class_and_learned_first(db_url):
    from core.priors import PRIOR

    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy="target-class", classes=CLASSES, target=CLASSES[1]
    )
    assert run.search_how == "column filter"
    X = repo.load_dataset_arrays(svc.engine, dataset_id)[0]
    result = run.search_pool("a > 2")
    assert [h.item_index for h in result.hits] == list(np.flatnonzero(X[:, 0] > 2)) and result.hits
    first, second = (int(h.item_index) for h in result.hits[:2])
    # before the first question: two known items of two classes, then the strategy asks at once
    assert run.mark_known(first, CLASSES[1]).ok
    outcome = run.mark_known(0, 0)
    assert outcome.ok and outcome.message == f"Item 0: known {CLASSES[0]}, learned."
    assert run.n_known == 2 and run.shown.strategy == "target-class"
    events = repo.label_events(svc.engine, run.session_id)
    assert [(e.item_index, e.value, e.answer_class, e.strategy) for e in events] == [
        (first, 1, 1, PRIOR),
        (0, 1, 0, PRIOR),
    ]
    assert run.heuristic_words(PRIOR) == "marked as known"
    # the hit says it is answered, with its class
    assert next(h for h in run.search_pool("a > 2").hits if h.item_index == first).answer == CLASSES[1]
    # the model learned them first, in the order marked
    fresh = run._new_model()
    fresh.learn(first, CLASSES[1])
    fresh.learn(0, CLASSES[0])
    np.testing.assert_array_equal(fresh.decision_function(), run.model.decision_function())
    answer_all(run, truth, 3)
    # refused, naming what is wrong; nothing stored
    again = run.mark_known(first, CLASSES[2])
    assert not again.ok and f"already answered ({CLASSES[1]})" in again.message
    with pytest.raises(ServiceError, match="is not a class of this session"):
        run.mark_known(second, "cow")
    missing = run.mark_known(99, 0)
    assert not missing.ok and "There is no item 99" in missing.message
    assert run.start_check().ok
    during = run.mark_known(second, 0)
    assert not during.ok and "during the random check" in during.message
    assert len(repo.label_events(svc.engine, run.session_id)) == 5
    # a restart: the same answers, model and next item
    scores, item = run.model.decision_function(), run.shown.item_index
    svc.forget_runs()
    resumed = MarginLab.from_url(db_url).open_session(run.session_id)
    np.testing.assert_array_equal(resumed.model.decision_function(), scores)
    assert resumed.shown.item_index == item and resumed.n_known == 2


@pytest.mark.parametrize("kind", ["text", "table", "molecule", "image"])
def test_the_label_page_marks_known_items_with_their_class_for_every_kind_of_item(db_url, kind):
    svc = MarginLab.from_url(db_url)
    at, session = kind_session(svc, kind)
    run = svc.open_session(session.id)
    # (words in a text pool, a substructure in a molecule pool, a column filter in a table or an image pool)
    query = {"text": "robot", "molecule": "CO"}.get(kind, f"{run.feature_names[0]} >= 0")
    at.text_input(key=f"known_query_{session.id}").input(query).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    hits = [t.value for t in at.text if t.value.startswith("Item ")]
    assert hits, [c.value for c in at.caption]
    item = int(hits[0].split()[1].rstrip(":"))
    buttons = [b for b in at.button if b.key and b.key.startswith(f"known_{session.id}_{item}_")]
    assert [as_shown(b.label) for b in buttons] == ["Known one", "Known two", "Known three"]
    buttons[2].click().run()
    assert not at.exception, at.exception
    (event,) = repo.label_events(svc.engine, session.id)
    assert (event.item_index, event.answer_class, event.strategy) == (item, 2, "prior")
    assert any(t.value == "answered: three" for t in at.text)


def test_labels_from_a_file_are_imported_with_their_classes_and_unknown_classes_are_refused_by_name(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="smallest-margin", classes=CLASSES)
    answer_all(run, truth, 3)
    done = {a.item_index for a in run.answers}
    items = [i for i in range(45) if i not in done][:4]
    # (the dataset has no keys: items by number; class names as written, any case; 'skipped' a skip)
    rows = [(items[0], CLASSES[0].upper()), (items[1], CLASSES[1]), (items[2], "skipped"), (items[3], CLASSES[2])]
    good = "item_key,label\n" + "".join(f"{i},{c}\n" for i, c in rows)
    # a file naming classes this session does not have: refused, naming them, nothing stored
    bad = good + f"{items[0] + 1},cow\n{items[0] + 2},horse\n{items[0] + 3},cow\n"
    with pytest.raises(ServiceError) as refused:
        run.import_labels(bad.encode(), key_column="item_key", label_column="label", source="bad.csv")
    message = str(refused.value)
    assert message.startswith("Nothing was imported from bad.csv: ")
    assert "'cow', 'horse' are not classes of this session" in message and CLASSES[2] in message
    assert len(repo.label_events(svc.engine, run.session_id)) == 3 and len(run.answers) == 3
    # an answer that contradicts the session's: refused by row, nothing stored
    clash = f"item_key,label\n{run.answers[0].item_index},{CLASSES[(run.answers[0].answer_class + 1) % 3]}\n"
    with pytest.raises(ServiceError, match="row 1: item '.*' is already"):
        run.import_labels(clash.encode(), key_column="item_key", label_column="label")
    outcome = run.import_labels(good.encode(), key_column="item_key", label_column="label", source="review.csv")
    assert outcome.ok, outcome.message
    assert outcome.message == (
        f"Imported 4 answers from review.csv ({CLASSES[0]} 1, {CLASSES[1]} 1, {CLASSES[2]} 1, 1 skipped)."
    )
    events = repo.label_events(svc.engine, run.session_id)
    assert [(e.item_index, e.answer_class, e.strategy) for e in events[3:]] == [
        (items[0], 0, "imported"),
        (items[1], 1, "imported"),
        (items[2], None, "imported"),
        (items[3], 2, "imported"),
    ]
    # the model learned them after the answers before, in the file's order; a restart has the same
    fresh = run._new_model()
    for a in run.answers:
        if a.answer_class is not None:
            fresh.learn(a.item_index, CLASSES[a.answer_class])
    np.testing.assert_array_equal(fresh.decision_function(), run.model.decision_function())
    scores, item = run.model.decision_function(), run.shown.item_index
    svc.forget_runs()
    again = MarginLab.from_url(db_url).open_session(run.session_id)
    np.testing.assert_array_equal(again.model.decision_function(), scores)
    assert again.shown.item_index == item
    # the same file again: nothing new
    same = again.import_labels(good.encode(), key_column="item_key", label_column="label", source="review.csv")
    assert same.ok and "already in this session" in same.message


def test_the_sessions_page_imports_a_file_of_classes_and_names_the_unknown_ones(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, _ = three_blobs(svc)
    at = start_app()
    start_classes_session(at, dataset_id, ", ".join(CLASSES))
    (session,) = repo.list_sessions(svc.engine)
    at.switch_page("views/sessions.py").run()
    assert not at.exception, at.exception
    assert any("the session's class names" in as_shown(c.value) for c in at.caption)
    bad = f"item_key,label\n40,{CLASSES[1]}\n41,cow\n".encode()
    at.file_uploader(key=f"labels_upload_{session.id}").upload("bad.csv", bad, "text/csv").run()
    at.button(key=f"labels_import_{session.id}").click().run()
    assert not at.exception, at.exception
    assert any("'cow' is not a class of this session" in as_shown(e.value) for e in at.error), [
        e.value for e in at.error
    ]
    assert repo.label_events(svc.engine, session.id) == []
    good = f"item_key,label\n40,{CLASSES[1]}\n41,{CLASSES[2]}\n".encode()
    at.file_uploader(key=f"labels_upload_{session.id}").upload("good.csv", good, "text/csv").run()
    at.button(key=f"labels_import_{session.id}").click().run()
    assert any("Imported 2 answers from good.csv" in as_shown(m.value) for m in at.success)
    assert [(e.item_index, e.answer_class) for e in repo.label_events(svc.engine, session.id)] == [(40, 1), (41, 2)]


@pytest.mark.parametrize("multi_label", [False, True])
def test_items_asked_before_the_model_could_rate_them_are_exported_without_a_score(db_url, multi_label):
    """The cold start's item has no score yet (the machines hold a placeholder): its decision value is empty in
    the export, as a two-class session's cold-start items are; later items carry the model's score."""
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy="random", classes=", ".join(CLASSES), multi_label=multi_label
    )
    for _ in range(8):
        item = run.shown.item_index
        answer = [int(truth[item])] if multi_label else int(truth[item])
        assert run.answer(answer, item_index=item).ok
    stored = repo.label_events(svc.engine, run.session_id)
    rows = list(csv.DictReader(io.StringIO(svc.export_labels(session_id=run.session_id, fmt="csv").decode())))
    cold = [s.strategy == run.cold_start for s in stored]
    assert cold[0] and not cold[-1]
    assert [r["decision_value"] == "" for r in rows] == cold
    assert all(s.decision_value is None for s, c in zip(stored, cold, strict=True) if c)


def test_the_data_page_keeps_a_label_columns_three_to_nine_values_as_classes_unless_told_otherwise(db_url):
    """A label column with 3 to 9 values keeps them all by default (a screener who picks "species" means the
    species, not one of them against the rest); unticking it asks for the positive value, as before."""
    from tests.app.test_app_findings import data_page_with

    kinds = ["setosa", "versicolor", "virginica"]
    data = ("a,b,species\n" + "".join(f"{k * 0.5:.1f},{k % 4},{kinds[k % 3]}\n" for k in range(30))).encode()
    at = data_page_with("iris.csv", data)
    at.selectbox[[s.label for s in at.selectbox].index("True-label column (optional)")].set_value("species").run()
    assert not at.exception, at.exception
    keep = at.checkbox(key="upload_keep_classes")
    assert keep.value is True
    assert "Positive value of the label column" not in [s.label for s in at.selectbox]
    keep.uncheck().run()
    assert "Positive value of the label column" in [s.label for s in at.selectbox]
