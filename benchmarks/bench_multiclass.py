"""Per-label latency with K = 10 classes against the binary figure, in one run.

Pool: the bundled 8x8 digits upsampled to 28x28, two shifted copies each (``digits_28x28`` of
``bench_loop_latency``: ~3,600 items x 784 features), rbf with C = 10 and gamma = 1 / (d var X) as
there.  True labels answer the queries.

* binary: ``ActiveLearningLoop`` with ``near-boundary`` + ``incremental``, "8 vs rest"
  (``bench_loop_latency`` part 1);
* K = 10: ``core.multiclass.OneVsRest`` of ten ``incremental`` machines sharing one kernel cache, with
  kept scores, queried by ``smallest-margin`` (the first ``--cold`` labels drawn at random);
* K = 10 multi-label: ``core.multiclass.MultiLabel``, the same ten machines, each item carrying its
  digit and, every other item, the next digit too (synthetic sets of one or two classes), queried by
  ``least-sure-class`` (the first ``--cold`` labels drawn at random).

Per label, wall-clock and process CPU time of next query + learn; the medians over labels
``--before`` + 1 .. ``--before`` + ``--after`` are printed for both, and their ratio.  Target: the
K = 10 median at most 3 x the binary one.  CPU time is what to read on a shared machine.

Run:  .venv/bin/python benchmarks/bench_multiclass.py [--before 200 --after 100]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from benchmarks.bench_loop_latency import digits_28x28
from core.datasets import ASSETS_DIR, BUNDLED
from core.loop import ActiveLearningLoop
from core.multiclass import MultiLabel, OneVsRest, least_sure_class, random_class_query, smallest_margin
from core.strategies import Pool


def digit_labels(copies: int = 2) -> np.ndarray:
    """The digit (0-9) of each item of ``digits_28x28(copies)``, in its order."""
    import pandas as pd

    digits = pd.read_csv(ASSETS_DIR / BUNDLED["digits"].file)["digit"].to_numpy()
    return np.repeat(digits.astype(int), copies)


def timed(step) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    step()
    return 1e3 * (time.perf_counter() - t0), 1e3 * (time.process_time() - c0)


def binary_run(X, y, params, n_labels: int) -> np.ndarray:
    loop = ActiveLearningLoop(X, strategy="near-boundary", solver="incremental", seed=0, solver_params=params)

    def step():
        q = loop.next_query()
        loop.teach(q.index, int(y[q.index]))

    return np.array([timed(step) for _ in range(n_labels)])


def multiclass_run(
    X, digits, params, n_labels: int, n_cold: int, multi_label: bool = False
) -> tuple[np.ndarray, OneVsRest]:
    """K = 10 single-choice (``OneVsRest``, smallest-margin, each item's digit) or multi-label
    (``MultiLabel``, least-sure-class, the digit and, every other item, the next digit too)."""
    classes = [str(d) for d in range(10)]
    if multi_label:
        answers: list = [{classes[d]} | ({classes[(d + 1) % 10]} if i % 2 else set()) for i, d in enumerate(digits)]
        model: OneVsRest = MultiLabel(classes, "incremental", X, keep_scores=True, **params)
    else:
        answers = [classes[d] for d in digits]
        model = OneVsRest(classes, "incremental", X, keep_scores=True, **params)
    rule = least_sure_class if multi_label else smallest_margin
    available = np.ones(len(X), dtype=bool)
    rng = np.random.default_rng(0)

    def step():
        pool = Pool(available)
        q = (random_class_query if model.labelled_.size < n_cold else rule)(model, pool, rng)
        model.learn(q.index, answers[q.index])
        available[q.index] = False

    return np.array([timed(step) for _ in range(n_labels)]), model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=int, default=200, help="labels before the timed ones")
    ap.add_argument("--after", type=int, default=100, help="labels timed")
    ap.add_argument("--cold", type=int, default=10, help="K-class labels drawn at random first")
    args = ap.parse_args()

    X, y = digits_28x28()
    digits = digit_labels()
    assert len(digits) == len(X) and np.array_equal(digits == 8, y > 0)
    params = dict(C=10.0, gamma=1.0 / (X.shape[1] * X.var()), kernel="rbf")
    n = args.before + args.after
    print(
        f"pool {X.shape[0]} x {X.shape[1]} (digits 28x28), rbf C=10 gamma={params['gamma']:.4g}; "
        f"labels {args.before + 1}..{n} timed; load average {os.getloadavg()[0]:.2f} at start"
    )
    binary = binary_run(X, y, params, n)[args.before :]
    multi, model = multiclass_run(X, digits, params, n, args.cold)
    multi = multi[args.before :]
    multilabel = multiclass_run(X, digits, params, n, args.cold, multi_label=True)[0][args.before :]
    acc = float(np.mean(model.predict() == np.array([str(d) for d in digits], dtype=object)))
    rows = [
        ("binary: near-boundary + incremental, 8 vs rest", binary),
        ("K = 10: smallest-margin + 10 x incremental, shared cache", multi),
        ("K = 10 multi-label: least-sure-class + 10 x incremental", multilabel),
    ]
    print(f"{'':60s} {'median ms':>10s} {'p95 ms':>8s} {'CPU median ms':>14s}")
    for name, t in rows:
        print(f"{name:60s} {np.median(t[:, 0]):10.2f} {np.percentile(t[:, 0], 95):8.2f} {np.median(t[:, 1]):14.2f}")
    for name, t in (("K=10", multi), ("multi-label K=10", multilabel)):
        print(
            f"ratio {name} / binary (medians): wall {np.median(t[:, 0]) / np.median(binary[:, 0]):.2f} x, "
            f"CPU {np.median(t[:, 1]) / np.median(binary[:, 1]):.2f} x (target <= 3 x)"
        )
    print(
        f"K = 10 after {n} labels: {model.n_kernel_evals:,} kernel entries, {model.cache.misses} store rows "
        "computed (each once, for all 10 machines); "
        f"accuracy over the pool {acc:.3f}; load average {os.getloadavg()[0]:.2f} at end"
    )


if __name__ == "__main__":
    main()
