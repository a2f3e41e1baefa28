"""Class weights on rare positives: ``class_weight=None`` against ``"balanced"``, side by side.

The bundled digits, "8 vs rest" (about 10% positives), and the same with the positives subsampled to 2%
of the pool (every negative kept; a new subsample per seed).  Each run is an ``ActiveLearningLoop`` with
the loop's defaults (random cold start, C = 1, rbf with gamma = "scale") answering its queries with the
true labels, once with each weighting and otherwise identical (same seed, same pool).  Reported per
heuristic and pool, mean over the seeds (with the median in brackets for the label counts):

* labels to the 1st, 5th and 10th positive found (the budget + 1 when not reached);
* the AUC of the model's decision values over the whole pool after 30, 60 and ``--budget`` labels;
* how often ``"balanced"`` re-set its weights (and relearned) per run.

Until both classes are labelled the weights are 1 either way (the first positive is found by the cold
start alone), so the two columns can differ only after it.

Run:  .venv/bin/python benchmarks/bench_class_weight.py [--seeds 10 --budget 150]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from core.datasets import load_bundled  # noqa: E402
from core.loop import ActiveLearningLoop  # noqa: E402
from core.metrics import roc_auc  # noqa: E402

CASES = [("near-boundary", "incremental"), ("largest-positive", "incremental"), ("randomized-search", "lasvm")]
WEIGHTS = [None, "balanced"]
FOUND = (1, 5, 10)


def pools(seed: int, X: np.ndarray, y: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The ~10% pool (all of the data) and the 2% pool (positives subsampled with this seed)."""
    rng = np.random.default_rng(1000 + seed)
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    n_pos = max(FOUND[-1] + 2, round(0.02 * len(neg) / 0.98))
    keep = np.sort(np.concatenate([neg, rng.choice(pos, n_pos, replace=False)]))
    return {f"{100 * np.mean(y > 0):.0f}%": (X, y), f"{100 * n_pos / len(keep):.0f}%": (X[keep], y[keep])}


def run(X, y, strategy, solver, seed, class_weight, budget, checkpoints):
    params = {} if class_weight is None else {"class_weight": class_weight}
    loop = ActiveLearningLoop(X, strategy=strategy, solver=solver, seed=seed, solver_params=params)
    found, aucs = [], {}
    while loop.n_labels < budget:
        q = loop.next_query()
        if q is None:
            break
        loop.teach(q.index, int(y[q.index]))
        if y[q.index] > 0:
            found.append(loop.n_labels)
        if loop.n_labels in checkpoints:
            aucs[loop.n_labels] = roc_auc(y, loop.solver.decision_function(np.arange(len(y))))
    to_found = [found[k - 1] if len(found) >= k else budget + 1 for k in FOUND]
    return to_found, [aucs.get(c, np.nan) for c in checkpoints], getattr(loop.solver, "n_reweighted_", 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--budget", type=int, default=150)
    args = ap.parse_args()
    checkpoints = (30, 60, args.budget)
    ds = load_bundled("digits", positive=8)
    X, y = np.asarray(ds.X, dtype=np.float64), np.where(np.asarray(ds.y) > 0, 1, -1)
    t0 = time.perf_counter()
    results: dict[tuple, list] = {}
    for seed in range(args.seeds):
        for pool, (Xp, yp) in pools(seed, X, y).items():
            for strategy, solver in CASES:
                for cw in WEIGHTS:
                    results.setdefault((pool, strategy, solver, cw), []).append(
                        run(Xp, yp, strategy, solver, seed, cw, args.budget, checkpoints)
                    )
    seconds = time.perf_counter() - t0
    print(
        f"digits 8 vs rest ({len(y)} items); seeds 0..{args.seeds - 1}; budget {args.budget}; loop defaults "
        f"(random cold start, C = 1, rbf gamma='scale'); {seconds:.0f} s"
    )
    head = (
        f"{'pool':>5} {'heuristic (solver)':<31} {'weights':<9} "
        + " ".join(f"{'to ' + str(k) + ('st' if k == 1 else 'th') + ' pos':>12}" for k in FOUND)
        + " "
        + " ".join(f"{'AUC@' + str(c):>8}" for c in checkpoints)
        + f" {'re-sets':>7}"
    )
    print(head)
    print("-" * len(head))
    for (pool, strategy, solver, cw), rows in results.items():
        to_found = np.array([r[0] for r in rows], dtype=float)
        aucs = np.array([r[1] for r in rows], dtype=float)
        resets = np.mean([r[2] for r in rows])
        cells = " ".join(
            f"{m:>6.1f} ({med:>3.0f})"
            for m, med in zip(to_found.mean(axis=0), np.median(to_found, axis=0), strict=True)
        )
        print(
            f"{pool:>5} {strategy + ' (' + solver + ')':<31} {str(cw):<9} {cells} "
            + " ".join(f"{v:>8.3f}" for v in np.nanmean(aucs, axis=0))
            + f" {resets:>7.1f}"
        )


if __name__ == "__main__":
    main()
