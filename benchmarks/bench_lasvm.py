"""LASVM (one epoch + finishing) side by side with scikit-learn's SVC, and the
per-label latency of the randomized-search loop on large unlabelled pools.

    .venv/bin/python benchmarks/bench_lasvm.py            # full run
    .venv/bin/python benchmarks/bench_lasvm.py --quick    # smaller pools, one repeat

Run as a user runs it: no thread variables are set here (the script prints the
BLAS thread configuration it found).  LASVM itself runs BLAS on one thread
while it works, as libsvm does (its kernel blocks are small).

Table 1 — same kernel, C, gamma and tolerance for both; LASVM learns the
training set once in a random order and then runs ``finish()``.  Rows: the
paper's finishing step (REPROCESS until delta <= tau on the current set S,
``final_check=False``) and the solver's default, which afterwards also
re-checks the learned examples that left S (``final_check=True``:
tau-optimal over every learned example), both with ``learn_sequence`` (one
call for the pass, kernel rows in blocks: what a one-pass fit uses); and the
default again with one ``learn`` call per example (the online path).
Seconds are the best of ``--repeats`` interleaved runs (the machine may be
shared), and include building the solver's data store; the compiled code is
loaded once before (its one-time cost is printed), and each timed run starts
after a pause of 0.3 s (``settle``: BLAS threads left spinning by the
previous run's scoring would otherwise be counted).  CPU seconds
(``time.process_time``) are printed next to wall seconds: on a shared machine
wall time also counts the time other processes held the cores, so read the
CPU ratio there.  Targets: LASVM <= 0.5x SVC on the 784-feature digits,
<= 1.5x SVC on the 2-D banana (default LASVM, one pass + finishing).

Table 0 — real data as a package ships it: scikit-learn's 1,797 handwritten
8x8 digits (``load_digits``, no download), "8 vs rest", 1,347 train / 450 test,
C = 10, gamma = "scale", tol = 1e-3; LASVM's default one pass
(``learn_sequence``) + ``finish()`` against SVC's ``fit``.  Cold = the first
call in a fresh Python process (a subprocess per solver and repeat, numpy and
the data loaded before the clock starts): the import of the solver (LASVM:
``core.solvers.lasvm``, which brings in Numba and SciPy; SVC: ``sklearn.svm``)
plus the first fit, and the first fit alone, which for LASVM includes loading
its compiled code from Numba's on-disk cache (``warm_up`` is not called); warm
= best of ``--repeats`` later calls in this process.  ``--real-only`` prints
this table alone; ``--profile-first-call`` prints where a fresh process's first
LASVM call spends its CPU time (cProfile).

Table 2 — pools of 10k, 100k and 1M synthetic items (20 features); after 300
labels, the time of one ``learn`` plus one ``decision_function`` over 59
random candidates (LASVM randomized search, §4.3), median and 90th percentile
over the measured labels.  Target: <= 5 ms median, flat in the pool size.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._lasvm_data import DIGITS_TITLE, REAL_DIGITS_TITLE, banana, digits_784, real_digits
from benchmarks._threads_info import thread_configuration
from core.kernels import resolve_gamma
from core.solvers.lasvm import LASVM


def warm_up() -> float:
    """Load LASVM's compiled code (cached on disk after the first run) and return the seconds it took."""
    from core.solvers.lasvm import warm_up as load_compiled

    return load_compiled()


def settle() -> None:
    """Let BLAS worker threads go idle before a timed run.

    After a multi-threaded BLAS call (scoring the test set after the previous
    run) OpenBLAS's worker threads spin for about 0.1 s before sleeping; that
    spinning would count in the next run's CPU time and take a core from it.
    """
    time.sleep(0.3)


def print_head(head: str) -> None:
    print(head)
    print("  " + "-" * (len(head) - 2))


def run_lasvm(Xtr, ytr, Xte, yte, C, gamma, tol, seed, final_check, sequence=True):
    settle()
    t0, c0 = time.perf_counter(), time.process_time()
    s = LASVM(Xtr, C=C, gamma=gamma, tol=tol, final_check=final_check)
    order = np.random.default_rng(seed).permutation(len(Xtr))
    if sequence:
        s.learn_sequence(order, ytr[order])
    else:
        for i in order:
            s.learn(int(i), ytr[i])
    r = s.finish()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    acc = float(np.mean(np.where(s.decision_function(X=Xte) >= 0, 1.0, -1.0) == yte))
    return dict(
        acc=acc, n_sv=s.n_support_, evals=s.n_kernel_evals, seconds=seconds, cpu=cpu, gap=s.kkt_gap(), status=r.status
    )


def run_svc(Xtr, ytr, Xte, yte, C, gamma, tol):
    from sklearn.svm import SVC

    settle()
    t0, c0 = time.perf_counter(), time.process_time()
    clf = SVC(C=C, kernel="rbf", gamma=gamma, tol=tol).fit(Xtr, ytr)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dict(acc=float(clf.score(Xte, yte)), n_sv=int(clf.n_support_.sum()), evals=None, seconds=seconds, cpu=cpu)


def compare(title, data, C, gamma, tol, repeats, target, seed=0):
    Xtr, ytr, Xte, yte = data
    variants = {
        "SVC (libsvm)": None,
        "lasvm 1 pass + finishing (paper)": dict(final_check=False),
        "lasvm 1 pass + finishing + final check (default)": dict(final_check=True),
        "  the same, one learn() call per example": dict(final_check=True, sequence=False),
    }
    runs = {name: [] for name in variants}
    for rep in range(repeats):  # interleaved so that a busy machine hurts all alike
        for name, opts in variants.items():
            if opts is None:
                runs[name].append(run_svc(Xtr, ytr, Xte, yte, C, gamma, tol))
            else:
                runs[name].append(run_lasvm(Xtr, ytr, Xte, yte, C, gamma, tol, seed + rep, **opts))
    print(f"\n{title}")
    print(
        f"  train {len(Xtr)} x {Xtr.shape[1]}, test {len(Xte)}; rbf kernel, C={C:g}, gamma={gamma:.6g}, "
        f"tol={tol:g}; wall and CPU seconds = best of {repeats}; accuracy/SVs/evals of the first run; "
        f"target: default LASVM <= {target:g}x SVC"
    )
    head = (
        f"  {'solver':<50} {'accuracy':>9} {'Δacc pts':>9} {'SVs':>6} {'kernel evals':>13} {'wall s':>7} "
        f"{'× SVC':>6} {'CPU s':>7} {'× SVC':>6} {'gap':>9} {'target':>7}"
    )
    print_head(head)
    svc_s = min(r["seconds"] for r in runs["SVC (libsvm)"])
    svc_cpu = min(r["cpu"] for r in runs["SVC (libsvm)"])
    svc_acc = runs["SVC (libsvm)"][0]["acc"]
    for name, rs in runs.items():
        r = rs[0]
        sec = min(x["seconds"] for x in rs)
        cpu = min(x["cpu"] for x in rs)
        evals = "n/a" if r["evals"] is None else f"{r['evals']:,}"
        gap = f"{r['gap']:.2e}" if "gap" in r else "n/a"
        aim = f"<= {target:g}" if "(default)" in name else ""
        print(
            f"  {name:<50} {100 * r['acc']:>8.2f}% {100 * (r['acc'] - svc_acc):>+9.2f} {r['n_sv']:>6} "
            f"{evals:>13} {sec:>7.3f} {sec / svc_s:>6.2f} {cpu:>7.3f} {cpu / svc_cpu:>6.2f} {gap:>9} {aim:>7}"
        )
    return runs


REAL = dict(C=10.0, gamma="scale", tol=1e-3)


# The fresh process's first call: numpy only before the clock starts (the data come from a file the
# parent wrote), then the import of the solver (LASVM: core.solvers.lasvm, whose compiled loops Numba
# loads from its on-disk cache on their first call; SVC: sklearn.svm) and the fit, as a user's first
# call in a process pays them.  Prints JSON; with --profile, cProfile's top entries instead.
FIRST_CALL = r"""
import json, sys, time
import numpy as np
which, data, profile = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
with np.load(data) as z:
    Xtr, ytr, Xte, yte = z["Xtr"], z["ytr"], z["Xte"], z["yte"]
    C, gamma, tol = (float(v) for v in z["params"])
if profile:
    import cProfile
    prof = cProfile.Profile(time.process_time)  # (CPU time: a shared machine's wall time counts the others)
    prof.enable()
t0, c0 = time.perf_counter(), time.process_time()
if which == "lasvm":
    from core.solvers.lasvm import LASVM
    t_import, c_import = time.perf_counter() - t0, time.process_time() - c0
    s = LASVM(Xtr, C=C, gamma=gamma, tol=tol)
    order = np.random.default_rng(0).permutation(len(Xtr))
    s.learn_sequence(order, ytr[order])
    status = s.finish().status
else:
    from sklearn.svm import SVC
    t_import, c_import = time.perf_counter() - t0, time.process_time() - c0
    clf = SVC(C=C, kernel="rbf", gamma=gamma, tol=tol).fit(Xtr, ytr)
    status = "ok"
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
if profile:
    import pstats
    prof.disable()
    print(f"first {which} call in a fresh process: {seconds:.3f} s wall, {cpu:.3f} s CPU (import {t_import:.3f} s); "
          "cProfile, top entries by cumulative CPU time:")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
else:
    f = s.decision_function(X=Xte) if which == "lasvm" else clf.decision_function(Xte)
    acc = float(np.mean(np.where(f >= 0, 1.0, -1.0) == yte))
    print(json.dumps(dict(seconds=seconds, cpu=cpu, import_seconds=t_import, import_cpu=c_import, status=status,
                          acc=acc)))
"""


def _fresh_process(which: str, data_file: str, profile: bool = False) -> dict | None:
    done = subprocess.run(
        [sys.executable, "-c", FIRST_CALL, which, data_file, "1" if profile else "0"],
        capture_output=not profile,
        text=True,
        check=True,
    )
    return None if profile else json.loads(done.stdout.strip().splitlines()[-1])


def _real_data_file(directory: str) -> str:
    """The real digits and the parameters in an .npz file for the fresh processes (gamma resolved here)."""
    Xtr, ytr, Xte, yte = real_digits()
    gamma = resolve_gamma(REAL["gamma"], Xtr)
    path = str(Path(directory) / "digits.npz")
    np.savez(path, Xtr=Xtr, ytr=ytr, Xte=Xte, yte=yte, params=np.array([REAL["C"], gamma, REAL["tol"]]))
    return path


def real_data(repeats: int) -> None:
    """Table 0: the real digits, cold (a fresh process's first call) and warm, LASVM against SVC."""
    Xtr, ytr, Xte, yte = data = real_digits()
    gamma = resolve_gamma(REAL["gamma"], Xtr)
    cold = {"lasvm": [], "svc": []}
    with tempfile.TemporaryDirectory() as tmp:
        data_file = _real_data_file(tmp)
        for _ in range(repeats):  # interleaved
            for which in cold:
                cold[which].append(_fresh_process(which, data_file))
    warm = {"lasvm": [], "svc": []}
    warm_up()  # (the compiled code loaded in this process before the warm runs)
    for rep in range(repeats):
        warm["svc"].append(run_svc(Xtr, ytr, Xte, yte, REAL["C"], gamma, REAL["tol"]))
        warm["lasvm"].append(run_lasvm(*data, REAL["C"], gamma, REAL["tol"], seed=rep, final_check=True))
    print(f"\nReal data — {REAL_DIGITS_TITLE}")
    print(
        f"  train {len(Xtr)} x {Xtr.shape[1]}, test {len(Xte)}; rbf kernel, C={REAL['C']:g}, "
        f"gamma=scale={gamma:.6g}, tol={REAL['tol']:g}; one pass + finish (LASVM default) against SVC.fit; "
        f"seconds = best of {repeats} (cold: each in a fresh process, the import of the solver included)"
    )
    head = (
        f"  {'':<27} {'LASVM wall s':>13} {'SVC wall s':>11} {'× SVC':>6} {'LASVM CPU s':>12} {'SVC CPU s':>10} "
        f"{'× SVC':>6} {'LASVM acc':>10} {'SVC acc':>8}"
    )
    print_head(head)
    fit_only = {
        which: [dict(r, seconds=r["seconds"] - r["import_seconds"], cpu=r["cpu"] - r["import_cpu"]) for r in runs]
        for which, runs in cold.items()
    }
    for name, runs in (("cold: import + first fit", cold), ("cold: first fit (imported)", fit_only), ("warm", warm)):
        lw, sw = min(r["seconds"] for r in runs["lasvm"]), min(r["seconds"] for r in runs["svc"])
        lc, sc = min(r["cpu"] for r in runs["lasvm"]), min(r["cpu"] for r in runs["svc"])
        print(
            f"  {name:<27} {lw:>13.3f} {sw:>11.3f} {lw / sw:>6.2f} {lc:>12.3f} {sc:>10.3f} {lc / sc:>6.2f} "
            f"{100 * runs['lasvm'][0]['acc']:>9.2f}% {100 * runs['svc'][0]['acc']:>7.2f}%"
        )
    print(
        "  (cold: a fresh process per run; LASVM's import brings in Numba, its first fit loads the compiled loops "
        "from Numba's disk cache (Numba sets up its typing and target contexts on the first call): see "
        "--profile-first-call)"
    )


def latency(pool_sizes, n_labels=300, n_measure=60, n_candidates=59, d=20, seed=0):
    print(
        f"\nPer-label latency, randomized search: one learn + decision_function on {n_candidates} random "
        f"candidates after {n_labels} labels\n  synthetic pool, {d} standard-normal features, "
        f"label = sign(x0 + 0.5 x1^2 - 0.5 + 0.3 noise); rbf gamma = 0.05, C = 1, tol = 1e-3; "
        f"{n_measure} measured labels; target <= 5 ms median, flat"
    )
    head = (
        f"  {'pool items':>10} {'|S|':>5} {'SVs':>5} {'learn ms':>9} {'decide ms':>10} {'total ms (median)':>18} "
        f"{'total ms (p90)':>15} {'learn kernel evals':>19}"
    )
    print_head(head)
    for N in pool_sizes:
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((N, d))
        y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 + 0.3 * rng.standard_normal(N) > 0, 1.0, -1.0)
        s = LASVM(X, C=1.0, gamma=0.05, tol=1e-3)
        del X
        order = rng.choice(N, n_labels + n_measure, replace=False)
        for i in order[:n_labels]:
            s.learn(int(i), y[i])
        t_learn, t_dec, evals = [], [], []
        for i in order[n_labels:]:
            cand = rng.choice(N, n_candidates, replace=False)
            t0 = time.perf_counter()
            r = s.learn(int(i), y[i])
            t1 = time.perf_counter()
            f = s.decision_function(cand)
            t2 = time.perf_counter()
            assert np.all(np.isfinite(f))
            t_learn.append(t1 - t0)
            t_dec.append(t2 - t1)
            evals.append(r.kernel_evals)
        tot = 1e3 * (np.array(t_learn) + np.array(t_dec))
        print(
            f"  {N:>10,} {s.set_size_:>5} {s.n_support_:>5} {1e3 * np.median(t_learn):>9.3f} "
            f"{1e3 * np.median(t_dec):>10.3f} {np.median(tot):>18.3f} {np.percentile(tot, 90):>15.3f} "
            f"{int(np.median(evals)):>19}"
        )
        del s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one repeat, pools up to 100k")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--real-only", action="store_true", help="only the real-data table (cold and warm)")
    ap.add_argument(
        "--profile-first-call",
        action="store_true",
        help="profile a fresh process's first LASVM call on the real digits, then stop",
    )
    args = ap.parse_args(argv)
    if args.profile_first_call:
        with tempfile.TemporaryDirectory() as tmp:
            _fresh_process("lasvm", _real_data_file(tmp), profile=True)
        return
    repeats = 1 if args.quick else args.repeats
    print(thread_configuration())
    real_data(repeats)  # (first: its cold runs are fresh processes, its warm runs load the compiled code here)
    if args.real_only:
        return
    print(f"LASVM's compiled code loaded in {warm_up():.2f} s (once per process; compiled on the first run ever)")

    digits = digits_784(n_train=4000, n_test=1000, seed=0)
    gamma = resolve_gamma("scale", digits[0])
    compare(f"Digits '8 vs rest' — {DIGITS_TITLE}", digits, C=10.0, gamma=gamma, tol=1e-3, repeats=repeats, target=0.5)

    Xb, yb = banana(5000, seed=1)
    bdata = (Xb[:3000], yb[:3000], Xb[3000:], yb[3000:])
    compare(
        "Banana — two interleaved noisy half-moons in 2-D (radius 2, Gaussian noise sd 0.6), 3,000 train / 2,000 test",
        bdata,
        C=1.0,
        gamma=0.5,
        tol=1e-3,
        repeats=repeats,
        target=1.5,
    )

    latency([10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000])


if __name__ == "__main__":
    main()
