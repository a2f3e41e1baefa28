"""Multi-label team projects (2 to 9 classes, any set of them per item) in the app, through AppTest: the owner
creates one on the Projects page (bad input refused, naming what is wrong, nothing stored), members answer on
Label together with a toggle per class (keys 1 to 9), Submit (Enter), Skip and Undo, a member never sees
another's answer on an item handed to her, and the owner settles a disagreement on a set; every kind of item on
the page, for the owner and for an annotator."""

from __future__ import annotations

import pytest

from app.services import MarginLab
from storage import teams
from tests.app import test_app
from tests.app.test_app import as_shown, shown_item, start_app
from tests.app.test_app_multi_label import assert_toggles_above_the_actions
from tests.app.test_app_team_classes import submitted_form, undo_then_skip

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

#: class names a person might type: Markdown that must show as it is, a formula that must not run
CLASSES = ("urgent", "**billing**", "=SUM(A1)")
#: each group's set of classes: none, the first, the first and the third
GROUP_SETS = ((), (0,), (0, 2))


def toggles(at) -> dict:
    return {b.key: b for b in at.button if b.key and b.key.startswith("team_class_")}


def answer_set(at, places) -> None:
    """Toggle the classes ``places`` on Label together, then Submit."""
    for k in places:
        (button,) = [b for key, b in toggles(at).items() if key.startswith(f"team_class_{k}_")]
        button.click().run()
        assert not at.exception, at.exception
    (submit,) = [b for b in at.button if b.key and b.key.startswith("team_submit_")]
    submit.click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize(
    "typed, form, words",
    [
        ("cat", {}, "Name at least 2 classes"),
        (", ".join(f"c{k}" for k in range(10)), {}, "At most 9"),
        ("cat, dog, cat", {}, "'cat' is named twice"),
        ("", {}, "Several classes per item: name the classes"),
        ("cat, dog", {"target": "cat"}, "A multi-label project has no class to find first"),
    ],
)
def test_the_projects_form_refuses_a_bad_multi_label_project_naming_it_and_stores_nothing(db_url, typed, form, words):
    owner, svc, _ = submitted_form(db_url, typed, several=True, strategy="least-sure-class", **form)
    assert any(words in as_shown(e.value) for e in owner.error), [e.value for e in owner.error]
    assert teams.list_projects(svc.engine) == []


def test_members_answer_with_sets_blind_to_each_other_and_the_owner_settles_on_a_set(db_url):
    owner, svc, group = submitted_form(db_url, ", ".join(CLASSES), several=True, strategy="least-sure-class")
    assert not owner.error, [e.value for e in owner.error]
    (project,) = teams.list_projects(svc.engine)
    assert project.params["classes"] == list(CLASSES) and project.params["multi_label"] is True
    assert project.strategy == "least-sure-class"

    ann = start_app("ann", role="annotator")
    assert [t.value for t in ann.title] == ["Label together"]
    # a toggle per class with its name as written, keys 1 to 3, and Submit (Enter); no Positive / Negative
    buttons = toggles(ann)
    assert [as_shown(b.label) for b in buttons.values()] == list(
        CLASSES
    )  # the key is the hint beside it, not in the label
    assert [b.proto.shortcut for b in buttons.values()] == ["1", "2", "3"]
    assert "\\*\\*billing\\*\\*" in list(buttons.values())[1].label
    (submit,) = [b for b in ann.button if b.key and b.key.startswith("team_submit_")]
    assert (as_shown(submit.label), submit.proto.shortcut) == ("Submit: none of these", "enter")
    assert_toggles_above_the_actions(ann, "team_class_toggles", "team_actions", prefix="team_")
    assert not [b for b in ann.button if b.key and b.key.startswith(("team_positive", "team_negative"))]
    assert any("**Enter** submit" in as_shown(c.value) for c in ann.caption)
    # a toggle picks its class (a tick), a second press drops it
    first_toggle = next(iter(toggles(ann).values()))
    first_toggle.click().run()
    assert as_shown(next(iter(toggles(ann).values())).label) == f"✓ {CLASSES[0]}"
    next(iter(toggles(ann).values())).click().run()
    assert as_shown(next(iter(toggles(ann).values())).label) == CLASSES[0]
    asked = []
    for _ in range(4):
        item = shown_item(ann)
        asked.append(item)
        answer_set(ann, GROUP_SETS[group[item]])
    _, answers = teams.project_answers(svc.engine, project.id)
    assert [(a.annotator, a.item_index, a.answer_classes) for a in answers] == [
        ("ann", i, GROUP_SETS[group[i]]) for i in asked
    ]
    undo_then_skip(ann, svc.engine, project.id, asked[-1])  # Undo hands the item back; then Skip
    # My labels says her sets by name ("; " between them, none of them: (none))
    ann.switch_page("views/my_labels.py").run()
    (table,) = ann.dataframe
    expected = {i: "; ".join(CLASSES[k] for k in GROUP_SETS[group[i]]) or "(none)" for i in asked[:-1]}
    assert dict(zip(table.value["item"], table.value["answer"], strict=True)) == {**expected, asked[-1]: "skipped"}

    # bob is handed ann's first item for a second opinion: nothing on his page tells her answer
    bob = start_app("bob", role="annotator")
    second = shown_item(bob)
    assert second == asked[0]
    words = [as_shown(c.value) for c in bob.caption] + [as_shown(m.value) for m in bob.markdown]
    assert not [w for w in words if "best guess" in w or "Agreement counts" in w], words
    assert not [d for d in bob.dataframe if "first only" in d.value.columns]
    first = GROUP_SETS[group[second]]
    other = tuple(sorted({*first} ^ {1}))  # his set differs by the second class
    answer_set(bob, other)

    # the owner sees both sets by name and settles on a third, picked with the toggles
    owner.switch_page("views/projects.py").run()
    owner.selectbox(key="project_shown").select(project.id).run()
    assert not owner.exception, owner.exception
    votes = [as_shown(m.value) for m in owner.markdown if "ann: **" in as_shown(m.value)]
    in_words = {(): "none of these"}
    assert votes == [
        f"ann: **{in_words.get(first) or '; '.join(CLASSES[k] for k in first)}** · "
        f"bob: **{in_words.get(other) or '; '.join(CLASSES[k] for k in other)}**"
    ], votes
    # the classes both sets have (his differs by the second class: hers) are ticked to begin with
    settle = [b for b in owner.button if b.key == f"settle_set_{second}"]
    assert [as_shown(b.label) for b in settle] == [
        f"Settle as {in_words.get(first) or '; '.join(CLASSES[k] for k in first)}"
    ]
    for k in sorted({*first} ^ {1, 2}):
        (toggle,) = [b for b in owner.button if b.key == f"settle_class_{k}_{second}"]
        toggle.click().run()
        assert not owner.exception, owner.exception
    (settle,) = [b for b in owner.button if b.key == f"settle_set_{second}"]
    assert as_shown(settle.label) == f"Settle as {CLASSES[1]}; {CLASSES[2]}"
    settle.click().run()
    assert not owner.exception, owner.exception
    settled = teams.settlements(svc.engine, project.id)[second]
    assert (settled.value, settled.answer_classes, settled.settled_by) == (1, (1, 2), "olga")
    run = MarginLab.from_url(db_url).open_project(project.id)
    run.sync()
    assert run.model_labels[second] == (1, 2)
    assert owner.get("download_button")  # (the agreement and each item's classes)
    # the owner, a member, sees the agreement counts per class on Label together
    owner.switch_page("views/team_label.py").run()
    assert not owner.exception, owner.exception
    (table,) = [d for d in owner.dataframe if "first only" in d.value.columns]
    assert list(table.value["class"]) == list(CLASSES)


@pytest.mark.parametrize("kind", ["table", "image", "text", "molecule"])
@pytest.mark.parametrize("role", ["owner", "annotator"])
def test_label_together_in_a_multi_label_project_shows_every_kind_of_item_to_every_member(db_url, kind, role):
    from tests.app.test_app_item_display import assert_item_shown, import_kind, label_together_as, make_project

    svc = MarginLab.from_url(db_url)
    dataset_id = import_kind(svc, kind)
    project_id = make_project(db_url, dataset_id, strategy="random", classes="one, two, three", multi_label=True)
    at = label_together_as(role)
    first = shown_item(at)
    assert_item_shown(at, kind, first, svc.engine)
    answer_set(at, (0, 2))
    assert shown_item(at) != first
    assert_item_shown(at, kind, shown_item(at), svc.engine)
    (given,) = teams.project_answers(svc.engine, project_id)[1]
    assert (given.annotator, given.item_index, given.answer_classes) == (
        {"owner": "olga"}.get(role, "ann"),
        first,
        (0, 2),
    )
