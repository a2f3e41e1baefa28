"""C and gamma chosen from the labels ("auto") against the fixed defaults (C = 1, gamma = "scale"), side by side.

Datasets the other benchmarks use: the bundled digits ("8 vs rest", rbf), breast cancer ("malignant",
rbf) and the NCI molecules (a substructure-defined label, Tanimoto kernel on Morgan fingerprints: gamma
plays no part, so only C is chosen there).  The digits and breast cancer are standardised (``compare``'s
default); the fingerprints are not.  Per dataset and seed: a stratified split (30% held out, as
``compare`` does), then an ``ActiveLearningLoop`` (near-boundary, incremental solver, 10 random labels
first, answers from the true labels) once with the fixed defaults and once with
``auto=("C", "gamma")`` (grid C in 0.1, 1, 10, 100 and gamma in 0.5, 1, 2 x the median heuristic;
re-chosen at 20, 40, 80, 160, ... labels), otherwise identical.  Printed per dataset and budget: the
held-out AUC (mean over seeds) of each, auto's wins/ties/losses, and the per-label update time:
median over all labels, and at the re-choice labels (median and largest), with the values chosen.

Run:  .venv/bin/python benchmarks/bench_auto_hyper.py [--seeds 5 --budget 200]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from core.datasets import load_bundled, stratified_split
from core.features import scale_features
from core.loop import ActiveLearningLoop
from core.metrics import roc_auc

DATASETS = {"digits": ("digits", None, "rbf"), "breast-cancer": ("breast-cancer", None, "rbf"),
            "nci-molecules": ("nci-molecules", None, "tanimoto")}
CONFIGS = {"fixed": {}, "auto": {"auto": ["C", "gamma"]}}


def data(name: str):
    bundled, positive, kernel = DATASETS[name]
    ds = load_bundled(bundled, positive=positive)
    X = ds.X if kernel == "tanimoto" else scale_features(ds.X, "standard", ds.numeric_columns)
    return X, ds.y, kernel


def run(X, y, kernel, seed, params, budget, checkpoints):
    train, test = stratified_split(y, 0.3, np.random.default_rng([seed, 0xE7A1]))
    loop = ActiveLearningLoop(X[train], strategy="near-boundary", solver="incremental", seed=seed, initial=10,
                              solver_params=dict(kernel=kernel, **params), eval_X=X[test], eval_y=y[test])
    ytr = y[train]
    aucs = {}
    while loop.n_labels < budget:
        q = loop.next_query()
        if q is None:
            break
        loop.teach(q.index, int(ytr[q.index]))
        if loop.n_labels in checkpoints:
            aucs[loop.n_labels] = roc_auc(y[test], loop.evaluation_scores())
    ms = np.array([r.update_ms for r in loop.history])
    choices = getattr(loop.solver, "hyper_choices", [])
    at = [c["n_labels"] for c in choices if c["n_labels"] > 0]
    return dict(auc=[aucs.get(c, np.nan) for c in checkpoints], ms=ms, at=at,
                rechoice_ms=[ms[n - 1] for n in at if n <= len(ms)],
                chosen=[(c["n_labels"], c["C"], c["gamma"]) for c in choices if c["n_labels"] > 0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--datasets", default=",".join(DATASETS))
    args = ap.parse_args()
    checkpoints = [c for c in (30, 60, 100, 200, 300) if c <= args.budget]
    t_start = time.perf_counter()
    print(f"load {os.getloadavg()[0]:.1f}; seeds 0..{args.seeds - 1}; budget {args.budget}; near-boundary, "
          f"incremental, 10 random labels first; held-out AUC (30% of each dataset), mean over seeds")
    for name in args.datasets.split(","):
        X, y, kernel = data(name)
        res = {cfg: [run(X, y, kernel, seed, params, args.budget, checkpoints) for seed in range(args.seeds)]
               for cfg, params in CONFIGS.items()}
        print(f"\n{name}: {X.shape[0]} items, {int(np.sum(y > 0))} positives, {kernel} kernel")
        print(f"{'labels':>6} | {'AUC fixed':>9} | {'AUC auto':>9} | {'auto - fixed':>12} | auto w/t/l")
        for k, c in enumerate(checkpoints):
            f = np.array([r["auc"][k] for r in res["fixed"]])
            a = np.array([r["auc"][k] for r in res["auto"]])
            d = a - f
            wtl = f"{int(np.sum(d > 1e-3))}/{int(np.sum(abs(d) <= 1e-3))}/{int(np.sum(d < -1e-3))}"
            print(f"{c:>6} | {np.nanmean(f):9.4f} | {np.nanmean(a):9.4f} | {np.nanmean(d):+12.4f} | {wtl}")
        med = {cfg: float(np.median(np.concatenate([r["ms"] for r in rs]))) for cfg, rs in res.items()}
        rech = np.concatenate([r["rechoice_ms"] for r in res["auto"]]) if res["auto"] else np.zeros(0)
        print(f"update ms per label, median: fixed {med['fixed']:.2f}, auto {med['auto']:.2f}; at the re-choice "
              f"labels (auto): median {np.median(rech) if len(rech) else float('nan'):.0f}, "
              f"largest {rech.max() if len(rech) else float('nan'):.0f}")
        by_moment: dict[int, list[float]] = {}
        for r in res["auto"]:
            for n, m in zip(r["at"], r["rechoice_ms"], strict=False):
                by_moment.setdefault(n, []).append(m)
        print("re-choice ms by label count (median over the seeds): "
              + ", ".join(f"{n}: {np.median(v):.0f}" for n, v in sorted(by_moment.items())))
        for seed, r in enumerate(res["auto"]):
            if kernel == "rbf":
                print(f"  seed {seed} chose (labels: C, gamma): "
                      + "; ".join(f"{n}: {C:g}, {g:.3g}" for n, C, g in r["chosen"]))
            else:  # (gamma plays no part in the kernel)
                print(f"  seed {seed} chose (labels: C): " + "; ".join(f"{n}: {C:g}" for n, C, _ in r["chosen"]))
    print(f"\n{time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
