"""How an item is shown: ``ItemDisplay``, one for a labelling session and a team project alike.

A session's run (``LabellingRun``) and a project's run (``ProjectRun``) each hold one as
``run.item_display``, and the pages draw an item from it alone (``app.ui.item.item_view``): an image,
a molecule, a document with the terms behind its score, or a table row with the features that
matter most.  A new way of showing an item is written here once, for both.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from app.services.errors import service_boundary
from core.features import column_stds


@service_boundary
class ItemDisplay:
    """What showing an item of one dataset reads, for a run whose model may change as it learns.

    ``display``: the dataset's display (``repository.load_dataset_arrays``); ``meta``: its stored meta
    (feature blocks, molecule column); ``raw_rows[i]``: item i's stored values; ``scaled_rows[i]``: item
    i's features as the model sees them; ``pool_rows``: the rows the model learns from; ``model()``: the
    run's active-learning loop now (None while it has none); ``lock``: the run's lock, held while the
    model is read (another member's answer may be teaching it meanwhile).
    """

    def __init__(
        self,
        *,
        display: Any,
        meta: dict,
        feature_names: Sequence[str],
        raw_rows: Any,
        scaled_rows: Any,
        pool_rows: Any,
        model: Callable[[], Any],
        lock: threading.RLock,
    ):
        self.display, self.meta, self.feature_names = display, meta, list(feature_names)
        self.raw_rows, self.scaled_rows, self.pool_rows = raw_rows, scaled_rows, pool_rows
        self.model, self.lock = model, lock
        self._spread: np.ndarray | None = None  # the features' spread over the pool (see ``relevance``)

    # -- what the dataset holds
    def key(self, item: int) -> str | None:
        keys = self.display.item_keys
        return None if keys is None else keys[item]

    def text(self, item: int) -> str | None:
        """The item's text (a document, or a molecule's SMILES), or None when the dataset has none."""
        values = self.display.display_values
        return None if values is None else values[item]

    def image(self, item: int) -> np.ndarray | None:
        """The item as a grey image in [0, 1] when the dataset is displayed as images."""
        if self.display.kind != "image" or not self.display.image_shape:
            return None
        width, height = self.display.image_shape
        pixels = np.asarray(self.raw_rows[item], dtype=float)[: width * height]
        lo, hi = float(pixels.min()), float(pixels.max())
        pixels = (pixels - lo) / (hi - lo) if hi > lo else np.zeros_like(pixels)
        return pixels.reshape(height, width)

    def molecule_drawing(self, item: int):
        """The drawing of the item's molecule, or why there is none (``core.features.molecule_drawing``:
        made once, and only for a molecule small enough); None for an item that is not a molecule."""
        if not self.meta.get("molecule_column"):
            return None
        smiles = self.text(item)
        if not smiles:
            return None
        from core.features import molecule_drawing

        return molecule_drawing(smiles)

    def molecule_svg(self, item: int) -> str | None:
        """RDKit's SVG drawing of the item's molecule (None for other datasets, an unreadable SMILES or a
        molecule too large to draw)."""
        drawing = self.molecule_drawing(item)
        return None if drawing is None else drawing.svg

    def features(self, item: int) -> pd.DataFrame:
        """The item's stored feature values (a dense or sparse row) as a one-row frame (for the compact
        table view)."""
        row = self.raw_rows[item]
        row = row.toarray() if sp.issparse(row) else np.asarray(row)
        # (from a 2-D array: one block; a list of one row makes a column at a time, ms for a few dozen)
        return pd.DataFrame(row.reshape(1, -1), columns=self.feature_names)

    # -- what the model makes of it
    def relevance(self, item: int) -> np.ndarray | None:
        """How much each feature of the item matters to the current model's decision about it
        (``core.explain.feature_relevance``; spread: the features' standard deviations over the
        pool, as the model sees them), or None while there is no model to ask."""
        from core.explain import feature_relevance

        with self.lock:
            loop = self.model()
            if loop is None:
                return None
            spread = self._spread
            if spread is None:  # the pool does not change: once per run
                with np.errstate(all="ignore"):
                    pool = self.pool_rows
                    spread = column_stds(pool) if isinstance(pool, np.ndarray) else np.asarray(pool.std(axis=0)).ravel()
                spread = self._spread = np.where(np.isfinite(spread), spread, 1.0)
            with np.errstate(all="ignore"):
                relevance = feature_relevance(loop.solver, self.scaled_rows[item], spread=spread)
        # features too large for the arithmetic have no ranking to offer
        return relevance if relevance is not None and np.all(np.isfinite(relevance)) else None

    def term_contributions(self, item: int, k: int | None = 12) -> list[tuple[str, float]] | None:
        """The terms of an item that pushed its score most, as (term, w_t x_t), largest |w_t x_t| first
        (``k`` of them; None: all).  One entry per distinct term: columns kept as separate TF-IDF blocks
        name their terms "title:call" and "abstract:call"; these are the document's one word "call",
        with the two moves summed.

        Exact for a linear kernel on TF-IDF features: f(x) = sum_t w_t x_t + b with w = sum_i
        coef_i x_i over the support vectors, so the contributions of all terms add up to f(x) - b.
        The same for a polynomial kernel of degree 1 (the review model's <x, z> + 1): f(x) =
        gamma sum_t w_t x_t + coef0 sum_i coef_i, the second sum playing the bias.
        None when the kernel is not linear, the dataset has no TF-IDF block, or there is no model yet.
        """
        from core.features import linear_weights, term_contributions

        blocks = [b for b in self.meta.get("feature_blocks", []) if b.get("kind") == "tfidf"]
        with self.lock:
            loop = self.model()
            if not blocks or loop is None:
                return None
            kernel = loop.solver.kernel
            if kernel.name == "linear":
                scale = 1.0
            elif kernel.name == "poly" and int(kernel.degree) == 1:
                scale = float(kernel.gamma)
            else:
                return None
            support, coef, _ = loop.solver.coefficients()
            if len(support) == 0:
                return None
            store = loop.X  # the pool rows, as the solver sees them (scaled)
            w = scale * linear_weights(store, np.asarray(support, dtype=np.intp), np.asarray(coef, dtype=np.float64))
        row = self.scaled_rows[int(item)]
        mask = np.zeros(len(w), dtype=bool)
        for b in blocks:
            mask[int(b["start"]) : int(b["stop"])] = True
        every = term_contributions(row, np.where(mask, w, 0.0), self.feature_names, k=len(w))
        # (one block: its terms carry no column's name)
        prefixes = [f"{b.get('column')}:" for b in blocks] if len(blocks) > 1 else []
        merged: dict[str, float] = {}
        for name, value in every:
            term = next((name[len(p) :] for p in prefixes if name.startswith(p)), name)
            merged[term] = merged.get(term, 0.0) + value
        ranked = sorted(merged.items(), key=lambda tv: -abs(tv[1]))  # (stable: ties keep their order)
        return ranked if k is None else ranked[:k]

    def warm(self, item: int) -> None:
        """Compute now, and keep, what showing the item reads the first time: a table item's stored
        row (read from the database when the pool is scaled) and the features' spread.  For a warm
        start: the first page after a restart then finds them ready."""
        if self.image(item) is None and self.text(item) is None:  # (an image reads its row)
            self.features(item)
            self.relevance(item)


def most_relevant(relevance: np.ndarray | None, n_features: int) -> np.ndarray:
    """Feature indices, most relevant first (ties and no model: the dataset's order): ``core.explain``'s
    ranking, for the item's feature table."""
    from core.explain import most_relevant

    return most_relevant(relevance, n_features)
