"""Smaller things a new user met on the pages: each test here failed before its fix (AppTest and the
services, no browser)."""

from __future__ import annotations

import pytest

from app.services import MarginLab
from app.ui.tables import ALC
from tests.app import test_app
from tests.app.test_app import PASSWORD, ensure_account, start_app

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL


def _project_with_answers(svc: MarginLab, me, name: str, answers: dict[str, list[int]]) -> int:
    """A project whose members gave these answers, in turn, to the same items (second opinions)."""
    project_id = svc.create_project(
        me,
        name=name,
        dataset_id=svc.datasets()[0].id,
        strategy="random",
        labels_per_item=2,
        overlap_share=1.0,
        members=list(answers),
    )
    run = svc.open_project(project_id)
    for member, values in answers.items():
        for value in values:
            run.answer(member, run.next_item(member).item_index, value)
    return project_id


def test_the_projects_page_says_kappa_is_undefined_only_beside_an_undefined_kappa(db_url):
    for member in ("ann", "bob"):
        ensure_account(db_url, member, role="annotator")
    svc = MarginLab.from_url(db_url)
    svc.ensure_demo_dataset()
    at = start_app("olga")
    me = svc.sign_in("olga", PASSWORD)
    # ann: + + - - - ; bob: + - - - - on the same items: Cohen's kappa 0.545, defined
    _project_with_answers(svc, me, "screening", {"ann": [1, 1, -1, -1, -1], "bob": [1, -1, -1, -1, -1]})
    at.switch_page("views/projects.py").run()
    assert not at.exception, at.exception
    assert not any("undefined" in c.value for c in at.caption), [c.value for c in at.caption]
    # the statistic in words, its name beside it, and what its values mean
    (table,) = [d for d in at.dataframe if "agreement between the two (Cohen's kappa)" in d.value]
    assert list(table.value["agreement between the two (Cohen's kappa)"]) == ["0.545 moderate"]  # Landis & Koch's word
    assert any(
        "1 when the answers always match, 0 when they match no more often than chance" in c.value for c in at.caption
    )


def test_after_creating_a_second_project_the_projects_page_shows_it(db_url):
    at = start_app("olga")
    svc = MarginLab.from_url(db_url)
    at.switch_page("views/projects.py").run()
    for name in ("first", "second"):
        at.text_input(key="project_name").input(name)
        at.button(key="FormSubmitter:new_project-Create project").click().run()
        assert not at.exception, at.exception
    newest = max(p.id for p in svc.projects())
    assert at.selectbox(key="project_shown").value == newest


def test_an_export_is_named_after_its_dataset_session_and_date(db_url, monkeypatch):
    import datetime as dt
    import re

    from streamlit.delta_generator import DeltaGenerator

    names = {}
    offered = DeltaGenerator.download_button

    def recording(self, label, data, file_name=None, **kw):
        names[label] = file_name
        return offered(self, label, data, file_name=file_name, **kw)

    monkeypatch.setattr(DeltaGenerator, "download_button", recording)
    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    session_id = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random").session_id
    at = start_app()
    at.switch_page("views/export.py").run()
    at.selectbox(key="export_dataset").select(dataset_id).run()
    at.selectbox(key="export_session").select(session_id).run()
    assert not at.exception, at.exception
    today = dt.date.today().isoformat()
    dataset = "digits-8-vs-rest"  # (the demo dataset, "digits: 8 vs rest")
    assert svc.dataset(dataset_id).name == "digits: 8 vs rest"
    assert names["Download CSV"] == f"{dataset}-session-{session_id}-{today}.csv"
    assert names["Download JSONL"] == f"{dataset}-session-{session_id}-{today}.jsonl"
    assert re.fullmatch(r"[A-Za-z0-9._-]+", names["Download CSV"])


def test_an_export_file_name_is_safe_on_every_system():
    from app.services.exports import file_name_safe

    assert file_name_safe("Digits: 8 / rest (v2)") == "Digits-8-rest-v2"
    assert file_name_safe("../../etc/passwd") == "etc-passwd"
    assert file_name_safe("über café") == "uber-cafe"


def data_page_with(name: str, data: bytes):
    at = start_app()
    at.switch_page("views/data.py").run()
    at.file_uploader(key="upload").upload(name, data, "text/csv").run()
    assert not at.exception, at.exception
    return at


def test_a_binary_upload_is_refused_at_once_with_the_import_message(db_url):
    from core.datasets import DataError, load_csv

    data = b"a,b,y\n1,2,p\n" + bytes(range(128, 256)) + b"\n"
    with __import__("pytest").raises(DataError) as refused:  # what the import says of it
        load_csv(data, label_column="y")
    at = data_page_with("scan.csv", data)
    said = str(refused.value).replace("data: ", "scan.csv: ", 1)
    assert [test_app.as_shown(e.value) for e in at.error] == [said]
    assert "not UTF-8 text: byte 0x80 on line 3" in said
    assert not [b for b in at.button if b.key == "upload_import"]  # no import form
    # no garbled preview (the datasets' tables only: the second, under Advanced, says how the model reads them)
    assert [df for df in at.dataframe if not {"shown as", "kernel"} & set(df.value.columns)] == []


def test_a_one_column_csv_says_what_it_holds_and_what_can_be_done_with_it(db_url):
    at = data_page_with("scores.csv", b"score\n" + b"".join(f"{k / 7:.3f}\n".encode() for k in range(12)))
    (note,) = [test_app.as_shown(i.value) for i in at.info if "one column" in i.value]
    assert note.startswith(
        "scores.csv holds one column only, 'score' (numbers, 12 rows): each item is then that "
        "one number, its only feature."
    )
    assert "choose its delimiter above" in note
    words = data_page_with(
        "notes.csv",
        b"note\n" + b"".join(f"the sample {k} was taken in the morning and stored cold\n".encode() for k in range(12)),
    )
    (note,) = [test_app.as_shown(i.value) for i in words.info if "one column" in i.value]
    assert "import it as documents: choose it under 'Documents: free-text features'" in note
    two = data_page_with("two.csv", b"a,b\n1,2\n3,4\n")
    assert not [i for i in two.info if "one column" in i.value]


def test_import_messages_name_the_data_page_controls_not_the_loader_options(db_url):
    at = data_page_with("gaps.csv", b"a,b,y\n1,2,p\n,3,n\n4,5,n\n6,6,p\n")
    [b for b in at.button if b.key == "upload_import"][0].click().run()
    assert not at.exception, at.exception
    (error,) = [test_app.as_shown(e.value) for e in at.error]
    assert (
        "Leave those rows out (Missing values: 'leave the rows out') or fill the gaps in (Missing values: "
        "'fill in (median / most frequent)', the median" in error
    )
    assert "missing: drop" not in error and "missing: impute" not in error
    missing = at.radio(key="upload_missing")
    assert missing.label == "Missing values" and "leave the rows out" in missing.options


def test_compare_says_what_its_runs_are_and_its_tables_show_no_none(db_url):
    """3 heuristics × 2 seeds are 8 runs (the full-data reference runs on every seed too; no random run
    that was not asked for): the progress says so; a stopping rule that never stopped and a recall never
    reached show "–"."""
    from app.services.stopping import RULE_CHOICES

    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    told = []
    svc.run_comparison(
        dataset_id,
        strategies=["near-boundary", "largest-positive", "randomized-search"],
        budget=6,
        seeds=2,
        initial=4,
        stopping=list(RULE_CHOICES),
        solver="incremental",
        progress=lambda fraction, text: told.append(text),
    )
    done = [t for t in told if " runs done" in t]
    assert done[-1].startswith("8/8 runs done")
    assert all("runs: 3 heuristics and 1 full-data reference, each × 2 seeds" in t for t in told), told[-1]
    at = start_app()
    at.switch_page("views/compare.py").run()
    assert not at.exception, at.exception
    (summary,) = [df.value for df in at.dataframe if ALC in df.value.columns]
    (stops,) = [df.value for df in at.dataframe if "rule" in df.value.columns]
    for table in (summary, stops):
        cells = [str(c) for c in table.to_numpy().ravel()]
        assert not any(c in ("None", "nan", "NaN", "<NA>") for c in cells), cells
    assert set(stops["labels at stop"]) == {"–"}  # (6 labels: no rule stops)


def test_scores_are_read_as_people_read_them():
    from core.formatting import signed

    assert signed(0.41249) == "+0.412"
    assert signed(-0.41251) == "-0.413"
    assert signed(-0.00002) == "0.000"  # never a negative zero
    assert signed(0.0) == "0.000"
    assert signed(2.0, decimals=1) == "+2.0"


def test_history_my_labels_and_export_show_no_none_and_no_empty_rows(db_url, monkeypatch):
    import streamlit as st

    heights = {}
    drawn = st.dataframe  # (the pages call st.dataframe: a method of the main area, bound at import)

    def recording(data=None, *args, key=None, height="auto", **kw):
        heights[key] = height
        return drawn(data, *args, key=key, height=height, **kw)

    monkeypatch.setattr(st, "dataframe", recording)
    at = start_app()
    at.switch_page("views/label.py").run()
    at.button(key="start_session").click().run()
    for _ in range(3):
        (negative,) = [b for b in at.button if b.key.startswith("negative_")]
        negative.click().run()
        assert not at.exception, at.exception
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    (table,) = [d for d in at.dataframe if "score when asked" in d.value]
    # the three answers of the cold start: said in words, not an empty "None"
    assert list(table.value["score when asked"]) == ["cold start"] * 3
    assert heights["history_table"] <= 38 + 35 * 3  # a header and three rows: no empty rows below them
    picks = at.selectbox(key=[s.key for s in at.selectbox if s.key.startswith("history_pick_")][0]).options
    assert picks[0].endswith("· latest") and picks[1].endswith("· 1 label ago"), picks
    at.switch_page("views/my_labels.py").run()
    assert not at.exception, at.exception
    (mine,) = [d for d in at.dataframe if "score when asked" in d.value]
    assert list(mine.value["score when asked"]) == ["cold start"] * 3
    assert heights["my_labels"] <= 38 + 35 * 3
    at.switch_page("views/export.py").run()
    assert not at.exception, at.exception
    (preview,) = [d.value for d in at.dataframe if "decision_value" in d.value]
    assert list(preview["decision_value"]) == [""] * 3  # empty as in the file, not NaN / None
    assert list(preview["item_key"]) == sorted(preview["item_key"], key=list(preview["item_key"]).index)
    assert all(key.startswith("digit-") for key in preview["item_key"])  # "digit-0905" keeps its zeros


def test_titles_and_abstracts_are_imported_as_one_document_unless_kept_apart(db_url):
    topic = ["screening tools", "gene therapy", "deep learning"]
    rows = "".join(
        f"{topic[k % 3]} {k},a study of {topic[(k + 1) % 3]} number {k},{'yes' if k % 3 == 0 else 'no'}\n"
        for k in range(12)
    )
    svc = MarginLab.from_url(db_url)
    for apart in (False, True):
        at = data_page_with("records.csv", f"title,abstract,included\n{rows}".encode())
        [s for s in at.selectbox if s.label == "True-label column (optional)"][0].select("included").run()
        text = at.multiselect(key="upload_text_records.csv")
        if text.value != ["title", "abstract"]:
            text.set_value(["title", "abstract"]).run()
        at.checkbox(key="upload_text_blocks").set_value(apart).run()
        at.text_input(key="upload_name_records.csv").input(f"records {apart}").run()
        [b for b in at.button if b.key == "upload_import"][0].click().run()
        assert not at.exception, at.exception
        (dataset,) = [d for d in svc.datasets() if d.name == f"records {apart}"]
        terms = svc.dataset(dataset.id).feature_names
        assert ("title:screening" in terms and "abstract:screening" in terms) == apart, terms[:8]
        assert ("screening" in terms) == (not apart)


def test_owners_are_told_when_the_app_is_shared_without_its_guard(db_url, monkeypatch):
    from app import server_guard

    asked = []

    def unguarded(address, served_to_a_browser):
        asked.append((address, served_to_a_browser))
        return True

    monkeypatch.setattr(server_guard, "unguarded_on_a_network", unguarded)
    owner = start_app("olga")
    assert any("started with `streamlit run`" in w.value for w in owner.sidebar.warning)
    assert asked and asked[-1][1] is False  # (AppTest: no browser asked; the answer here is the patched one)
    annotator = start_app("ann", role="annotator")
    assert not any("streamlit run" in w.value for w in annotator.sidebar.warning)
    monkeypatch.setattr(server_guard, "unguarded_on_a_network", lambda address, served_to_a_browser: False)
    assert not any("streamlit run" in w.value for w in start_app("olga").sidebar.warning)


def test_counts_are_written_in_their_number():
    import numpy as np

    from core import stopping
    from core.formatting import count

    assert [count(n, "label") for n in (0, 1, 2, 1250)] == ["0 labels", "1 label", "2 labels", "1,250 labels"]
    assert count(1, "match", "matches") == "1 match" and count(3, "match", "matches") == "3 matches"
    message = stopping.consecutive_rule(np.array([1, -1]), n=50).message
    assert "1 negative in a row" in message and "1 negatives" not in message


def test_a_column_named_like_the_answer_is_the_true_label_and_never_suggested_as_a_feature(db_url):
    rows = "".join(
        f"paper {k} on topic {k % 3},an abstract about the topic number {k},"
        f"{'include' if k % 3 == 0 else 'exclude'},{'yes' if k % 2 else 'no'},{'a' if k % 4 else 'b'}\n"
        for k in range(12)
    )
    data = f"title,abstract,Label,Decision,venue\n{rows}".encode()
    at = data_page_with("tryout.csv", data)
    label = [s for s in at.selectbox if s.label == "True-label column (optional)"][0]
    assert label.value == "Label"  # suggested, whatever its case
    (hint,) = [c for c in map(test_app.as_shown, (c.value for c in at.caption)) if "Text-valued columns" in c]
    assert "'venue'" in hint and "Label" not in hint and "Decision" not in hint
    assert at.multiselect(key="upload_text_tryout.csv").value == ["title", "abstract"]
    label.select("(none)").run()  # not the label: still never suggested as a feature
    (hint,) = [c for c in map(test_app.as_shown, (c.value for c in at.caption)) if "Text-valued columns" in c]
    assert "Label" not in hint and "Decision" not in hint
    svc = MarginLab.from_url(db_url)
    for choice in ({"one_hot": ["Label"]}, {"feature_columns": ["Label"]}, {"text_features": ["Label"]}):
        with pytest.raises(Exception, match="'Label'") as refused:  # both the label and a feature: refused
            svc.import_csv(data, name="both", label_column="Label", positive="include", **choice)
        assert "label column" in str(refused.value)
    assert not [d for d in svc.datasets() if d.name == "both"]
    numbers = "".join(f"{k},{k * k % 7},{k % 2}\n" for k in range(12)).encode()
    at = data_page_with("numbers.csv", b"x1,x2,y\n" + numbers)
    label = [s for s in at.selectbox if s.label == "True-label column (optional)"][0]
    assert label.value == "y"
    label.select("(none)").run()
    at.text_input(key="upload_name_numbers.csv").input("unlabelled").run()
    [b for b in at.button if b.key == "upload_import"][0].click().run()
    assert not at.exception, at.exception
    (dataset,) = [d for d in svc.datasets() if d.name == "unlabelled"]
    assert list(svc.dataset(dataset.id).feature_names) == ["x1", "x2"]  # 'y' is no feature unless named
