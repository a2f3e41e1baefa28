"""Known items on the Label page: search the pool (words, column filter, SMILES substructure), mark known
positives and negatives, stored with the provenance 'prior' and learned at once."""

from __future__ import annotations

import numpy as np
import pytest

from app.services import MarginLab, ServiceError
from app.services.priors import match_filter, match_substructure, match_words, parse_filter
from storage import repository as repo
from tests.app.test_app import as_shown, db_url, progress, shown, start_app, start_session  # noqa: F401

DOCS = [
    "Robot arm grasping with tactile sensors",
    "Image segmentation with convolutional networks",
    "Legged robot locomotion on rough terrain",
    "Language models for translation",
] * 15


def _documents(svc: MarginLab, eval_fraction: float = 0.0) -> int:
    csv = "key,text,topic\n" + "".join(
        f"d{i},{d} number {i},{'robotics' if 'obot' in d else 'other'}\n" for i, d in enumerate(DOCS)
    )
    return svc.import_csv(
        csv.encode(),
        name="abstracts",
        label_column="topic",
        positive="robotics",
        key_column="key",
        text_features=["text"],
        text_svd=8,
        eval_fraction=eval_fraction,
    ).dataset_id


def test_matching_words_filters_and_substructures():
    texts = ["Robot arm", "robot Legs", "arm of a Robot", None]
    assert match_words(texts, "robot").tolist() == [0, 1, 2]
    assert match_words(texts, '"robot arm"').tolist() == [0]
    assert match_words(texts, "arm ROBOT").tolist() == [0, 2]
    with pytest.raises(ServiceError, match="Type words"):
        match_words(texts, '  ""  ')
    X = np.array([[1.0, 5.0], [2.0, np.nan], [3.0, 7.0]])
    items, values = match_filter(X, ["a", "b"], "b >= 6")
    assert items.tolist() == [2] and values.tolist() == [7.0]
    assert match_filter(X, ["a", "b"], "a != 2")[0].tolist() == [0, 2]
    with pytest.raises(ServiceError, match="No column 'c' in this dataset; its columns: a, b"):
        parse_filter("c > 1", ["a", "b"])
    with pytest.raises(ServiceError, match="'x' is not a number"):
        parse_filter("a > x", ["a", "b"])
    with pytest.raises(ServiceError, match="Write a column filter"):
        parse_filter("a", ["a", "b"])
    smiles = ["CC(=O)O", "c1ccccc1", "OC(=O)c1ccccc1", "not a molecule"]
    assert match_substructure(smiles, "C(=O)[OH]").tolist() == [0, 2]
    with pytest.raises(ServiceError, match="not a SMILES or SMARTS substructure"):
        match_substructure(smiles, "C((")


def test_known_items_are_stored_as_priors_learned_and_kept_across_a_restart(db_url):  # noqa: F811
    svc = MarginLab.from_url(db_url)
    dataset_id = _documents(svc, eval_fraction=0.25)
    run = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="largest-positive", eval_fraction=0.25)
    result = run.search_pool("legged robot")
    assert result.how == "words" and result.n_matches + result.n_held_out == 15
    assert all("Legged robot" in hit.text for hit in result.hits) and result.hits[0].key.startswith("d")
    first = result.hits[0].item_index
    said = run.mark_known(first, 1)
    assert said.ok and said.message == f"Item {first}: known positive, learned."
    negative = run.search_pool('"language models"').hits[0].item_index
    assert run.mark_known(negative, -1).ok
    events = repo.label_events(svc.engine, run.session_id)
    assert [(e.item_index, e.value, e.strategy) for e in events] == [(first, 1, "prior"), (negative, -1, "prior")]
    assert run.loop.n_labels == 2 and not run.loop.in_cold_start  # learned: the heuristic asks from now on
    assert run.shown is not None and run.shown.strategy == "largest-positive"
    assert run.n_known == 2
    # refused with a message naming the item: answered already, held out, not in the data, a bad value
    assert run.mark_known(first, -1).message == (
        f"Item {first} is already answered (positive); change it on the History page."
    )
    held = int(run.eval_items[0])
    said = run.mark_known(held, 1)
    assert not said.ok and said.message.startswith(f"Item {held} is held out for evaluation")
    assert run.mark_known(10_000, 1).message == "There is no item 10000 in this dataset (0..59)."
    with pytest.raises(ServiceError, match="positive \\(\\+1\\) or negative \\(-1\\)"):
        run.mark_known(3, 0)
    assert "No item of the pool matches this words search." == run.search_pool("submarine").message
    assert len(repo.label_events(svc.engine, run.session_id)) == 2
    # a new process rebuilds the same model from the stored answers
    again = MarginLab.from_url(db_url).open_session(run.session_id)
    assert again.n_known == 2 and again.shown.item_index == run.shown.item_index
    assert np.array_equal(again.loop.pool_scores(), run.loop.pool_scores())


def test_the_label_page_finds_items_by_words_and_marks_them_known(db_url):  # noqa: F811
    svc = MarginLab.from_url(db_url)
    dataset_id = _documents(svc)
    at = start_app("di")
    at.switch_page("views/label.py").run()
    start_session(at, "di", "largest-positive", dataset_id=dataset_id)
    (session,) = svc.sessions(status="active")
    at.text_input(key=f"known_query_{session.id}").input("tactile").run()
    assert not at.exception, at.exception
    assert "15 items of the pool match." in shown(at.caption)
    hits = [t.value for t in at.text if t.value.startswith("Item ")]
    assert len(hits) == 15 and hits[0].startswith("Item 0 (d0): Robot arm grasping with tactile sensors")
    at.button(key=f"known_pos_{session.id}_4").click().run()
    assert not at.exception, at.exception
    assert "Item 4: known positive, learned." in shown(at.caption)
    events = repo.label_events(svc.engine, session.id)
    assert [(e.item_index, e.value, e.strategy) for e in events] == [(4, 1, "prior")]
    assert progress(at) == (1, 0)
    assert any(t.value == "answered: positive" for t in at.text)  # the hit now says it is answered
    at.text_input(key=f"known_query_{session.id}").input("submarine").run()
    assert "No item of the pool matches this words search." in [as_shown(i.value) for i in at.info]


def test_the_label_page_filters_a_table_by_a_column(db_url):  # noqa: F811
    svc = MarginLab.from_url(db_url)
    rng = np.random.default_rng(1)
    rows = "".join(f"{a:.3f},{b:.3f},{'big' if a > 1 else 'small'}\n" for a, b in rng.normal(size=(40, 2)))
    dataset_id = svc.import_csv(
        ("width,height,kind\n" + rows).encode(), name="sizes", label_column="kind", positive="big", eval_fraction=0.0
    ).dataset_id
    at = start_app("ta")
    at.switch_page("views/label.py").run()
    start_session(at, "ta", "near-boundary", dataset_id=dataset_id)
    (session,) = svc.sessions(status="active")
    box = at.text_input(key=f"known_query_{session.id}")
    assert box.label == "Column filter"
    box.input("depth > 1").run()
    assert "No column 'depth' in this dataset; its columns: width, height." in shown(at.error)
    at.text_input(key=f"known_query_{session.id}").input("width > 1").run()
    hits = [t.value for t in at.text if t.value.startswith("Item ")]
    X = repo.load_dataset_arrays(svc.engine, dataset_id)[0]
    assert len(hits) == int(np.sum(X[:, 0] > 1)) > 0 and all(": width = " in h for h in hits)


def test_a_molecule_pool_is_searched_by_substructure(db_url):  # noqa: F811
    svc = MarginLab.from_url(db_url)
    smiles = ["CC(=O)O", "c1ccccc1", "OC(=O)c1ccccc1", "CCO", "CCN", "c1ccncc1"] * 4
    csv = "key,smiles,active\n" + "".join(f"m{i},{s},{int('=O' in s)}\n" for i, s in enumerate(smiles))
    dataset_id = svc.import_csv(
        csv.encode(),
        name="molecules",
        label_column="active",
        positive="1",
        key_column="key",
        smiles_column="smiles",
        eval_fraction=0.0,
    ).dataset_id
    run = svc.start_session(dataset_id=dataset_id, annotator="mo", strategy="largest-positive")
    assert run.search_how == "substructure"
    result = run.search_pool("c1ccccc1")
    assert [hit.item_index for hit in result.hits] == [i for i, s in enumerate(smiles) if "c1ccccc1" in s]
    assert [hit.text for hit in result.hits][:2] == ["c1ccccc1", "OC(=O)c1ccccc1"]
    with pytest.raises(ServiceError, match="not a SMILES or SMARTS substructure"):
        run.search_pool("C((")
    assert run.mark_known(2, 1).ok and run.loop.labels[run.pool_of_item[2]] == 1
