"""Multi-label sessions (several classes per item, 2 to 9) in the app: the run (``app.services.multi_label.
MultiLabelRun``: answers as sets, undo, History changes, resume after a restart with the same model and next
item, the export's class names, refusals that store nothing), then the pages through AppTest: the New session
form's choice, a toggle per class (keys 1 to 9), Submit (Enter), Skip and Undo, for every kind of item."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from app.services import MarginLab, ServiceError
from core.multiclass import MultiLabel
from storage import repository as repo
from storage.export import unescape_cell
from tests.app import test_app
from tests.app.test_app import as_shown, shown_item, start_app

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

#: class names a person might type: Markdown that must show as it is, a formula that must not run in a spreadsheet
CLASSES = ("urgent", "**billing**", "=SUM(A1)")
#: the set of classes of each of four groups: none, the first, the second, all three
GROUP_SETS = ((), (0,), (1,), (0, 1, 2))


def four_groups(svc: MarginLab) -> tuple[int, list[tuple[int, ...]]]:
    """A table dataset of four well separated groups; its id and each row's set of classes."""
    rng = np.random.default_rng(4)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0], [4.0, 4.0]])
    group = np.repeat([0, 1, 2, 3], 12)
    X = centres[group] + rng.normal(0, 0.6, (48, 2))
    dataset_id = repo.import_dataset(svc.engine, name="tickets", X=X, feature_names=["a", "b"])
    return dataset_id, [GROUP_SETS[g] for g in group]


def answer_all(run, truth, n):
    for _ in range(n):
        item = run.shown.item_index
        assert run.answer([CLASSES[k] for k in truth[item]], item_index=item).ok


def start(svc, dataset_id, **options):
    return svc.start_session(
        dataset_id=dataset_id, annotator="ada", classes=", ".join(CLASSES), multi_label=True, **options
    )


@pytest.mark.parametrize(
    ("strategy", "solver"),
    [("least-sure-class", "incremental"), ("least-sure-class", "active-set"), ("random", "lasvm")],
)
def test_a_multi_label_run_resumes_with_the_same_model_and_next_item(db_url, strategy, solver):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = four_groups(svc)
    run = start(svc, dataset_id, strategy=strategy, seed=5, solver=solver)
    assert run.multi_label and run.classes == CLASSES and run.info.solver == solver
    assert isinstance(run.model, MultiLabel)
    answer_all(run, truth, 8)
    assert run.skip(item_index=run.shown.item_index).ok
    answer_all(run, truth, 4)
    assert run.shown.strategy == strategy
    if strategy == "least-sure-class":
        assert run.heuristic_words(run.shown.strategy) == "Least sure on any class"
        assert run.shown.reason.startswith("the model is least sure whether this item is '")

    def same_as_after_a_restart(atol):
        scores, shown = run.model.decision_function(), run.shown
        svc.forget_runs()  # as after a restart
        again = MarginLab.from_url(db_url).open_session(run.session_id)
        assert again.multi_label and isinstance(again.model, MultiLabel)
        np.testing.assert_allclose(again.model.decision_function(), scores, rtol=0, atol=atol)
        assert (again.shown.item_index, again.shown.strategy, again.shown.reason) == (
            shown.item_index,
            shown.strategy,
            shown.reason,
        )
        assert [(a.item_index, a.answer_classes) for a in again.answers] == [
            (a.item_index, a.answer_classes) for a in run.answers
        ]
        assert again.class_counts() == run.class_counts()
        return again

    same_as_after_a_restart(atol=0)  # bit for bit
    run = svc.open_session(run.session_id)
    asked = run.answers[-1].item_index
    assert run.undo().ok
    assert run.shown.item_index == asked and run.n_labels == 11
    # an exact solver unlearns (the model trained without the answer, to rounding); the others learn again
    same_as_after_a_restart(atol=1e-12 if solver != "lasvm" else 0)


def test_each_machine_is_the_binary_problem_of_its_class_and_a_change_relearns_from_the_start(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = four_groups(svc)
    run = start(svc, dataset_id, strategy="least-sure-class")
    answer_all(run, truth, 10)
    assert [a.answer_classes for a in run.answers] == [truth[a.item_index] for a in run.answers]
    assert run.class_counts() == {
        name: sum(k in truth[a.item_index] for a in run.answers) for k, name in enumerate(CLASSES)
    }
    target = next(a for a in run.answers if a.answer_classes)
    outcome = run.change_label(target.label_id, [])  # to none of these
    assert outcome.ok and "to none of these" in outcome.message
    assert next(a for a in run.answers if a.label_id == target.label_id).answer_classes == ()
    table = run.label_table()
    row = table[table["label_id"] == target.label_id].iloc[0]
    assert row["answer"] == "none of these"
    assert row["as given"] == "; ".join(CLASSES[k] for k in target.answer_classes)
    assert "changed it to none of these" in row["changes"]
    # machine k is the binary solver on the same items, +1 where class k is in the answer (as corrected)
    from core.solvers import make_solver

    params = {k: v for k, v in run.settings.solver_params().items() if k != "auto"}
    for k in range(3):
        binary = make_solver(run.info.solver, run.pool_X, **params)
        for a in run.answers:
            binary.learn(a.item_index, 1.0 if k in a.answer_classes else -1.0)
        np.testing.assert_allclose(
            binary.decision_function(np.arange(48)), run.model.decision_function()[:, k], rtol=0, atol=1e-9
        )
    # the model is the one that learned the corrected answers from the start, in their order
    fresh = run._new_model()
    for a in run.answers:
        fresh.learn(a.item_index, [CLASSES[k] for k in a.answer_classes])
    assert np.array_equal(fresh.decision_function(), run.model.decision_function())
    assert run.remove_label(target.label_id).ok and len(run.answers) == 9


def test_answers_that_do_not_fit_are_refused_and_nothing_is_stored(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = four_groups(svc)
    run = start(svc, dataset_id, strategy="random")
    item = run.shown.item_index
    for answer, words in [
        ("urgent", "a set of classes per item"),
        (0, "a set of classes per item"),
        (["urgent", "cow"], "'cow' is not a class of this session"),
        ([0, 0], "named once"),
    ]:
        with pytest.raises(ServiceError, match=words):
            run.answer(answer, item_index=item)
    assert repo.label_events(svc.engine, run.session_id) == [] and run.shown.item_index == item
    assert run.answer(["urgent"], item_index=item).ok
    label_id = run.answers[0].label_id
    with pytest.raises(ServiceError, match="'cow' is not a class of this session"):
        run.change_label(label_id, ["cow"])
    assert not run.change_label(label_id, ["urgent"]).ok  # the same set: nothing changed
    assert repo.label_events(svc.engine, run.session_id)[0].answer_classes == (0,)
    # a set of classes in a single-choice session: refused by storage, nothing written
    single = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random", classes=CLASSES)
    with pytest.raises(Exception, match="not a set of classes"):
        repo.record_label(
            svc.engine,
            single.session_id,
            item_index=0,
            value=1,
            answer_classes=[0, 1],
            annotator="ada",
            strategy="random",
            solver="incremental",
        )
    assert repo.label_events(svc.engine, single.session_id) == []


@pytest.mark.parametrize(
    "options, words",
    [
        ({"classes": "a"}, "at least 2"),
        ({"classes": ""}, "name the classes"),
        ({"classes": ", ".join(f"c{k}" for k in range(10))}, "At most 9"),
        ({"classes": "a, b", "strategy": "smallest-margin"}, "several classes per item 'smallest-margin'"),
    ],
)
def test_bad_multi_label_sessions_are_refused_and_nothing_is_stored(db_url, options, words):
    svc = MarginLab.from_url(db_url)
    dataset_id, _ = four_groups(svc)
    with pytest.raises(ServiceError, match=words):
        svc.start_session(
            dataset_id=dataset_id, annotator="ada", multi_label=True, **{"strategy": "least-sure-class", **options}
        )
    assert repo.list_sessions(svc.engine) == []
    two = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random", classes="a, b", multi_label=True)
    assert two.classes == ("a", "b") and two.multi_label


def test_the_export_joins_the_class_names_and_escapes_them(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = four_groups(svc)
    run = start(svc, dataset_id, strategy="least-sure-class")
    answer_all(run, truth, 12)
    assert run.skip(item_index=run.shown.item_index).ok
    changed = run.answers[1]
    assert run.change_label(changed.label_id, ["=SUM(A1)"]).ok
    exported = svc.export_labels(session_id=run.session_id, fmt="csv", include_skips=True)
    rows = list(csv.DictReader(io.StringIO(exported.decode() if isinstance(exported, bytes) else exported)))
    written = {
        (): "(none)",
        (0,): "urgent",
        (1,): "**billing**",
        (2,): "'=SUM(A1)",  # a cell that would start a formula gets its quote
        (0, 1, 2): "urgent; **billing**; =SUM(A1)",  # (the names in the session's order, joined by "; ")
    }
    expected = [written[a.answer_classes] if a.answered else "skipped" for a in run.answers]
    assert [r["label"] for r in rows] == expected and "skipped" in expected
    assert [int(r["label_value"]) for r in rows] == [sum(1 << k for k in a.answer_classes or ()) for a in run.answers]
    assert {a.answer_classes for a in run.answers if a.answered} == set(written)  # (every kind of set seen)
    (as_given,) = [r["label_as_given"] for r in rows if r["label_as_given"]]
    assert as_given == written[changed.answer_classes]


def test_a_multi_label_session_answers_undoes_changes_and_resumes_on_both_databases(engine):
    """The run over SQLite and PostgreSQL (``engine``): answers with their sets, undo, a change, a resume."""
    svc = MarginLab(engine)
    dataset_id, truth = four_groups(svc)
    run = start(svc, dataset_id, strategy="least-sure-class", solver="lasvm")
    answer_all(run, truth, 7)
    assert run.undo().ok
    first = run.answers[0]
    assert run.change_label(first.label_id, ["=SUM(A1)"]).ok
    scores, item = run.model.decision_function(), run.shown.item_index
    svc.forget_runs()
    again = svc.open_session(run.session_id)
    assert np.array_equal(again.model.decision_function(), scores) and again.shown.item_index == item
    assert [(e.item_index, e.answer_classes) for e in repo.label_events(engine, run.session_id)] == [
        (a.item_index, a.answer_classes) for a in again.answers
    ]
    assert again.answers[0].answer_classes == (2,)


def class_toggles(at):
    return {b.key: b for b in at.button if b.key and b.key.startswith("class_")}


def button_rows(at) -> list[tuple[str, bool, list[str]]]:
    """The keyed containers that hold buttons, in page order: (the container's key, whether it lays its buttons
    out in a row, the keys of the buttons directly in it)."""
    rows: list[tuple[str, bool, list[str]]] = []

    def walk(node) -> None:
        children = getattr(node, "children", None)
        if not isinstance(children, dict):
            return
        proto = getattr(node, "proto", None)
        block_id = str(getattr(proto, "id", "") or "")
        keys = [c.key for c in children.values() if type(c).__name__ == "Button" and c.key]
        if block_id and keys:
            horizontal = proto.HasField("flex_container") and proto.flex_container.direction == 2
            rows.append((block_id.rsplit("-", 1)[-1], horizontal, keys))
        for child in children.values():
            walk(child)

    walk(at._tree)
    return rows


def assert_toggles_above_the_actions(at, toggles: str, actions: str, prefix: str = "") -> None:
    """The class toggles fill a row of their own (container ``toggles``), Submit, Skip and Undo the row below it
    (``actions``): with several classes the actions do not wrap apart from each other."""
    rows = {key: (horizontal, buttons) for key, horizontal, buttons in button_rows(at)}
    assert list(rows).index(toggles) < list(rows).index(actions), list(rows)
    assert rows[toggles][0] and rows[actions][0], rows
    assert all(k.startswith(f"{prefix}class_") for k in rows[toggles][1]), rows[toggles]
    assert [k.split("_")[-2] for k in rows[actions][1]] == ["submit", "skip", "undo"], rows[actions]


def toggle(at, k: int) -> None:
    (button,) = [b for key, b in class_toggles(at).items() if key.startswith(f"class_{k}_")]
    button.click().run()
    assert not at.exception, at.exception


def submit(at) -> None:
    (button,) = [b for b in at.button if b.key and b.key.startswith("submit_")]
    button.click().run()
    assert not at.exception, at.exception


def start_multi_label_session(
    at, dataset_id: int, classes: str, strategy: str = "least-sure-class", target: str | None = None
) -> None:
    """Start a session with several classes per item on the New session form (``target``: the class looked for)."""
    if target is not None:
        at.text_input(key="new_target").input(target)
    at.selectbox(key="new_dataset").select(dataset_id)
    at.text_input(key="new_classes").input(classes)
    at.radio(key="new_classes_per_item").set_value("several")
    at.selectbox(key="new_multi_label_strategy").select(strategy)
    at.button(key="start_session").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_label_page_history_export_and_resume_of_a_multi_label_session(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = four_groups(svc)
    at = start_app()
    start_multi_label_session(at, dataset_id, ", ".join(CLASSES))
    (session,) = [s for s in repo.list_sessions(svc.engine) if s.dataset_id == dataset_id]
    assert session.settings.multi_label and session.settings.classes == CLASSES
    # a toggle per class, with its name as written (not as Markdown) and its key; Submit with Enter
    toggles = class_toggles(at)
    assert [as_shown(b.label) for b in toggles.values()] == list(
        CLASSES
    )  # the key is the hint beside it, not in the label
    assert [b.proto.shortcut for b in toggles.values()] == ["1", "2", "3"]
    labels = [b.label for b in toggles.values()]
    assert "\\*\\*billing\\*\\*" in labels[1], labels
    (button,) = [b for b in at.button if b.key and b.key.startswith("submit_")]
    assert button.proto.shortcut == "enter" and as_shown(button.label) == "Submit: none of these"
    assert_toggles_above_the_actions(at, "class_toggles", "answer_actions")
    # a toggle picks its class and a second click drops it; nothing is stored before Submit
    toggle(at, 0)
    assert as_shown(class_toggles(at)[next(iter(class_toggles(at)))].label) == f"✓ {CLASSES[0]}"
    toggle(at, 0)
    assert as_shown(next(iter(class_toggles(at).values())).label) == CLASSES[0]
    assert repo.label_events(svc.engine, session.id) == []
    asked = []
    for _ in range(10):
        item = shown_item(at)
        asked.append(item)
        for k in truth[item]:
            toggle(at, k)
        submit(at)
    events = repo.label_events(svc.engine, session.id)
    assert [(e.item_index, e.answer_classes) for e in events] == [(i, truth[i]) for i in asked]
    # the progress line names each class as written, with the answers holding none of them
    (line,) = [m.value for m in at.markdown if "labels (" in as_shown(m.value)]
    assert all(name in as_shown(line) for name in CLASSES) and "none of these" in line
    assert len(at.get("plotly_chart")) == 3  # accuracy, answers per class, each class's AUC
    assert any("Agreement per class" in m.value for m in at.markdown)
    captions = [as_shown(c.value) for c in at.caption]
    assert any("**Enter** submit" in c for c in captions), captions
    # Undo, then Skip
    (undo,) = [b for b in at.button if b.key and b.key.startswith("undo_")]
    undo.click().run()
    assert shown_item(at) == asked[-1] and len(repo.label_events(svc.engine, session.id)) == 9
    (skip,) = [b for b in at.button if b.key and b.key.startswith("skip_")]
    skip.click().run()
    assert repo.label_events(svc.engine, session.id)[-1].value == 0

    # History: change the first answer's set to another (the classes as written), then to none of these
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    first = repo.label_events(svc.engine, session.id)[0]
    at.selectbox(key=next(s.key for s in at.selectbox if s.key and s.key.startswith("history_pick_"))).select(
        first.label_id
    ).run()
    (chooser,) = [m for m in at.multiselect if m.key and m.key.startswith(f"history_set_{first.label_id}_")]
    assert chooser.value == list(first.answer_classes)
    assert chooser.options == list(CLASSES)  # (the names as written: a select box's options are not Markdown)
    chooser.set_value([2]).run()
    (change,) = [b for b in at.button if b.key == f"change_{first.label_id}_set"]
    change.click().run()
    assert not at.exception, at.exception
    assert repo.label_events(svc.engine, session.id)[0].answer_classes == (2,)

    # Export: the class names, as written
    at.switch_page("views/export.py").run()
    assert not at.exception, at.exception

    # My labels: each answer's classes as the export writes them (the first one changed to the third class)
    exported = svc.export_labels(session_id=session.id, fmt="csv")
    rows = list(csv.DictReader(io.StringIO(exported.decode() if isinstance(exported, bytes) else exported)))
    at.switch_page("views/my_labels.py").run()
    assert not at.exception, at.exception
    (mine,) = [d.value for d in at.dataframe if "score when asked" in d.value]
    # (the export leaves the skip out and escapes '=SUM(A1)' against formulas; My labels lists the skip, newest
    # first, and shows the name as written)
    assert [a for a in mine["answer"] if a != "skipped"] == [unescape_cell(r["label"]) for r in reversed(rows)]
    assert list(mine["answer"]).count("skipped") == 1
    assert list(mine["answer"])[-1] == CLASSES[2]

    # resume: a new server process gives the same next item
    at.switch_page("views/label.py").run()
    before = shown_item(at)
    from app.ui.state import _service_for

    _service_for.clear()  # as after a restart of the server: the next page view opens the database anew
    again = start_app()
    assert not again.exception
    assert shown_item(again) == before


@pytest.mark.parametrize("kind", ["table", "image", "text", "molecule"])
def test_a_multi_label_session_shows_every_kind_of_item(db_url, kind):
    from tests.app.test_app_item_display import assert_item_shown, import_kind

    svc = MarginLab.from_url(db_url)
    dataset_id = import_kind(svc, kind)
    at = start_app("olga")
    start_multi_label_session(at, dataset_id, "one, two, three", strategy="random")
    first = shown_item(at)
    assert_item_shown(at, kind, first, svc.engine)
    toggle(at, 2)
    toggle(at, 0)
    assert_item_shown(at, kind, first, svc.engine)  # (a toggle keeps the item)
    submit(at)
    second = shown_item(at)
    assert_item_shown(at, kind, second, svc.engine)
    submit(at)  # none of these
    events = repo.label_events(svc.engine, repo.list_sessions(svc.engine, annotator="olga")[0].id)
    assert [(e.item_index, e.answer_classes) for e in events] == [(first, (0, 2)), (second, ())]


def test_a_multi_label_session_whose_settings_this_version_refuses_opens_with_its_answers_and_says_so(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = four_groups(svc)
    run = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random", classes="a, b", multi_label=True)
    for _ in range(3):
        item = run.shown.item_index
        assert run.answer(["a"] if truth[item] else [], item_index=item).ok
    repo.set_session_setting(svc.engine, run.session_id, "strategy_params", {"width": 3})  # (not random's)
    svc.forget_runs()
    again = svc.open_session(run.session_id)
    assert again.multi_label and again.model is None and "could not be rebuilt" in again.problem
    assert again.classes == ("a", "b") and again.n_labels == 3
    assert [a.answer_classes for a in again.answers] == [a.answer_classes for a in run.answers]
    outcome = again.answer(["a"])
    assert not outcome.ok and outcome.message == again.problem
    assert len(repo.label_events(svc.engine, run.session_id)) == 3


def test_known_items_and_labels_from_a_file_are_refused_plainly_in_a_multi_label_session(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, _ = four_groups(svc)
    run = start(svc, dataset_id, strategy="random")
    outcome = run.mark_known(3, CLASSES[0])
    assert not outcome.ok and outcome.message.startswith("Marking known items is for sessions with one class")
    outcome = run.import_labels(b"item_key,label\n1,urgent\n", key_column="item_key", label_column="label")
    assert not outcome.ok and "one class per item (not several); nothing was stored" in outcome.message
    assert repo.label_events(svc.engine, run.session_id) == []
