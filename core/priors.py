"""Prior knowledge: items whose labels are known before the loop asks anything.

A screener usually starts knowing a few relevant and irrelevant items.  These
*priors* are labels like any other, with their own provenance (``PRIOR``),
learned before the first question.  In a simulation (``compare --prior P,N``)
they are drawn per seed from the true labels of the seed's pool, as ASReview
LAB's ``--n-prior-included`` / ``--n-prior-excluded`` do, or given as items
(``compare --prior-keys FILE``).

Recall is counted as ASReview counts it (``asreview-insights``, its default
``priors=False``): the priors are left out of both sides, so recall after k
labels is (positives found among the k labels after the priors) / (positives of
the pool that are not priors), and the labels to a recall level count the
labels after the priors.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np


class PriorError(ValueError):
    """Priors that cannot be used (a key not in the data, an item held out, more than a class has)."""


#: the provenance of a prior label (the history's ``asked_by``, the stored answer's strategy)
PRIOR = "prior"
#: what the generator of a seed's draw of priors is seeded with, after the seed
_DRAW_STREAM = 0x9410


def parse_counts(text: str) -> tuple[int, int]:
    """``"P,N"`` -> (P, N): known positives and known negatives, whole numbers >= 0, not both 0."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise PriorError(f"expected P,N (known positives, known negatives), e.g. 1,1; got {text!r}")
    n_pos, n_neg = int(parts[0]), int(parts[1])
    if n_pos + n_neg == 0:
        raise PriorError(f"{text!r} asks for no prior at all: give at least one known positive or negative")
    return n_pos, n_neg


def draw(y_pool: np.ndarray, n_pos: int, n_neg: int, seed: int) -> np.ndarray:
    """Positions in a seed's pool of ``n_pos`` positives and ``n_neg`` negatives drawn at random with the
    seed (positives first); a clear ``ValueError`` when the pool has fewer of a class."""
    y_pool = np.asarray(y_pool)
    pos, neg = np.flatnonzero(y_pool > 0), np.flatnonzero(y_pool <= 0)
    for asked, have, what in ((n_pos, len(pos), "positives"), (n_neg, len(neg), "negatives")):
        if asked > have:
            raise PriorError(
                f"prior {n_pos},{n_neg} asks for {asked} known {what}, but the pool of seed {seed} "
                f"has only {have} {what}"
            )
    rng = np.random.default_rng([int(seed), _DRAW_STREAM])
    picked_pos = rng.choice(pos, size=int(n_pos), replace=False) if n_pos else np.zeros(0, dtype=np.intp)
    picked_neg = rng.choice(neg, size=int(n_neg), replace=False) if n_neg else np.zeros(0, dtype=np.intp)
    return np.concatenate([picked_pos, picked_neg]).astype(np.intp)


def positions_in_pool(
    rows: Sequence[int] | np.ndarray, train: np.ndarray, n_items: int, seed: int, names: Sequence[str] | None = None
) -> np.ndarray:
    """Positions in a seed's pool (``train``: the dataset rows of the pool, in pool order) of the dataset
    ``rows`` given as priors; a ``ValueError`` naming the item when one is held out for evaluation."""
    position = np.full(int(n_items), -1, dtype=np.intp)
    position[np.asarray(train, dtype=np.intp)] = np.arange(len(train), dtype=np.intp)
    out = []
    for k, row in enumerate(rows):
        if position[int(row)] < 0:
            name = names[k] if names is not None else f"item {int(row)}"
            raise PriorError(
                f"prior {name} is in the held-out evaluation set of seed {seed}, not in the pool; "
                "a prior must be an item of the pool (keep every item in the pool with a "
                "test fraction of 0)"
            )
        out.append(int(position[int(row)]))
    return np.asarray(out, dtype=np.intp)


def check_rows(rows: Sequence[int], n_items: int) -> np.ndarray:
    """The dataset rows given as priors, as integers in range and without repeats."""
    out = []
    for row in rows:
        if isinstance(row, bool) or not isinstance(row, (int, np.integer)):
            raise PriorError(f"a prior item must be a row number, got {row!r}")
        if not 0 <= int(row) < n_items:
            raise PriorError(f"prior item {int(row)} is not in the data (rows 0..{n_items - 1})")
        if int(row) in out:
            raise PriorError(f"prior item {int(row)} is given twice")
        out.append(int(row))
    if not out:
        raise PriorError("no prior item given")
    return np.asarray(out, dtype=np.intp)


def read_keys(path: str | Path) -> list[tuple[int, str]]:
    """(line number, key) of each key in a file of keys, one a line (blank lines and lines starting with
    ``#`` are passed over)."""
    path = Path(path)
    if not path.is_file():
        raise PriorError(f"prior keys file not found: {path}" if not path.exists() else f"{path} is not a file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise PriorError(f"{path} is not a UTF-8 text file of keys, one a line") from None
    out = [
        (n, line.strip())
        for n, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.strip().startswith("#")
    ]
    if not out:
        raise PriorError(f"{path} holds no key (one key a line)")
    return out


def rows_of_keys(
    keys: Sequence[tuple[int, str]], item_keys: Sequence[str] | None, n_items: int, source: str = "the prior keys file"
) -> np.ndarray:
    """Dataset rows of the keys read by :func:`read_keys`: matched against ``item_keys`` when the data have
    keys, else item numbers 0..n-1 (the order the items were read in)."""
    if item_keys is not None:
        index = {str(k): i for i, k in enumerate(item_keys)}
    else:
        index = {str(i): i for i in range(n_items)}
    rows: list[int] = []
    seen: dict[str, int] = {}  # key: the line it was first given on
    for line, key in keys:
        if key not in index:
            what = (
                f"the key of no item (keys such as {str(item_keys[0])!r})"
                if item_keys is not None
                else (f"not an item number 0..{n_items - 1} (the data have no key column)")
            )
            raise PriorError(f"{source}, line {line}: {key!r} is {what}")
        if key in seen:
            raise PriorError(f"{source}, line {line}: {key!r} is given twice (first on line {seen[key]})")
        seen[key] = line
        rows.append(index[key])
    return np.asarray(rows, dtype=np.intp)


__all__ = [
    "PRIOR",
    "PriorError",
    "check_rows",
    "draw",
    "parse_counts",
    "positions_in_pool",
    "read_keys",
    "rows_of_keys",
]
