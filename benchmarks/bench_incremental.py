"""Benchmark: learning one more label with the exact incremental SVM vs retraining SVC.

Target (issue 2): with 300 and 1,000 labelled examples already learned, one
more label is learned at least 20x faster than scikit-learn's SVC retrains
from scratch on the same examples (same kernel, C, gamma).

For each size n the store holds the first n + 200 rows of the data (the
last row: a 3,500-item pool), the incremental model first learns rows
0..n-1 (not timed), then learns ``--extra`` further labels one at a time;
for each of them SVC is refitted from scratch on exactly the examples the
model then held (in a second loop, so SVC's timing includes no cache misses
caused by the incremental model).  Extra labels come in "random" order (the
next row; rows are in random order; no query) or "near-boundary" (the
unlabelled store row with the smallest |f|).  For near-boundary labels the
unlabelled store rows are scored before every timed label (the query of the
active-learning loop), so the incremental update starts with caches the query
has just used, as it does in the loop; a replay of the same labels without
the query in between is reported alongside ("back to back").  The table
reports medians per extra label.

Run:  .venv/bin/python benchmarks/bench_incremental.py
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np

from benchmarks._lasvm_data import DIGITS_TITLE, digits_784
from benchmarks._threads_info import thread_configuration
from core.kernels import resolve_gamma
from core.solvers.incremental import IncrementalOneClassSVM, IncrementalSVM


def svc_fit_seconds(X, y, C, gamma, tol):
    """(wall seconds, CPU seconds, fitted SVC)."""
    from sklearn.svm import SVC

    c0, t0 = time.process_time(), time.perf_counter()
    svc = SVC(kernel="rbf", C=C, gamma=gamma, tol=tol).fit(X, y)
    return time.perf_counter() - t0, time.process_time() - c0, svc


def run_case(X, y, n_labelled, n_extra, C, gamma, tol, order, store_size):
    """Learn n_labelled, then time n_extra single labels against SVC retraining.

    order: "random" (the next stored example) or "near-boundary" (the unlearned
    stored example with the smallest |f|, as the active-learning loop asks).
    """
    store = X[:store_size]
    model = IncrementalSVM(store, kernel="rbf", C=C, gamma=gamma)
    for i in range(n_labelled):
        model.learn(i, y[i])
    candidates = np.arange(n_labelled, store_size)
    replay = copy.deepcopy(model)
    inc_s, svc_s, inc_cpu, svc_cpu, evals, iters, held_sets, picks = [], [], [], [], [], [], [], []
    for k in range(n_extra):
        if order == "random":
            j = int(candidates[k])
        else:  # the query: score the unlabelled store rows, take the one nearest the boundary
            free = candidates[model.y[candidates] == 0]
            j = int(free[np.argmin(np.abs(model.decision_function(free)))])
        picks.append(j)
        c0 = time.process_time()
        res = model.learn(j, y[j])
        inc_cpu.append(time.process_time() - c0)
        inc_s.append(res.seconds)
        evals.append(res.kernel_evals)
        iters.append(res.iterations)
        held_sets.append(model.labelled_.copy())
    # the same labels back to back (no query in between): the update with warm caches
    back_cpu = []
    for j in picks:
        c0 = time.process_time()
        replay.learn(j, y[j])
        back_cpu.append(time.process_time() - c0)
    # SVC retrains from scratch on exactly the examples the model held after each extra label
    # (a separate loop, so that neither side runs with caches the other has just evicted)
    for held in held_sets:
        secs, cpu, svc = svc_fit_seconds(X[held], y[held], C, gamma, tol)
        svc_s.append(secs)
        svc_cpu.append(cpu)
    held = model.labelled_
    diff = float(np.max(np.abs(model.decision_function(held) - svc.decision_function(X[held]))))
    row = dict(
        n=n_labelled,
        order=order,
        store=len(store),
        inc=float(np.median(inc_s)),
        svc=float(np.median(svc_s)),
        inc_cpu=float(np.median(inc_cpu)),
        svc_cpu=float(np.median(svc_cpu)),
        back_cpu=float(np.median(back_cpu)),
        evals=int(np.median(evals)),
        iters=float(np.median(iters)),
        sv=model.n_support_,
        sv_svc=int(svc.n_support_.sum()),
        n_S=int(len(model.sets()["S"])),
        kkt=model.kkt_violation(),
        diff=diff,
    )
    t0 = time.perf_counter()
    model.decision_function(np.arange(len(store)))
    row["score_store"] = time.perf_counter() - t0
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extra", type=int, default=25, help="extra labels timed per size (median reported)")
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--tol", type=float, default=1e-3, help="SVC's tolerance")
    ap.add_argument("--sizes", default="300,1000")
    ap.add_argument("--pool", type=int, default=3500)
    ap.add_argument("--nu", type=float, default=0.1, help="nu of the one-class cold-start line")
    ap.add_argument("--candidates", type=int, default=200, help="unlabelled candidates in the store (first rows)")
    args = ap.parse_args()

    X, y, _, _ = digits_784(n_train=max(args.pool, 1000 + args.extra), n_test=1, seed=0)
    gamma = resolve_gamma("scale", X)
    print(
        f"One more label: exact incremental SVM (IncrementalSVM.learn) vs scikit-learn SVC refitted from "
        f"scratch on the same labelled examples, {args.extra} extra labels per row, medians per label"
    )
    print(
        f"Data: {X.shape[1]}-feature digits '8 vs rest' ({DIGITS_TITLE}); store = the first n_labelled + "
        f"{args.candidates} rows (last row: the first {args.pool} rows, a pool), rows 0..n_labelled-1 learned "
        f"first (not timed), extra labels from the other store rows: 'random' = the next row, "
        f"'near-boundary' = the unlabelled store row with the smallest |f| after scoring them all (the query)"
    )
    print(
        f"Setting: RBF kernel, gamma='scale' = {gamma:.5g}, C = {args.C:g}, same for both; SVC tol = {args.tol:g}; "
        f"threads as installed (no thread variable set by this script); target: SVC time / incremental time >= 20"
    )
    print(thread_configuration())
    print()
    head = (
        f"{'n_labelled':>10} {'extra labels':>13} {'store':>6} | {'incr s/label':>12} {'SVC retrain s':>13} "
        f"{'ratio':>7} | {'incr CPU s':>10} {'SVC CPU s':>10} {'ratio':>7} | {'target':>6} "
        f"{'back2back CPU':>13} {'ratio':>7} | "
        f"{'kernel evals':>12} {'minor it':>8} {'SV inc/SVC':>10} {'|S|':>4} {'KKT viol':>8} {'max|f-f_svc|':>12}"
    )
    print(head)
    print("-" * len(head))
    rows = []
    for n in (int(v) for v in args.sizes.split(",")):
        for order in ("random", "near-boundary"):
            rows.append(run_case(X, y, n, args.extra, args.C, gamma, args.tol, order, n + args.candidates))
    rows.append(run_case(X, y, 300, args.extra, args.C, gamma, args.tol, "near-boundary", args.pool))
    for r in rows:
        ratio, ratio_cpu = r["svc"] / r["inc"], r["svc_cpu"] / r["inc_cpu"]
        print(
            f"{r['n']:>10} {r['order']:>13} {r['store']:>6} | {r['inc']:>12.5f} {r['svc']:>13.5f} "
            f"{ratio:>6.1f}x | {r['inc_cpu']:>10.5f} {r['svc_cpu']:>10.5f} {ratio_cpu:>6.1f}x | {'>=20x':>6} "
            f"{r['back_cpu']:>13.5f} {r['svc_cpu'] / r['back_cpu']:>6.1f}x | "
            f"{r['evals']:>12} {r['iters']:>8g} {str(r['sv']) + '/' + str(r['sv_svc']):>10} {r['n_S']:>4} "
            f"{r['kkt']:>8.1e} {r['diff']:>12.1e}"
        )
    pool_row = rows[-1]
    print()
    print(
        f"Pool scenario (last row): store {pool_row['store']}x{X.shape[1]}, 300 learned, extra labels picked "
        f"near the boundary; scoring the whole store with the updated model: {pool_row['score_store']:.4f} s "
        f"(query cost, not included in s/label)"
    )
    n_cold = min(args.pool, len(X))
    oc = IncrementalOneClassSVM(X[:n_cold], kernel="rbf", gamma=gamma, nu=args.nu)
    c0, t0 = time.process_time(), time.perf_counter()
    for i in range(n_cold):
        oc.learn(i)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"One-class cold start (no labels): learning all {n_cold} pool items one at a time, nu = {args.nu:g}: "
        f"{wall:.2f} s wall, {cpu:.2f} s CPU, {oc.n_support_} support vectors, exact KKT violation "
        f"{oc.kkt_violation():.1e}"
    )
    print(
        "Times are medians over the extra labels: wall clock (the solver's StepResult.seconds) and CPU time of "
        "the process (less sensitive to other load on the machine); the ratios are SVC's time over the "
        "incremental model's. back2back CPU: the incremental model's CPU time per label when the same labels "
        "are learned again on a copy without the query in between (warm caches; SVC is always timed in its "
        "own loop, without queries). max|f-f_svc|: agreement with SVC at its own tolerance; KKT viol: the "
        "incremental model's exact largest KKT violation after the last label."
    )


if __name__ == "__main__":
    main()
