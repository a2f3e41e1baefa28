"""How honest is the estimate of the positives still unlabelled?  Coverage of its interval in simulation.

Sessions are simulated with the true labels answering the queries.  At every
checkpoint (every 10 labels from 50 on, up to 300 labels or half of the pool)
the estimate the Label page shows (``core.stopping.estimate_remaining``, the
same call as ``app.services.stopping``) is compared with the true number of
positives still unlabelled:

* model-based: the session as it is (no recall check), the model's scores;
* random draws: at every 50th label, a recall check of 100 items drawn at
  random from the unlabelled ones (their true labels), then the estimate from
  those draws.

Pools: the demo's digits (8 against the rest, 10%), scikit-learn's
``load_digits`` (3 against the rest) and ``load_breast_cancer`` (malignant,
37%), and rare-positive pools: ``load_digits`` with the 5s thinned to 1.5%, and
a synthetic pool (``make_classification``, 3% positives).

Target: the 95% interval covers the truth in at least 90% of the (seed,
checkpoint) pairs from 50 labels on, under the app's default heuristic
(near-boundary), and the estimate is never above the unlabelled items.
Checkpoints where it cannot estimate yet are counted apart (not as covered).

Run:  .venv/bin/python benchmarks/bench_estimate.py [--seeds 20] [--strategies near-boundary,largest-positive]
(``--quick``: 3 seeds, to try it out).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from benchmarks.bench_stopping import environment  # noqa: E402
from core import stopping  # noqa: E402
from core.datasets import load_bundled, standardize  # noqa: E402
from core.loop import ActiveLearningLoop  # noqa: E402

CONFIDENCE = 0.95
FIRST, EVERY, DRAW_EVERY, DRAWS, MAX_LABELS = 50, 10, 50, 100, 300


def pools() -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, X standardised, y in {-1, +1}) for each pool."""
    from sklearn.datasets import load_breast_cancer, load_digits, make_classification

    out = []
    demo = load_bundled("digits", positive=8)
    out.append(("demo digits (8)", demo.X, demo.y))
    digits, digit = load_digits(return_X_y=True)
    digits = digits.astype(float)
    out.append(("load_digits (3)", standardize(digits)[0], np.where(digit == 3, 1, -1)))
    X, target = load_breast_cancer(return_X_y=True)
    out.append(("load_breast_cancer", standardize(X)[0], np.where(target == 0, 1, -1)))
    keep = (digit != 5) | (np.random.default_rng(0).random(len(digit)) < 0.15)
    out.append(("load_digits (5, rare)", standardize(digits[keep])[0], np.where(digit[keep] == 5, 1, -1)))
    X, target = make_classification(1500, 20, n_informative=8, weights=[0.97], flip_y=0.01, random_state=1)
    out.append(("synthetic (3%)", standardize(X)[0], np.where(target == 1, 1, -1)))
    return out


def one_session(X: np.ndarray, y: np.ndarray, strategy: str, seed: int) -> list[dict]:
    """The estimates at every checkpoint of one simulated session, with the truth beside them."""
    loop = ActiveLearningLoop(X, strategy=strategy, seed=seed)
    budget = min(MAX_LABELS, len(X) // 2)
    labels, asked, asked_by, rows = [], [], [], []
    rng = np.random.default_rng([seed, 0xE5])
    while loop.n_labels < budget:
        q = loop.next_query()
        if q is None:
            break
        row = loop.teach(q.index, int(y[q.index]))
        labels.append(int(y[q.index]))
        asked.append(row.score)
        asked_by.append(q.strategy)
        n = loop.n_labels
        if n < FIRST or n % EVERY:
            continue
        left = ~loop.labelled_mask
        truth, unlabelled = int(np.sum(y[left] > 0)), int(left.sum())
        est = stopping.estimate_remaining(
            np.array(labels),
            np.zeros(n, dtype=bool),
            [],
            pool_size=len(X),
            unlabelled_scores=loop.pool_scores()[left],
            asked_scores=np.array(asked),
            asked_by=asked_by,
            confidence=CONFIDENCE,
        )
        rows.append(_row("model-based", n, truth, unlabelled, est))
        if n % DRAW_EVERY == 0:  # a recall check of DRAWS random items from the unlabelled ones
            drawn_items = rng.choice(np.flatnonzero(left), size=min(DRAWS, unlabelled), replace=False)
            history = np.concatenate([labels, y[drawn_items]])
            flags = np.arange(len(history)) >= n
            est = stopping.estimate_remaining(
                history, flags, [n], pool_size=len(X), confidence=CONFIDENCE, target_recall=0.5
            )  # a low target: the draws never end the check
            rows.append(
                _row(
                    "random draws",
                    n,
                    int(np.sum(y[left] > 0)) - int(np.sum(y[drawn_items] > 0)),
                    unlabelled - len(drawn_items),
                    est,
                )
            )
    return rows


def _row(method: str, n: int, truth: int, unlabelled: int, est: stopping.RecallEstimate) -> dict:
    known = est.known
    return {
        "method": method,
        "n_labels": n,
        "truth": truth,
        "unlabelled": unlabelled,
        "known": known,
        "used": est.method,
        "low": est.remaining_low,
        "point": est.remaining,
        "high": est.remaining_high,
        "covered": known and est.remaining_low <= truth <= est.remaining_high,
        "above": known and est.remaining_high > unlabelled,
        "too_early": est.too_early,
    }  # the app says "too early to estimate" instead (same numbers)


def table(frame: pd.DataFrame) -> pd.DataFrame:
    known = frame[frame.known]
    return pd.DataFrame(
        {
            "checkpoints": frame.groupby("pool").size(),
            "estimated": frame.groupby("pool")["known"].mean(),
            "covered": known.groupby("pool")["covered"].mean(),
            "too low": (known.high < known.truth).groupby(known["pool"]).mean(),
            "too high": (known.low > known.truth).groupby(known["pool"]).mean(),
            "width / unlabelled": ((known.high - known.low) / known.unlabelled).groupby(known["pool"]).median(),
            "too early": known.groupby("pool")["too_early"].mean(),
        }
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="sessions per pool and heuristic (default 20)")
    parser.add_argument(
        "--strategies",
        default="near-boundary,largest-positive",
        help="heuristics; the first is the one the target is about (default: the app's default, "
        "near-boundary, then largest-positive)",
    )
    parser.add_argument("--quick", action="store_true", help="3 seeds")
    args = parser.parse_args(argv)
    seeds = 3 if args.quick else args.seeds
    strategies = args.strategies.split(",")
    print(__doc__.split("\n\n")[0])
    print(environment())
    print(
        f"confidence {CONFIDENCE}; {seeds} seeds; heuristics {', '.join(strategies)}; checkpoints every {EVERY} "
        f"labels from {FIRST} to min({MAX_LABELS}, pool / 2); a check of {DRAWS} random draws every "
        f"{DRAW_EVERY} labels\n"
    )
    t0 = time.perf_counter()
    rows = []
    for name, X, y in pools():
        for strategy in strategies:
            for seed in range(seeds):
                rows += [
                    {**r, "pool": name, "strategy": strategy, "seed": seed} for r in one_session(X, y, strategy, seed)
                ]
        print(
            f"{name}: {len(X)} items, {int(np.sum(y > 0))} positives; {time.perf_counter() - t0:.0f} s so far",
            flush=True,
        )
    frame = pd.DataFrame(rows)
    pd.set_option("display.width", 160)
    verdicts = []
    for method in ("model-based", "random draws"):
        for strategy in strategies:
            part = frame[(frame.method == method) & (frame.strategy == strategy)]
            known = part[part.known]
            print(f"\n{method}, {strategy}:")
            print(table(part).to_string(float_format=lambda v: f"{v:.3f}"))
            coverage = known["covered"].mean() if len(known) else float("nan")
            print(
                f"all pools: {len(part)} checkpoints, estimated at {part['known'].mean():.1%}, "
                f"covered {coverage:.1%}, above the unlabelled items: {int(part['above'].sum())}"
            )
            verdicts.append((method, strategy, coverage, int(part["above"].sum())))
    print()
    for method, strategy, coverage, above in verdicts:
        met = coverage >= 0.90 and above == 0
        which = "target" if strategy == strategies[0] else "also measured"
        print(
            f"{which}: {method}, {strategy}: 95% interval covers the truth in >= 90% of checkpoints and is "
            f"never above the unlabelled items: {coverage:.1%}, {above} above -> {'met' if met else 'MISSED'}"
        )
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
