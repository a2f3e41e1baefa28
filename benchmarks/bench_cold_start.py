"""Labels to the first positive on rare-positive pools: the cold starts side by side.

    python benchmarks/bench_cold_start.py [--seeds 20] [--share 0.02] [--cold-starts random,spread]

Until both classes have a label the loop asks about items chosen by its cold start
(``core.strategies.COLD_STARTS``); on a pool with few positives the first positive is what the
cold start has to find.  For every pool and seed the script builds a pool with at most ``--share``
positives (all negatives of the task, positives drawn at random with the seed), runs the loop
(``largest-positive`` with its default solver, answers from the true labels) until the first
positive is labelled, and counts the labels that took (the positive included).  The same pools
and seeds for every cold start.

Pools: the bundled copies of scikit-learn's datasets, one class against the rest -- digits
(0, 3, 8; 8x8 images, rbf kernel on standardised pixels) and breast cancer (malignant;
30 measurements, rbf kernel on standardised values) -- and the bundled arXiv abstracts
(cs.NE, cs.CL; TF-IDF, linear kernel).

Printed: per pool and cold start, the median, mean and 90th percentile over seeds of the labels to
the first positive; and the ratio of the medians against ``random`` (target: at most 0.5).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from core.datasets import load_bundled  # noqa: E402
from core.features import scale_features  # noqa: E402
from core.loop import ActiveLearningLoop  # noqa: E402
from core.strategies import COLD_STARTS  # noqa: E402

POOLS = (
    ("digits", "0"),
    ("digits", "3"),
    ("digits", "8"),
    ("breast-cancer", None),
    ("nci-molecules", None),
    ("arxiv", "cs.NE"),
    ("arxiv", "cs.CL"),
)


def load_pool(name: str, positive):
    ds = load_bundled(name, positive=positive)
    X = ds.X if ds.is_sparse else scale_features(ds.X, "standard", ds.numeric_columns)
    return X, np.asarray(ds.y, dtype=np.float64), ds.default_kernel, f"{name} {ds.classes[1]} vs rest"


def rare_pool(y: np.ndarray, share: float, seed: int) -> np.ndarray:
    """Rows of a pool with every negative and at most ``share`` positives (at least one), drawn with the seed."""
    rng = np.random.default_rng([seed, 0xC01D])
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y <= 0)
    k = max(1, int(np.floor(share * len(neg) / (1.0 - share))))
    return np.sort(np.concatenate([neg, rng.choice(pos, min(k, len(pos)), replace=False)]))


def labels_to_first_positive(X, y, kernel: str, cold_start: str, seed: int) -> int:
    loop = ActiveLearningLoop(
        X, strategy="largest-positive", solver_params={"kernel": kernel}, seed=seed, cold_start=cold_start
    )
    while True:
        q = loop.next_query()
        if q is None:
            return loop.n_labels + 1
        loop.teach(q.index, int(y[q.index]))
        if y[q.index] > 0:
            return loop.n_labels


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--share", type=float, default=0.02, help="largest share of positives (default 0.02)")
    parser.add_argument("--cold-starts", default="random,spread")
    args = parser.parse_args(argv)
    starts = [s.strip() for s in args.cold_starts.split(",") if s.strip()]
    for s in starts:
        if s not in COLD_STARTS:
            parser.error(f"unknown cold start {s!r}; choose from {', '.join(COLD_STARTS)}")
    head = f"{'pool':<40} {'items':>6} {'pos':>4} " + " ".join(f"{s + ' med/mean/p90':>24}" for s in starts)
    if "random" in starts:
        head += " " + " ".join(f"{s + '/random':>15}" for s in starts if s != "random")
    print(head)
    print("-" * len(head))
    t0 = time.perf_counter()
    ratios: dict[str, list[float]] = {s: [] for s in starts}
    for name, positive in POOLS:
        X, y, kernel, title = load_pool(name, positive)
        counts = {s: [] for s in starts}
        sizes = []
        for seed in range(args.seeds):
            rows = rare_pool(y, args.share, seed)
            Xp, yp = X[rows], y[rows]
            sizes.append((len(rows), int(np.sum(yp > 0))))
            for s in starts:
                counts[s].append(labels_to_first_positive(Xp, yp, kernel, s, seed))
        line = f"{title:<40} {sizes[0][0]:>6} {sizes[0][1]:>4} "
        cells = []
        for s in starts:
            c = np.asarray(counts[s], dtype=float)
            cells.append(f"{np.median(c):.1f}/{c.mean():.1f}/{np.percentile(c, 90):.0f}")
        line += " ".join(f"{c:>24}" for c in cells)
        if "random" in starts:
            base = float(np.median(counts["random"]))
            for s in starts:
                if s != "random":
                    ratio = float(np.median(counts[s])) / base
                    ratios[s].append(ratio)
                    line += f" {ratio:>15.2f}"
        print(line, flush=True)
    for s, r in ratios.items():
        if r:
            print(
                f"{s}: median ratio to random over the pools {np.median(r):.2f} (target <= 0.5); "
                f"pools at or below 0.5: {sum(v <= 0.5 for v in r)}/{len(r)}"
            )
    print(
        f"{args.seeds} seeds (0..{args.seeds - 1}), positives at most {args.share:.0%} of each pool; "
        f"{time.perf_counter() - t0:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
