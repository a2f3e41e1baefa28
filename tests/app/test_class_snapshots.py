"""Model snapshots of sessions and team projects with named classes (``app.services.class_snapshots``): a
resume from the latest snapshot plus the answers after it has the same model (coefficients, bias, kept
scores), the same answers and the same next item, bit for bit, as learning every answer again; after an undo
below a snapshot; a snapshot that cannot be read is passed over.  Each resume is a new service on the same
database, as after a restart."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import update

from app.services import SNAPSHOT_EVERY, MarginLab
from core.multiclass import MultiLabel, OneVsRest
from storage import repository as repo
from storage import teams
from storage.models import ModelSnapshot

CLASSES = ("cat", "dog", "fox", "owl")
SOLVERS = ["incremental", "active-set", "lasvm"]


@pytest.fixture
def lab(tmp_path):
    url = f"sqlite:///{tmp_path / 'classes.db'}"
    svc = MarginLab.from_url(url)
    rng = np.random.default_rng(2)
    group = rng.integers(0, 4, 160)
    centres = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0], [3.0, 3.0]])
    X = np.hstack([centres[group] + rng.normal(0, 1.0, (160, 2)), rng.normal(0, 0.5, (160, 3))])
    dataset_id = repo.import_dataset(svc.engine, name="groups", X=X, feature_names=list("abcde"))
    return url, svc, dataset_id, group


def truth(run, group, item):
    k = int(group[item])
    return [CLASSES[k]] + ([CLASSES[(k + 1) % 4]] if item % 3 == 0 else []) if run.multi_label else CLASSES[k]


def answer(run, group, n):
    for j in range(n):
        item = run.shown.item_index
        assert run.answer(None if j % 13 == 12 else truth(run, group, item), item_index=item).ok


def reopen(url, session_id, use_snapshots=True):
    svc = MarginLab.from_url(url)
    svc.use_snapshots = use_snapshots
    return svc.open_session(session_id)


def assert_same(a, b):
    """The same model, answers and next item, bit for bit."""
    assert [(x.item_index, x.answer_class, x.answer_classes, x.label_id) for x in a.answers] == [
        (x.item_index, x.answer_class, x.answer_classes, x.label_id) for x in b.answers
    ]
    assert [x.scores for x in a.answers] == [x.scores for x in b.answers]  # the scores each item was asked with
    np.testing.assert_array_equal(a.model.decision_function(), b.model.decision_function())
    for ma, mb in zip(a.model.machines, b.model.machines, strict=True):
        for xa, xb in zip(ma.coefficients(), mb.coefficients(), strict=True):
            np.testing.assert_array_equal(xa, xb)
    assert all(m.cache is a.model.cache for m in a.model.machines)  # one kernel cache for the K machines
    assert (a.shown.item_index, a.shown.strategy, a.shown.reason, a.shown.scores) == (
        b.shown.item_index,
        b.shown.strategy,
        b.shown.reason,
        b.shown.scores,
    )
    np.testing.assert_array_equal(a.history().to_numpy(), b.history().to_numpy())


@pytest.mark.parametrize("multi_label", [False, True], ids=["single", "multi-label"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_a_session_resumes_from_its_snapshot_as_if_it_learned_every_answer_again(lab, solver, multi_label):
    url, svc, dataset_id, group = lab
    strategy = "least-sure-class" if multi_label else "smallest-margin"
    run = svc.start_session(
        dataset_id=dataset_id,
        annotator="ada",
        strategy=strategy,
        classes=", ".join(CLASSES),
        multi_label=multi_label,
        solver=solver,
        seed=4,
    )
    answer(run, group, 2 * SNAPSHOT_EVERY + 7)
    assert repo.latest_snapshot(svc.engine, run.session_id).n_events == 2 * SNAPSHOT_EVERY == run.snapshot_events
    assert run.snapshot_is_behind
    resumed, relearned = reopen(url, run.session_id), reopen(url, run.session_id, use_snapshots=False)
    assert resumed.resumed_from == 2 * SNAPSHOT_EVERY and relearned.resumed_from is None
    assert_same(resumed, relearned)
    assert_same(resumed, run)
    # undo back below the snapshot: the next resume starts from an older snapshot, and is still the same
    for _ in range(9):
        assert resumed.undo().ok
    assert len(resumed.answers) < 2 * SNAPSHOT_EVERY
    restarted = MarginLab.from_url(url)
    again, relearned = restarted.open_session(run.session_id), reopen(url, run.session_id, use_snapshots=False)
    assert again.resumed_from == SNAPSHOT_EVERY, again.resume_note
    assert_same(again, relearned)
    # labelling goes on alike
    answer(again, group, 5)
    answer(relearned, group, 0)
    relearned = reopen(url, run.session_id, use_snapshots=False)
    assert_same(reopen(url, run.session_id), relearned)
    # a server stopping stores the session behind its snapshot; the next start learns nothing again
    assert again.snapshot_is_behind
    assert restarted.save_snapshots() == 1 and not again.snapshot_is_behind
    assert restarted.save_snapshots() == 0  # nothing new: nothing stored
    latest = reopen(url, run.session_id)
    assert latest.resumed_from == len(latest.answers)
    assert_same(latest, again)


def test_a_change_in_the_history_stores_a_snapshot_of_the_model_that_learned_it(lab):
    url, svc, dataset_id, group = lab
    run = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy="smallest-margin", classes=", ".join(CLASSES), solver="lasvm"
    )
    answer(run, group, SNAPSHOT_EVERY + 3)
    first = run.answers[2]
    assert run.change_label(first.label_id, CLASSES[(first.answer_class + 1) % 4]).ok
    assert not run.snapshot_is_behind and run.snapshot_events == len(run.answers)
    resumed, relearned = reopen(url, run.session_id), reopen(url, run.session_id, use_snapshots=False)
    assert resumed.resumed_from == len(run.answers)
    assert_same(resumed, relearned)
    assert_same(resumed, run)


@pytest.mark.parametrize("how", ["not an archive", "does not fit"])
def test_a_snapshot_that_cannot_be_read_is_passed_over_and_every_answer_learned(lab, how):
    url, svc, dataset_id, group = lab
    run = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy="least-certain-class", classes=", ".join(CLASSES)
    )
    answer(run, group, SNAPSHOT_EVERY + 4)
    assert run.close().ok
    n, arrays, meta = repo.latest_snapshot(svc.engine, run.session_id)
    assert n == len(run.answers)
    if how == "not an archive":
        with svc.engine.begin() as connection:
            connection.execute(update(ModelSnapshot).where(ModelSnapshot.n_events == n).values(arrays=b"not a zip"))
        expected = SNAPSHOT_EVERY  # the older snapshot serves
    else:  # the model's arrays cut short: the state does not fit its machines
        cut = {k: (v[:-1] if k.endswith("s_alpha") else v) for k, v in arrays.items()}
        cut["model.labels"] = cut["model.labels"][:-1]
        repo.save_snapshot(svc.engine, run.session_id, n_events=n, arrays=cut, meta=meta)
        expected = None
    resumed, relearned = reopen(url, run.session_id), reopen(url, run.session_id, use_snapshots=False)
    assert resumed.resumed_from == expected, resumed.resume_note
    if expected is None:
        assert "could not be read" in resumed.resume_note
    assert_same(resumed, relearned)


# --------------------------------------------------------------------------- team projects


def class_project(svc, dataset_id, solver, multi_label=False):
    from tests.storage.test_teams import owner

    me = owner(svc)
    for name in ("ann", "bob"):
        if teams.get_account(svc.engine, name) is None:
            svc.create_account(me, name=name, password="a long enough password")
    return svc.create_project(
        me,
        name="classes",
        dataset_id=dataset_id,
        strategy="least-sure-class" if multi_label else "smallest-margin",
        solver=solver,
        classes=", ".join(CLASSES),
        multi_label=multi_label,
        members=["ann", "bob"],
        seed=3,
        labels_per_item=2,
        overlap_share=0.2,
    )


def answer_in_turn(run, group, turns):
    for turn in range(turns):
        name = ("ann", "bob")[turn % 2]
        shown = run.next_item(name)
        k = int(group[shown.item_index])
        # (a multi-label project: the item's class, with the next one every third item)
        given = [CLASSES[k], CLASSES[(k + 1) % len(CLASSES)]][: 1 + (shown.item_index % 3 == 0)]
        answer = given if run.multi_label else CLASSES[k]
        assert run.answer(name, shown.item_index, None if turn % 11 == 10 else answer, shown).ok


def assert_same_project(a, b):
    a.sync()
    b.sync()
    assert list(a.model_labels.items()) == list(b.model_labels.items())
    np.testing.assert_array_equal(a.model.decision_function(), b.model.decision_function())
    for ma, mb in zip(a.model.machines, b.model.machines, strict=True):
        for xa, xb in zip(ma.coefficients(), mb.coefficients(), strict=True):
            np.testing.assert_array_equal(xa, xb)
    assert all(m.cache is a.model.cache for m in a.model.machines)
    # the owner's charts: every learned item's scores just before it was learned, those a snapshot covers too
    pd.testing.assert_frame_equal(a.history(), b.history())
    excluded = set(teams.reserved_items(a.engine, a.project_id))
    got, expected = a._candidate(set(excluded)), b._candidate(set(excluded))
    assert (got[0], got[1]) == (expected[0], expected[1])


def reopen_project(url, project_id, use_snapshots=True):
    svc = MarginLab.from_url(url)
    svc.use_snapshots = use_snapshots
    run = svc.open_project(project_id)
    run.sync()
    return run


@pytest.mark.parametrize("multi_label", [False, True], ids=["single", "multi-label"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_a_class_project_reopens_from_its_snapshot_as_if_it_learned_every_answer_again(lab, solver, multi_label):
    url, svc, dataset_id, group = lab
    project_id = class_project(svc, dataset_id, solver, multi_label)
    run = svc.open_project(project_id)
    assert run.multi_label is multi_label and isinstance(run.model, MultiLabel if multi_label else OneVsRest)
    answer_in_turn(run, group, 40)
    stored = teams.latest_project_snapshot(svc.engine, project_id)
    assert stored is not None and len(stored.meta["project"]["model_labels"]) >= SNAPSHOT_EVERY
    resumed, relearned = reopen_project(url, project_id), reopen_project(url, project_id, use_snapshots=False)
    assert resumed.resume_note.startswith("resumed from the snapshot after"), resumed.resume_note
    assert relearned.resume_note == "no snapshot: every answer learned"
    assert_same_project(resumed, relearned)
    assert_same_project(run, relearned)
    # an undo of an answer the snapshot learned: the snapshot is passed over, every answer learned again
    learned = next(iter(run.model_labels))
    first = next(a for a in teams.project_answers(svc.engine, project_id)[1] if a.item_index == learned)
    assert teams.undo_answer(svc.engine, project_id, annotator=first.annotator, label_id=first.label_id) is None
    last = max(teams.project_answers(svc.engine, project_id)[1], key=lambda a: a.label_id)
    assert teams.undo_answer(svc.engine, project_id, annotator=last.annotator, label_id=last.label_id) is not None
    resumed, relearned = reopen_project(url, project_id), reopen_project(url, project_id, use_snapshots=False)
    assert_same_project(resumed, relearned)
    assert_same_project(run, relearned)  # (the running process learned every answer again at the undo)
    # a stopping server stores the project behind its snapshot; a corrupt one is passed over
    assert run.snapshot_is_behind and svc.save_project_snapshots() == 1 and not run.snapshot_is_behind
    resumed = reopen_project(url, project_id)
    assert resumed.resume_note == f"resumed from the snapshot after {len(run.model_labels)} labels"
    assert_same_project(resumed, run)
    bad = teams.latest_project_snapshot(svc.engine, project_id)
    arrays = dict(bad.arrays, **{"model.labels": bad.arrays["model.labels"][:-1]})
    teams.save_project_snapshot(
        svc.engine, project_id, revision=bad.revision, edits=bad.edits, arrays=arrays, meta=bad.meta
    )
    resumed = reopen_project(url, project_id)
    assert "could not be read" in resumed.resume_note
    assert_same_project(resumed, relearned)
