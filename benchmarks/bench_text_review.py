"""Document review side by side with ASReview: labels to find 50/80/95% of the positives, per-label time.

    python benchmarks/bench_text_review.py [--data FILE.csv --text-column COL --label-column COL --positive V]
                                           [--seeds 5] [--no-asreview] [--diagnose] [--sparse-size 10000]

Task (default): the bundled arXiv abstracts, robotics (cs.RO, 34 of 993 = 3.4%) against the rest
(``--category`` takes another of its topics: cs.CL 33, cs.NE 25, eess.IV 54); the document is title +
abstract.  Both tools start from the same two labelled documents per seed (one
positive, one negative drawn with the seed) and then label what they rank first until every positive
is found:

* MarginLab: TF-IDF (word uni+bigrams, sublinear tf, vocabulary over the pool) -> ``largest-positive``
  with three models, each learning every label exactly (to the solver's tolerance) before the next query:
  - the review model (``core.presets.DOCUMENT_REVIEW``): the ``ramp`` solver with the squared hinge
    (the convex L2-loss SVM without bias, ASReview's loss), kernel <x, z> + 1 (the intercept
    penalised like a weight), C = 0.11 and ``class_weight="balanced"`` with ratio 9.8: after every
    label the positives together weigh 9.8 times the negatives and all weights sum to the number of
    labels.  These are ASReview's constants (its C and its balance ratio), not values tuned on this task;
    the KKT conditions are met to 1e-6;
  - the same with the hinge loss (the loss of the review model in the previous version);
  - the plain model: ``incremental``, linear kernel, C = 1, one weight for all (free bias).
  On the sparse TF-IDF rows when the kernel layer takes CSR matrices; otherwise on the same TF-IDF
  values as a dense array (terms in >= 2 documents), or with ``--svd K`` on a K-component truncated
  SVD (the output says which).
* ASReview LAB 3.0.8, its default model (``elas_u4``: TF-IDF uni+bigrams with sublinear tf, linear SVM,
  balanced sampling, max querier), through its own ``asreview simulate`` command on the same CSV file.
  ASReview is a benchmark-only reference: its pins clash with MarginLab's (pandas < 3), so this script
  installs it into its own virtual environment ``.venv-asreview`` beside the repository on first use
  (``python3 -m venv .venv-asreview && .venv-asreview/bin/pip install asreview==3.0.8``).

Per-label time: MarginLab's solver update + choosing the next document (``update_ms + query_ms``);
ASReview's time between two consecutive labels in its results table (its retraining + ranking).
WSS@95 = (documents not read at 95% recall) / n - 0.05.

``--diagnose`` adds rows that explain the gap between the two models, with scikit-learn's solvers
on the same TF-IDF rows and the same priors (retrained from scratch after every label, largest score
next; benchmark-only): liblinear's LinearSVC with ASReview's weighting (every label reweights both
classes: negatives by n_pos / (9.8 n_neg), then all so that they sum to the number of labels), its
intercept penalised like a weight (liblinear's ``intercept_scaling=1``), with squared hinge (ASReview's
model) and with the hinge loss; the same weights with an unpenalised bias (SVC, a libsvm model like
MarginLab's); and the hinge loss with the penalised intercept but without the weights.

A second table (``--sparse-size``) measures the per-label time of largest-positive with both models on
synthetic documents: 10,000 documents over a 50,000-term vocabulary (Zipf-distributed words), TF-IDF
kept sparse; target median <= 10 ms.  It needs the kernel layer to take CSR rows.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from core.features import svd_reduce, tfidf_features
from core.loop import ActiveLearningLoop
from core.presets import DOCUMENT_REVIEW

ROOT = Path(__file__).resolve().parent.parent

ASREVIEW_VENV = ROOT / ".venv-asreview"
ASREVIEW_PIN = "asreview==3.0.8"
RECALLS = (0.5, 0.8, 0.95)


def sparse_supported() -> bool:
    """Whether the active-learning loop takes a CSR pool (the kernel layer's sparse support)."""
    X = sp.csr_matrix(np.eye(4))
    try:
        loop = ActiveLearningLoop(
            X, strategy="largest-positive", solver="incremental", solver_params={"kernel": "linear"}, seed=0
        )
        loop.teach(0, 1)
        loop.teach(1, -1)
        return True
    except Exception:  # noqa: BLE001 - any refusal means: not supported by this version
        return False


def load_task(args) -> tuple[list[str], np.ndarray, str]:
    if args.data:
        frame = pd.read_csv(args.data, dtype=str, keep_default_na=False)
        docs = frame[args.text_column].tolist()
        y = np.where(frame[args.label_column].str.strip() == args.positive, 1, -1)
        return docs, y, f"{Path(args.data).name}: {args.positive} vs rest"
    frame = pd.read_csv(ROOT / "assets" / "arxiv_abstracts.csv.gz", dtype=str, keep_default_na=False)
    docs = (frame["title"] + "\n\n" + frame["abstract"]).tolist()
    y = np.array([1 if args.category in c.split() else -1 for c in frame["categories"]])
    return docs, y, f"bundled arXiv abstracts: {args.category} vs rest"


def priors(y: np.ndarray, seed: int) -> tuple[int, int]:
    rng = np.random.default_rng(seed)
    return int(rng.choice(np.flatnonzero(y > 0))), int(rng.choice(np.flatnonzero(y < 0)))


def recall_labels(order_labels: np.ndarray, n_pos: int) -> dict[float, int]:
    """Labels read (priors included) until each recall level is reached."""
    found = np.cumsum(np.asarray(order_labels) > 0)
    return {r: int(np.searchsorted(found, int(np.ceil(r * n_pos))) + 1) for r in RECALLS}


def wss95(labels_at_95: int, n: int) -> float:
    return (n - labels_at_95) / n - 0.05


MARGINLAB_MODELS = (
    (
        "MarginLab largest-positive, review model (ramp solver, squared hinge, balanced 9.8)",
        DOCUMENT_REVIEW["solver"],
        DOCUMENT_REVIEW["solver_params"],
    ),
    (
        "MarginLab largest-positive, review model with the hinge loss",
        DOCUMENT_REVIEW["solver"],
        {**DOCUMENT_REVIEW["solver_params"], "loss": "hinge"},
    ),
    (
        "MarginLab largest-positive + incremental (linear, C=1, unweighted)",
        "incremental",
        {"kernel": "linear", "C": 1.0},
    ),
)


def run_marginlab(X, y: np.ndarray, seed: int, solver: str, solver_params: dict) -> tuple[np.ndarray, list[float]]:
    pos, neg = priors(y, seed)
    loop = ActiveLearningLoop(X, strategy="largest-positive", solver=solver, solver_params=solver_params, seed=seed)
    order = [pos, neg]
    loop.teach(pos, 1)
    loop.teach(neg, -1)
    times = []
    n_pos = int((y > 0).sum())
    while int((y[order] > 0).sum()) < n_pos:
        q = loop.next_query()
        if q is None:
            break
        row = loop.teach(q.index, int(y[q.index]))
        times.append(row.update_ms + row.query_ms)
        order.append(int(q.index))
    return y[order], times


DIAGNOSTIC_MODELS = (
    ("LinearSVC squared hinge, C=0.11, ASReview weights, penalised intercept", "squared_hinge", True),
    ("LinearSVC hinge, C=0.11, ASReview weights, penalised intercept", "hinge", True),
    ("SVC linear (free bias), C=0.11, ASReview weights", "svc", True),
    ("LinearSVC hinge, C=0.11, no weights, penalised intercept", "hinge", False),
)


def run_reference(X, y: np.ndarray, seed: int, loss: str, weighted: bool) -> np.ndarray:
    """Largest score next, a scikit-learn model retrained from scratch after every label (``--diagnose``)."""
    from sklearn.svm import SVC, LinearSVC

    pos, neg = priors(y, seed)
    order = [pos, neg]
    read = np.zeros(len(y), dtype=bool)
    read[order] = True
    n_pos = int((y > 0).sum())
    K = (X @ X.T).toarray() if loss == "svc" and sp.issparse(X) else (X @ X.T if loss == "svc" else None)
    while int((y[order] > 0).sum()) < n_pos:
        yo = y[order]
        weight = np.ones(len(yo))
        if weighted:  # ASReview's Balanced(ratio=9.8): negatives n_pos / (9.8 n_neg), then sum = labels
            weight = np.where(yo > 0, 1.0, (yo > 0).sum() / (9.8 * (yo < 0).sum()))
            weight *= len(yo) / weight.sum()
        if loss == "svc":
            model = SVC(kernel="precomputed", C=0.11).fit(K[np.ix_(order, order)], yo, sample_weight=weight)
            score = model.decision_function(K[:, order])
        else:
            model = LinearSVC(C=0.11, loss=loss, max_iter=100_000).fit(X[order], yo, sample_weight=weight)
            score = model.decision_function(X)
        score[read] = -np.inf
        q = int(np.argmax(score))
        order.append(q)
        read[q] = True
    return y[order]


def ensure_asreview() -> Path | None:
    exe = ASREVIEW_VENV / "bin" / "asreview"
    if exe.exists():
        return exe
    print(f"installing {ASREVIEW_PIN} into {ASREVIEW_VENV.name}/ (benchmark-only; once) ...", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(ASREVIEW_VENV)], check=True)
        subprocess.run([str(ASREVIEW_VENV / "bin" / "pip"), "install", "-q", ASREVIEW_PIN], check=True)
    except (subprocess.CalledProcessError, OSError) as error:
        print(f"ASReview could not be installed ({error}); its rows are left out", flush=True)
        return None
    return exe


def asreview_label_ms(results_db: Path) -> tuple[np.ndarray, np.ndarray]:
    """Labels (+1/-1) and per-label ms from an ASReview results table, in labelling order.

    ASReview stamps each label (``time``) after the retraining + ranking that chose it, so a label's
    time is the gap since the label before: entry ``i`` is label ``i + 1``'s, NaN for the priors
    (labelled without a model, ``training_set`` NULL).  The label after the priors also holds the
    feature extraction.  Refuses labels that did not follow a retraining on every label before them.
    """
    with sqlite3.connect(results_db) as db:
        rows = db.execute("SELECT label, training_set, time FROM results ORDER BY time, rowid").fetchall()
    trained = np.array([np.nan if r[1] is None else r[1] for r in rows], dtype=float)
    stamps = np.array([r[2] for r in rows], dtype=float)
    model = ~np.isnan(trained)
    if not np.array_equal(trained[model], np.flatnonzero(model)):
        raise ValueError("ASReview did not retrain on every earlier label before each label (batch queries?)")
    ms = np.full(len(rows), np.nan)
    ms[1:] = np.diff(stamps) * 1e3
    ms[~model] = np.nan
    return np.where(np.array([r[0] for r in rows]) > 0, 1, -1), ms


def run_asreview(
    exe: Path, docs: list[str], y: np.ndarray, seed: int, folder: Path, n_stop: int | None = None
) -> tuple[np.ndarray, list[float], float]:
    """ASReview's default model from the priors of ``seed``: labels, per-label ms after the priors, s per label.

    Until every positive is found, or ``n_stop`` labels (priors included) when given.
    """
    titles = [d.split("\n\n", 1)[0] for d in docs]
    abstracts = [d.split("\n\n", 1)[1] if "\n\n" in d else "" for d in docs]
    data = folder / "review.csv"
    if not data.exists():
        pd.DataFrame(
            {
                "record_id": range(len(docs)),
                "title": titles,
                "abstract": abstracts,
                "label_included": (y > 0).astype(int),
            }
        ).to_csv(data, index=False)
    pos, neg = priors(y, seed)
    out = folder / f"sim{seed}.asreview"
    out.unlink(missing_ok=True)
    t0 = time.perf_counter()
    stop = [] if n_stop is None else ["--n-stop", str(n_stop)]
    subprocess.run(
        [
            str(exe),
            "simulate",
            str(data),
            "--prior-idx",
            str(pos),
            str(neg),
            "--seed",
            str(seed),
            "-o",
            str(out),
            *stop,
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=folder,
    )
    wall = time.perf_counter() - t0
    with zipfile.ZipFile(out) as archive:
        archive.extract("results.db", folder / f"sim{seed}")
    labels, ms = asreview_label_ms(folder / f"sim{seed}" / "results.db")
    return labels, ms[~np.isnan(ms)].tolist(), wall / max(len(labels), 1)


def per_label_sparse(
    n_docs: int, vocabulary: int, labels: int, solver: str, solver_params: dict, seed: int = 0
) -> dict:
    """Per-label ms of largest-positive with a model on synthetic Zipf documents (TF-IDF kept sparse)."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, vocabulary + 1)
    p = 1.0 / ranks**1.07
    p /= p.sum()
    words = np.array([f"w{k}" for k in range(vocabulary)])
    lengths = rng.integers(80, 250, n_docs)
    topic = rng.random(n_docs) < 0.03  # a few percent positives share a handful of topic words
    docs = []
    for length, is_topic in zip(lengths, topic, strict=True):
        draw = words[rng.choice(vocabulary, size=length, p=p)].tolist()
        if is_topic:
            draw += words[rng.integers(5000, 5020, 8)].tolist()
        docs.append(" ".join(draw))
    X, names = tfidf_features(docs, ngram_range=(1, 1))
    y = np.where(topic, 1, -1)
    loop = ActiveLearningLoop(X, strategy="largest-positive", solver=solver, solver_params=solver_params, seed=seed)
    pos, neg = priors(y, seed)
    loop.teach(pos, 1)
    loop.teach(neg, -1)
    times = []
    for _ in range(labels):
        q = loop.next_query()
        row = loop.teach(q.index, int(y[q.index]))
        times.append(row.update_ms + row.query_ms)
    late = times[-100:] if labels >= 200 else []  # the last 100 labels, when there are more than the first 100
    return {
        "n": n_docs,
        "terms": len(names),
        "nnz": X.nnz,
        "median": float(np.median(times[:100])),
        "p95": float(np.percentile(times[:100], 95)),
        "labels": labels,
        "late": (float(np.median(late)), float(np.percentile(late, 95))) if late else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data")
    parser.add_argument("--text-column", default="text")
    parser.add_argument("--label-column", default="label")
    parser.add_argument("--positive", default="1")
    parser.add_argument(
        "--category",
        default="cs.RO",
        help="the bundled arXiv abstracts' category that is positive (cs.RO robotics 34, cs.CL "
        "language 33, cs.NE neural/evolutionary 25, eess.IV image/video 54 of 993)",
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--no-asreview", action="store_true")
    parser.add_argument("--diagnose", action="store_true", help="add scikit-learn model variants (see above)")
    parser.add_argument("--sparse-size", type=int, default=10_000)
    parser.add_argument(
        "--sparse-labels",
        type=int,
        default=200,
        help="labels timed on the synthetic documents (the first 100 and, from 200, the last 100)",
    )
    parser.add_argument("--svd", type=int, default=0, help="use a K-component SVD reduction of the TF-IDF rows")
    args = parser.parse_args()

    import scipy
    import sklearn

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"scikit-learn {sklearn.__version__}; {os.cpu_count()} CPUs; BLAS threads as installed (not set)"
    )
    docs, y, title = load_task(args)
    n, n_pos = len(docs), int((y > 0).sum())
    T, terms = tfidf_features(docs)
    sparse = sparse_supported()
    if sparse:
        X, features = T, f"TF-IDF, {len(terms)} terms, sparse CSR"
    elif args.svd:
        X = svd_reduce(T, args.svd, seed=0)
        features = f"TF-IDF ({len(terms)} terms) reduced to {args.svd} SVD components"
    else:  # the same model on the same (exact) TF-IDF values, as a dense array of the terms in >= 2 documents
        T, terms = tfidf_features(docs, min_df=2)
        X = T.toarray()
        features = (
            f"TF-IDF of the {len(terms)} terms found in >= 2 documents, as a DENSE array: this kernel "
            "layer does not take CSR rows yet (per-label times are those of dense rows)"
        )
    sys.stdout.reconfigure(line_buffering=True)
    print(
        f"\n{title}: {n} documents, {n_pos} positives ({n_pos / n:.1%}); seeds 0..{args.seeds - 1}, "
        "priors: one positive + one negative per seed"
    )
    print(f"MarginLab features: {features}")
    exe = None if args.no_asreview else ensure_asreview()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            for name, solver, params in MARGINLAB_MODELS:
                labels, times = run_marginlab(X, y, seed, solver, params)
                rows.append(
                    (name, seed, recall_labels(labels, n_pos), float(np.median(times)), float(np.percentile(times, 95)))
                )
            if exe is not None:
                labels, times, _ = run_asreview(exe, docs, y, seed, Path(tmp))
                rows.append(
                    (
                        "ASReview 3.0.8 default (elas_u4: TF-IDF + SVM, max)",
                        seed,
                        recall_labels(labels, n_pos),
                        float(np.median(times)),
                        float(np.percentile(times, 95)),
                    )
                )
            if args.diagnose:
                for name, loss, weighted in DIAGNOSTIC_MODELS:
                    labels = run_reference(T, y, seed, loss, weighted)
                    rows.append((name, seed, recall_labels(labels, n_pos), float("nan"), float("nan")))
    frame = pd.DataFrame(
        [
            {
                "tool": t,
                "seed": s,
                **{f"to {int(r * 100)}%": v[r] for r in RECALLS},
                "WSS@95": wss95(v[0.95], n),
                "ms/label p50": m,
                "ms/label p95": p,
            }
            for t, s, v, m, p in rows
        ]
    )
    summary = frame.groupby("tool", sort=False).agg(
        {
            **{f"to {int(r * 100)}%": "mean" for r in RECALLS},
            "WSS@95": "mean",
            "ms/label p50": "median",
            "ms/label p95": "median",
        }
    )
    pd.set_option("display.width", 200)
    print("\nper seed (labels read, the two priors included):")
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\nmean over seeds (target: MarginLab's labels to 50/80/95% <= ASReview's; ms/label lower):")
    print(summary.to_string(float_format=lambda v: f"{v:.2f}"))

    print(
        f"\nper-label time, {args.sparse_size} synthetic documents, 50,000-term vocabulary, TF-IDF sparse "
        "(target median <= 10 ms):"
    )
    if not sparse:
        print("  not measured: this kernel layer does not take CSR rows")
        return
    for name, solver, params in reversed(MARGINLAB_MODELS):
        result = per_label_sparse(args.sparse_size, 50_000, args.sparse_labels, solver, params)
        first = min(result["labels"], 100)
        print(
            f"  {name}: {result['n']} documents, {result['terms']} terms, {result['nnz']} nonzeros; labels 3-"
            f"{first + 2}: median {result['median']:.2f} ms, p95 {result['p95']:.2f} ms "
            f"({'met' if result['median'] <= 10 else 'MISSED'})"
        )
        if result["late"]:
            print(
                f"    labels {result['labels'] - 97}-{result['labels'] + 2}: median {result['late'][0]:.2f} ms, "
                f"p95 {result['late'][1]:.2f} ms"
            )


if __name__ == "__main__":
    main()
