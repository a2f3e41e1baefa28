"""Model snapshots of sessions and team projects with named classes (``ClassesRun``, ``MultiLabelRun``,
``ClassProjectRun``): resume from the latest snapshot plus the answers after it, as a two-class run does
(``app.services.snapshots``: the same cadence ``SNAPSHOT_EVERY``, the same storage, no pickle).

A snapshot is the K machines of ``core.multiclass`` as plain arrays (``OneVsRest.to_state``, under
``model.``) with what the run needs besides: the answers it covers as (item, answer) pairs (the class's
place, a multi-label answer's bits, -1 a skip), their label ids, the scores each answer was asked with and
the stability rule's checkpoints; the meta names the session's or project's configuration.  A snapshot that
cannot be read, or does not cover exactly the first stored answers with this configuration, is passed over
and every answer learned again.  The model is restored into one made afresh over the pool, so its K machines
keep sharing one store and kernel cache, and it continues bit for bit as the saved one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy.exc import SQLAlchemyError

from app.services.common import database_trouble
from core.multiclass import OneVsRest
from storage import repository as repo
from storage import teams
from storage.errors import StorageError

#: format of the run's part of a named-classes snapshot's meta
CLASS_SNAPSHOT_FORMAT = 1
#: the prefix of the model's arrays in a snapshot
MODEL = "model."

logger = logging.getLogger(__name__)


def answer_code(answer: Any) -> int:
    """An answer as one number: -1 a skip, a class's place, or a set of classes as bits (bit k: class k)."""
    if answer is None:
        return -1
    if isinstance(answer, (tuple, list, set, frozenset)):
        return sum(1 << int(k) for k in answer)
    return int(answer)


def _plain(value: Any) -> Any:
    """``value`` as it reads back from JSON (what a stored meta is compared with)."""
    return json.loads(json.dumps(value))


def model_arrays(model: OneVsRest) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The model's state, its arrays under ``model.``."""
    arrays, meta = model.to_state()
    return {MODEL + name: value for name, value in arrays.items()}, meta


def restore_model(new_model, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> OneVsRest:
    """A model made afresh (``new_model()``) with the saved state put into it (ValueError if it does not fit)."""
    model = new_model()
    model.load_state({k[len(MODEL) :]: v for k, v in arrays.items() if k.startswith(MODEL)}, meta)
    return model


class SessionSnapshots:
    """The model snapshots of a session with named classes: ``ClassesRun.snapshots``."""

    def __init__(self, run: Any):
        self.run = run
        #: label ids of the answers the last snapshot this run saved or resumed from covers (None: none, or
        #: not known since a correction)
        self.label_ids: list[int] | None = None
        #: why the last snapshot could not be stored (None when it was)
        self.error: str | None = None

    def config(self) -> dict[str, Any]:
        run = self.run
        return _plain(
            {
                "classes": list(run.classes),
                "multi_label": run.multi_label,
                "strategy": run.strategy,
                "target": run.target,
                "solver": run.info.solver,
                "solver_params": run.settings.solver_params() if run.settings is not None else None,
                "seed": run.seed,
                "scaling": run.scaling,
                "n_items": len(run.pool_items),
            }
        )

    def restore(self, events: Sequence[Any]) -> int | None:
        """Put the latest snapshot into the run (its model, its first answers, the stopping checkpoints) when
        it covers exactly the first stored ``events``; returns how many it covers, or None (``resume_note``
        says why) when every answer is to be learned."""
        run = self.run
        if not run.use_snapshots:
            run.resume_note = "snapshots are not used: every answer learned"
            return None
        try:
            snapshot = repo.latest_snapshot(run.engine, run.session_id)
            if snapshot is None:
                run.resume_note = "no snapshot: every answer learned"
                return None
            problem = self._restore(snapshot, events)
        except Exception as error:  # whatever is wrong with it, the stored answers rebuild the model
            problem = f"the snapshot could not be read ({type(error).__name__}: {error})"
        if problem is not None:
            run.resume_note = f"{problem}: every answer learned"
            return None
        n = len(run.answers)
        self.label_ids = [a.label_id for a in run.answers]
        run.resume_note = f"resumed from the snapshot after {n} answers"
        return n

    def _restore(self, snapshot: Any, events: Sequence[Any]) -> str | None:
        run = self.run
        n, arrays, meta = snapshot
        mine = meta.get("service", {})
        covered = np.asarray(arrays.get("events", np.zeros((0, 2))), dtype=np.int64).reshape(-1, 2)
        first = events[:n]
        if mine.get("format") != CLASS_SNAPSHOT_FORMAT:
            return "unknown snapshot format"
        if n > len(events) or len(covered) != n:
            return f"the snapshot covers {n} answers, the session has {len(events)}"
        if mine.get("label_ids") != [e.label_id for e in first]:
            return "the snapshot's label ids are not the session's first answers"
        if covered.tolist() != [[e.item_index, answer_code(run._stored(e))] for e in first]:
            return "the snapshot's items or answers are not the session's"
        if mine.get("config") != self.config():
            return "the snapshot is for another configuration"
        asked = np.asarray(arrays["asked"], dtype=np.float64).reshape(n, len(run.classes))
        run.model = restore_model(run._new_model, arrays, meta["model"])
        run.answers = [
            run._kept(e.item_index, run._stored(e), e.label_id, e.strategy, tuple(float(f) for f in row))
            for e, row in zip(first, asked, strict=True)
        ]
        if run.stopping is not None:
            run.stopping.restore(arrays, sum(a.answered for a in run.answers))
        return None

    def save(self) -> int | None:
        """Store the run's model as a snapshot covering its answers so far; returns its id, or None (no model,
        or it could not be stored: ``error`` says why; the next resume learns more answers again)."""
        run = self.run
        with run.lock:
            if run.model is None:
                return None
            arrays, model_meta = model_arrays(run.model)
            arrays["events"] = np.array(
                [[a.item_index, answer_code(run._answer_of(a))] for a in run.answers], dtype=np.int64
            ).reshape(-1, 2)
            arrays["asked"] = np.array([a.scores for a in run.answers], dtype=np.float64).reshape(-1, len(run.classes))
            if run.stopping is not None:
                arrays.update(run.stopping.arrays())
            label_ids = [a.label_id for a in run.answers]
            meta = {
                "model": model_meta,
                "service": {"format": CLASS_SNAPSHOT_FORMAT, "label_ids": label_ids, "config": self.config()},
            }
            try:
                snapshot_id = repo.save_snapshot(
                    run.engine, run.session_id, n_events=len(label_ids), arrays=arrays, meta=meta
                )
            except (StorageError, SQLAlchemyError, OSError) as error:  # e.g. the disk is full
                logger.warning("session %s: the model snapshot was not stored: %s", run.session_id, error)
                self.error = database_trouble(error)
                return None
            self.error, self.label_ids = None, label_ids
            return snapshot_id

    @property
    def is_behind(self) -> bool:
        """Whether the run has answers (or changed ones) that its latest snapshot does not cover."""
        run = self.run
        return run.model is not None and bool(run.answers) and [a.label_id for a in run.answers] != self.label_ids


def rated_arrays(rated: Sequence[tuple[int, np.ndarray, np.ndarray]], n_classes: int) -> dict[str, np.ndarray]:
    """A class project's ``rated`` (items learned before, membership row, scores just before learning) as
    arrays of a snapshot."""
    return {
        "rated.at": np.array([at for at, _, _ in rated], dtype=np.int64),
        "rated.member": np.array([m for _, m, _ in rated], dtype=bool).reshape(-1, n_classes),
        "rated.scores": np.array([f for _, _, f in rated], dtype=np.float64).reshape(-1, n_classes),
    }


def rated_of(arrays: dict[str, np.ndarray], n_classes: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """``rated`` back from a snapshot's arrays (a snapshot without them fits no more: KeyError)."""
    at = np.asarray(arrays["rated.at"], dtype=np.int64)
    member = np.asarray(arrays["rated.member"], dtype=bool).reshape(len(at), n_classes)
    scores = np.asarray(arrays["rated.scores"], dtype=np.float64).reshape(len(at), n_classes)
    return [(int(a), m.copy(), f.copy()) for a, m, f in zip(at, member, scores, strict=True)]


class ProjectSnapshots:
    """The model snapshots of a team project with named classes (``ClassProjectRun.snapshots``): the model
    learns each item's final class in a fixed order (``model_labels``, an ordered item -> answer), so a
    snapshot fits when the items and answers it learned are the first of those the project has now."""

    def __init__(self, run: Any):
        self.run = run

    def config(self) -> dict[str, Any]:
        run = self.run
        return _plain(
            {
                "classes": list(run.classes),
                "model": type(run.model).__name__,
                "strategy": run.info.strategy,
                "solver": run.info.solver,
                "solver_params": run.solver_params,
                "strategy_params": run.strategy_params,
                "seed": run.info.seed,
                "n_items": int(run.X.shape[0]),
            }
        )

    def latest(self) -> Any:
        """The latest stored snapshot made with this configuration (read once per opening or relearning), or
        None (``resume_note`` says why)."""
        run = self.run
        if not run.use_snapshots:
            return None
        try:
            snapshot = teams.latest_project_snapshot(run.engine, run.project_id)
        except (StorageError, SQLAlchemyError) as error:
            run.resume_note = f"the snapshots could not be read ({error}): every answer learned"
            return None
        if snapshot is None:
            run.resume_note = "no snapshot: every answer learned"
            return None
        mine = snapshot.meta.get("project", {})
        if mine.get("format") != CLASS_SNAPSHOT_FORMAT:
            run.resume_note = "unknown snapshot format: every answer learned"
        elif mine.get("config") != self.config():
            run.resume_note = "the snapshot is for another configuration: every answer learned"
        else:
            return snapshot
        return None

    def restore(self, snapshot: Any, wanted: list[tuple[int, Any]]) -> int:
        """Put ``snapshot`` into the run when the items and answers it learned are the first of ``wanted`` (the
        (item, answer) pairs the model is to learn, in order); returns how many it covers (0: it does not fit,
        or cannot be read, and the run's model is left as it is)."""
        run = self.run
        try:
            learned = [(int(i), _plain(k)) for i, k in snapshot.meta["project"]["model_labels"]]
            if learned != [(int(i), _plain(k)) for i, k in wanted[: len(learned)]]:
                run.resume_note = "answers were undone or settled before the snapshot: every answer learned"
                return 0
            model = restore_model(run._new_model, snapshot.arrays, snapshot.meta["model"])
            rated = rated_of(snapshot.arrays, len(run.classes))
            run.model = model
        except Exception as error:  # whatever is wrong with it, the stored answers rebuild the model
            run.resume_note = f"the snapshot could not be read ({type(error).__name__}: {error}): every answer learned"
            return 0
        for item, k in wanted[: len(learned)]:
            run.model_labels[item] = k
        run.rated = rated  # (the owner's charts: the scores each learned item had just before it was learned)
        run.snapshot_seen = (snapshot.revision, snapshot.edits)
        run.resume_note = f"resumed from the snapshot after {len(learned)} labels"
        return len(learned)

    def save(self) -> int | None:
        """Store the project's model as it is (the project at ``run.seen``); returns the snapshot id, or None
        (nothing to store, or it could not be stored: the next process learns more answers again)."""
        run = self.run
        with run.lock:
            if run.seen[0] < 0 or run.model is None:
                return None
            arrays, model_meta = model_arrays(run.model)
            arrays.update(rated_arrays(run.rated, len(run.classes)))
            meta = {
                "model": model_meta,
                "project": {
                    "format": CLASS_SNAPSHOT_FORMAT,
                    "config": self.config(),
                    "model_labels": [[i, k] for i, k in run.model_labels.items()],
                },
            }
            return store_project_snapshot(run, arrays, meta)


def store_project_snapshot(run: Any, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> int | None:
    """Store a team project's model snapshot (``arrays``, ``meta``) as of ``run.seen`` and mark the run as
    covered by it; the snapshot's id, or None when it could not be stored (logged; the next process learns
    more answers again).  The caller holds ``run.lock``; every kind of project stores its snapshot here."""
    try:
        snapshot_id = teams.save_project_snapshot(
            run.engine, run.project_id, revision=run.seen[0], edits=run.seen[1], arrays=arrays, meta=meta
        )
    except (StorageError, SQLAlchemyError, OSError) as error:  # e.g. the disk is full
        logger.warning("project %s: the model snapshot was not stored: %s", run.project_id, error)
        return None
    run.snapshot_seen = run.seen
    run.learned_since_snapshot = 0
    return snapshot_id


__all__ = ["CLASS_SNAPSHOT_FORMAT", "ProjectSnapshots", "SessionSnapshots", "answer_code", "store_project_snapshot"]
