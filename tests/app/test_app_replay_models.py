"""A replay of a session with named classes under another model: the service (app.services.replay) and the
Compare page's "Advanced: the model" (AppTest)."""

from __future__ import annotations

import pandas as pd
import pytest

from app.services import MarginLab, ServiceError
from app.services.replay import Replays
from app.services.vocabulary import solver_words
from storage import repository as repo
from tests.app import test_app
from tests.app.test_app import shown, start_app
from tests.app.test_app_replay import (
    _class_session,
    drawn_now_and_when_reloaded,
    replay_from_the_page,
    stored_session_items,
)

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

OTHER = "lasvm"  # (a solver the class sessions of these tests do not use: they use incremental)


def test_the_service_replays_a_class_session_under_another_model_as_run_class_replay_does(db_url):
    from core.replay import run_class_replay, session_features

    svc = MarginLab.from_url(db_url)
    session_id = _class_session(svc)
    replays = Replays(svc)
    source = f"session:{session_id}"
    own, own_C = replays.model(source)
    assert own != OTHER
    stored = svc.comparison(replays.run_replay(source, strategies=["random"], seeds=2, initial=4, solver=OTHER, C=5.0))
    info, labelled = stored_session_items(svc, session_id)
    X, *_ = repo.load_dataset_arrays(svc.engine, info.dataset_id)
    scaling = info.params.get("scaling", svc.dataset(info.dataset_id).meta.get("scaling", "none"))
    params = {k: v for k, v in labelled.solver_params.items() if k != "auto"} | {"C": 5.0}
    direct = run_class_replay(
        session_features(X, scaling, None),
        labelled,
        strategies=["random"],
        seeds=2,
        initial=4,
        solver=OTHER,
        solver_params=params,
    )
    columns = ["strategy", "solver", "seed", "n_labels", "accuracy", "macro_auc", "item", "label"]
    pd.testing.assert_frame_equal(stored.rows[columns], direct.rows[columns], check_dtype=False)
    replay = stored.config["replay"]
    assert replay == direct.config["replay"]
    assert replay["solver"] == OTHER and replay["solver_params"]["C"] == 5.0 and replay["own_model"] is False
    # a model this version does not have, or a C that is no positive number: named, nothing stored
    with pytest.raises(ServiceError, match="'svc' is not a model this version has"):
        replays.run_replay(source, strategies=["random"], seeds=1, initial=4, solver="svc")
    with pytest.raises(ServiceError, match="C .* must be a positive number"):
        replays.run_replay(source, strategies=["random"], seeds=1, initial=4, C=0)
    assert len(svc.comparisons()) == 1


def replay_page(user: str, source: str):
    """``user``'s Compare page with ``source`` chosen to replay."""
    at = start_app(user)
    at.switch_page("views/compare.py").run()
    at.radio(key="compare_mode").set_value("Replay a session").run()
    at.selectbox(key="replay_session").select(source).run()
    assert not at.exception, at.exception
    return at


def test_the_compare_page_replays_a_class_session_under_another_model_and_reloads_it_named(db_url):
    """The owner chooses another model under Advanced (the session's own is the default): every run uses it,
    and the replay names it, drawn now and on a later visit."""
    svc = MarginLab.from_url(db_url)
    session_id = _class_session(svc)
    source = f"session:{session_id}"
    at = replay_page("ada", source)
    own, _ = Replays(svc).model(source)
    assert at.selectbox(key=f"replay_solver_{source}").value == own  # the session's own by default
    at.selectbox(key=f"replay_solver_{source}").select(OTHER)
    at.number_input(key=f"replay_C_{source}").set_value(5.0)
    stored = replay_from_the_page(svc, at, "replay_class_strategies")
    replay = svc.comparison(stored.id).config["replay"]
    assert replay["solver"] == OTHER and replay["solver_params"]["C"] == 5.0

    def drawn(page):
        said = f"model: {solver_words(OTHER)} ({OTHER}, C 5), not the session's own"
        assert any(said in text for text in shown(page.caption)), shown(page.caption)
        (table,) = [df.value for df in page.dataframe if "final accuracy" in df.value.columns]
        assert set(table["model"]) == {solver_words(OTHER)}

    drawn_now_and_when_reloaded(at, "ada", stored.id, drawn)


def test_the_compare_page_replays_a_multi_label_team_project_with_its_own_model_by_default(db_url):
    """The owner of a multi-label team project leaves the model as it is: every run uses the project's own,
    and the replay says so (the model offered for several classes per item too)."""
    from tests.app.test_app_replay import _multi_label_project

    svc, project_id, *_ = _multi_label_project(db_url)
    source = f"project:{project_id}"
    at = replay_page("olga", source)
    own, own_C = Replays(svc).model(source)
    assert at.selectbox(key=f"replay_solver_{source}").value == own
    assert at.number_input(key=f"replay_C_{source}").value == own_C
    stored = replay_from_the_page(svc, at, "replay_set_strategies")
    replay = svc.comparison(stored.id).config["replay"]
    assert replay["solver"] == own and replay["own_model"] is True

    def drawn(page):
        said = f"model: {solver_words(own)} ({own}"
        assert any(said in text and "the project's own" in text for text in shown(page.caption)), shown(page.caption)

    drawn_now_and_when_reloaded(at, "olga", stored.id, drawn)


def test_the_service_replays_a_two_class_session_under_another_model(db_url):
    """The service takes the model for a two-class replay too: every heuristic's runs use it."""
    from core.replay import SESSION_ORDER
    from tests.app.test_app import _labelled_run

    svc = MarginLab.from_url(db_url)
    run = _labelled_run(svc, "near-boundary", 30)
    source = f"session:{run.session_id}"
    assert Replays(svc).model(source)[0] != OTHER
    stored = svc.comparison(
        Replays(svc).run_replay(source, strategies=["random"], seeds=1, initial=4, solver=OTHER, C=2.0)
    )
    runs = stored.rows[stored.rows["strategy"] != SESSION_ORDER]
    assert set(runs["solver"]) == {OTHER} and stored.config["solver_params"]["C"] == 2.0
