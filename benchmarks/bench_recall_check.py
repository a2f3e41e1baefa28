"""What the statistical guarantee costs: the recall check started at the knee once more heuristic labels no
longer pay (``statistical``), at the knee after half the run (``statistical-knee``) and after a run of
negatives (``statistical-run``), and the ranked check (``ranked``, replays only: started where ``statistical``
starts, its test reading the fixed ranking too, ``core.stopping.follow_ranking_ranked``), on the same rankings.

Pools (the stopping bench's digits: the 1,797 bundled 8x8 digits and copies shifted by up to one pixel,
64 standardised features): one digit against the rest, positives thinned to a share of the pool:
5,000 items with 10% positives (digit 3), 3,500 with 5% (digit 5) and 3,500 with 2% (digit 9).

For each pool and seed the default heuristic (largest-positive, 10 random labels to start) ranks the pool
once, by the real learning loop with the true labels answering, for up to ``--record`` labels (default
1,600; beyond them the rest of the pool follows in a random order).  Each rule is then replayed on that
ranking: heuristic labels take the next unlabelled item of the ranking, the random draws of a check come
from the unlabelled items (seeded), and the rule (``core.stopping.recall_check``, as the app and
``compare --stopping`` run it) says when to start, draw and stop.  (A replay: in a live session the
random draws are learned too and may move the ranking a little; the test's guarantee does not depend
on the ranking.)

Per rule and pool: recall >= 0.95 at stop (target: >= 95% of the sessions), labels at stop against
1.5 x the labels at which the ranking first held 95% of the positives plus the smallest random sample
the check then needs (no positive among its draws), and labels at stop as a share of the pool (target on
the 5,000-item 10% pool: <= 40%, mean over seeds).

Run:  .venv/bin/python benchmarks/bench_recall_check.py [--seeds 20] [--record 1600] [--rules ranked,...]
(--quick: 3 seeds)
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from core import stopping as st
from core.datasets import load_bundled, standardize
from core.loop import ActiveLearningLoop
from core.metrics import labels_to_recall

TARGET, CONFIDENCE = 0.95, 0.95
RULES = ("statistical", "statistical-knee", "statistical-run", "ranked")
#: (name, digit, pool items, share of positives)
POOLS = (("digits-3, 10%", 3, 5000, 0.10), ("digits-5, 5%", 5, 3500, 0.05), ("digits-9, 2%", 9, 3500, 0.02))


def digits_copies(digit: int, copies: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The bundled digits and ``copies - 1`` copies shifted by -1..1 pixel per axis; ``digit`` against the rest."""
    from scipy import ndimage

    ds = load_bundled("digits", positive=digit)
    rng = np.random.default_rng(seed)
    images = ds.X.reshape(-1, 8, 8)
    parts = [ds.X] + [
        np.array([ndimage.shift(img, rng.integers(-1, 2, size=2), order=0, mode="constant") for img in images]).reshape(
            len(images), -1
        )
        for _ in range(copies - 1)
    ]
    return standardize(np.vstack(parts))[0], np.concatenate([ds.y] * copies)


def make_pool(digit: int, size: int, share: float) -> tuple[np.ndarray, np.ndarray]:
    """``size`` items of which ``share`` are the digit, drawn once (fixed seed) from three copies of the digits."""
    X, y = digits_copies(digit)
    rng = np.random.default_rng([digit, size])
    n_pos = int(round(share * size))
    pos = rng.choice(np.flatnonzero(y > 0), n_pos, replace=False)
    neg = rng.choice(np.flatnonzero(y <= 0), size - n_pos, replace=False)
    keep = np.sort(np.concatenate([pos, neg]))
    return X[keep], np.where(y[keep] > 0, 1, -1)


def ranking(X: np.ndarray, y: np.ndarray, seed: int, record: int) -> np.ndarray:
    """The order in which the default heuristic asks about the pool (the first ``record`` by the learning loop,
    the rest in a random order)."""
    loop = ActiveLearningLoop(X, strategy="largest-positive", seed=seed, oracle_y=y)
    order: list[int] = []
    while len(order) < min(record, len(y)):
        q = loop.next_query()
        if q is None:
            break
        loop.teach(q.index, int(y[q.index]))
        order.append(int(q.index))
    rest = np.setdiff1d(np.arange(len(y)), order)
    return np.concatenate([order, np.random.default_rng([seed, 0x0DE5]).permutation(rest)]).astype(np.intp)


def replay(order: np.ndarray, y: np.ndarray, rule: str, seed: int) -> tuple[int, float, int]:
    """A session that follows ``rule`` on a fixed ranking: (labels at stop, recall at stop, checks started)."""
    rng = np.random.default_rng([seed, 0x57A7])
    if rule == "ranked":  # the check started where ``statistical`` starts, its test reading the ranking too
        labels, _, starts = st.follow_ranking_ranked(
            order, y, rng=rng, start="yield", target_recall=TARGET, confidence=CONFIDENCE
        )
    else:
        labels, _, starts = st.follow_ranking(
            order, y, rng=rng, start=st.CHECK_STARTS[rule], target_recall=TARGET, confidence=CONFIDENCE
        )
    return len(labels), sum(v > 0 for v in labels) / int(np.sum(y > 0)), len(starts)


def reference(order: np.ndarray, y: np.ndarray) -> tuple[int, int]:
    """(labels at which the ranking first held 95% of the positives, the smallest random sample a check started
    then needs: its draws if none of them is positive)."""
    labels = y[order]
    n95 = labels_to_recall(labels, int(np.sum(y > 0)), TARGET)
    found = int(np.sum(labels[:n95] > 0))
    design = st.check_design(len(y) - n95, found, TARGET, st.check_alpha(1, CONFIDENCE), 1 - CONFIDENCE)
    return int(n95), int(design.pass_draws(0))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="sessions per pool (default 20)")
    parser.add_argument("--record", type=int, default=1600, help="labels of each ranking by the loop (default 1600)")
    parser.add_argument("--quick", action="store_true", help="three seeds")
    parser.add_argument(
        "--rules", default=",".join(RULES), help=f"the rules to replay, comma-separated (default {','.join(RULES)})"
    )
    parser.add_argument(
        "--rankings",
        help="an .npz file: rankings are read from it when it exists, written to it "
        "when not (to replay the rules again without the learning loop)",
    )
    args = parser.parse_args(argv)
    seeds = 3 if args.quick else args.seeds
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    unknown = [r for r in rules if r not in RULES]
    if unknown or not rules:
        parser.error(f"--rules: choose from {', '.join(RULES)}, not {', '.join(unknown) or 'nothing'}")
    print(__doc__.split("\n\n")[0])
    print(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; target recall {TARGET}, "
        f"confidence {CONFIDENCE}; {seeds} seeds per pool; rankings recorded for {args.record} labels\n"
    )
    rows = []
    t0 = time.perf_counter()
    kept = dict(np.load(args.rankings)) if args.rankings and os.path.exists(args.rankings) else {}
    known = len(kept)
    for name, digit, size, share in POOLS:
        X, y = make_pool(digit, size, share)
        for seed in range(seeds):
            key = f"{digit}-{size}-{seed}-{args.record}"
            if key not in kept:
                kept[key] = ranking(X, y, seed, args.record)
            order = kept[key]
            n95, sample = reference(order, y)
            for rule in rules:
                n, recall, checks = replay(order, y, rule, seed)
                rows.append(
                    {
                        "pool": name,
                        "items": size,
                        "positives": int(np.sum(y > 0)),
                        "seed": seed,
                        "rule": rule,
                        "labels": n,
                        "recall": recall,
                        "checks": checks,
                        "n95": n95,
                        "sample": sample,
                    }
                )
        print(
            f"{name}: {size} items, {int(np.sum(y > 0))} positives; {time.perf_counter() - t0:.0f} s so far, "
            f"load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    if args.rankings and len(kept) > known:
        np.savez_compressed(args.rankings, **kept)
    df = pd.DataFrame(rows)
    df["bound"] = 1.5 * df["n95"] + df["sample"]

    print()
    head = (
        "| pool | rule | recall >= 0.95 | labels at stop: mean (max) | % of pool | 1.5 x n95 + sample: mean "
        "| within it | checks: mean (max) |"
    )
    print(head)
    print("|---|---|---|---|---|---|---|---|")
    for name, _, size, _ in POOLS:
        for rule in rules:
            r = df[(df.pool == name) & (df.rule == rule)]
            ok = int(np.sum(r.recall >= TARGET))
            within = int(np.sum(r.labels <= r.bound))
            print(
                f"| {name} ({size:,}) | {rule} | {ok}/{len(r)} | {r.labels.mean():,.0f} ({r.labels.max():,}) | "
                f"{100 * r.labels.mean() / size:.0f}% | {r.bound.mean():,.0f} (n95 {r.n95.mean():,.0f}, sample "
                f"{r['sample'].mean():,.0f}) | {within}/{len(r)} | {r.checks.mean():.2f} ({r.checks.max()}) |"
            )
    print()
    for rule in rules:
        r = df[df.rule == rule]
        rate = float(np.mean(r.recall >= TARGET))
        big = r[r.pool == POOLS[0][0]]
        share = float(big.labels.mean()) / POOLS[0][2]
        within = float(np.mean(r.labels <= r.bound))
        print(
            f"{rule}: recall >= 0.95 in {rate:.1%} of {len(r)} sessions (target >= 95%: "
            f"{'met' if rate >= 0.95 else 'MISSED'}); labels at stop <= 1.5 x n95 + sample in {within:.0%} "
            f"(mean labels / bound {float((r.labels / r.bound).mean()):.2f}); 5,000-item 10% pool: "
            f"{share:.1%} of the pool (target <= 40%: {'met' if share <= 0.40 else 'MISSED'})"
        )
    print(f"total {time.perf_counter() - t0:.0f} s, load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
