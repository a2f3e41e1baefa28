"""What a new user met on a first tryout: the forms' examples name the dataset's own classes, History says the
answers as the Label page does, the forms speak plainly, and the answer buttons weigh the same."""

from __future__ import annotations

import pytest

from app.services import MarginLab
from tests.app import test_app
from tests.app.test_app_findings import data_page_with
from tests.app.test_app_pages import at_address, labelled

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL


def screening_dataset(svc: MarginLab) -> int:
    """A dataset imported with the label column's values include / exclude (include: positive)."""
    rows = "".join(f"{k * 0.1:.1f},{k % 3},{'include' if k % 2 else 'exclude'}\n" for k in range(20))
    return svc.import_csv(
        f"x,z,decision\n{rows}".encode(), name="screening", label_column="decision", positive="include"
    ).dataset_id


def pets_dataset(svc: MarginLab) -> int:
    """A dataset imported with its label column's three values kept as classes: cat, dog, fox."""
    rows = "".join(f"{k * 0.1:.1f},{k % 3},{('cat', 'dog', 'fox')[k % 3]}\n" for k in range(30))
    return svc.import_csv(f"a,b,pet\n{rows}".encode(), name="pets", label_column="pet", keep_classes=True).dataset_id


def placeholders(db_url, field: str, make_dataset) -> tuple[str, str]:
    """The placeholder of the new session's ``field`` with the demo picked (the first), then the dataset
    ``make_dataset`` imports."""
    svc = MarginLab.from_url(db_url)
    svc.ensure_demo_dataset()
    other = make_dataset(svc)
    at = test_app.start_app()
    first = at.text_input(key=field).proto.placeholder
    at.selectbox(key="new_dataset").select(other).run()
    assert not at.exception, at.exception
    return first, at.text_input(key=field).proto.placeholder


def test_what_to_find_names_the_chosen_dataset_s_own_classes(db_url):
    demo, screening = placeholders(db_url, "new_find", screening_dataset)
    assert "Positive (8) / Negative (rest)" in demo, demo
    assert "Positive (include) / Negative (exclude)" in screening and "(Positive / Negative)" not in screening


def test_the_class_looked_for_has_a_real_example_and_no_placeholder_word(db_url):
    demo, pets = placeholders(db_url, "new_target", pets_dataset)
    assert "<class>" not in demo and demo.startswith("empty: "), demo
    assert "<class>" not in pets and "for example cat" in pets, pets


def test_history_says_the_answers_as_the_label_page_does_with_the_dataset_s_class_names(db_url):
    run = labelled(MarginLab.from_url(db_url), n=8)
    target = [a for a in run.answers if a.value != 0][0]
    assert run.change_label(target.label_id, -target.value).ok
    at = at_address(run.session_id)
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    table = [df.value for df in at.dataframe if "changes" in df.value.columns][-1]  # (every answer)
    assert set(table["answer"]) == {"Positive (8)", "Negative (rest)"}, set(table["answer"])
    assert set(table["as given"]) == {"Positive (8)", "Negative (rest)"}
    assert any(" → " in c and "(rest)" in c and "(8)" in c for c in table["changes"]), list(table["changes"])
    (picker,) = [s for s in at.selectbox if s.label == "Answer to change"]
    assert all("Positive (8)" in o or "Negative (rest)" in o for o in picker.options), picker.options
    (change,) = [b for b in at.button if b.label.startswith("Change to")]
    assert change.label in ("Change to Positive (8)", "Change to Negative \\(rest\\)", "Change to Negative (rest)")
    # My labels says them in the same words
    at.switch_page("views/my_labels.py").run()
    (mine,) = [df.value for df in at.dataframe if df.key == "my_labels"] or [at.dataframe[0].value]
    assert set(mine["answer"]) == {"Positive (8)", "Negative (rest)"}


def test_the_known_items_panel_and_the_upload_form_speak_plainly(db_url):
    run = labelled(MarginLab.from_url(db_url), n=2)
    at = at_address(run.session_id)
    assert not [c.value for c in at.caption if "provenance" in c.value]
    text = "".join(f"d{i},robots walking number {i},{'a' if i % 2 else 'b'},C{'C' * (i % 4)}O\n" for i in range(12))
    data = data_page_with("docs.csv", f"key,text,topic,smiles\n{text}".encode())
    data.multiselect(key="upload_text_docs.csv").select("text").run()
    labels = [w.label for kind in ("multiselect", "selectbox", "number_input") for w in data.get(kind)]
    assert "Compress the terms (0: keep every term)" in labels, labels
    jargon = [label for label in labels if any(word in label for word in ("TF-IDF", "SVD", "Morgan"))]
    assert not jargon, jargon


def answer_kinds(at, prefixes) -> set[str]:
    """The kinds (primary, secondary) of the buttons whose keys start with ``prefixes``."""
    return {b.proto.type for b in at.button if b.key and b.key.startswith(tuple(prefixes))}


def test_the_answer_buttons_weigh_the_same(db_url):
    from tests.app.test_app_item_display import label_together_as, make_project

    svc = MarginLab.from_url(db_url)
    run = labelled(svc, n=1)
    at = at_address(run.session_id)
    assert len(answer_kinds(at, ("positive_", "negative_"))) == 1
    # the buttons of a session with named classes
    pets = pets_dataset(svc)
    classes = svc.start_session(dataset_id=pets, annotator="ada", strategy="random")
    at = at_address(classes.session_id)
    assert len(answer_kinds(at, ("class_",))) == 1 and len([b for b in at.button if b.key.startswith("class_")]) == 3
    # Label together: a yes / no project, then one with classes
    make_project(db_url, run.info.dataset_id, strategy="random")
    team = label_together_as("annotator")
    assert len(answer_kinds(team, ("team_positive_", "team_negative_"))) == 1
    assert len([b for b in team.button if b.key.startswith(("team_positive_", "team_negative_"))]) == 2
