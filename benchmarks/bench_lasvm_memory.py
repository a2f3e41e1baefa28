"""Resident memory of LASVM: an active-learning session on a 784-feature pool, and a one-pass fit
with tens of thousands of support vectors, each next to its target.

    .venv/bin/python benchmarks/bench_lasvm_memory.py            # full run (several minutes)
    .venv/bin/python benchmarks/bench_lasvm_memory.py --quick    # 100 labels, a 12,000-example fit

Memory is the process's resident set (VmRSS in /proc/self/status) and its
peak (VmHWM, reset through /proc/self/clear_refs before each measured part),
in MiB, measured from a baseline taken after the imports and after LASVM's
compiled code has been loaded (so neither counts against the targets).

Part 1 — ``randomized-search`` with ``lasvm`` (the strategy's default solver,
default parameters: kernel row cache 256 MiB, undo memory 64 MiB) on a pool of
10,000 items x 784 features (the digits of ``benchmarks/_lasvm_data.py``),
the true labels as the oracle, 300 labels.  Target (issue: exact and safe):
resident memory within 300 MB of the pool's own size (float64) over the 300
labels.  Printed every 50 labels: memory, the undo copies' bytes as the loop
counts them, |S|, support vectors, and the median update time of the last 50
labels.  Side by side: what a dense K(S, S) would take at that |S| (what the
solver kept before its kernel values moved to a bounded row cache).

Part 2 — one pass of ``learn_sequence`` + ``finish()`` over 40,000 examples
(10 standard-normal features, label = sign(x0 + 0.5 x1), 30% of the labels
flipped: most examples end up support vectors), rbf gamma 0.1, C = 1, with
cache_bytes 64 MiB and 256 MiB, each in a fresh process.  Target: memory
within cache_bytes + O(n): the script prints the growth next to cache_bytes
(what is above it is the O(n) part: the solver's copy of the data, the
labels, LASVM's per-member arrays, the final check's per-example arrays and
its blocks of at most a few MiB) and the dense K(S, S) that |S| would need.
The gap is the largest violating pair over every learned example after
``finish()`` (the final check's), next to tol.

Run as a user runs it: no thread variables are set here; the configuration is printed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

from benchmarks._lasvm_data import digits_784
from benchmarks._memory import MiB, reset_peak, status
from benchmarks._threads_info import thread_configuration
from benchmarks.bench_lasvm import warm_up
from core.loop import ActiveLearningLoop
from core.solvers.lasvm import LASVM


def session(n_labels: int, report_every: int = 50) -> None:
    X, y, _, _ = digits_784(n_train=10_000, n_test=1, seed=0)
    y = y.astype(int)
    pool_mib = X.nbytes / MiB
    print(
        f"\nPart 1 — randomized-search / lasvm session, pool {len(X):,} x {X.shape[1]} "
        f"({pool_mib:.1f} MiB as float64), {n_labels} labels, default parameters"
    )
    print(
        f"  target: resident memory within 300 MB (286 MiB) of the pool's size, i.e. growth <= "
        f"{pool_mib + 300e6 / MiB:.0f} MiB over the baseline"
    )
    head = (
        f"  {'labels':>6} {'RSS growth MiB':>14} {'peak MiB':>9} {'target MiB':>10} {'ok':>3} "
        f"{'undo copies MiB':>15} {'|S|':>5} {'SVs':>5} {'rows cached':>11} {'row cache MiB':>13} "
        f"{'dense K(S,S) MiB':>16} {'update ms (median)':>18}"
    )
    print(head)
    print("  " + "-" * (len(head) - 2))
    base = status("VmRSS") - X.nbytes / MiB  # (the pool array itself counts towards the growth)
    reset_peak()
    loop = ActiveLearningLoop(X, strategy="randomized-search", seed=0)
    target = pool_mib + 300e6 / MiB
    worst = 0.0
    updates: list[float] = []
    for k in range(1, n_labels + 1):
        q = loop.next_query()
        row = loop.teach(q.index, int(y[q.index]))
        updates.append(row.update_ms)
        if k % report_every == 0 or k == n_labels:
            s = loop.solver
            grown = status("VmRSS") - base
            peak = status("VmHWM") - base
            worst = max(worst, peak)
            n = s.set_size_
            print(
                f"  {k:>6} {grown:>14.1f} {peak:>9.1f} {target:>10.0f} {'yes' if peak <= target else 'NO':>3} "
                f"{loop._snapshot_bytes / MiB:>15.2f} {n:>5} {s.n_support_:>5} {s.cached_rows_:>11} "
                f"{s.row_cache_bytes_ / MiB:>13.2f} {8 * n * n / MiB:>16.2f} "
                f"{np.median(updates[-report_every:]):>18.2f}"
            )
    print(
        f"  peak growth over the session: {worst:.1f} MiB; target <= {target:.0f} MiB: "
        f"{'met' if worst <= target else 'MISSED'}"
    )


def one_pass_header(n: int, d: int, flip: float) -> None:
    print(
        f"\nPart 2 — one pass (learn_sequence) + finish() over {n:,} x {d} noisy examples "
        f"({100 * flip:.0f}% labels flipped), rbf gamma 0.1, C = 1, tol 1e-3; each budget in a fresh process"
    )
    print(
        "  target: memory within cache_bytes + O(n); O(n) here: data + labels + LASVM's per-member and "
        "per-example arrays + blocks of a few MiB"
    )
    head = (
        f"  {'cache_bytes MiB':>15} {'phase':>7} {'seconds':>8} {'|S|':>6} {'SVs':>6} {'RSS growth MiB':>14} "
        f"{'peak MiB':>9} {'row cache MiB':>13} {'peak - cache MiB':>16} {'dense K(S,S) MiB':>16} "
        f"{'kernel evals':>15} {'gap':>9} {'status':>7}"
    )
    print(head)
    print("  " + "-" * (len(head) - 2))


def one_pass(n: int, budget: int, d: int = 10, flip: float = 0.3) -> None:
    """One row pair of Part 2 (run in a fresh process, so that no freed memory of earlier work hides growth)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1.0, -1.0)
    flipped = rng.random(n) < flip
    y[flipped] = -y[flipped]
    base = status("VmRSS")
    reset_peak()
    t0 = time.perf_counter()
    s = LASVM(X, C=1.0, gamma=0.1, cache_bytes=budget * MiB)
    r = s.learn_sequence(np.arange(n), y)
    show(budget, ("pass", time.perf_counter() - t0, r), s, base)
    t1 = time.perf_counter()
    r = s.finish()  # (its kkt_gap: the largest violating pair over every learned example)
    show(budget, ("finish", time.perf_counter() - t1, r), s, base)


def show(budget: int, phase, s: LASVM, base: float) -> None:
    name, seconds, result = phase
    gap = f"{result.kkt_gap:.2e}" if name == "finish" else "-"
    grown = status("VmRSS") - base
    peak = status("VmHWM") - base
    n = s.set_size_
    print(
        f"  {budget:>15} {name:>7} {seconds:>8.1f} {n:>6,} {s.n_support_:>6,} {grown:>14.1f} {peak:>9.1f} "
        f"{s.row_cache_bytes_ / MiB:>13.1f} {peak - budget:>16.1f} {8 * n * n / MiB:>16,.0f} "
        f"{s.n_kernel_evals:>15,} {gap:>9} {result.status:>7}",
        flush=True,
    )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100 labels; a 12,000-example fit")
    ap.add_argument("--labels", type=int, default=300)
    ap.add_argument("--examples", type=int, default=40_000)
    ap.add_argument("--budgets", default="64,256", help="cache_bytes of part 2, MiB")
    ap.add_argument("--fit-only", type=int, default=None, help=argparse.SUPPRESS)  # (child process of part 2)
    args = ap.parse_args(argv)
    n = 12_000 if args.quick else args.examples
    if args.fit_only is not None:
        warm_up()
        one_pass(n, args.fit_only)
        return
    print(thread_configuration())
    print(f"LASVM's compiled code loaded in {warm_up():.2f} s (before the baselines)")
    print(f"machine: {os.cpu_count()} cpus; load average {os.getloadavg()[0]:.1f} at the start")
    session(100 if args.quick else args.labels)
    one_pass_header(n, 10, 0.3)
    for budget in (int(b) for b in args.budgets.split(",")):
        extra = ["--quick"] if args.quick else ["--examples", str(n)]
        subprocess.run([sys.executable, __file__, "--fit-only", str(budget), *extra], check=True)


if __name__ == "__main__":
    main()
