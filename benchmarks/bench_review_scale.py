"""Long screenings with the review model: per-label time at 200-300 and at 2,500-3,000 labels on a large pool.

    python benchmarks/bench_review_scale.py --pool debian|synthetic [--docs 60000] [--labels 3000] [--old-labels 30]
                                            [--no-asreview]

The review model (``core.presets.DOCUMENT_REVIEW``) on sparse TF-IDF rows is learned by the ``dual-cd``
solver (dual coordinate descent with the weight vector kept, ``core/solvers/dual_cd.py``); before, by
the ``ramp`` solver through the kernel matrix of the labelled documents.  Pools:

* ``debian``: the package descriptions of the Debian archive as this machine's package index has them
  (``apt-cache dumpavail``: one short description per package, about 63,000 real documents of a few
  words each); positive: the packages of the section ``science``.  Real text, but short.
* ``synthetic``: ``--docs`` synthetic documents of 80-250 words drawn from a Zipf law over a
  50,000-word vocabulary, 3% positives sharing a handful of topic words (the generator of
  ``bench_text_review.py``'s per-label table).  Not real text: a TF-IDF-like sparse pool of the size asked.

Both with the app's document features (``core.features.tfidf_features``), one positive and one negative
prior, then ``largest-positive`` until ``--labels`` labels:

1. the loop with the review model as the app runs it (``dual-cd``): per-label ``update_ms + query_ms``,
   medians at labels 200-300 and 2,500-3,000;
2. ASReview beside it in the same run (unless ``--no-asreview``; installed on first use into its own
   virtual environment by ``bench_text_review.py``'s helper): its default model (``elas_u4``, the one
   ``bench_text_review.py`` compares against) through ``asreview simulate`` on the same documents with the
   same two priors, ``--n-stop`` = ``--labels``.  Its per-label time is read from its own results table:
   ASReview stamps each label after the retraining on every label before it + the ranking of the pool
   that chose it, so a label's time is the gap since the label before (``asreview_label_ms``);
3. the solvers alone on the label order of (1), each label = ``learn`` + the next document (the largest
   kept score among the unlabelled): ``dual-cd``, and the ``ramp`` solver (the old path) for
   ``--old-labels`` labels from label 200 and from label 2,500, each window reached by ``learn_many``
   of the labels before it (the ramp solver's late labels cost about half a second each).

The table compares the medians (and p95) at labels 200-300 and 2,500-3,000 of (1) and (2); targets:
MarginLab's median at 2,500-3,000 <= half of ASReview's, and <= 2 x its own median at 200-300.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from benchmarks.bench_text_review import (  # noqa: E402
    ASREVIEW_PIN,
    asreview_label_ms,
    ensure_asreview,
    priors,
    run_asreview,
)
from core.features import tfidf_features  # noqa: E402
from core.loop import ActiveLearningLoop  # noqa: E402
from core.presets import DOCUMENT_REVIEW, solver_for  # noqa: E402
from core.solvers import make_solver  # noqa: E402


def debian_pool() -> tuple[list[str], np.ndarray, str]:
    text = subprocess.run(["apt-cache", "dumpavail"], check=True, capture_output=True, text=True).stdout
    docs, section = [], []
    for record in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in record.splitlines() if ": " in line and not line[0].isspace())
        if "Description" in fields:
            docs.append(fields["Description"])
            section.append(fields.get("Section", ""))
    y = np.where(np.array(section) == "science", 1, -1)
    return docs, y, "Debian package descriptions (apt-cache dumpavail), section science vs the rest"


def synthetic_pool(n: int, seed: int = 0) -> tuple[list[str], np.ndarray, str]:
    rng = np.random.default_rng(seed)
    vocabulary = 50_000
    p = 1.0 / np.arange(1, vocabulary + 1) ** 1.07
    cdf = np.cumsum(p / p.sum())
    words = np.array([f"w{k}" for k in range(vocabulary)])
    topic = rng.random(n) < 0.03
    docs = []
    for length, is_topic in zip(rng.integers(80, 250, n), topic, strict=True):
        draw = np.minimum(np.searchsorted(cdf, rng.random(length)), vocabulary - 1)
        if is_topic:
            draw = np.concatenate([draw, rng.integers(5000, 5020, 8)])
        docs.append(" ".join(words[draw].tolist()))
    return docs, np.where(topic, 1, -1), f"SYNTHETIC Zipf documents (80-250 words, 50,000-word vocabulary), n = {n}"


def loop_run(X, y: np.ndarray, labels: int) -> tuple[list[int], np.ndarray, str]:
    pos, neg = priors(y, 0)  # the priors ASReview gets
    loop = ActiveLearningLoop(
        X,
        strategy="largest-positive",
        solver=DOCUMENT_REVIEW["solver"],
        solver_params=DOCUMENT_REVIEW["solver_params"],
        seed=0,
    )
    loop.teach(pos, 1)
    loop.teach(neg, -1)
    order, ms = [pos, neg], [np.nan, np.nan]
    while len(order) < labels:
        q = loop.next_query()
        row = loop.teach(q.index, int(y[q.index]))
        order.append(q.index)
        ms.append(row.update_ms + row.query_ms)
        if len(order) % 500 == 0:
            print(f"   {len(order)} labels, median of the last 100: {np.median(ms[-100:]):.2f} ms")
    return order, np.array(ms), loop.solver.name


def solver_windows(
    X, y: np.ndarray, order: list[int], name: str, params: dict, windows: tuple[tuple[int, int], ...]
) -> list[float]:
    """Median ms of learn + next document over each window (label numbers, 1-based), reached by learn_many."""
    solver = make_solver(name, X, **params)
    unlabelled = np.ones(X.shape[0], dtype=bool)
    done, medians = 0, []
    for start, stop in windows:
        batch = np.asarray(order[done : start - 1])
        if len(batch):
            solver.learn_many(batch, y[batch].astype(float))
            unlabelled[batch] = False
        ms = []
        for i in order[start - 1 : stop]:
            t0 = time.perf_counter()
            solver.learn(int(i), float(y[i]))
            unlabelled[i] = False
            scores = solver.store_scores()
            int(np.argmax(np.where(unlabelled, scores, -np.inf)))
            ms.append((time.perf_counter() - t0) * 1e3)
        medians.append(float(np.median(ms)))
        done = stop
    return medians


def window(ms: np.ndarray, first: int, last: int) -> tuple[float, float]:
    """Median and p95 of the per-label ms of labels ``first``..``last`` (entry i = label i + 1)."""
    part = ms[first - 1 : last]
    return float(np.median(part)), float(np.percentile(part, 95))


def asreview_run(docs: list[str], y: np.ndarray, labels: int) -> tuple[np.ndarray, str] | None:
    """ASReview's per-label ms (entry i = label i + 1) from the priors of seed 0, or None without ASReview."""
    exe = ensure_asreview()
    if exe is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_asreview(exe, docs, y, 0, Path(tmp), n_stop=labels)
        wall = time.perf_counter() - t0
        _, ms = asreview_label_ms(Path(tmp) / "sim0" / "results.db")
    return ms, f"{len(ms)} labels, {wall:.0f} s with its start, feature extraction and project file"


def print_comparison(ours: np.ndarray, theirs: np.ndarray | None, late: tuple[int, int]) -> None:
    rows = [("MarginLab review model (dual-cd): update + query", ours)]
    if theirs is not None:
        rows.append((f"ASReview {ASREVIEW_PIN.split('==')[1]} default (elas_u4): retrain + rank", theirs))
    print(f"\n   per label, ms          median 200-300   p95   median {late[0]}-{late[1]}   p95   late/early")
    for name, ms in rows:
        (m0, p0), (m1, p1) = window(ms, 200, 300), window(ms, *late)
        print(f"   {name}\n   {'':22}{m0:14.2f} {p0:7.2f} {m1:17.2f} {p1:7.2f} {m1 / m0:8.2f}")
    m0, m1 = window(ours, 200, 300)[0], window(ours, *late)[0]
    print(f"   target MarginLab late <= 2 x its own early: {m1 / m0:.2f} x ({'met' if m1 <= 2 * m0 else 'MISSED'})")
    if theirs is None:
        print("   target MarginLab late <= half of ASReview's: not measured (ASReview not run)")
        return
    a1 = window(theirs, *late)[0]
    print(
        f"   target MarginLab late <= half of ASReview's: {m1 / a1:.3f} of ASReview's "
        f"({'met' if m1 <= 0.5 * a1 else 'MISSED'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pool", choices=("debian", "synthetic"), default="synthetic")
    parser.add_argument("--docs", type=int, default=60_000, help="documents of the synthetic pool")
    parser.add_argument("--labels", type=int, default=3_000)
    parser.add_argument("--old-labels", type=int, default=30, help="labels timed per window with the ramp solver")
    parser.add_argument("--no-asreview", action="store_true", help="leave ASReview out (it is installed if needed)")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    print(
        f"python {platform.python_version()}, numpy {np.__version__}; {os.cpu_count()} CPUs; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    t0 = time.perf_counter()
    docs, y, title = debian_pool() if args.pool == "debian" else synthetic_pool(args.docs)
    X, terms = tfidf_features(docs)
    print(
        f"{title}: {len(docs)} documents, {int((y > 0).sum())} positives; TF-IDF {len(terms)} terms, "
        f"{X.nnz} nonzeros ({X.nnz / X.shape[0]:.1f} per document); built in {time.perf_counter() - t0:.0f} s"
    )

    t0 = time.perf_counter()
    order, ms, used = loop_run(X, y, args.labels)
    late = (2_500, min(3_000, args.labels))
    print(
        f"\n1. the loop with the review model ({used} solver), {args.labels} labels in "
        f"{time.perf_counter() - t0:.0f} s: per-label update + query, median at labels 200-300 "
        f"{np.median(ms[199:300]):.2f} ms, at {late[0]}-{late[1]} {np.median(ms[late[0] - 1 : late[1]]):.2f} ms "
        f"(ratio {np.median(ms[late[0] - 1 : late[1]]) / np.median(ms[199:300]):.2f}; target <= 2)"
    )

    theirs = None
    if not args.no_asreview:
        result = asreview_run(docs, y, args.labels)
        if result is not None:
            theirs, note = result
            print(f"2. ASReview, the same pool and priors: {note}")
    print_comparison(ms, theirs, late)
    print(f"   load average {os.getloadavg()[0]:.1f}")

    new_name, new_params = solver_for(DOCUMENT_REVIEW["solver"], DOCUMENT_REVIEW["solver_params"], X)
    windows = ((201, 300), (late[0] + 1, late[1]))
    t0 = time.perf_counter()
    new = solver_windows(X, y, order, new_name, dict(new_params, random_state=0), windows)
    print(
        f"3. solvers alone, learn + next document, same label order; {new_name}: median labels 201-300 "
        f"{new[0]:.2f} ms, {windows[1][0]}-{windows[1][1]} {new[1]:.2f} ms ({time.perf_counter() - t0:.0f} s)"
    )
    old_windows = ((201, 200 + args.old_labels), (late[0] + 1, late[0] + args.old_labels))
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = solver_windows(X, y, order, "ramp", dict(DOCUMENT_REVIEW["solver_params"], random_state=0), old_windows)
    note = f"; {len(caught)} warnings, first: {caught[0].message}" if caught else ""
    print(
        f"   ramp (the old path): median labels {old_windows[0][0]}-{old_windows[0][1]} {old[0]:.2f} ms, "
        f"{old_windows[1][0]}-{old_windows[1][1]} {old[1]:.2f} ms ({time.perf_counter() - t0:.0f} s{note})"
    )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
