"""Does a replay rank two heuristics as a full simulation does?

On datasets with a true-label column (the bundled digits "8 vs rest" and breast cancer), for each seed
and each session heuristic A among ``HEURISTICS``:

1. a session: heuristic A asks for ``--session-budget`` labels, the true labels answer
   (``core.loop.ActiveLearningLoop``, 10 random labels first, seeded);
2. its replay (``core.replay.run_replay``): the two other heuristics B and C (and A, the reference) on
   the items the session labelled, its answers the oracle, ``--replay-seeds`` seeds;
3. the full simulation (``core.experiment.run_comparison`` with nothing held out, every item labelled,
   ``--seeds`` seeds, once per dataset): B and C on the whole dataset.

It prints, per dataset, A and measure (labels to 80% / 95% recall), how often over the seeds the replay
ranks B and C (mean labels over its seeds) in the order of the full simulation (mean labels over all
seeds), and the mean labels of each.  Every heuristic uses the same model (``incremental``, rbf, C 1,
standard scaling).

Run:  .venv/bin/python benchmarks/bench_replay.py [--seeds 5 --replay-seeds 3 --session-budget 300]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from core.datasets import load_bundled
from core.experiment import run_comparison
from core.features import scale_features
from core.loop import ActiveLearningLoop
from core.replay import LabelledItems, run_replay

HEURISTICS = ["largest-positive", "near-boundary", "random"]
DATASETS = {"digits": dict(positive=8), "breast-cancer": dict()}
SOLVER, PARAMS = "incremental", {"kernel": "rbf", "C": 1.0}
MEASURES = ("labels_recall_80", "labels_recall_95")


def session(X, y, strategy: str, budget: int, seed: int) -> np.ndarray:
    """The rows an analyst working with ``strategy`` labels first (the true labels answering)."""
    loop = ActiveLearningLoop(
        X, strategy=strategy, solver=SOLVER, solver_params=PARAMS, seed=seed, initial=10, oracle_y=y
    )
    while loop.n_labels < budget:
        q = loop.next_query()
        if q is None:
            break
        loop.teach(q.index, int(y[q.index]))
    return np.array([r.item for r in loop.history], dtype=np.intp)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--replay-seeds", type=int, default=3)
    ap.add_argument("--session-budget", type=int, default=300, help="labels of each session (breast cancer: half)")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    args = ap.parse_args()
    print(f"load at start: {os.getloadavg()[0]:.1f} (1-minute average), {os.cpu_count()} cores")
    t_all = time.perf_counter()
    for name in args.datasets.split(","):
        ds = load_bundled(name, **DATASETS[name])
        X, y = scale_features(ds.X, "standard"), ds.y
        budget = args.session_budget if len(y) > 1000 else args.session_budget // 2
        t0 = time.perf_counter()
        full = run_comparison(
            X,
            y,
            strategies=HEURISTICS,
            solver=SOLVER,
            solver_params=PARAMS,
            budget=len(y),
            seeds=args.seeds,
            initial=10,
            test_fraction=0,
        )
        truth = full.summary.set_index("strategy")
        print(
            f"\n{name}: {len(y)} items, {int(np.sum(y > 0))} positive; sessions of {budget} labels; full "
            f"simulation {time.perf_counter() - t0:.0f} s"
        )
        means = [f"{s} {truth.loc[s, MEASURES[0]]:.0f} / {truth.loc[s, MEASURES[1]]:.0f}" for s in HEURISTICS]
        print(f"full simulation, mean labels to 80% / 95% recall over {args.seeds} seeds: " + ", ".join(means))
        print(f"{'session A':<18} {'B vs C':<34} {'measure':<10} {'same order':>10}  replay B / C (per seed)")
        for a in HEURISTICS:
            b, c = [s for s in HEURISTICS if s != a]
            t1 = time.perf_counter()
            agree = {m: 0 for m in MEASURES}
            seen: dict[str, list[str]] = {m: [] for m in MEASURES}
            recall_at_budget = []
            for seed in range(args.seeds):
                rows = session(X, y, a, budget, seed)
                recall_at_budget.append(np.sum(y[rows] > 0) / np.sum(y > 0))
                replay = run_replay(
                    X,
                    LabelledItems(
                        rows,
                        y[rows].astype(int),
                        strategy=a,
                        solver=SOLVER,
                        solver_params=PARAMS,
                        source=f"{a} session",
                    ),
                    strategies=[b, c],
                    seeds=args.replay_seeds,
                    initial=10,
                )
                got = replay.summary.set_index("strategy")
                for m in MEASURES:
                    full_order = np.sign(truth.loc[b, m] - truth.loc[c, m])
                    replay_order = np.sign(got.loc[b, m] - got.loc[c, m])
                    agree[m] += int(full_order == replay_order)
                    seen[m].append(f"{got.loc[b, m]:.0f}/{got.loc[c, m]:.0f}")
            for m in MEASURES:
                level = m.rsplit("_", 1)[1]
                print(
                    f"{a:<18} {b + ' vs ' + c:<34} {level + '%':<10} {f'{agree[m]}/{args.seeds}':>10}  "
                    + ", ".join(seen[m])
                )
            print(
                f"{'':<18} (sessions found {100 * np.mean(recall_at_budget):.0f}% of the positives on average; "
                f"{time.perf_counter() - t1:.0f} s)"
            )
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s; load at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
