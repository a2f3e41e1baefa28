"""The Compare page's "Replay a session" (AppTest) and the service behind it (app.services.replay)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from app.services import MarginLab, ServiceError
from app.services.replay import Replays, is_replay
from app.services.vocabulary import heuristic_words, solver_words
from core.replay import CAVEAT, SESSION_ORDER
from storage import repository as repo
from tests.app import test_app
from tests.app.test_app import _labelled_run, as_shown, shown, start_app
from tests.app.test_app_classes import CLASSES

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


def replay_from_the_page(svc: MarginLab, at, heuristics_key: str):
    """Replay the session chosen on the Compare page with Random, 2 seeds, 4 initial labels; the stored
    replay, which the page now shows."""
    at.multiselect(key=heuristics_key).set_value(["random"])
    at.number_input(key="replay_seeds").set_value(2)
    at.number_input(key="replay_initial").set_value(4)
    at.button(key="replay_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    (newest,) = svc.comparisons()
    assert at.selectbox(key="comparison_picker").value == newest.id
    return newest


def test_the_compare_page_replays_a_session_and_reloads_it(db_url):
    svc = MarginLab.from_url(db_url)
    run = _labelled_run(svc, "near-boundary", 30)
    at = start_app()
    at.switch_page("views/compare.py").run()
    at.radio(key="compare_mode").set_value("Replay a session").run()
    assert at.selectbox(key="replay_session").value == f"session:{run.session_id}"
    newest = replay_from_the_page(svc, at, "replay_strategies")
    assert CAVEAT in [as_shown(w.value) for w in at.warning]
    (table,) = [df.value for df in at.dataframe if "recall 95 %" in df.value.columns]
    assert list(table["heuristic"]) == [
        heuristic_words("random"),
        f"{heuristic_words('near-boundary')} (reference)",
        SESSION_ORDER,
    ]
    # the model in words (the code name in a column for engineers), no solver, no query outside those
    assert set(table["model"]) == {solver_words(run.info.solver)}, table
    assert set(table["model, for engineers"]) == {run.info.solver}, table
    plain_columns = [c for c in table.columns if not c.endswith("for engineers")]
    assert not [c for c in plain_columns if "solver" in c or "query" in c], table.columns
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


# --------------------------------------------------------------------------- sessions with named classes


def _class_session(svc: MarginLab, n: int = 24) -> int:
    """A stored session with three named classes (Least sure between two classes), ``n`` items answered."""
    from tests.app.test_app_classes import answer_all, three_blobs

    dataset_id, truth = three_blobs(svc)
    run = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy="smallest-margin", classes=("cat", "dog", "cow")
    )
    answer_all(run, truth, n)
    return run.session_id


def stored_session_items(svc: MarginLab, session_id: int):
    """(the stored session's info, its labelled items as ``core.replay.session_items`` reads them)."""
    from core.replay import session_items

    info = repo.get_session(svc.engine, session_id)
    return info, session_items(
        repo.label_events(svc.engine, session_id),
        strategy=info.strategy,
        solver=info.solver,
        params=info.params,
        source=f"session {session_id}",
    )


def has_the_numbers_of_run_class_replay(svc: MarginLab, stored, info, labelled) -> None:
    """``stored``, a replay (Random, 2 seeds, 4 initial labels) of the session or project ``info`` with
    named classes (smallest-margin), has the numbers of ``core.replay.run_class_replay`` called on
    ``labelled``: the same runs label by label (accuracy and macro AUC on the held-out part), the same
    summary, the same account of what was replayed."""
    from core.replay import run_class_replay, session_features

    X, *_ = repo.load_dataset_arrays(svc.engine, info.dataset_id)
    scaling = info.params.get("scaling", svc.dataset(info.dataset_id).meta.get("scaling", "none"))
    direct = run_class_replay(session_features(X, scaling, None), labelled, strategies=["random"], seeds=2, initial=4)
    columns = ["strategy", "seed", "n_labels", "accuracy", "macro_auc", "item", "label"]
    # its own strategy as the reference, its own order as one more run
    assert set(direct.rows["strategy"]) == {"random", "smallest-margin", SESSION_ORDER}
    pd.testing.assert_frame_equal(stored.rows[columns], direct.rows[columns], check_dtype=False)
    assert stored.config["replay"] == direct.config["replay"]
    for mine, theirs in zip(stored.summary["summary"], direct.summary.to_dict(orient="records"), strict=True):
        assert mine["final_accuracy_mean"] == pytest.approx(theirs["final_accuracy_mean"])
        assert mine["final_macro_auc_mean"] == pytest.approx(theirs["final_macro_auc_mean"])


def test_a_class_replay_from_the_service_has_the_numbers_of_run_class_replay(db_url):
    """The service replays a session with named classes as ``core.replay.run_class_replay`` does: the same
    runs, label by label (accuracy and macro AUC on the held-out part), stored and read back."""
    svc = MarginLab.from_url(db_url)
    session_id = _class_session(svc)
    replays = Replays(svc)
    assert f"session:{session_id}" in replays.replayable()
    stored = svc.comparison(replays.run_replay(f"session:{session_id}", strategies=["random"], seeds=2, initial=4))
    info, labelled = stored_session_items(svc, session_id)
    has_the_numbers_of_run_class_replay(svc, stored, info, labelled)
    # progress label by label; a Cancel (an exception from it) stops the replay and nothing is stored

    class Cancelled(Exception):
        pass

    said: list[str] = []

    def cancel(fraction: float, text: str) -> None:
        said.append(text)
        if "label 3/" in text:
            raise Cancelled

    with pytest.raises(Cancelled):
        replays.run_replay(f"session:{session_id}", strategies=["random"], seeds=2, initial=4, progress=cancel)
    assert said[0].startswith("run 1/6: random") and len(said) == 3  # (random, its own, its own order; 2 seeds)
    # a binary heuristic is not one for named classes: said, nothing stored
    with pytest.raises(ServiceError, match="named classes"):
        replays.run_replay(f"session:{session_id}", strategies=["near-boundary"], seeds=1, initial=4)
    assert len(svc.comparisons()) == 1


def drawn_now_and_when_reloaded(at, user: str, comparison_id: int, drawn) -> None:
    """``drawn(page)`` checks the replay on ``at`` and on a later visit of ``user``'s, which finds it among the
    stored comparisons and draws it again."""
    drawn(at)
    again = start_app(user)
    again.switch_page("views/compare.py").run()
    again.selectbox(key="comparison_picker").select(comparison_id).run()
    assert not again.exception, again.exception
    drawn(again)


def replay_named_classes_on_the_page(
    svc: MarginLab, source: str, user: str, *, whose: str, caveat: str, said: tuple[str, ...]
):
    """Choose ``source`` (named classes, smallest-margin, no class to find) on ``user``'s Compare page: the
    heuristics for named classes are offered; replay it, then check it is drawn under ``caveat`` with the
    ``whose`` own heuristic as the reference and every part of ``said`` in one caption, and drawn again on a
    later visit; the stored replay."""
    at = start_app(user)
    at.switch_page("views/compare.py").run()
    at.radio(key="compare_mode").set_value("Replay a session").run()
    at.selectbox(key="replay_session").select(source).run()
    assert not at.exception, at.exception
    # the heuristics for named classes (no Most likely <class>: no class to find is named)
    assert at.multiselect(key="replay_class_strategies").options == [
        "Least sure between two classes",
        "Least sure class",
        "Random",
    ]
    newest = replay_from_the_page(svc, at, "replay_class_strategies")

    def drawn(page):
        assert caveat in [as_shown(w.value) for w in page.warning]
        reference = f"Reference: Least sure between two classes, the {whose}'s own heuristic"
        assert any(reference in text for text in shown(page.caption))
        assert any(all(part in text for part in said) for text in shown(page.caption)), shown(page.caption)
        assert not any("two-class" in as_shown(e.value) for e in [*page.error, *page.info, *page.caption])
        specs = [c.proto.spec for c in page.get("plotly_chart")]
        curves = [s for s in specs if "test accuracy vs labels" in s or "macro AUC vs labels" in s]
        # the session's (project's) own order: one more curve, named in words, and a row of the table
        assert len(curves) == 2 and all(f"The {whose}'s own order" in s for s in curves), curves
        (table,) = [df.value for df in page.dataframe if "final accuracy" in df.value.columns]
        assert len(table) == 3 and any("(reference)" in h for h in table["heuristic"])
        assert list(table["heuristic"])[-1] == f"The {whose}'s own order"
        assert "own order is no curve" not in " ".join(as_shown(w.value) for w in page.warning)

    drawn_now_and_when_reloaded(at, user, newest.id, drawn)
    return newest


def test_the_compare_page_replays_a_session_with_named_classes_and_reloads_it(db_url):
    from app.services.replay import class_caveat

    svc = MarginLab.from_url(db_url)
    session_id = _class_session(svc)
    said = (f"session {session_id}: 24 labelled items",)
    replay_named_classes_on_the_page(
        svc, f"session:{session_id}", "ada", whose="session", caveat=class_caveat(0.3), said=said
    )


# --------------------------------------------------------------------------- team projects with named classes


def _class_project(db_url, turns: int = 40):
    """A team project of olga's with three named classes (``class_project``: members olga, ann, bob; two
    answers per item, classes written as markdown would read them),
    answered by ann and bob in turns with each item's group: bob gives the first item he answers another
    class, which olga settles on the third; he gives a later one another class too, left unsettled.
    (service, project id, its run, the item settled, the item left unsettled)."""
    from tests.app.test_app_classes import three_blobs
    from tests.app.test_app_team_classes import class_project

    svc = MarginLab.from_url(db_url)
    dataset_id, truth = three_blobs(svc)
    project_id = class_project(db_url, dataset_id, strategy="smallest-margin")
    run = svc.open_project(project_id)
    disputed: list[int] = []
    for turn in range(turns):
        name = ("ann", "bob")[turn % 2]
        shown = run.next_item(name)
        k = int(truth[shown.item_index])
        if name == "bob" and turn in (1, 21):
            k = (k + 1) % 3
            disputed.append(shown.item_index)
        assert run.answer(name, shown.item_index, k, shown).ok
    settled, unsettled = disputed
    assert run.settle(settled, (int(truth[settled]) + 2) % 3, by="olga").ok
    return svc, project_id, run, settled, unsettled


def test_a_class_project_replay_from_the_service_has_the_numbers_of_run_class_replay(db_url):
    """A team project with named classes is replayed as ``core.replay.run_class_replay`` replays the project's
    final classes (those its model learned: settled, else the first class answered), stored and read back."""
    from core.replay import LabelledItems
    from storage import teams
    from tests.app.test_app import PASSWORD

    svc, project_id, run, settled, unsettled = _class_project(db_url)
    me = svc.sign_in("olga", PASSWORD)
    replays = Replays(svc)
    assert "named classes: " + ", ".join(CLASSES) in replays.replayable(me)[f"project:{project_id}"]
    assert list(replays.heuristics(f"project:{project_id}")) == ["smallest-margin", "least-certain-class", "random"]
    stored = svc.comparison(
        replays.run_replay(f"project:{project_id}", strategies=["random"], seeds=2, initial=4, by=me)
    )
    # the final answers: the classes the project's model learned (settled, else the first), in its order
    info = teams.get_project(svc.engine, project_id)
    run.sync()
    assert run.model_labels[settled] == run.settled[settled] and unsettled not in run.settled
    labelled = LabelledItems(
        np.array(list(run.model_labels)),
        np.array(list(run.model_labels.values())),
        strategy=info.strategy,
        solver=info.solver,
        solver_params=info.params["solver_params"],
        source=f"project {project_id}",
        unsettled=1,
        classes=run.classes,
        team=True,
    )
    has_the_numbers_of_run_class_replay(svc, stored, info, labelled)
    assert stored.config["replay"]["unsettled"] == 1 and stored.config["replay"]["team"] is True
    # a two-class heuristic is not one for named classes: said, nothing more stored
    with pytest.raises(
        ServiceError, match=f"'near-boundary' is not a heuristic for named classes; project {project_id}"
    ):
        replays.run_replay(f"project:{project_id}", strategies=["near-boundary"], seeds=1, initial=4, by=me)
    assert len(svc.comparisons()) == 1


def test_the_compare_page_replays_a_team_project_with_named_classes_and_reloads_it(db_url):
    """The owner chooses the project on the Compare page, is offered the heuristics for named classes,
    replays it; the replay is drawn with the project's caveat (how an unsettled disagreement counts) and
    drawn again when reloaded."""
    from app.services.replay import class_caveat
    from core.replay import TEAM_CLASS_CAVEAT

    svc, project_id, *_ = _class_project(db_url)
    caveat = class_caveat(0.3, team=True)
    assert TEAM_CLASS_CAVEAT in caveat and "items the project labelled" in caveat
    said = (f"project {project_id}: 20 labelled items", "1 item whose classes differ and were not settled")
    newest = replay_named_classes_on_the_page(
        svc, f"project:{project_id}", "olga", whose="project", caveat=caveat, said=said
    )
    assert newest.config["replay"]["source"] == f"project {project_id}" and newest.config["replay"]["unsettled"] == 1


# --------------------------------------------------------------------------- multi-label sessions and projects


def _multi_label_session(svc: MarginLab, n: int = 24) -> int:
    """A stored multi-label session (Least sure on any class), ``n`` items answered with their group's set."""
    from tests.app.test_app_multi_label import answer_all, four_groups, start

    dataset_id, truth = four_groups(svc)
    run = start(svc, dataset_id, strategy=REFERENCE)
    answer_all(run, truth, n)
    return run.session_id


#: the multi-label strategy the sessions and projects of these tests chose their items with
REFERENCE = "least-sure-class"


def _multi_label_project(db_url, turns: int = 36):
    """A multi-label team project of olga's (members olga, ann, bob; two answers per item; Least sure on any
    class), answered by ann and bob in turns with each item's group set: bob gives the first item he answers
    another set, which olga settles on none of the classes, and a later one another set too, left unsettled.
    (service, project id, its run, the item settled, the item left unsettled)."""
    from tests.app.test_app_item_display import make_project
    from tests.app.test_app_multi_label import CLASSES as SET_CLASSES
    from tests.app.test_app_multi_label import four_groups

    svc = MarginLab.from_url(db_url)
    dataset_id, truth = four_groups(svc)
    project_id = make_project(
        db_url,
        dataset_id,
        members=("olga", "ann", "bob"),
        strategy=REFERENCE,
        classes=SET_CLASSES,
        multi_label=True,
        labels_per_item=2,
        overlap_share=1.0,
    )
    run = svc.open_project(project_id)
    disputed: list[int] = []
    for turn in range(turns):
        name = ("ann", "bob")[turn % 2]
        shown = run.next_item(name)
        places = truth[shown.item_index]
        if name == "bob" and turn in (1, 21):
            places = (0, 1) if places != (0, 1) else (2,)
            disputed.append(shown.item_index)
        assert run.answer(name, shown.item_index, list(places), shown).ok
    settled, unsettled = disputed
    assert run.settle(settled, [], by="olga").ok
    return svc, project_id, run, settled, unsettled


def has_the_numbers_of_run_multi_label_replay(svc: MarginLab, stored, info, labelled) -> None:
    """``stored``, a replay (Random, 2 seeds, 4 initial labels) of the multi-label session or project ``info``,
    has the numbers of ``core.replay.run_multi_label_replay`` called on ``labelled``: the same runs label by
    label (Hamming accuracy and macro AUC on the held-out part), the same per-class measures and summary, the
    same account of what was replayed."""
    from core.replay import run_multi_label_replay, session_features

    X, *_ = repo.load_dataset_arrays(svc.engine, info.dataset_id)
    scaling = info.params.get("scaling", svc.dataset(info.dataset_id).meta.get("scaling", "none"))
    direct = run_multi_label_replay(
        session_features(X, scaling, None), labelled, strategies=["random"], seeds=2, initial=4
    )
    columns = ["strategy", "seed", "n_labels", "accuracy", "macro_auc", "item", "label"]
    assert set(direct.rows["strategy"]) == {"random", REFERENCE, SESSION_ORDER}  # the reference, the own order
    pd.testing.assert_frame_equal(stored.rows[columns], direct.rows[columns], check_dtype=False)
    assert stored.config["replay"] == direct.config["replay"] and stored.config["replay"]["multi_label"] is True
    for mine, theirs in zip(stored.summary["summary"], direct.summary.to_dict(orient="records"), strict=True):
        assert mine["final_accuracy_mean"] == pytest.approx(theirs["final_accuracy_mean"])
        assert mine["final_macro_auc_mean"] == pytest.approx(theirs["final_macro_auc_mean"])
    pd.testing.assert_frame_equal(
        pd.DataFrame(stored.summary["per_class"]), direct.per_class.reset_index(drop=True), check_dtype=False
    )


def test_a_multi_label_session_replay_from_the_service_has_the_numbers_of_run_multi_label_replay(db_url):
    """The service offers a multi-label session, with the multi-label heuristics only, and replays it as
    ``core.replay.run_multi_label_replay`` does; a two-class or K-class heuristic is refused by name."""
    from app.services.replay import is_multi_label_replay

    svc = MarginLab.from_url(db_url)
    session_id = _multi_label_session(svc)
    replays = Replays(svc)
    assert "several classes per item" in replays.replayable()[f"session:{session_id}"]
    assert list(replays.heuristics(f"session:{session_id}")) == [REFERENCE, "random"]
    stored = svc.comparison(replays.run_replay(f"session:{session_id}", strategies=["random"], seeds=2, initial=4))
    assert is_multi_label_replay(stored)
    info, labelled = stored_session_items(svc, session_id)
    has_the_numbers_of_run_multi_label_replay(svc, stored, info, labelled)
    for wrong in ("near-boundary", "smallest-margin"):
        with pytest.raises(ServiceError, match=f"'{wrong}' is not a heuristic for several classes per item"):
            replays.run_replay(f"session:{session_id}", strategies=[wrong], seeds=1, initial=4)
    assert len(svc.comparisons()) == 1


def test_a_multi_label_project_replay_from_the_service_has_the_numbers_of_run_multi_label_replay(db_url):
    """A multi-label team project is replayed on the sets its model learned (settled, else the first set
    answered), stored and read back; an annotator who is not its owner has no project of hers to replay."""
    from core.replay import LabelledItems
    from storage import teams
    from tests.app.test_app import PASSWORD

    svc, project_id, run, settled, unsettled = _multi_label_project(db_url)
    me = svc.sign_in("olga", PASSWORD)
    replays = Replays(svc)
    assert "several classes per item" in replays.replayable(me)[f"project:{project_id}"]
    assert list(replays.heuristics(f"project:{project_id}")) == [REFERENCE, "random"]
    stored = svc.comparison(
        replays.run_replay(f"project:{project_id}", strategies=["random"], seeds=2, initial=4, by=me)
    )
    info = teams.get_project(svc.engine, project_id)
    run.sync()
    assert run.model_labels[settled] == () and unsettled not in run.settled
    member = np.zeros((len(run.model_labels), len(run.classes)), dtype=bool)
    for i, places in enumerate(run.model_labels.values()):
        member[i, list(places)] = True
    labelled = LabelledItems(
        np.array(list(run.model_labels)),
        member,
        strategy=info.strategy,
        solver=info.solver,
        solver_params=info.params.get("solver_params", {}),
        source=f"project {project_id}",
        unsettled=1,
        classes=run.classes,
        team=True,
        multi_label=True,
    )
    has_the_numbers_of_run_multi_label_replay(svc, stored, info, labelled)
    assert stored.config["replay"]["unsettled"] == 1 and stored.config["replay"]["team"] is True
    with pytest.raises(ServiceError, match="'near-boundary' is not a heuristic for several classes per item"):
        replays.run_replay(f"project:{project_id}", strategies=["near-boundary"], seeds=1, initial=4, by=me)
    assert len(svc.comparisons()) == 1


def replay_sets_on_the_page(svc: MarginLab, source: str, user: str, *, caveat: str, said: tuple[str, ...]):
    """Choose the multi-label ``source`` on ``user``'s Compare page: the multi-label heuristics only are
    offered; replay it with Random, then check it is drawn under ``caveat`` (Hamming accuracy and macro AUC
    curves, the table against the reference, the per-class table, every part of ``said`` in one caption),
    and drawn again on a later visit; the stored replay."""
    at = start_app(user)
    at.switch_page("views/compare.py").run()
    at.radio(key="compare_mode").set_value("Replay a session").run()
    at.selectbox(key="replay_session").select(source).run()
    assert not at.exception, at.exception
    assert at.multiselect(key="replay_set_strategies").options == ["Least sure on any class", "Random"]
    assert any("their sets of classes as they stand" in text for text in shown(at.caption)), shown(at.caption)
    assert not [m for m in at.multiselect if m.key in ("replay_strategies", "replay_class_strategies")]
    newest = replay_from_the_page(svc, at, "replay_set_strategies")

    def drawn(page):
        assert caveat in [as_shown(w.value) for w in page.warning]
        assert any("Reference: Least sure on any class" in text for text in shown(page.caption))
        assert any(all(part in text for part in said) for text in shown(page.caption)), shown(page.caption)
        specs = [c.proto.spec for c in page.get("plotly_chart")]
        curves = [s for s in specs if "item-class answers right vs labels" in s or "macro AUC vs labels" in s]
        whose = "project" if source.startswith("project") else "session"
        assert len(curves) == 2 and all(f"The {whose}'s own order" in s for s in curves), curves
        (table,) = [df.value for df in page.dataframe if "final accuracy" in df.value.columns]
        assert len(table) == 3 and any("(reference)" in h for h in table["heuristic"])
        (per_class,) = [df.value for df in page.dataframe if "F1" in df.value.columns]
        assert set(per_class["heuristic"]) == {
            "Random",
            "Least sure on any class (reference)",
            f"The {whose}'s own order",
        }
        assert "=SUM(A1)" in set(per_class["class"]) and "(macro)" in set(per_class["class"])

    drawn_now_and_when_reloaded(at, user, newest.id, drawn)
    return newest


def test_the_compare_page_replays_a_multi_label_session_and_reloads_it(db_url):
    from app.services.replay import multi_label_caveat

    svc = MarginLab.from_url(db_url)
    session_id = _multi_label_session(svc)
    newest = replay_sets_on_the_page(
        svc,
        f"session:{session_id}",
        "ada",
        caveat=multi_label_caveat(0.3),
        said=(f"session {session_id}: 24 labelled items", "items with each class"),
    )
    assert newest.config["replay"]["multi_label"] is True


def test_the_compare_page_replays_a_multi_label_team_project_and_reloads_it(db_url):
    """The owner replays a multi-label team project on the Compare page: drawn with the project's caveat
    (how an unsettled disagreement counts) and drawn again when reloaded."""
    from app.services.replay import multi_label_caveat
    from core.replay import TEAM_SET_CAVEAT

    svc, project_id, *_ = _multi_label_project(db_url)
    caveat = multi_label_caveat(0.3, team=True)
    assert TEAM_SET_CAVEAT in caveat and "items the project labelled" in caveat
    said = (f"project {project_id}: 18 labelled items", "1 item whose sets differ and were not settled")
    newest = replay_sets_on_the_page(svc, f"project:{project_id}", "olga", caveat=caveat, said=said)
    assert newest.config["replay"]["unsettled"] == 1 and newest.config["replay"]["team"] is True


def test_the_tidy_rows_of_a_replay_are_written_with_class_names_escaped_against_formulas():
    """A set of one class whose name a spreadsheet would run is written as text; numbers stay numbers."""
    from types import SimpleNamespace

    from app.services.replay import replay_rows_csv

    rows = pd.DataFrame({"strategy": ["random", "random"], "n_labels": [1, 2], "label": ["=SUM(A1)", "a; =SUM(A1)"]})
    written = replay_rows_csv(SimpleNamespace(rows=rows)).decode().splitlines()
    assert written == ["strategy,n_labels,label", "random,1,'=SUM(A1)", "random,2,a; =SUM(A1)"]
