"""C and gamma (and the class weight) chosen from the labels ("auto") against the fixed defaults (C = 1,
gamma = "scale", no class weights), side by side.

Datasets the other benchmarks use: the bundled digits ("8 vs rest", rbf), the same with the positives
subsampled to 2% of the pool (``bench_class_weight.py``'s rare-positive pool, a new subsample per seed),
breast cancer ("malignant", rbf) and the NCI molecules (a substructure-defined label, Tanimoto kernel on
Morgan fingerprints: gamma plays no part, so only C is chosen there).  The digits and breast cancer are
standardised (``compare``'s default); the fingerprints are not.  Per dataset and seed: a stratified split
(30% held out, as ``compare`` does), then an ``ActiveLearningLoop`` (near-boundary, incremental solver,
10 random labels first, answers from the true labels) with the fixed defaults, with
``auto=("C", "gamma")`` (grid C in 0.1, 1, 10, 100 and gamma in 0.5, 1, 2 x the median heuristic;
re-chosen at 20, 40, 80, 160 labels) and with ``auto=("C", "gamma", "class_weight")`` (the same, then
None or "balanced" at the chosen values), otherwise identical.  Printed per dataset and budget: the
held-out AUC (mean over seeds) of each, the wins/ties/losses of the class weight's choice against auto
without it, and the per-label update time: median over all labels, and at the re-choice labels (median
and largest, by label count), with the values chosen ("b": the rarer class weighted up).  With
``--choose-cpu``: instead, per dataset and seed, the CPU time of the choice over the first 160 labels of
an auto run, with and without the class weight (load-independent, unlike the update times).  With
``--per-choice``: per choice of an auto run, the held-out AUC of the models of the labels it was based on
with the fixed defaults, with the grid point of the lowest leave-one-out balanced error (then the higher
AUC), with that of the highest leave-one-out AUC (then the lower balanced error; the solver's rule, ``rank``,
also puts the points of balanced error 1/2 or more last) and with the best grid point.  ``--min-per-class``
sets the labels of each class a choice waits for. With ``--latency``: per dataset and seed, the per-label update
time (median and largest) of the label that reaches each moment, of the labels while its choice runs, of the label
it is due at, of the 5 labels after and of the others (the labels while it runs split: "fed", given once its
background job has finished and fed into its prebuilt model, and "during", the others), with the choice made and
applied at the moment's label ("sync", ``auto_lag=0``; the next ``--lag`` labels count as "during") and with it
computed in the background and applied ``--lag`` labels later ("background"); labels back to back, or ``--think``
ms apart while a choice runs (an analyst reading the next item); and per moment the seconds each background choice
took from the label that started it to its result (the thread's 20 ms start delay included), median and largest
over the seeds, with the number of labels it was due at that had to wait for it. With ``--lags 2,5,10``: the choice
applied that many labels after its moment as well (configs ``auto-lag2``, ``auto-lag5``, ``auto-lag10``;
``auto-lag`` is the app's lag, ``DEFAULT_LAG``), each config's held-out AUC minus fixed per budget side by side
with auto's (lag 0), and at the end the cells (dataset x budget) whose mean is below fixed: negative at four
decimals, and by more than the tie (0.001).

Run:  .venv/bin/python benchmarks/bench_auto_hyper.py [--seeds 5 --budget 200 --datasets digits,digits-2%
      --configs fixed,auto --lags 2,5]  (``--configs``: fixed and auto, and auto+cw unless left out)
"""

from __future__ import annotations

import argparse
import os
import time
from typing import ClassVar

import numpy as np

from benchmarks.bench_class_weight import pools
from core.datasets import load_bundled, stratified_split
from core.features import scale_features
from core.loop import ActiveLearningLoop
from core.metrics import roc_auc
from core.solvers import auto_hyper, make_solver
from core.solvers.auto_hyper import balanced_error, loo_decision_values

DATASETS = {
    "digits": ("digits", 8, "rbf"),
    "digits-2%": ("digits", 8, "rbf"),
    "breast-cancer": ("breast-cancer", None, "rbf"),
    "nci-molecules": ("nci-molecules", None, "tanimoto"),
}
TIE = 1e-3  # (a seed's difference within it is a tie in the wins/ties/losses)
CONFIGS = {
    "fixed": {},
    "auto": {"auto": ["C", "gamma"]},
    # the app's and compare's default: each choice computed in the background, applied 10 labels later
    "auto-lag": {"auto": ["C", "gamma"], "auto_lag": auto_hyper.DEFAULT_LAG},
    "auto+cw": {"auto": ["C", "gamma", "class_weight"]},
}


def lag_configs(lags: str) -> dict[str, dict]:
    """``--lags 2,5,10``: the lagged config at each lag, named ``auto-lag2``, ``auto-lag5``, ``auto-lag10`` (a lag
    of 0 is the config ``auto``)."""
    out = {}
    for text in filter(None, (t.strip() for t in lags.split(","))):
        lag = auto_hyper.check_lag(int(text))
        if lag == 0:
            raise ValueError("a lag of 0 is the config auto (the choice applied at its moment)")
        out[f"auto-lag{lag}"] = {"auto": ["C", "gamma"], "auto_lag": lag}
    return out


def below_fixed(means: list[float]) -> tuple[int, int]:
    """Of the mean differences to fixed (one per dataset and checkpoint): how many are below fixed as
    docs/benchmarks.md counts them (negative at four decimals) and how many by more than the tie of the
    wins/ties/losses (0.001)."""
    return sum(round(m, 4) < 0 for m in means), sum(m < -TIE for m in means)


def wtl(d: np.ndarray) -> str:
    """Wins / ties / losses of the seeds' differences (a tie: within ``TIE``)."""
    return f"{int(np.sum(d > TIE))}/{int(np.sum(abs(d) <= TIE))}/{int(np.sum(d < -TIE))}"


def data(name: str, seed: int):
    bundled, positive, kernel = DATASETS[name]
    ds = load_bundled(bundled, positive=positive)
    X = ds.X if kernel == "tanimoto" else scale_features(ds.X, "standard", ds.numeric_columns)
    y = np.where(np.asarray(ds.y) > 0, 1, -1)
    if name.endswith("-2%"):  # the positives subsampled to 2% of the pool with this seed
        X, y = list(pools(seed, X, y).values())[1]
    return X, y, kernel


def new_loop(X, kernel, seed, params, **evaluation) -> ActiveLearningLoop:
    """The benchmark's loop: near-boundary, incremental solver, 10 random labels first."""
    return ActiveLearningLoop(
        X,
        strategy="near-boundary",
        solver="incremental",
        seed=seed,
        initial=10,
        solver_params=dict(kernel=kernel, **params),
        **evaluation,
    )


def run(X, y, kernel, seed, params, budget, checkpoints):
    train, test = stratified_split(y, 0.3, np.random.default_rng([seed, 0xE7A1]))
    loop = new_loop(X[train], kernel, seed, params, eval_X=X[test], eval_y=y[test])
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
    return dict(
        auc=[aucs.get(c, np.nan) for c in checkpoints],
        ms=ms,
        at=at,
        rechoice_ms=[ms[n - 1] for n in at if n <= len(ms)],
        chosen=[(c["n_labels"], c["C"], c["gamma"], c.get("class_weight")) for c in choices if c["n_labels"] > 0],
    )


def choose_cpu(name: str, seed: int) -> str:
    """CPU seconds of ``choose`` over the first 160 labels of an auto run, with and without the class weight."""
    X, y, kernel = data(name, seed)
    train, _ = stratified_split(y, 0.3, np.random.default_rng([seed, 0xE7A1]))
    loop = ActiveLearningLoop(
        X[train],
        strategy="near-boundary",
        solver="incremental",
        seed=seed,
        initial=10,
        solver_params=dict(kernel=kernel, **CONFIGS["auto"]),
    )
    while loop.n_labels < 160:
        q = loop.next_query()
        loop.teach(q.index, int(y[train][q.index]))
    solver, items = loop.solver, loop.solver.labelled_[:160].copy()
    cpu = {}
    for cfg in ("auto", "auto+cw"):
        solver.auto = tuple(CONFIGS[cfg]["auto"])
        t0 = time.process_time()
        solver.choose(items)
        cpu[cfg] = time.process_time() - t0
    return (
        f"{name} seed {seed}: {int(np.sum(y[train][items] > 0))} of 160 positive; choose CPU s: auto "
        f"{cpu['auto']:.2f}, auto+cw {cpu['auto+cw']:.2f} (x{cpu['auto+cw'] / cpu['auto']:.2f})"
    )


def per_choice(name: str, seed: int, budget: int) -> list[str]:
    """For each choice of an auto run: the held-out AUC of the models of the labels it was based on with
    each grid point and with the fixed defaults, and which point each rule picks by leave-one-out."""
    X, y, kernel = data(name, seed)
    train, test = stratified_split(y, 0.3, np.random.default_rng([seed, 0xE7A1]))
    Xtr, ytr = X[train], y[train]
    loop = ActiveLearningLoop(
        Xtr,
        strategy="near-boundary",
        solver="incremental",
        seed=seed,
        initial=10,
        solver_params=dict(kernel=kernel, **CONFIGS["auto"]),
    )
    while loop.n_labels < budget:
        q = loop.next_query()
        loop.teach(q.index, int(ytr[q.index]))
    solver, order, lines = loop.solver, loop.solver.labelled_.copy(), []
    for ch in solver.hyper_choices[1:]:
        n, k = ch["n_labels"], ch["based_on"]
        based = order[:k] if ch["first"] else order[n - k : n]
        points = []  # (C, gamma, held-out AUC, LOO balanced error, LOO AUC)
        for C, gamma in [*solver.grid_points(based), (1.0, "scale")]:
            model = make_solver("incremental", Xtr, kernel=kernel, C=C, gamma=gamma)
            for i in based:
                model.learn(int(i), float(ytr[i]))
            held = roc_auc(y[test], model.decision_function(X=X[test]))
            labels = ytr[model.labelled_.copy()]
            f = loo_decision_values(model)
            points.append((C, gamma, held, balanced_error(labels, f), roc_auc(labels, f)))
        grid, default = points[:-1], points[-1]
        by_ber = min(grid, key=lambda p: (p[3], -p[4]))
        by_auc = min(grid, key=lambda p: (-p[4], p[3]))
        lines.append(
            f"{name} seed {seed} at {n} labels ({k} based on, {int(np.sum(ytr[based] > 0))} positive): held-out AUC "
            f"defaults {default[2]:.4f}, balanced error first {by_ber[2]:.4f}, LOO AUC first {by_auc[2]:.4f}, "
            f"best point {max(p[2] for p in grid):.4f}"
        )
    return lines


def lag_of(params: dict) -> int:
    return int(params.get("auto_lag", 0))


def lag_table(res: dict[str, list], lagged: list[str], checkpoints: list[int], means: dict[str, list[float]]) -> None:
    """Per checkpoint, each lagged config's mean held-out AUC difference to fixed (wins/ties/losses of the seeds),
    side by side with auto (lag 0); each mean is added to ``means``."""
    print(f"{'labels':>6} | " + " | ".join(f"{cfg + ' - fixed (w/t/l)':>26}" for cfg in lagged))
    for k, c in enumerate(checkpoints):
        f = np.array([r["auc"][k] for r in res["fixed"]])
        cells = []
        for cfg in lagged:
            d = np.array([r["auc"][k] for r in res[cfg]]) - f
            means[cfg].append(float(np.nanmean(d)))
            cells.append(f"{np.nanmean(d):+17.4f} ({wtl(d):>6})")
        print(f"{c:>6} | " + " | ".join(cells))


class TimedChoiceJob(auto_hyper.ChoiceJob):
    """A background choice (``--latency``) that notes the time it was queued (at the label that starts it) and
    ended (its result ready, ``START_DELAY_S`` included), and whether the label it is due at found it ready."""

    __slots__ = ("queued", "ended", "found_ready")
    made: ClassVar[list[TimedChoiceJob]] = []

    def __init__(self, key: tuple, spec: auto_hyper.ChoiceSpec, relearn: auto_hyper.RelearnSpec | None = None) -> None:
        self.queued, self.ended, self.found_ready = time.perf_counter(), 0.0, None
        TimedChoiceJob.made.append(self)
        super().__init__(key, spec, relearn)

    def _run(self) -> None:
        super()._run()
        self.ended = time.perf_counter()

    def result(self) -> dict | None:
        self.found_ready = self.done()
        return super().result()


PARTS = ("moment", "during", "fed", "due", "after", "elsewhere")


def latency(name: str, seed: int, budget: int, lag: int, think_ms: float) -> dict[str, dict[str, list[float]]]:
    """Per-label update ms (the loop's ``update_ms``) of the label that reaches each moment, of the labels while
    the background choice runs (those given after its job finished, fed into its prebuilt model, apart), of the
    label it is due at, of the 5 labels after it, and of every other label; "sync" (``auto_lag=0``: the moment's
    label is the one it is due at) and "background"."""
    X, y, kernel = data(name, seed)
    train, _ = stratified_split(y, 0.3, np.random.default_rng([seed, 0xE7A1]))
    out: dict[str, dict[str, list[float]]] = {}
    for mode, params in (("sync", {}), ("background", {"auto_lag": lag})):
        loop = new_loop(X[train], kernel, seed, dict(CONFIGS["auto"], **params))
        TimedChoiceJob.made.clear()
        auto_hyper.ChoiceJob = TimedChoiceJob  # type: ignore[misc]  # (the solver makes its jobs with this name)
        fed: set[int] = set()  # (the labels fed into a finished job's prebuilt model: that job done before the label)
        try:
            while loop.n_labels < budget:
                q = loop.next_query()
                job = auto_hyper._running.get(getattr(loop.solver, "_lineage", None))
                feeds = job is not None and job.done() and job._prebuilt is not None
                loop.teach(q.index, int(y[train][q.index]))
                if feeds:
                    fed.add(loop.n_labels)
                if think_ms and getattr(loop.solver, "hyper_pending", None) is not None:
                    time.sleep(think_ms / 1000)  # (the analyst reads the next item while the choice runs)
        finally:
            auto_hyper.ChoiceJob = TimedChoiceJob.__bases__[0]  # type: ignore[misc]
        while not all(job.ended for job in TimedChoiceJob.made):
            time.sleep(0.01)  # (a choice not yet due at the budget: its time still counts)
        if mode == "background":  # the seconds from each choice's start to its result, and the due labels that waited
            out["choice s"], out["waited"] = {}, {}
            for job in TimedChoiceJob.made:
                moment = str(job.key[0])
                out["choice s"].setdefault(moment, []).append(job.ended - job.queued)
                if job.found_ready is not None:
                    out["waited"].setdefault(moment, []).append(float(not job.found_ready))
        ms = [r.update_ms for r in loop.history]  # (label n is ms[n - 1])
        part = ["elsewhere"] * len(ms)
        for c in loop.solver.hyper_choices[1:]:
            start, due = c.get("started", c["n_labels"]), c["n_labels"]
            for n in range(start, min(len(ms), due + 5) + 1):
                if n == start:
                    part[n - 1] = "moment"
                elif n < due:
                    part[n - 1] = "fed" if n in fed else "during"
                else:
                    part[n - 1] = "due" if n == due else "after"
            if mode == "sync":  # (the moment's label is the due label; the next lag labels count as "during")
                for n in range(start + 1, min(len(ms), start + lag) + 1):
                    part[n - 1] = "during"
        out[mode] = {p: [m for m, q in zip(ms, part, strict=True) if q == p] for p in PARTS}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--choose-cpu", action="store_true", help="time the choice at 160 labels only")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="which of fixed, auto, auto-lag, auto+cw to run")
    ap.add_argument("--per-choice", action="store_true", help="each choice's grid points on the held-out items")
    ap.add_argument(
        "--min-per-class", type=int, default=auto_hyper.MIN_PER_CLASS, help="labels of each class a choice waits for"
    )
    ap.add_argument("--latency", action="store_true", help="per-label times around the moments, sync vs background")
    ap.add_argument("--lag", type=int, default=auto_hyper.DEFAULT_LAG, help="labels from a choice's start to its use")
    ap.add_argument("--think", type=float, default=0.0, help="ms between labels (--latency)")
    ap.add_argument(
        "--lags", default="", help="also the lagged config at these lags (2,5,10: configs auto-lag2, auto-lag5, ...)"
    )
    args = ap.parse_args()
    if args.latency:
        print(f"load {os.getloadavg()[0]:.1f}; lag {args.lag}; {args.think:g} ms between labels; update ms per label")
        for name in args.datasets.split(","):
            runs = [latency(name, seed, args.budget, args.lag, args.think) for seed in range(args.seeds)]
            for mode in ("sync", "background"):
                cells = []
                for p in PARTS:
                    v = np.concatenate([r[mode][p] for r in runs])
                    cells.append(f"{p} {np.median(v):.2f} / {v.max():.0f}" if len(v) else f"{p} -")
                print(f"{name} {mode:>10} (median / largest ms): " + ", ".join(cells), flush=True)
            print(f"{name} background choice s from its start to its result, median / largest (due labels that waited)")
            for moment in sorted({m for r in runs for m in r["choice s"]}, key=int):
                v = np.concatenate([r["choice s"].get(moment, []) for r in runs])
                w = np.concatenate([r["waited"].get(moment, []) for r in runs])
                print(f"  at {moment}: {np.median(v):.2f} / {v.max():.2f} ({int(w.sum())} of {len(w)})", flush=True)
        print(f"load {os.getloadavg()[0]:.1f}")
        return
    auto_hyper.MIN_PER_CLASS = args.min_per_class  # (a measurement of the wait; the solver's is the constant)
    if args.per_choice:
        print(f"load {os.getloadavg()[0]:.1f}; wait for {args.min_per_class} of each class")
        for name in args.datasets.split(","):
            for seed in range(args.seeds):
                print("\n".join(per_choice(name, seed, args.budget)), flush=True)
        return
    configs = {cfg: CONFIGS[cfg] for cfg in args.configs.split(",")}
    try:
        configs.update(lag_configs(args.lags))
    except ValueError as exc:
        ap.error(f"--lags: {exc}")
    if "fixed" not in configs or "auto" not in configs:
        ap.error(f"--configs needs fixed and auto (and may add auto+cw), got {args.configs!r}")
    if args.choose_cpu:
        print(f"load {os.getloadavg()[0]:.1f}")
        for name in args.datasets.split(","):
            for seed in range(args.seeds):
                print(choose_cpu(name, seed), flush=True)
        return
    checkpoints = [c for c in (30, 60, 100, 200, 300) if c <= args.budget]
    t_start = time.perf_counter()
    print(
        f"load {os.getloadavg()[0]:.1f}; seeds 0..{args.seeds - 1}; budget {args.budget}; near-boundary, "
        f"incremental, 10 random labels first; held-out AUC (30% of each dataset), mean over seeds"
    )
    lagged = ["auto", *sorted((c for c in configs if c.startswith("auto-lag")), key=lambda c: lag_of(configs[c]))]
    means: dict[str, list[float]] = {cfg: [] for cfg in lagged}  # (mean difference to fixed, per cell)
    for name in args.datasets.split(","):
        res: dict[str, list] = {cfg: [] for cfg in configs}
        for seed in range(args.seeds):
            X, y, kernel = data(name, seed)
            for cfg, params in configs.items():
                res[cfg].append(run(X, y, kernel, seed, params, args.budget, checkpoints))
        print(f"\n{name}: {X.shape[0]} items, {int(np.sum(y > 0))} positives, {kernel} kernel")
        cw = "auto+cw" in res
        print(
            f"{'labels':>6} | {'fixed':>7} | {'auto':>7} | {'auto - fixed':>12} | auto w/t/l"
            + (f" | {'auto+cw':>7} | {'cw - auto':>9} | cw w/t/l | {'cw - fixed':>10}" if cw else "")
            + (f" | {'auto-lag':>8} | {'lag - fixed':>11} | lag w/t/l" if "auto-lag" in res else "")
        )

        for k, c in enumerate(checkpoints):
            f, a = (np.array([r["auc"][k] for r in res[cfg]]) for cfg in ("fixed", "auto"))
            line = (
                f"{c:>6} | {np.nanmean(f):7.4f} | {np.nanmean(a):7.4f} | {np.nanmean(a - f):+12.4f} | {wtl(a - f):>10}"
            )
            if cw:
                w = np.array([r["auc"][k] for r in res["auto+cw"]])
                line += (
                    f" | {np.nanmean(w):7.4f} | {np.nanmean(w - a):+9.4f} | {wtl(w - a):>8} | "
                    f"{np.nanmean(w - f):+10.4f}"
                )
            if "auto-lag" in res:  # (the default in the app and compare: each choice applied 10 labels later)
                g = np.array([r["auc"][k] for r in res["auto-lag"]])
                line += f" | {np.nanmean(g):8.4f} | {np.nanmean(g - f):+11.4f} | {wtl(g - f):>9}"
            print(line)
        if len(lagged) > 1:
            lag_table(res, lagged, checkpoints, means)
        med = {cfg: float(np.median(np.concatenate([r["ms"] for r in rs]))) for cfg, rs in res.items()}
        print("update ms per label, median: " + ", ".join(f"{cfg} {m:.2f}" for cfg, m in med.items()))
        for cfg in [c for c in ("auto", "auto+cw") if c in res]:
            rech = np.concatenate([r["rechoice_ms"] for r in res[cfg]])
            by_moment: dict[int, list[float]] = {}
            for r in res[cfg]:
                for n, m in zip(r["at"], r["rechoice_ms"], strict=False):
                    by_moment.setdefault(n, []).append(m)
            print(
                f"{cfg} re-choice ms: median {np.median(rech) if len(rech) else float('nan'):.0f}, largest "
                f"{rech.max() if len(rech) else float('nan'):.0f}; by label count (median over the seeds): "
                + ", ".join(f"{n}: {np.median(v):.0f}" for n, v in sorted(by_moment.items()))
            )
        for cfg in [c for c in ("auto", "auto+cw") if c in res]:
            for seed, r in enumerate(res[cfg]):
                print(
                    f"  {cfg} seed {seed} chose (labels: C{', gamma' if kernel == 'rbf' else ''}): "
                    + "; ".join(
                        f"{n}: {C:g}" + (f", {g:.3g}" if kernel == "rbf" else "") + (" b" if cw == "balanced" else "")
                        for n, C, g, cw in r["chosen"]
                    )
                )
    if len(lagged) > 1:
        print(
            f"\ncells below fixed (mean difference negative at 4 decimals; by more than the tie {TIE:g}), of "
            f"{len(means['auto'])}: "
            + ", ".join(
                "{} (lag {}) {} ({} beyond the tie)".format(cfg, lag_of(configs[cfg]), *below_fixed(means[cfg]))
                for cfg in lagged
            )
        )
    print(f"\n{time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
