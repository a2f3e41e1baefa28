"""What the Label page reads off a labelling session: counts, history, ROC curve, the model's state
(the item itself: ``app.services.display``)."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pandas as pd

from app.services.common import ServiceError, positive_meaning
from app.services.formatting import count
from app.services.records import RunState
from core.metrics import roc_auc, roc_curve


class RunReadouts:
    """What a run's read-outs are: ``LabellingRun.readouts``, reading the ``run``'s answers and model
    (``RunState``); each is kept until the run's ``version`` changes."""

    def __init__(self, run: RunState):
        self.run = run
        self._cache: dict[str, tuple[int, Any]] = {}
        self._asked_metrics: list[tuple[float, float]] = []  # (AUC, accuracy) per label: see _history

    @property
    def n_labels(self) -> int:
        return sum(1 for a in self.run.answers if a.value != 0)

    @property
    def n_skips(self) -> int:
        return sum(1 for a in self.run.answers if a.value == 0)

    @property
    def n_positive(self) -> int:
        return sum(1 for a in self.run.answers if a.value == 1)

    @property
    def n_seen(self) -> int | None:
        """Items the stream walked past (a stream heuristic: ramp-region), or None for other heuristics."""
        if self.run.loop is None or not self.run.loop.strategy_entry.streams:
            return None
        return int(self.run.loop.seen)

    @property
    def looking_for(self) -> str | None:
        """What a Positive answer means: the analyst's own words when the session has them, else the
        dataset's positive class when it has one (None: neither)."""
        return positive_meaning(self.run.find, self.run.class_names)

    @property
    def sparse_model(self) -> bool:
        """Whether counts of support vectors and of items inside the margin tell something of this session's
        model (not for the review model: every label is a support vector, every item inside the margin)."""
        from core.presets import is_sparse

        return is_sparse(self.run.info.solver, self.run.solver_params)

    @property
    def hyper_words(self) -> str | None:
        """Which C and gamma the model holds, chosen from the labels when, in plain words (None: set by hand)."""
        from core.solvers.auto_hyper import describe_choices

        loop = self.run.loop
        return None if loop is None else describe_choices(loop.solver)

    @property
    def hyper_words_for_screeners(self) -> str | None:
        """When the model's settings are chosen from the labels, without their values (None: set by hand)."""
        from core.solvers.auto_hyper import describe_choices_for_screeners

        loop = self.run.loop
        return None if loop is None else describe_choices_for_screeners(loop.solver)

    @property
    def support_vector_words(self) -> str | None:
        """The model's support vectors now, for Advanced: "57 support vectors (12 at the bound C) after 40
        labels" (None before the first label)."""
        history = self.history()
        if history.empty or "n_sv" not in history:
            return None
        last = history.iloc[-1]
        n_sv, n_bound = int(last["n_sv"]), last.get("n_bound")
        at_bound = "" if n_bound is None or pd.isna(n_bound) else f" ({int(n_bound)} at the bound C)"
        return f"{n_sv} support vectors{at_bound} after {count(int(last['n_labels']), 'label')}"

    @property
    def has_evaluation(self) -> bool:
        return len(self.run.eval_items) > 0

    def cached(self, name: str, compute):
        with self.run.lock:
            hit = self._cache.get(name)
            if hit is not None and hit[0] == self.run.version:
                return hit[1]
            value = compute()
            self._cache[name] = (self.run.version, value)
            return value

    def forget_metrics(self, after: int = 0) -> None:
        """Drop the AUCs of the scores when asked kept for the labels after the first ``after`` (an undo
        took those labels back; a correction or a rebuild: every one)."""
        del self._asked_metrics[after:]

    def history(self) -> pd.DataFrame:
        """One row per label: n_labels, score, n_sv, n_bound, n_in_margin, auc, update/query ms, seen."""
        return self.cached("history", self._history)

    def _history(self) -> pd.DataFrame:
        if self.run.loop is None:  # no model (see LabellingRun.problem): no history to draw
            return pd.DataFrame()
        frame = self.run.loop.history_frame()  # a new frame on every call: ours to change
        if len(frame) and not self.has_evaluation:
            # no true labels: the AUC of the scores given when asked, over the labels so far
            # (one entry per label, kept: answers are only appended, or popped by undo)
            metrics = self._asked_metrics
            if len(metrics) < len(frame):
                upto = [k + 1 for k, a in enumerate(self.run.answers) if a.value != 0]
                metrics.extend(self._metrics(upto=u) for u in upto[len(metrics) :])
            frame["auc"] = [m[0] for m in metrics[: len(frame)]]
            frame["accuracy"] = [m[1] for m in metrics[: len(frame)]]
        return frame

    def evaluation_scores(self) -> np.ndarray:
        """f(x) of the current model for every evaluation item (kept by the loop)."""
        scores = None if self.run.loop is None else self.run.loop.evaluation_scores()
        return np.zeros(0) if scores is None else scores

    def _asked_scores(self, upto: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(labels, scores the model gave the items when it asked) of the first ``upto`` answers."""
        pairs = [(a.value, a.score) for a in self.run.answers[:upto] if a.value != 0 and a.score is not None]
        return (np.array([p[0] for p in pairs], dtype=float), np.array([p[1] for p in pairs], dtype=float))

    def _metrics(self, upto: int) -> tuple[float, float]:
        """(AUC, accuracy) after the first ``upto`` answers without an evaluation split: the AUC
        of the scores given when asked over the labels so far (accuracy undefined then).
        With an evaluation split the loop records both after every label."""
        y, scores = self._asked_scores(upto)
        if len(y) < 2 or len(np.unique(y)) < 2:
            return float("nan"), float("nan")
        return float(roc_auc(y, scores)), float("nan")

    def roc(self) -> tuple[np.ndarray, np.ndarray, float, str] | None:
        """(fpr, tpr, auc, title) of the live ROC curve, or None while one class is missing.

        On the evaluation split when the dataset has true labels; otherwise from the
        scores the model gave each labelled item when it asked about it.
        """
        return self.cached("roc", self._roc)

    def _roc(self) -> tuple[np.ndarray, np.ndarray, float, str] | None:
        if self.run.loop is None:
            return None
        if self.has_evaluation:
            y = self.run.y_true[self.run.eval_items]
            scores = self.evaluation_scores()
            title = f"ROC · {len(y)} held-out items"
        else:
            y, scores = self._asked_scores()
            title = f"ROC · scores when asked<br>({len(y)} labels)"  # (two short lines on a narrow chart)
        if len(y) < 2 or len(np.unique(y)) < 2 or not np.all(np.isfinite(scores)):
            return None
        fpr, tpr, _ = roc_curve(y, scores)
        return np.asarray(fpr), np.asarray(tpr), float(roc_auc(y, scores)), title

    def model_state(self) -> bytes:
        """The session's model as an .npz file: solver arrays + JSON meta (no pickle)."""
        if self.run.loop is None:
            raise ServiceError(self.run.problem or f"Session {self.run.session_id} has no model.")
        arrays, meta = self.run.loop.solver.to_state(include_data=True)
        meta = dict(
            meta,
            session_id=self.run.session_id,
            dataset_id=self.run.info.dataset_id,
            dataset=self.run.dataset.name,
            strategy=self.run.info.strategy,
            n_events=len(self.run.answers),
            n_labels=self.n_labels,
            pool_items="array pool_items: dataset row of each store row",
            scaling=self.run.scaling,
        )
        buffer = io.BytesIO()
        np.savez(buffer, __meta__=np.array(json.dumps(meta)), pool_items=self.run.pool_items, **arrays)
        return buffer.getvalue()
