"""Settling a team project's disagreements on the Projects page (AppTest): several disagreements drawn on one
page for every kind of item and every kind of project, settling one leaves the others listed, and a
multi-label project's settling starts from the classes the members agree on."""

from __future__ import annotations

import pytest

from app.services import MarginLab
from storage import teams
from tests.app import test_app
from tests.app.test_app import as_shown, start_app
from tests.app.test_app_item_display import KINDS, import_kind, make_project

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

CLASSES = "one, two, three"
#: each kind of project: its options and the two members' differing answers
PROJECTS = {
    "two-class": ({}, 1, -1),
    "named classes": ({"classes": CLASSES}, 0, 1),
    "several classes": ({"classes": CLASSES, "multi_label": True}, [0], [0, 1]),
}


def disputed_project(url: str, kind: str, project: str, n: int = 2) -> tuple[MarginLab, int, list[int]]:
    """A project of ``project``'s kind over a ``kind`` dataset where ann and bob answered ``n`` items
    differently; returns the service, the project and the disputed items."""
    svc = MarginLab.from_url(url)
    options, first, second = PROJECTS[project]
    project_id = make_project(
        url,
        import_kind(svc, kind),
        members=("ann", "bob"),
        labels_per_item=2,
        overlap_share=1.0,
        strategy="random",
        **options,
    )
    run = svc.open_project(project_id)
    items = []
    for _ in range(n):
        asked = run.next_item("ann")
        assert run.answer("ann", asked.item_index, first, asked).ok
        again = run.next_item("bob")
        assert again.item_index == asked.item_index  # a second opinion on her item
        assert run.answer("bob", again.item_index, second, again).ok
        items.append(asked.item_index)
    return svc, project_id, items


def projects_page(project_id: int):
    at = start_app("olga")
    at.switch_page("views/projects.py").run()
    at.selectbox(key="project_shown").select(project_id).run()
    assert not at.exception, at.exception
    return at


def settle_buttons(at, item: int) -> list:
    return [b for b in at.button if b.key in (f"settle_pos_{item}", f"settle_0_{item}", f"settle_set_{item}")]


@pytest.mark.parametrize("project", list(PROJECTS))
@pytest.mark.parametrize("kind", KINDS)
def test_the_projects_page_lists_every_disagreement_and_settling_one_leaves_the_others(db_url, kind, project):
    svc, project_id, items = disputed_project(db_url, kind, project, n=3)
    at = projects_page(project_id)
    assert not at.error, [e.value for e in at.error]
    for item in items:
        assert len(settle_buttons(at, item)) == 1, (item, [b.key for b in at.button])
    settle_buttons(at, items[0])[0].click().run()
    assert not at.exception, at.exception
    assert items[0] in teams.settlements(svc.engine, project_id)
    assert not settle_buttons(at, items[0])
    for item in items[1:]:
        assert len(settle_buttons(at, item)) == 1, (item, [b.key for b in at.button])


def test_settling_a_multi_label_item_starts_from_the_classes_every_answer_has(db_url):
    """ann said "one", bob "one; two": the owner's toggles start with "one" ticked, the button reads the set it
    stores, and one click stores "one" (not "none of these", which nobody answered)."""
    svc, project_id, (item,) = disputed_project(db_url, "table", "several classes", n=1)
    at = projects_page(project_id)
    ticked = [as_shown(b.label) for b in at.button if b.key and b.key.startswith("settle_class_")]
    assert ticked == ["✓ one", "two", "three"]
    (settle,) = settle_buttons(at, item)
    assert as_shown(settle.label) == "Settle as one"
    settle.click().run()
    assert not at.exception, at.exception
    assert teams.settlements(svc.engine, project_id)[item].answer_classes == (0,)


def test_settling_a_multi_label_item_the_answers_share_no_class_of_starts_from_none(db_url):
    svc = MarginLab.from_url(db_url)
    project_id = make_project(
        db_url,
        import_kind(svc, "table"),
        members=("ann", "bob"),
        labels_per_item=2,
        overlap_share=1.0,
        strategy="random",
        classes=CLASSES,
        multi_label=True,
    )
    run = svc.open_project(project_id)
    asked = run.next_item("ann")
    assert run.answer("ann", asked.item_index, [1], asked).ok
    again = run.next_item("bob")
    assert run.answer("bob", again.item_index, [0, 2], again).ok
    at = projects_page(project_id)
    assert not [b for b in at.button if b.key and b.key.startswith("settle_class_") and "✓" in b.label]
    (settle,) = settle_buttons(at, asked.item_index)
    assert as_shown(settle.label) == "Settle as none of these"


@pytest.mark.parametrize("several", [False, True])
def test_each_item_s_class_file_names_the_item_by_key_and_text_escaped_against_formulas(db_url, several):
    import csv
    import io

    from storage.export import escape_cell

    svc = MarginLab.from_url(db_url)
    texts = ['=HYPERLINK("http://x")', "+1 robots", "a plain abstract", "@SUM(A1)"] * 3
    data = "key,text\n" + "".join(
        f'{"=k" if i == 0 else "k"}{i},"{t.replace(chr(34), chr(34) * 2)}"\n' for i, t in enumerate(texts)
    )
    result = svc.import_csv(data.encode(), name="abstracts", key_column="key", text_features=["text"])
    assert result.created, result.message
    options = {"classes": CLASSES, "multi_label": several}
    project_id = make_project(db_url, result.dataset_id, members=("ann",), strategy="random", **options)
    run = svc.open_project(project_id)
    answered = []
    for _ in range(4):
        asked = run.next_item("ann")
        assert run.answer("ann", asked.item_index, [1] if several else 1, asked).ok
        answered.append(asked.item_index)
    me = svc.sign_in("olga", test_app.PASSWORD)
    rows = list(csv.DictReader(io.StringIO(svc.project_labels_csv(me, project_id).decode())))
    assert sorted(int(r["item_index"]) for r in rows) == sorted(answered)
    for row in rows:
        i = int(row["item_index"])
        key = f"{'=k' if i == 0 else 'k'}{i}"
        assert (row["item_key"], row["display_text"]) == (escape_cell(key), escape_cell(texts[i])), row
        assert not row["display_text"].startswith(("=", "+", "@")), row


@pytest.mark.parametrize("kind", ["yes / no", "classes", "several"])
def test_the_agreement_file_names_each_item_by_key_and_text_escaped_against_formulas(db_url, kind):
    """The owner reads the agreement file without the app open: beside each item's key, the text a member read
    (escaped as the other exports escape it, so a spreadsheet shows it and runs nothing)."""
    import csv
    import io

    from storage.export import escape_cell

    svc = MarginLab.from_url(db_url)
    texts = ['=HYPERLINK("http://x")', "+1 robots", "a plain abstract", "@SUM(A1)"] * 3
    data = "key,text\n" + "".join(f'k{i},"{t.replace(chr(34), chr(34) * 2)}"\n' for i, t in enumerate(texts))
    result = svc.import_csv(data.encode(), name="abstracts", key_column="key", text_features=["text"])
    assert result.created, result.message
    options = {} if kind == "yes / no" else {"classes": CLASSES, "multi_label": kind == "several"}
    project_id = make_project(
        db_url,
        result.dataset_id,
        members=("ann", "bob"),
        strategy="random",
        labels_per_item=2,
        overlap_share=1.0,
        **options,
    )
    answer = {"yes / no": 1, "classes": 1, "several": [1]}[kind]
    run = svc.open_project(project_id)
    for name in ("ann", "bob") * 3:
        asked = run.next_item(name)
        assert run.answer(name, asked.item_index, answer, asked).ok
    me = svc.sign_in("olga", test_app.PASSWORD)
    table = svc.agreement_csv(me, project_id).decode()
    rows = list(csv.DictReader(io.StringIO(table)))
    assert rows and list(rows[0])[:3] == ["item_index", "item_key", "display_text"], rows
    # only item rows, every one with the header's columns (a spreadsheet or pandas reads it as one table)
    assert all(None not in row and None not in row.values() for row in rows), rows
    words = {"yes / no": "positive", "classes": CLASSES.split(", ")[1], "several": CLASSES.split(", ")[1]}[kind]
    assert {(row["ann"], row["bob"], row["agree"]) for row in rows} == {(words, words, "yes")}, rows
    for row in rows:
        i = int(row["item_index"])
        assert (row["item_key"], row["display_text"]) == (f"k{i}", escape_cell(texts[i])), row
        assert not row["display_text"].startswith(("=", "+", "@")), row


def test_the_agreement_summary_is_a_file_of_its_own_and_the_page_words_each_kappa(db_url):
    """ann answered Positive and bob Negative on two items: every answer differs, Fleiss' kappa is -1 (poor) and
    Cohen's 0 (slight), on Landis & Koch's scale; the summary file is one table (same columns every row), offered
    beside the item file; the progress says why the model learned fewer labels than there are answers."""
    import csv
    import io

    svc, project_id, items = disputed_project(db_url, "table", "two-class", n=2)
    me = svc.sign_in("olga", test_app.PASSWORD)
    rows = list(csv.DictReader(io.StringIO(svc.agreement_summary_csv(me, project_id).decode())))
    assert all(None not in row and None not in row.values() for row in rows), rows
    by_statistic = {row["statistic"]: row for row in rows}
    assert by_statistic["fleiss_kappa"]["value"] == "-1.000000"
    assert by_statistic["fleiss_kappa"]["strength"] == "poor"
    assert by_statistic["fleiss_kappa"]["items"] == "2"
    cohen = by_statistic["cohen_kappa"]
    assert (cohen["member_a"], cohen["member_b"], cohen["value"], cohen["strength"]) == (
        "ann",
        "bob",
        "0.000000",
        "slight",
    )
    assert cohen["observed_agreement"] == "0.000000"
    item_rows = list(csv.DictReader(io.StringIO(svc.agreement_csv(me, project_id).decode())))
    assert sorted(int(r["item_index"]) for r in item_rows) == sorted(items)
    # the answers by the dataset's class names (its label column "tall": yes / no), as the session export names them
    assert {(r["ann"], r["bob"], r["agree"], r["settled"]) for r in item_rows} == {("yes", "no", "no", "")}
    at = projects_page(project_id)
    assert [as_shown(m.value) for m in at.metric][:1] == ["-1.000 poor"]
    (cohen_table,) = [d.value for d in at.dataframe if "annotator A" in d.value.columns]
    assert cohen_table.iloc[0, 3] == "0.000 slight", cohen_table
    assert any("Landis & Koch (1977)" in c.value for c in at.caption)
    assert {b.proto.label for b in at.get("download_button")} >= {
        "Download agreement per item (CSV)",
        "Download agreement summary (CSV)",
    }
    (progress,) = [c.value for c in at.caption if "answers;" in c.value]
    assert "learned 2 labels" in progress and "once" in progress and "first answer" in progress, progress
