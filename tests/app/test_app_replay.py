"""The Compare page's "Replay a session" (AppTest) and the service behind it (app.services.replay)."""

from __future__ import annotations

import numpy as np
import pytest

from app.services import MarginLab, ServiceError
from app.services.replay import Replays, is_replay
from app.services.vocabulary import heuristic_words
from core.replay import CAVEAT, SESSION_ORDER
from storage import repository as repo
from tests.app import test_app
from tests.app.test_app import _labelled_run, as_shown, start_app

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL


def test_the_service_stores_a_replay_as_a_comparison_and_refuses_an_unknown_session(db_url):
    svc = MarginLab.from_url(db_url)
    run = _labelled_run(svc, "near-boundary", 30)
    replays = Replays(svc)
    comparison_id = replays.run_replay(run.session_id, strategies=["random"], seeds=2, initial=4)
    stored = svc.comparison(comparison_id)
    assert is_replay(stored) and stored.config["replay"]["reference"] == "near-boundary"
    assert set(stored.rows["strategy"]) == {"random", "near-boundary", SESSION_ORDER}
    events = [e for e in repo.label_events(svc.engine, run.session_id) if e.value != 0]
    order = stored.rows[stored.rows["strategy"] == SESSION_ORDER]
    assert list(order["label"]) == [e.value for e in events]  # the session's answers, in its order
    with pytest.raises(ServiceError, match="Session 999 does not exist"):
        replays.run_replay(999, strategies=["random"])
    with pytest.raises(ServiceError, match="Choose at least one heuristic"):
        replays.run_replay(run.session_id, strategies=["no-such"])
    with pytest.raises(ServiceError, match=f"Session {run.session_id} cannot be replayed: the 40 initial labels"):
        replays.run_replay(run.session_id, strategies=["random"], initial=40)


def test_the_compare_page_replays_a_session_and_reloads_it(db_url):
    svc = MarginLab.from_url(db_url)
    run = _labelled_run(svc, "near-boundary", 30)
    at = start_app()
    at.switch_page("views/compare.py").run()
    at.radio(key="compare_mode").set_value("Replay a session").run()
    assert at.selectbox(key="replay_session").value == f"session:{run.session_id}"
    at.multiselect(key="replay_strategies").set_value(["random"])
    at.number_input(key="replay_seeds").set_value(2)
    at.number_input(key="replay_initial").set_value(4)
    at.button(key="replay_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    (newest,) = svc.comparisons()
    assert at.selectbox(key="comparison_picker").value == newest.id
    assert CAVEAT in [as_shown(w.value) for w in at.warning]
    (table,) = [df.value for df in at.dataframe if "recall 95 %" in df.value.columns]
    assert list(table["heuristic"]) == [
        heuristic_words("random"),
        f"{heuristic_words('near-boundary')} (reference)",
        SESSION_ORDER,
    ]
    assert "replay of session" in at.selectbox(key="comparison_picker").format_func(newest.id)
    assert not [b for b in at.button if b.label == "Cancel"]  # the replay is over: nothing left to cancel

    # a later visit finds it among the stored comparisons and draws it again
    again = start_app()
    again.switch_page("views/compare.py").run()
    again.selectbox(key="comparison_picker").select(newest.id).run()
    assert not again.exception, again.exception
    assert CAVEAT in [as_shown(w.value) for w in again.warning]
    assert [df.value for df in again.dataframe if "recall 95 %" in df.value.columns]


def test_the_service_replays_a_team_project_with_its_settled_answers(db_url):
    from storage import teams

    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset() or svc.datasets()[0].id
    _, y, *_ = repo.load_dataset_arrays(svc.engine, dataset_id)
    project = teams.create_project(
        svc.engine,
        name="screen",
        dataset_id=dataset_id,
        strategy="near-boundary",
        solver="incremental",
        params={"solver_params": {"kernel": "rbf"}},
    )
    teams.add_member(svc.engine, project, "ann")
    items = [int(i) for i in np.flatnonzero(y > 0)[:6]] + [int(i) for i in np.flatnonzero(y < 0)[:14]]
    for item in items:
        teams.record_answer(
            svc.engine,
            project,
            annotator="ann",
            item_index=item,
            value=int(y[item]),
            strategy="near-boundary",
            solver="incremental",
        )
    teams.settle(svc.engine, project, item_index=items[-1], value=1, settled_by="ann")
    replays = Replays(svc)
    assert f"project:{project}" in replays.replayable()
    stored = svc.comparison(replays.run_replay(f"project:{project}", strategies=["random"], seeds=1, initial=4))
    order = stored.rows[stored.rows["strategy"] == SESSION_ORDER]
    assert list(order["label"]) == [int(y[i]) for i in items[:-1]] + [1]  # the settled answer
    assert stored.config["replay"]["source"] == f"project {project}"
