"""Every kind of item (a table row, an image, a document, a molecule) shown where it is labelled: in a
labelling session of an owner, and on Label together in a team project, signed in as an owner and as an
annotator (AppTest, no browser; the browser's own checks are in tests/browser/test_browser_teams.py).

An annotator has no labelling session of their own (the Label page is not in their navigation): a
session is checked for an owner.  The content checked is the item's own (its feature values, pixels,
words or molecule), read from what was imported, not from the code that shows it.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest

from app.services import MarginLab
from storage import repository as repo
from tests.app import test_app
from tests.app.test_app import PASSWORD, as_shown, ensure_account, shown_item, start_app, start_session

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

KINDS = ("table", "image", "text", "molecule")

#: a few distinct molecules: straight-chain alkanes and their alcohols (positive: an alcohol)
MOLECULES = [("C" * n, "no") for n in range(1, 13)] + [("C" * n + "O", "yes") for n in range(1, 13)]
DOCUMENTS = [
    "Robot arm grasping with tactile sensors",
    "Image segmentation with convolutional networks",
    "Legged robot locomotion on rough terrain",
    "Language models for translation",
]
TABLE_COLUMNS = ("height", "weight", "age")


def table_rows() -> np.ndarray:
    return np.round(np.random.default_rng(3).normal([170.0, 70.0, 40.0], [10.0, 12.0, 15.0], size=(40, 3)), 2)


def import_kind(svc: MarginLab, kind: str) -> int:
    """A small dataset whose items are shown as ``kind``; returns its id."""
    if kind == "image":
        return svc.ensure_demo_dataset()  # 8 x 8 digits
    if kind == "table":
        rows = table_rows()
        csv = (
            ",".join(TABLE_COLUMNS)
            + ",tall\n"
            + "".join(",".join(f"{v:.2f}" for v in row) + f",{'yes' if row[0] > 170 else 'no'}\n" for row in rows)
        )
        result = svc.import_csv(csv.encode(), name="people", label_column="tall", positive="yes")
    elif kind == "text":
        csv = "key,text,topic\n" + "".join(
            f"d{i},{document(i)},{'robotics' if 'obot' in document(i) else 'other'}\n" for i in range(60)
        )
        result = svc.import_csv(
            csv.encode(),
            name="abstracts",
            label_column="topic",
            positive="robotics",
            key_column="key",
            text_features=["text"],
        )
    else:
        csv = "id,smiles,alcohol\n" + "".join(f"m{i},{smiles},{label}\n" for i, (smiles, label) in enumerate(MOLECULES))
        result = svc.import_csv(
            csv.encode(),
            name="molecules",
            label_column="alcohol",
            positive="yes",
            key_column="id",
            smiles_column="smiles",
            fingerprint_bits=256,
        )
    assert result.created, result.message
    return result.dataset_id


def document(i: int) -> str:
    return f"{DOCUMENTS[i % len(DOCUMENTS)]} number {i}"


def image_urls(at) -> list[str]:
    return [url for element in at.get("image") for url in element.value]


def svg_images(at) -> list[str]:
    prefix = "data:image/svg+xml;base64,"
    return [base64.b64decode(url[len(prefix) :]).decode() for url in image_urls(at) if url.startswith(prefix)]


def assert_item_shown(at, kind: str, item: int, engine) -> None:
    """The page shows item ``item`` as its kind is meant to be seen, and no error."""
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    if kind == "table":
        tables = [df.value for df in at.dataframe if "feature" in df.value.columns]
        assert len(tables) == 1, [df.value.columns for df in at.dataframe]
        (table,) = tables
        assert dict(zip(table["feature"], table["value"], strict=True)) == pytest.approx(
            dict(zip(TABLE_COLUMNS, table_rows()[item], strict=True))
        )
    elif kind == "image":
        from app.ui.item import pixel_svg

        pixels = repo.load_dataset_arrays(engine, repo.list_datasets(engine)[0].id)[0][item].astype(float)
        grey = ((pixels - pixels.min()) / (pixels.max() - pixels.min())).reshape(8, 8)
        assert svg_images(at) == [pixel_svg(grey, 24)]  # the item's own pixels, 24-pixel cells
    elif kind == "text":
        assert document(item) in [t.value for t in at.text], [t.value for t in at.text]
    else:
        from core.features import molecule_svg

        smiles = MOLECULES[item][0]
        assert svg_images(at) == [molecule_svg(smiles)]  # RDKit's drawing of the item's molecule
        assert smiles in [as_shown(c.value) for c in at.caption]


def make_project(url: str, dataset_id: int, members=("olga", "ann"), **options) -> int:
    """A project on the dataset, made by the owner olga, with ``members``."""
    for name, role in (("olga", "owner"), ("ann", "annotator"), ("bob", "annotator")):
        ensure_account(url, name, role=role)
    svc = MarginLab.from_url(url)
    try:
        me = svc.sign_in("olga", PASSWORD)
        options.setdefault("strategy", "near-boundary")
        return svc.create_project(
            me, name=f"screening {dataset_id}", dataset_id=dataset_id, members=list(members), **options
        )
    finally:
        svc.engine.dispose()


@pytest.mark.parametrize("kind", KINDS)
def test_a_labelling_session_shows_every_kind_of_item(db_url, kind):
    svc = MarginLab.from_url(db_url)
    dataset_id = import_kind(svc, kind)
    at = start_app("olga")
    start_session(at, "olga", "near-boundary", dataset_id=dataset_id)
    assert_item_shown(at, kind, shown_item(at), svc.engine)
    test_app.click(at, "negative")  # and the next item, after a label
    assert_item_shown(at, kind, shown_item(at), svc.engine)


def label_together_as(role: str):
    """Label together for the owner olga (a member: she opens the page) or the annotator ann (her landing
    page)."""
    if role == "owner":
        at = start_app("olga")
        at.switch_page("views/team_label.py").run()
    else:
        at = start_app("ann", role="annotator")
    assert [t.value for t in at.title] == ["Label together"]
    return at


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("role", ["owner", "annotator"])
def test_label_together_shows_every_kind_of_item_to_every_member(db_url, kind, role):
    """Label together on a project over each kind of dataset: the owner (a member) opens the page, an
    annotator lands on it; each sees the item handed to them, then the next one after an answer."""
    svc = MarginLab.from_url(db_url)
    dataset_id = import_kind(svc, kind)
    make_project(db_url, dataset_id)
    at = label_together_as(role)
    first = shown_item(at)
    assert_item_shown(at, kind, first, svc.engine)
    (button,) = [b for b in at.button if b.key == f"team_negative_{first}"]
    button.click().run()
    assert shown_item(at) != first
    assert_item_shown(at, kind, shown_item(at), svc.engine)


@pytest.mark.parametrize("kind", KINDS)
def test_the_projects_page_shows_a_disputed_item_of_every_kind(db_url, kind):
    """Two annotators answer one item differently; the owner settling it sees the item itself."""
    svc = MarginLab.from_url(db_url)
    dataset_id = import_kind(svc, kind)
    project_id = make_project(db_url, dataset_id, members=("ann", "bob"), labels_per_item=2, overlap_share=1.0)
    run = svc.open_project(project_id)
    asked = run.next_item("ann")
    assert run.answer("ann", asked.item_index, 1, asked).ok
    second = run.next_item("bob")
    assert second.item_index == asked.item_index  # a second opinion on her item
    assert run.answer("bob", second.item_index, -1, second).ok
    at = start_app("olga")
    at.switch_page("views/projects.py").run()
    at.selectbox(key="project_shown").select(project_id).run()
    assert any(b.key == f"settle_pos_{asked.item_index}" for b in at.button), [b.key for b in at.button]
    assert_item_shown(at, kind, asked.item_index, svc.engine)
