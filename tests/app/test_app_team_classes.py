"""Team projects with named classes (3 to 9, single choice) in the app, through AppTest: the owner creates one
on the Projects page (bad class lists refused, naming what is wrong, nothing stored), members answer on Label
together with one button per class (keys 1 to 9), Skip and Undo, the owner settles a disagreement on a class
and the shared model learns it; every kind of item on the page, for the owner and for an annotator."""

from __future__ import annotations

import pytest

from app.services import MarginLab
from storage import teams
from tests.app import test_app
from tests.app.test_app import as_shown, ensure_account, shown_item, start_app
from tests.app.test_app_classes import CLASSES, three_blobs

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL


def class_buttons(at) -> dict:
    return {b.key: b for b in at.button if b.key and b.key.startswith("team_class_")}


def answer_class(at, k: int) -> None:
    (button,) = [b for key, b in class_buttons(at).items() if key.startswith(f"team_class_{k}_")]
    button.click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def blob_project(db_url, n: int, wrong_every: int = 0):
    """A project with named classes (``CLASSES``, random order) over three groups, ann its member answering ``n``
    items with their group's class (every ``wrong_every``-th, from the first: another class); the service, the
    project's id and its run."""
    from tests.app.test_app_item_display import make_project

    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    project_id = make_project(db_url, dataset_id, strategy="random", classes=CLASSES)
    run = svc.open_project(project_id)
    for turn in range(n):
        shown = run.next_item("ann")
        k = int(truth[shown.item_index])
        if wrong_every and turn % wrong_every == 0:
            k = (k + 2) % 3
        assert run.answer("ann", shown.item_index, k, shown).ok
    return svc, project_id, run


def kind_project(db_url, kind: str):
    """A project with the classes one, two, three (random order) over a small dataset of ``kind`` items (olga's,
    with ann); the service and the project's id."""
    from tests.app.test_app_item_display import import_kind, make_project

    svc = MarginLab.from_url(db_url)
    return svc, make_project(db_url, import_kind(svc, kind), strategy="random", classes="one, two, three")


def undo_then_skip(at, engine, project_id: int, last_item: int) -> None:
    """Undo on Label together (the last item is handed back, its answer gone), then Skip it (stored as a skip,
    with no class)."""
    n = len(teams.project_answers(engine, project_id)[1])
    (undo,) = [b for b in at.button if b.key and b.key.startswith("team_undo_")]
    undo.click().run()
    assert shown_item(at) == last_item and len(teams.project_answers(engine, project_id)[1]) == n - 1
    (skip,) = [b for b in at.button if b.key and b.key.startswith("team_skip_")]
    skip.click().run()
    last = teams.project_answers(engine, project_id)[1][-1]
    assert (last.item_index, last.value, last.answer_class, last.answer_classes) == (last_item, 0, None, None)


def fill_new_project(
    owner,
    dataset_id: int,
    classes: str,
    name: str = "kinds",
    strategy: str = "smallest-margin",
    target: str = "",
    several: bool = False,
) -> None:
    """The owner fills the New project form (``several``: several classes per item) and submits it."""
    owner.switch_page("views/projects.py").run()
    owner.text_input(key="project_name").input(name)
    owner.selectbox(key="project_dataset").select(dataset_id)
    owner.text_input(key="project_classes").input(classes)
    if several:
        owner.radio(key="project_classes_per_item").set_value("several")
        owner.selectbox(key="project_multi_label_strategy").select(strategy)
    else:
        owner.selectbox(key="project_class_strategy").select(strategy)
    owner.text_input(key="project_target").input(target)
    owner.multiselect(key="project_members").select("ann").select("bob")
    owner.slider(key="project_share").set_value(100)
    owner.button(key="FormSubmitter:new_project-Create project").click().run()
    assert not owner.exception, owner.exception


def submitted_form(db_url, classes: str, **form):
    """The owner olga's app after she submitted the New project form (members ann and bob, three groups of
    items); the app, a service on its database and each item's group."""
    ensure_account(db_url, "ann", role="annotator")
    ensure_account(db_url, "bob", role="annotator")
    svc = MarginLab.from_url(db_url)
    dataset_id, group = three_blobs(svc)
    owner = start_app("olga")
    fill_new_project(owner, dataset_id, classes, **form)
    return owner, svc, group


@pytest.mark.parametrize(
    "typed, words",
    [
        ("cat, dog", "Two classes are a yes / no project"),
        (", ".join(f"c{k}" for k in range(10)), "At most 9"),
        ("cat, dog, cat", "'cat' is named twice"),
        ("cat,, dog", "A class name is empty"),
    ],
)
def test_the_projects_form_refuses_a_bad_class_list_naming_it_and_stores_nothing(db_url, typed, words):
    owner, svc, _ = submitted_form(db_url, typed)
    assert any(words in as_shown(e.value) for e in owner.error), [e.value for e in owner.error]
    assert teams.list_projects(svc.engine) == []


@pytest.mark.parametrize(
    "strategy, target, words",
    [
        ("target-class", "Cat", f"The class to find first, 'Cat', is not one of the classes ({', '.join(CLASSES)})."),
        ("target-class", "cow", f"The class to find first, 'cow', is not one of the classes ({', '.join(CLASSES)})."),
        ("smallest-margin", "cat", "A class to find first ('cat') is only for Most likely <class>"),
    ],
)
def test_the_projects_form_refuses_a_mistyped_or_unused_class_to_find_naming_the_classes(
    db_url, strategy, target, words
):
    owner, svc, _ = submitted_form(db_url, ", ".join(CLASSES), strategy=strategy, target=target)
    assert any(words in as_shown(e.value) for e in owner.error), [e.value for e in owner.error]
    assert teams.list_projects(svc.engine) == []


def test_a_class_to_find_typed_as_one_of_the_classes_is_the_project_s_target(db_url):
    owner, svc, _ = submitted_form(db_url, ", ".join(CLASSES), strategy="target-class", target=f" {CLASSES[1]} ")
    assert not owner.error, [e.value for e in owner.error]
    (project,) = teams.list_projects(svc.engine)
    assert (project.strategy, project.params["strategy_params"]["target"]) == ("target-class", CLASSES[1])


def test_members_answer_with_classes_and_the_owner_settles_a_disagreement_on_a_class(db_url):
    ensure_account(db_url, "ann", role="annotator")
    ensure_account(db_url, "bob", role="annotator")
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    owner = start_app("olga")
    fill_new_project(owner, dataset_id, ", ".join(CLASSES))
    assert not owner.error, [e.value for e in owner.error]
    (project,) = teams.list_projects(svc.engine)
    assert project.params["classes"] == list(CLASSES) and project.strategy == "smallest-margin"

    ann = start_app("ann", role="annotator")
    assert [t.value for t in ann.title] == ["Label together"]
    # one button per class with its name as written (not as Markdown), keys 1 to 3; no Positive / Negative
    buttons = class_buttons(ann)
    assert [as_shown(b.label) for b in buttons.values()] == list(
        CLASSES
    )  # the key is the hint beside it, not in the label
    assert [b.proto.shortcut for b in buttons.values()] == ["1", "2", "3"]
    labels = [b.label for b in buttons.values()]
    assert "\\*\\*x\\*\\*" in labels[1] and "\\!\\[p\\]\\(http" in labels[2], labels
    assert not [b for b in ann.button if b.key and b.key.startswith(("team_positive", "team_negative"))]
    assert not [url for img in ann.get("image") for url in img.value if "h/p.png" in url]
    assert any("**1** cat" in as_shown(c.value) and "**S** skip" in as_shown(c.value) for c in ann.caption)
    asked = []
    for _ in range(4):
        item = shown_item(ann)
        asked.append(item)
        answer_class(ann, int(truth[item]))
    _, answers = teams.project_answers(svc.engine, project.id)
    assert [(a.annotator, a.item_index, a.answer_class) for a in answers] == [("ann", i, int(truth[i])) for i in asked]
    undo_then_skip(ann, svc.engine, project.id, asked[-1])

    # My labels names her classes (as written) and her skip
    ann.switch_page("views/my_labels.py").run()
    (table,) = ann.dataframe
    assert dict(zip(table.value["item"], table.value["answer"], strict=True)) == {
        **{i: CLASSES[int(truth[i])] for i in asked[:-1]},
        asked[-1]: "skipped",
    }

    # bob is handed ann's first item for a second opinion, and answers another class
    bob = start_app("bob", role="annotator")
    second = shown_item(bob)
    assert second == asked[0]
    other = (int(truth[second]) + 1) % 3
    answer_class(bob, other)

    # the owner sees the two classes by name and settles on the third
    owner.switch_page("views/projects.py").run()
    owner.selectbox(key="project_shown").select(project.id).run()
    assert not owner.exception, owner.exception
    votes = [as_shown(m.value) for m in owner.markdown if "ann: **" in as_shown(m.value)]
    assert votes == [f"ann: **{CLASSES[int(truth[second])]}** · bob: **{CLASSES[other]}**"], votes
    third = 3 - int(truth[second]) - other
    (settle,) = [b for b in owner.button if b.key == f"settle_{third}_{second}"]
    assert as_shown(settle.label) == f"Settle as {CLASSES[third]}"
    settle.click().run()
    assert not owner.exception, owner.exception
    settled = teams.settlements(svc.engine, project.id)[second]
    assert (settled.value, settled.answer_class, settled.settled_by) == (1, third, "olga")
    run = MarginLab.from_url(db_url).open_project(project.id)
    run.sync()
    assert run.model_labels[second] == third
    assert owner.get("download_button")  # (the agreement and each item's class)


@pytest.mark.parametrize("kind", ["table", "image", "text", "molecule"])
@pytest.mark.parametrize("role", ["owner", "annotator"])
def test_label_together_in_a_class_project_shows_every_kind_of_item_to_every_member(db_url, kind, role):
    from tests.app.test_app_item_display import assert_item_shown, label_together_as

    svc, project_id = kind_project(db_url, kind)
    at = label_together_as(role)
    first = shown_item(at)
    assert_item_shown(at, kind, first, svc.engine)
    answer_class(at, 2)
    assert shown_item(at) != first
    assert_item_shown(at, kind, shown_item(at), svc.engine)
    (given,) = teams.project_answers(svc.engine, project_id)[1]
    assert (given.annotator, given.item_index, given.answer_class) == ({"owner": "olga"}.get(role, "ann"), first, 2)


def test_a_project_with_named_classes_is_offered_for_a_replay_with_the_heuristics_for_named_classes_only(db_url):
    from app.services import ServiceError
    from app.services.replay import Replays
    from tests.app.test_app import PASSWORD

    svc, project_id, run = blob_project(db_url, 4)
    me = svc.sign_in("olga", PASSWORD)
    replays = Replays(svc)
    assert "named classes" in replays.replayable(me)[f"project:{project_id}"]  # (its replay: tests/app/test_app_replay)
    assert "near-boundary" not in replays.heuristics(f"project:{project_id}")
    with pytest.raises(ServiceError, match="'near-boundary' is not a heuristic for named classes"):
        replays.run_replay(f"project:{project_id}", strategies=["near-boundary"], seeds=1, by=me)
    assert svc.comparisons() == []


def class_project(db_url, dataset_id: int, strategy: str = "random") -> int:
    """A project of olga's with the classes ``CLASSES``, members olga, ann and bob, two answers per item."""
    from tests.app.test_app_item_display import make_project

    return make_project(
        db_url,
        dataset_id,
        members=("olga", "ann", "bob"),
        strategy=strategy,
        classes=CLASSES,
        labels_per_item=2,
        overlap_share=1.0,
    )


def test_label_together_shows_the_items_per_class_and_to_an_owner_the_agreement_counts_of_a_class_project(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    project_id = class_project(db_url, dataset_id)
    run = svc.open_project(project_id)
    disputed = None
    for turn in range(8):
        name = ("ann", "bob")[turn % 2]
        shown = run.next_item(name)
        k = int(truth[shown.item_index])
        if name == "bob" and disputed is None:
            k, disputed = (k + 1) % 3, shown.item_index  # bob disagrees once
        assert run.answer(name, shown.item_index, k, shown).ok
    ann = start_app("ann", role="annotator")
    assert [t.value for t in ann.title] == ["Label together"]
    # ann sees the items learned per class; not the agreement counts, off which she would read bob's classes
    assert any("Items learned per class" in c.proto.spec for c in ann.get("plotly_chart"))
    assert not [m for m in ann.markdown if "Agreement counts" in as_shown(m.value)]
    assert not [d for d in ann.dataframe if "first answer" in d.value.columns]
    at = start_app("olga")
    at.switch_page("views/team_label.py").run()
    assert not at.exception, at.exception
    heading = [as_shown(m.value) for m in at.markdown if "Agreement counts" in as_shown(m.value)]
    assert heading and "rows: the item's first class answer" in heading[0], heading
    (table,) = [d for d in at.dataframe if "first answer" in d.value.columns]
    shown_table = table.value.set_index("first answer")
    expected = MarginLab.from_url(db_url).open_project(project_id).class_agreement()
    assert list(shown_table.columns) == list(CLASSES) and list(shown_table.index) == list(CLASSES)  # as written
    assert shown_table.to_numpy().tolist() == expected.to_numpy().tolist()
    first = int(truth[disputed])
    assert expected.iloc[first, (first + 1) % 3] == 1 and int(expected.to_numpy().trace()) == 3
    charts = at.get("plotly_chart")
    assert any("Items learned per class" in c.proto.spec for c in charts), [c.proto.spec[:80] for c in charts]


def why_line(at) -> str:
    (why,) = [as_shown(c.value) for c in at.caption if as_shown(c.value).startswith("Chosen by")]
    return why


@pytest.mark.parametrize("several", [False, True])
def test_label_together_says_why_the_model_chose_the_item_on_every_rerun(db_url, several):
    """The item handed to ann stays reserved for her while the page reruns: each time its line says the reason
    the model had when it chose it, not only that it is reserved for her."""
    from tests.app.test_app_item_display import make_project

    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    project_id = make_project(
        db_url,
        dataset_id,
        members=("ann", "bob"),
        strategy="least-sure-class" if several else "least-certain-class",
        classes=", ".join(CLASSES),
        multi_label=several,
        labels_per_item=2,
        overlap_share=0.0,
    )
    run = svc.open_project(project_id)
    for _ in range(9):  # bob's answers: the model can rate items (each class with and without answers)
        shown = run.next_item("bob")
        k = int(truth[shown.item_index])
        assert run.answer("bob", shown.item_index, [k] if several else k, shown).ok
    ann = start_app("ann", role="annotator")
    first = why_line(ann)
    assert "reserved for you" not in first and ": " in first, first
    ann.run()  # (any rerun: a toggle, another tab, a reload)
    assert not ann.exception, ann.exception
    assert why_line(ann) == first
    ann2 = start_app("ann", role="annotator")  # another tab of hers, the item still hers
    assert why_line(ann2) == first
    # another process, which did not hand the item out, gives the same reason (the model picks it again)
    again = MarginLab.from_url(db_url).open_project(project_id).next_item("ann")
    assert again.reason and again.reason in first and "reserved for you" not in again.reason, again
