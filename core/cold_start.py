"""The ``spread`` cold start: items that spread over the pool (k-means++ seeding).

Until both classes have a label, the loop asks about items chosen by its cold
start (``core.strategies.COLD_STARTS``).  ``spread`` draws them as k-means++
seeds its centres (Arthur & Vassilvitskii, "k-means++: the advantages of
careful seeding", SODA 2007): the first item uniformly at random, every later
one with probability in proportion to D(x)^2, its squared distance to the
nearest item already asked (labelled or skipped).  Regions the questions have
not reached yet are asked about sooner than their share of the pool, and a
dense region already asked about is not asked about again and again, which
is what a uniform draw does on a pool where one kind of item dominates.

Distances are those of the model's kernel, in its feature space:
D(x, z)^2 = K(x, x) + K(z, z) - 2 K(x, z) (the Euclidean distance for the
linear kernel), computed by the kernel layer, so a draw is a function of the
seed, the items asked and the data alone, and a resumed session draws the same
items.  The work per question is one kernel row per item already asked.
"""

from __future__ import annotations

import numpy as np

from core.formatting import for_people
from core.strategies import Query, _as_pool

NAME = "spread"
REASON_FIRST = "cold start, spread over the pool (k-means++ seeding): the first item, drawn uniformly at random"


def squared_distances(model, asked: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """D(x)^2 = min over the ``asked`` items z of K(x, x) + K(z, z) - 2 K(x, z), for every candidate x."""
    cache = model.cache
    diag = np.asarray(cache.diag(np.arange(model.n_points)), dtype=np.float64)
    d2 = np.full(len(candidates), np.inf)
    own = diag[candidates]
    for z in asked:
        row = np.asarray(cache.compute(np.array([z], dtype=np.intp), candidates)[0], dtype=np.float64)
        np.minimum(d2, own + diag[z] - 2.0 * row, out=d2)
    return np.maximum(d2, 0.0)


def spread_cold_start(model, pool, rng: np.random.Generator) -> Query | None:
    """One k-means++ draw over the available items, given the items already asked (see the module notes)."""
    pool = _as_pool(model, pool)
    candidates = np.flatnonzero(pool.available)
    if len(candidates) == 0:
        return None
    asked = np.flatnonzero(~pool.available)
    d2 = squared_distances(model, asked, candidates) if len(asked) else np.zeros(len(candidates))
    total = float(d2.sum())
    if len(asked) == 0 or not np.isfinite(total) or total <= 0.0:
        k = int(rng.integers(len(candidates)))
        reason = (
            REASON_FIRST
            if len(asked) == 0
            else (
                "cold start, spread over the pool (k-means++ seeding): every unlabelled item lies on an item "
                "already asked, so drawn uniformly at random"
            )
        )
    else:
        k = int(rng.choice(len(candidates), p=d2 / total))
        ratio = float(d2[k]) * len(candidates) / total
        reason = (
            "cold start, spread over the pool (k-means++ seeding): drawn with probability in proportion "
            f"to its squared distance to the nearest item already asked ({for_people(d2[k])}, "
            f"{for_people(ratio)} times the average over the {len(candidates)} unlabelled items)"
        )
    i = int(candidates[k])
    return Query(i, float(pool.decision(model, [i])[0]), NAME, reason)


__all__ = ["NAME", "REASON_FIRST", "spread_cold_start", "squared_distances"]
