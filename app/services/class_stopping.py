"""Stopping for a session with named classes on the class the analyst is looking for: the
two-class stopping part (``app.services.stopping.RunStopping``: the rules, the estimate of the positives still
unlabelled, the recall check and its draws) over the session read as that class against the rest.  The class
is the stopping settings' ``class`` (chosen at the start or later on the Label page, with any heuristic), else
the class a "Most likely <class>" session looks for (``stop_class``).

``TargetClassView`` is that reading of a ``ClassesRun``: an answer of the target class is a positive (+1),
an answer of any other class a negative (-1), a skip a skip (0) (a ``MultiLabelRun``'s: a set that holds the
class is a positive, any other set, "none of these" too, a negative); the model's score is the target class's
one-vs-rest machine's (``_TargetLoop``).  The heuristic that asked each answer is read as its two-class kind,
which decides whether the model-based estimate is given (``core.stopping.estimate_remaining``): "Most likely
<class>" for the class stopped on asks the top of that machine's ranking first, as the two-class
``largest-positive`` does (under which the estimate runs high: ``core.stopping.TOP_FIRST_HEURISTICS``), so it
is read as that; the others (least sure between two classes, least sure class, random, and "Most likely" for
another class) are not top-first for the class stopped on, as the two-class near-boundary and random
heuristics are not, and keep their own names (``asked_as``).  Everything else (the session, its lock, seed
and pool, the settings' store, ``ask``) is the run's own, so the stopping settings, the checks' starts and the
draws' provenance are stored as a two-class session's are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from app.services.readouts import RunReadouts
from app.services.records import Answer
from app.services.stopping import RunStopping, stopping_settings
from core import stopping as rules

#: the K-class heuristic that asks about the most likely items of its class first
MOST_LIKELY = "target-class"


def stop_class(strategy: str, target: str | None, params: dict[str, Any] | None) -> str | None:
    """The class a session with named classes stops on: its stopping settings' ``class``, else the class a
    "Most likely <class>" session looks for (``target``), else None (no stopping)."""
    chosen = stopping_settings(params).get("class")
    return chosen if chosen is not None else target if strategy == MOST_LIKELY else None


def asked_as(strategy: str, asked_for: str | None, stopped_on: str) -> str:
    """The heuristic that asked an answer, as the two-class stopping code reads it (see the module docstring):
    "Most likely" for the class stopped on is the two-class top-first heuristic; the others keep their names."""
    return rules.TOP_FIRST_HEURISTICS[0] if strategy == MOST_LIKELY and asked_for == stopped_on else strategy


class _TargetLoop:
    """What ``RunStopping`` reads of a loop, for the target class's machine: its scores over the pool and
    which items are labelled (answered with a class) or skipped."""

    track_scores = True

    def __init__(self, run: Any, target: int):
        self.run, self.target = run, target

    @property
    def solver(self):
        return self.run.model.machines[self.target]

    def pool_scores(self) -> np.ndarray:
        return self.run.model.decision_function()[:, self.target]

    def _mask(self, skipped: bool) -> np.ndarray:
        mask = np.zeros(len(self.run.pool_items), dtype=bool)
        mask[[a.item_index for a in self.run.answers if a.answered != skipped]] = True
        return mask

    @property
    def labelled_mask(self) -> np.ndarray:
        return self._mask(skipped=False)

    @property
    def skipped_mask(self) -> np.ndarray:
        return self._mask(skipped=True)


class TargetClassView:
    """A ``ClassesRun`` read as its target class against the rest (see the module docstring); what
    ``RunStopping`` needs of a run (``app.services.records.RunState``'s part of it)."""

    def __init__(self, run: Any, target: int):
        self._run, self._target = run, target

    def __getattr__(self, name: str) -> Any:  # the session, lock, seed, pool, accounts, problem, tell, ask
        return getattr(self._run, name)

    @property
    def version(self) -> int:
        return self._run.version

    @version.setter
    def version(self, value: int) -> None:
        self._run.version = value

    def asked_words(self, strategy: str) -> str:
        """A heuristic as ``answers`` reads it, in words: the top-first one is "Most likely <the class>"."""
        if strategy == rules.TOP_FIRST_HEURISTICS[0]:
            return self._run.heuristic_words(MOST_LIKELY)
        return self._run.heuristic_words(strategy)

    @property
    def loop(self) -> _TargetLoop | None:
        return None if self._run.model is None else _TargetLoop(self._run, self._target)

    @property
    def answers(self) -> list[Answer]:
        t = self._target
        name, asked_for = self._run.classes[t], self._run.target
        return [
            Answer(
                item_index=a.item_index,
                value=0 if not a.answered else 1 if a.holds(t) else -1,
                score=a.scores[t] if a.scores else None,
                label_id=a.label_id,
                strategy=asked_as(a.strategy, asked_for, name),
            )
            for a in self._run.answers
        ]


def target_stopping(run: Any, target: int, params: dict[str, Any] | None) -> RunStopping:
    """The stopping part of ``run`` (a ``ClassesRun``) for class ``target`` against the rest, with the
    session's stored stopping settings (``params``: the session's)."""
    view = TargetClassView(run, target)
    stopping = RunStopping(
        view,  # type: ignore[arg-type]
        RunReadouts(view),  # type: ignore[arg-type]
        stopping_settings(params),
        heuristic_words=view.asked_words,
    )
    stopping.restore({}, 0)
    return stopping


__all__ = ["MOST_LIKELY", "TargetClassView", "asked_as", "stop_class", "target_stopping"]
