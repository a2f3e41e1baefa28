"""What the Label page shows of a document or a molecule: the terms behind a score, the drawing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


class RunDocuments:
    """Mixed into ``LabellingRun``: readings that need the dataset's feature blocks (stored in its meta)."""

    dataset: Any
    loop: Any
    X: Any
    pool_of_item: Mapping[int, int]
    feature_names: list[str]

    def _text_blocks(self) -> list[dict]:
        return [b for b in self.dataset.meta.get("feature_blocks", []) if b.get("kind") == "tfidf"]

    @property
    def molecule_column(self) -> str | None:
        return self.dataset.meta.get("molecule_column")

    def term_contributions(self, item_index: int, k: int = 12) -> list[tuple[str, float]] | None:
        """The terms of an item that pushed its score most, as (term, w_t x_t), largest |w_t x_t| first.

        Exact for a linear kernel on TF-IDF features: f(x) = sum_t w_t x_t + b with w = sum_i
        coef_i x_i over the support vectors, so the contributions of all terms add up to f(x) - b.
        The same for a polynomial kernel of degree 1 (the review model's <x, z> + 1): f(x) =
        gamma sum_t w_t x_t + coef0 sum_i coef_i, the second sum playing the bias.
        None when the kernel is not linear, the dataset has no TF-IDF block, or there is no model yet.
        """
        from core.features import linear_weights, term_contributions

        blocks = self._text_blocks()
        if not blocks or self.loop is None:
            return None
        kernel = self.loop.solver.kernel
        if kernel.name == "linear":
            scale = 1.0
        elif kernel.name == "poly" and int(kernel.degree) == 1:
            scale = float(kernel.gamma)
        else:
            return None
        support, coef, _ = self.loop.solver.coefficients()
        if len(support) == 0:
            return None
        store = self.loop.X  # the pool rows, as the solver sees them (scaled)
        w = scale * linear_weights(store, np.asarray(support, dtype=np.intp), np.asarray(coef, dtype=np.float64))
        row = self.X[int(item_index)]
        mask = np.zeros(len(w), dtype=bool)
        for b in blocks:
            mask[int(b["start"]):int(b["stop"])] = True
        return term_contributions(row, np.where(mask, w, 0.0), self.feature_names, k=k)

    def item_drawing(self, item_index: int):
        """The drawing of the item's molecule, or why there is none (``core.features.molecule_drawing``:
        made once, and only for a molecule small enough); None for an item that is not a molecule."""
        if not self.molecule_column:
            return None
        text = self.item_text(item_index)
        if not text:
            return None
        from core.features import molecule_drawing

        return molecule_drawing(text)

    def item_svg(self, item_index: int) -> str | None:
        """RDKit's SVG drawing of the item's molecule (None for other datasets, an unreadable SMILES or a
        molecule too large to draw)."""
        drawing = self.item_drawing(item_index)
        return None if drawing is None else drawing.svg
