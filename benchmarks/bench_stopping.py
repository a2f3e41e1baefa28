"""When can the analyst stop?  Every stopping rule beside each heuristic, on pools the rules were not tuned on.

Pools: the 1,797 bundled 8x8 digits plus a copy of each shifted by up to one
pixel (3,594 items, 64 standardised features), one digit against the rest
(about 10% positives).  The rules' settings come from their papers or were
fixed beforehand (``core.stopping``); while the statistical rule's design was
worked out, only the digit 8 was looked at, so the digits here are 3, 5 and 9.
Every item is in the pool (no held-out part), the true labels answer the
queries, and each session may label at most half of the pool (the budget).

Target (``statistical``, target recall 0.95 at confidence 0.95): recall at stop
>= 0.95 in at least 95% of the sessions, stopping within half of the pool.
The heuristic rules' recall and labels at stop are printed next to it, and so
is the reference: the labels at which each session first had 95% of the
positives (what a rule that knew the true labels would spend), and the pool
size (labelling everything).

Run:  .venv/bin/python benchmarks/bench_stopping.py [--seeds 8] [--digits 3,5,9] [--strategies ...] [--jobs 1]
(``--quick``: two seeds of one digit, to try it out).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
import pandas as pd

from core.datasets import load_bundled, standardize
from core.experiment import run_comparison
from core.metrics import labels_to_recall

RULES = "statistical,knee,margin,stability,consecutive:50"
TARGET, CONFIDENCE = 0.95, 0.95


def digits_pool(digit: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The bundled digits and a copy of each shifted by -1..1 pixel per axis; ``digit`` against the rest."""
    from scipy import ndimage

    ds = load_bundled("digits", positive=digit)
    rng = np.random.default_rng(seed)
    images = ds.X.reshape(-1, 8, 8)
    shifted = np.array(
        [ndimage.shift(img, rng.integers(-1, 2, size=2), order=0, mode="constant") for img in images]
    ).reshape(len(images), -1)
    X = np.vstack([ds.X, shifted])
    return standardize(X)[0], np.concatenate([ds.y, ds.y])


def environment() -> str:
    try:
        from threadpoolctl import threadpool_info

        blas = ", ".join(f"{i['internal_api']} {i.get('num_threads')} threads" for i in threadpool_info())
    except ImportError:
        blas = "threadpoolctl not installed"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"Python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
        f"load average {load:.1f}; BLAS: {blas}; "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=8, help="sessions per digit (default 8)")
    parser.add_argument("--digits", default="3,5,9", help="positive digits (default 3,5,9)")
    parser.add_argument("--strategies", default="largest-positive,near-boundary")
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--quick", action="store_true", help="two seeds of digit 3")
    args = parser.parse_args(argv)
    digits = [3] if args.quick else [int(d) for d in args.digits.split(",")]
    seeds = 2 if args.quick else args.seeds
    strategies = args.strategies.split(",")
    print(__doc__.split("\n\n")[0])
    print(environment())
    print(
        f"rules {RULES}; target recall {TARGET}, confidence {CONFIDENCE}; digits {digits}, {seeds} seeds each, "
        f"strategies {', '.join(strategies)}\n"
    )

    stops, references = [], []
    t0 = time.perf_counter()
    for digit in digits:
        X, y = digits_pool(digit)
        budget = len(X) // 2
        res = run_comparison(
            X,
            y,
            strategies=strategies,
            budget=budget,
            seeds=seeds,
            test_fraction=0.0,
            stopping=RULES,
            target_recall=TARGET,
            confidence=CONFIDENCE,
            baseline=False,
            n_jobs=args.jobs,
        )
        stops.append(res.stops.assign(digit=digit, pool=len(X)))
        for (strategy, seed), g in res.rows.groupby(["strategy", "seed"]):
            n95 = labels_to_recall(g["label"].to_numpy(), int(np.sum(y > 0)), TARGET)
            references.append(
                {
                    "strategy": strategy,
                    "digit": digit,
                    "seed": seed,
                    "labels_95": n95,
                    "pool": len(X),
                    "positives": int(np.sum(y > 0)),
                }
            )
        print(
            f"digit {digit}: {len(X)} items, {int(np.sum(y > 0))} positives, budget {budget}; "
            f"{time.perf_counter() - t0:.0f} s so far",
            flush=True,
        )
    stops = pd.concat(stops, ignore_index=True)
    refs = pd.DataFrame(references)

    print()
    head = (
        f"{'strategy':<17} {'rule':<15} {'stopped':>8} {'labels at stop':>17} {'recall at stop':>15} "
        f"{'recall >= 0.95':>15} {'<= half & >= 0.95':>18} {'work saved':>10}"
    )
    print(head)
    print("-" * len(head))
    verdicts = []
    for strategy in strategies:
        part = stops[stops.strategy == strategy]
        for rule in RULES.split(","):
            r = part[part.rule == rule]
            n = len(r)
            hit = r.dropna(subset=["n_labels_at_stop"])
            labels = hit["n_labels_at_stop"].to_numpy(dtype=float)
            recall = hit["recall_at_stop"].to_numpy(dtype=float)
            reached = int(np.sum(recall >= TARGET))
            within = int(np.sum((recall >= TARGET) & (labels <= hit["pool"].to_numpy() / 2)))
            saved = 1 - labels / hit["pool"].to_numpy(dtype=float)
            lab = f"{labels.mean():.0f} (max {labels.max():.0f})" if len(hit) else "–"
            rec = f"{recall.mean():.3f} (min {recall.min():.3f})" if len(hit) else "–"
            work = f"{saved.mean():.3f}" if len(hit) else "–"
            print(
                f"{strategy:<17} {rule:<15} {f'{len(hit)}/{n}':>8} {lab:>17} {rec:>15} {f'{reached}/{n}':>15} "
                f"{f'{within}/{n}':>18} {work:>10}"
            )
            if rule == "statistical":
                verdicts.append((strategy, within, n))
        ref = refs[refs.strategy == strategy]
        n95 = pd.to_numeric(ref["labels_95"], errors="coerce")
        got = n95.dropna()
        lab = f"{got.mean():.0f} (max {got.max():.0f})" if len(got) else "–"
        work = f"{(1 - got / ref.loc[got.index, 'pool']).mean():.3f}" if len(got) else "–"
        print(
            f"{strategy:<17} {'reference: 95%':<15} {f'{len(got)}/{len(ref)}':>8} {lab:>17} "
            f"{'0.950' if len(got) else '–':>15} {'':>15} {'':>18} {work:>10}"
        )
    print(
        f"pool: {int(refs['pool'].iloc[0])} items (labelling everything: work saved 0); "
        "reference: labels at which the session first held 95% of the positives (needs the true labels)."
    )
    print(
        "stopped: sessions where the rule stopped within the budget (half the pool); labels and recall: over "
        "those; random draws are labels; work saved: 1 - labels at stop / pool.\n"
    )
    for strategy, within, n in verdicts:
        share = within / n if n else float("nan")
        reachable = int(pd.to_numeric(refs[refs.strategy == strategy]["labels_95"], errors="coerce").notna().sum())
        note = (
            ""
            if reachable == n
            else (f" (the heuristic itself reached 95% recall within half of the pool in {reachable}/{n} sessions)")
        )
        print(
            f"target (statistical, {strategy}): recall >= 0.95 within half of the pool in >= 95% of sessions: "
            f"{within}/{n} = {share:.1%} -> {'met' if share >= 0.95 else 'MISSED'}{note}"
        )
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
