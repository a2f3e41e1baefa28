"""Benchmark: ramp-loss OnlineSVMR vs scikit-learn's SVC (hinge loss) on noisy data.

    .venv/bin/python benchmarks/bench_ramp.py            # full run (10k checkerboard, 5k Gaussians)
    .venv/bin/python benchmarks/bench_ramp.py --n 2000   # smaller, quicker
    .venv/bin/python benchmarks/bench_ramp.py --sweep-C 1,3,10   # also the SV ratio against C

Data (core.datasets):
* checkerboard: 4x4 cells on [0, 1]^2, training labels with 15% flipped
  (``make_checkerboard(n, rng, flip=0.15)``); a noisy validation split of the
  same kind; a *clean* held-out test set.
* two overlapping Gaussians (``make_gaussians``, unit variance, means
  ``--separation`` apart): the labels are noisy by construction (Bayes error
  Phi(-separation/2)); validation and test sets from the same distribution.

Hyper-parameters: SVC is trained on the training set for every (C, gamma) of a
small grid (C in {1, 10}) and scored on the validation split.  Two choices are
then run, each with the same C and gamma for SVC and the ramp solver:
(a) C = 10 with the gamma that is best for SVC at that C -- a C that suits the
ramp loss (a larger C makes f leave the ramp region |f| <= 1 faster, hence
fewer support vectors) while SVC's validation accuracy is nearly flat in C on
these tasks (the grid is printed); (b) the (C, gamma) best for SVC overall.  SVC
learns the whole training set in one batch; OnlineSVMR learns it one example
at a time in the (random) order of the set.

Target (issue 2): on the 15%-noise checkerboard the ramp model keeps at most
one third of SVC's support vectors at equal or better test accuracy.
The ramp solver runs with its defaults (s = -1, tol = 1e-3, Newton steps on
the free set, hinge warm-up) unless told otherwise; ``--pure-smo`` adds a line
with the paper's single-variable SMO alone, and ``--gain-working-set`` lines
with the paper's working-set rule (eq. 13, the largest dual gain) with and
without the Newton steps.
SVC does not report kernel evaluations (LIBSVM keeps no count); the column
shows "n/a" for it.

Why the ratio depends on C (the "where the SVs lie" lines): only SVC's
support vectors at the bound with y f < -1 lie beyond the ramp, and on the
noisy checkerboard they are a sixth of SVC's support vectors at either C.  The
ramp model is much sparser than that because, once those examples carry no
weight, f grows steeper and most examples near the boundary leave the band
-1 <= y f < 1.  Every learned example left inside that band must be a support
vector at C (KKT on V), so the band is a floor on the ramp model's support
vectors.  With C = 1 the coefficients are capped at 1, f stays flatter and the
band holds nearly twice as many training examples as with C = 10 (seed 0:
1,911 against 1,063, i.e. 0.39 of SVC's support vectors at C = 1, above the
one-third target before a single free SV is counted): the ramp advantage
shrinks with C.  It is not the solver stopping early: continuing CCCP to a
fixed point over every learned example, or dropping the progress rule, the
removal step or the hinge warm-up, leaves the C = 1 model unchanged.  Note
also that SVC's validation accuracy separates C = 1 from C = 10 by 0.2
points on 2,000 noisy validation points, well inside its sampling error
(about 0.9 points), so which C is "SVC's best" is itself close to a coin toss.
Measured on seed 0 (``--sweep-C 1,3,10``): at gamma = 80 the SV ratio is
0.40, 0.30 and 0.22 for C = 1, 3 and 10, the ramp model always at least as
accurate as SVC.  A batch CCCP started from the full no-bias hinge solution
and run to a fixed point (no progress rule, no removal step) ends at C = 1
with 1,973 SVs and J = 3,967.9, against 1,950 SVs and J = 3,967.5 online.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.svm import SVC

from core.datasets import make_checkerboard, make_gaussians
from core.solvers import make_solver
from core.solvers.ramp import OnlineSVMR


def svc_grid(X, y, Xv, yv, Cs, gammas):
    """SVC's validation accuracy for every (C, gamma) of the grid."""
    return [
        (C, gamma, SVC(C=C, kernel="rbf", gamma=gamma, tol=1e-3, cache_size=500).fit(X, y).score(Xv, yv))
        for C in Cs
        for gamma in gammas
    ]


def best(grid, C=None):
    """The grid point with the best validation accuracy (ties: smaller C, then smaller gamma),
    among all C or for a given C."""
    rows = [r for r in grid if C is None or r[0] == C]
    c, g, _ = max(rows, key=lambda r: (r[2], -r[0], -r[1]))
    return c, g


def run_svc(X, y, Xt, yt, C, gamma):
    t0 = time.perf_counter()
    model = SVC(C=C, kernel="rbf", gamma=gamma, tol=1e-3, cache_size=500).fit(X, y)
    seconds = time.perf_counter() - t0
    # where SVC's support vectors lie relative to the ramp region (diagnostic, see print_block)
    z = y[model.support_] * model.decision_function(X[model.support_])
    at_bound = np.abs(model.dual_coef_[0]) >= C * (1 - 1e-8)
    return dict(
        n_sv=len(model.support_),
        acc=model.score(Xt, yt),
        seconds=seconds,
        evals=None,
        n_bound=int(at_bound.sum()),
        n_bound_beyond=int(np.sum(at_bound & (z < -1.0))),
    )


def run_ramp(X, y, Xt, yt, C, gamma, max_nonsv, warmup, newton=True, working_set="violation"):
    solver = make_solver(
        "ramp",
        X,
        C=C,
        kernel="rbf",
        gamma=gamma,
        tol=1e-3,
        max_nonsv=max_nonsv,
        hinge_warmup=warmup,
        newton_steps=newton,
        working_set=working_set,
    )
    t0, c0 = time.perf_counter(), time.process_time()
    steps = 0
    for i in range(len(y)):
        steps += solver.learn(i, y[i]).iterations
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    evals = solver.n_kernel_evals
    acc = float(np.mean(np.where(solver.decision_function(X=Xt) >= 0, 1.0, -1.0) == yt))
    z = y * solver.decision_function(np.arange(len(y)))
    return dict(
        n_sv=solver.n_support_,
        acc=acc,
        seconds=seconds,
        cpu=cpu,
        evals=evals,
        steps=steps,
        kkt=solver.kkt_gap(),
        removed=solver.n_removed_,
        n_band=int(np.sum((z >= solver.ramp_s) & (z < 1.0))),
        n_beyond=int(np.sum(z < solver.ramp_s)),
    )


def print_block(title, C, gamma, grid, svc, ramps, warmup):
    print(f"\n== {title}")
    print(
        "SVC validation accuracy over the grid (C, gamma): " + ", ".join(f"({c:g}, {g:g}) {a:.4f}" for c, g, a in grid)
    )
    print(f"chosen: C = {C:g}, gamma = {gamma:g}; ramp: s = -1, tol = 1e-3, hinge_warmup = {warmup}")
    head = (
        f"{'method':<28}{'SVs':>7}{'SV ratio':>10}{'test acc':>10}{'seconds':>9}{'time ratio':>11}{'kernel evals':>14}"
    )
    print(head)
    print("-" * len(head))
    print(
        f"{'SVC (libsvm, batch)':<28}{svc['n_sv']:>7}{1.0:>10.3f}{svc['acc']:>10.4f}{svc['seconds']:>9.2f}"
        f"{1.0:>11.2f}{'n/a':>14}"
    )
    for label, r in ramps:
        print(
            f"{label:<28}{r['n_sv']:>7}{r['n_sv'] / svc['n_sv']:>10.3f}{r['acc']:>10.4f}{r['seconds']:>9.2f}"
            f"{r['seconds'] / svc['seconds']:>11.2f}{r['evals']:>14,}"
        )
    for label, r in ramps:
        print(
            f"  {label}: {r['steps']:,} SMO steps, {r['cpu']:.2f} s CPU, final KKT gap on V {r['kkt']:.2e}, "
            f"{r['removed']:,} far non-SVs removed",
            flush=True,
        )
    n = svc["n_sv"]
    print(
        f"  where the SVs lie: SVC {n} SVs, {svc['n_bound']} at the bound C, {svc['n_bound_beyond']} "
        f"({100 * svc['n_bound_beyond'] / n:.0f}%) at the bound with y f < -1 (beyond the ramp: what the ramp "
        f"loss drops outright; dropping only these would leave {n - svc['n_bound_beyond']} SVs, ratio "
        f"{(n - svc['n_bound_beyond']) / n:.2f})"
    )
    for label, r in ramps:
        print(
            f"  {label}: {r['n_beyond']} training examples with y f < -1 (weight 0), {r['n_band']} with "
            f"-1 <= y f < 1 (in the ramp band: by the KKT conditions each is a support vector at C, "
            f"a floor on the SV count; "
            f"{r['n_band'] / n:.2f} of SVC's)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="checkerboard training points")
    ap.add_argument("--n-gauss", type=int, default=5_000, help="Gaussians training points")
    ap.add_argument("--separation", type=float, default=2.0, help="distance between the Gaussian means")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--max-nonsv",
        default="1000,none",
        help="comma-separated values of max_nonsv (Algorithm 2) to run; 'none' keeps all",
    )
    ap.add_argument(
        "--warmup", type=int, default=None, help="hinge_warmup of the ramp solver (default: the solver's default)"
    )
    ap.add_argument(
        "--sweep-C",
        default="",
        help="comma-separated C values: also run SVC and ramp at each C with the gamma of (b) "
        "on the checkerboard (how the SV ratio depends on C), e.g. 1,3,10",
    )
    ap.add_argument(
        "--pure-smo",
        action="store_true",
        help="also run the paper's single-variable SMO without Newton steps (slow at large C)",
    )
    ap.add_argument(
        "--gain-working-set",
        action="store_true",
        help="also run with the paper's working-set rule (eq. 13: the largest single-variable "
        "dual gain) instead of the largest KKT violation, with and without Newton steps",
    )
    args = ap.parse_args()
    warmup = OnlineSVMR(None).hinge_warmup if args.warmup is None else args.warmup
    settings = [None if v.strip().lower() == "none" else int(v) for v in args.max_nonsv.split(",")]
    rng = np.random.default_rng(args.seed)

    def compare(title, X, y, Xv, yv, Xt, yt, gammas, nonsv_settings, with_target):
        grid = svc_grid(X, y, Xv, yv, Cs=(1.0, 10.0), gammas=gammas)
        protocols = [
            ("C = 10 fixed, gamma tuned for SVC", best(grid, C=10.0)),
            ("C and gamma tuned for SVC", best(grid)),
        ]
        done = set()
        for label, (C, gamma) in protocols:
            if (C, gamma) in done:
                print(f"\n== {title}: {label} -> the same C = {C:g}, gamma = {gamma:g} as above")
                continue
            done.add((C, gamma))
            svc = run_svc(X, y, Xt, yt, C, gamma)
            ramps = [(f"ramp (max_nonsv={m})", run_ramp(X, y, Xt, yt, C, gamma, m, warmup)) for m in nonsv_settings]
            if args.pure_smo:
                ramps.append(
                    (
                        f"ramp, SMO only ({nonsv_settings[0]})",
                        run_ramp(X, y, Xt, yt, C, gamma, nonsv_settings[0], warmup, newton=False),
                    )
                )
            if args.gain_working_set:
                for newton in (True, False):
                    ramps.append(
                        (
                            f"ramp, gain rule{'' if newton else ', SMO only'} ({nonsv_settings[0]})",
                            run_ramp(
                                X, y, Xt, yt, C, gamma, nonsv_settings[0], warmup, newton=newton, working_set="gain"
                            ),
                        )
                    )
            print_block(f"{title}; {label}", C, gamma, grid, svc, ramps, warmup)
            if with_target:
                r = ramps[0][1]
                ok = r["n_sv"] <= svc["n_sv"] / 3 and r["acc"] >= svc["acc"]
                print(
                    f"target (SVs <= 1/3 of SVC's at equal or better accuracy), {ramps[0][0]}: "
                    f"{r['n_sv']} vs {svc['n_sv']} / 3 = {svc['n_sv'] / 3:.0f}; "
                    f"accuracy {r['acc']:.4f} vs {svc['acc']:.4f} -> {'met' if ok else 'NOT met'}",
                    flush=True,
                )
        if with_target and args.sweep_C:
            gamma = best(grid)[1]
            print(f"\n== {title}: SV ratio against C at gamma = {gamma:g} (ramp max_nonsv={nonsv_settings[0]})")
            print(
                f"{'C':>6}{'SVC SVs':>9}{'SVC acc':>9}{'ramp SVs':>10}{'ramp acc':>10}{'SV ratio':>10}{'band/SVC':>10}"
            )
            for c in (float(v) for v in args.sweep_C.split(",")):
                sv_ = run_svc(X, y, Xt, yt, c, gamma)
                rr = run_ramp(X, y, Xt, yt, c, gamma, nonsv_settings[0], warmup)
                print(
                    f"{c:>6g}{sv_['n_sv']:>9}{sv_['acc']:>9.4f}{rr['n_sv']:>10}{rr['acc']:>10.4f}"
                    f"{rr['n_sv'] / sv_['n_sv']:>10.3f}{rr['n_band'] / sv_['n_sv']:>10.2f}",
                    flush=True,
                )

    # -- checkerboard, 15% flipped labels, clean test set ---------------------
    X, y = make_checkerboard(args.n, rng, flip=0.15)
    Xv, yv = make_checkerboard(2_000, rng, flip=0.15)
    Xt, yt = make_checkerboard(10_000, rng, flip=0.0)
    compare(
        f"checkerboard 4x4, {args.n:,} training points, 15% labels flipped; clean test set of 10,000",
        X,
        y,
        Xv,
        yv,
        Xt,
        yt,
        gammas=(10.0, 20.0, 40.0, 80.0),
        nonsv_settings=settings,
        with_target=True,
    )

    # -- two overlapping Gaussians ------------------------------------------
    X, y = make_gaussians(args.n_gauss, rng, separation=args.separation)
    Xv, yv = make_gaussians(2_000, rng, separation=args.separation)
    Xt, yt = make_gaussians(10_000, rng, separation=args.separation)
    compare(
        f"two Gaussians {args.separation:g} apart, {args.n_gauss:,} training points; test set of 10,000",
        X,
        y,
        Xv,
        yv,
        Xt,
        yt,
        gammas=(0.1, 0.3, 1.0),
        nonsv_settings=settings[:1],
        with_target=False,
    )


if __name__ == "__main__":
    main()
