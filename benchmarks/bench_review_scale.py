"""Long screenings with the review model: per-label time at 200-300 and at 2,500-3,000 labels on a large pool.

    python benchmarks/bench_review_scale.py --pool debian|synthetic [--docs 60000] [--labels 3000] [--old-labels 30]

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
2. the solvers alone on the label order of (1), each label = ``learn`` + the next document (the largest
   kept score among the unlabelled): ``dual-cd``, and the ``ramp`` solver (the old path) for
   ``--old-labels`` labels from label 200 and from label 2,500, each window reached by ``learn_many``
   of the labels before it (the ramp solver's late labels cost about half a second each).

ASReview is not run here (``bench_text_review.py`` runs it when it is installed).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

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
    rng = np.random.default_rng(0)
    pos, neg = int(rng.choice(np.flatnonzero(y > 0))), int(rng.choice(np.flatnonzero(y < 0)))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pool", choices=("debian", "synthetic"), default="synthetic")
    parser.add_argument("--docs", type=int, default=60_000, help="documents of the synthetic pool")
    parser.add_argument("--labels", type=int, default=3_000)
    parser.add_argument("--old-labels", type=int, default=30, help="labels timed per window with the ramp solver")
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

    new_name, new_params = solver_for(DOCUMENT_REVIEW["solver"], DOCUMENT_REVIEW["solver_params"], X)
    windows = ((201, 300), (late[0] + 1, late[1]))
    t0 = time.perf_counter()
    new = solver_windows(X, y, order, new_name, dict(new_params, random_state=0), windows)
    print(
        f"2. solvers alone, learn + next document, same label order; {new_name}: median labels 201-300 "
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


if __name__ == "__main__":
    main()
