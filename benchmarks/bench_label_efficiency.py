"""Label efficiency on the bundled digits, "8 vs rest".

One ``core.experiment.run_comparison`` over fixed seeds (each seed: a
stratified 70/30 split, the held-out 30% scores every model; the true labels
of the 70% pool answer the queries; 10 random initial labels shared by all
strategies).  Reported against the targets:

* ``near-boundary`` (incremental): labels to reach 99% of the full-data AUC
  (the same solver trained on the whole pool), as a share of the pool.
  Target: <= 10% of the pool.
* ``randomized-search`` and ``autoactive`` (lasvm) vs ``random`` (lasvm):
  support vectors at equal AUC -- at the first label where each run reaches
  99% of the full-data AUC, and at the end of the budget.  The LASVM paper's
  finding: active selection ends with fewer support vectors.
* ``ramp-region`` (ramp): labels asked vs pool items seen (asked + passed over).

Run:  .venv/bin/python benchmarks/bench_label_efficiency.py [--seeds 5 --budget 300 --jobs 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from core.datasets import load_bundled
from core.experiment import run_comparison

STRATEGIES = ["near-boundary", "randomized-search", "autoactive", "ramp-region", "random"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--C", type=float, default=10.0)
    args = ap.parse_args()

    ds = load_bundled("digits", positive=8)
    t0 = time.perf_counter()
    res = run_comparison(
        ds.X,
        ds.y,
        strategies=STRATEGIES,
        solver_params={"C": args.C, "kernel": "rbf"},
        budget=args.budget,
        seeds=args.seeds,
        initial=10,
        test_fraction=0.3,
        n_jobs=args.jobs,
    )
    seconds = time.perf_counter() - t0
    n_pool = int(res.references["n_train"].iloc[0])
    print(
        f"digits 8 vs rest: {len(ds)} items, pool {n_pool}, evaluation {len(ds) - n_pool}; C={args.C}, "
        f"rbf gamma='scale'; seeds 0..{args.seeds - 1}; budget {args.budget}; {seconds:.0f} s"
    )
    print("\nfull-data reference AUC (mean over seeds):")
    for solver, g in res.references.groupby("solver"):
        print(f"  {solver:<12} AUC {g.auc.mean():.4f}  SVs {g.n_sv.mean():.0f}")
    print()
    print(res.summary_text())

    rows, runs = res.rows, res.runs
    print(
        "\n== near-boundary: labels to reach 99% of full-data AUC (target <= 10% of the pool = "
        f"{0.1 * n_pool:.0f} labels)"
    )
    nb = runs[runs.strategy == "near-boundary"]
    for r in nb.itertuples():
        reached = "never" if np.isnan(r.labels_99) else f"{int(r.labels_99)} labels = {100 * r.labels_99 / n_pool:.1f}%"
        print(f"  seed {r.seed}: {reached}")
    l99 = nb.labels_99.to_numpy(dtype=float)
    ok = np.isfinite(l99)
    print(
        f"  mean {np.nanmean(l99):.1f} labels = {100 * np.nanmean(l99) / n_pool:.1f}% of the pool "
        f"(reached on {ok.sum()}/{len(l99)} seeds; worst {np.nanmax(l99):.0f} = "
        f"{100 * np.nanmax(l99) / n_pool:.1f}%)"
    )

    print("\n== support vectors at equal AUC (mean over seeds)")
    print(
        f"  {'strategy':<18} {'solver':<7} {'labels to 99%':>13} {'SVs there':>10} {'AUC there':>10}   "
        f"{'final AUC':>9} {'final SVs':>9}"
    )
    for s in ("randomized-search", "autoactive", "random", "near-boundary", "ramp-region"):
        sv_at, auc_at, lab_at = [], [], []
        for r in runs[runs.strategy == s].itertuples():
            if np.isnan(r.labels_99):
                continue
            g = rows[(rows.strategy == s) & (rows.seed == r.seed) & (rows.n_labels == int(r.labels_99))]
            sv_at.append(int(g.n_sv.iloc[0]))
            auc_at.append(float(g.auc.iloc[0]))
            lab_at.append(int(r.labels_99))
        rr = runs[runs.strategy == s]
        reached = f"{np.mean(lab_at):.0f} ({len(lab_at)}/{len(rr)})" if lab_at else f"never (0/{len(rr)})"
        print(
            f"  {s:<18} {rr.solver.iloc[0]:<7} {reached:>13} {np.mean(sv_at) if sv_at else np.nan:>10.1f} "
            f"{np.mean(auc_at) if auc_at else np.nan:>10.4f}   {rr.final_auc.mean():>9.4f} "
            f"{rr.final_n_sv.mean():>9.1f}"
        )

    print("\n== support vectors where each run first reaches the AUC that random ends with (same seed)")
    print(
        f"  {'strategy':<18} {'labels':>8} {'SVs there':>10}   (random: {args.budget} labels, "
        f"{runs[runs.strategy == 'random'].final_n_sv.mean():.1f} SVs, AUC "
        f"{runs[runs.strategy == 'random'].final_auc.mean():.4f})"
    )
    final_random = runs[runs.strategy == "random"].set_index("seed")["final_auc"]
    for s in ("randomized-search", "autoactive", "near-boundary", "ramp-region"):
        labels, svs = [], []
        for seed, target in final_random.items():
            g = rows[(rows.strategy == s) & (rows.seed == seed)].sort_values("n_labels")
            hit = g[g.auc >= target]
            if len(hit):
                labels.append(int(hit.n_labels.iloc[0]))
                svs.append(int(hit.n_sv.iloc[0]))
        print(
            f"  {s:<18} {np.mean(labels) if labels else np.nan:>8.1f} {np.mean(svs) if svs else np.nan:>10.1f}   "
            f"(reached on {len(labels)}/{len(final_random)} seeds)"
        )

    print("\n== ramp-region: labels asked vs items seen (asked + passed over without a label)")
    rp = runs[runs.strategy == "ramp-region"]
    for r in rp.itertuples():
        print(
            f"  seed {r.seed}: asked {r.labels_asked}, seen {r.items_seen} "
            f"({100 * r.labels_asked / max(1, r.items_seen):.0f}% asked), final AUC {r.final_auc:.4f}"
        )


if __name__ == "__main__":
    main()
