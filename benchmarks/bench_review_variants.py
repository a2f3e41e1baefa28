"""Variants of the review model against the review model itself (ASReview's model, label for label), in-process.

    python benchmarks/bench_review_variants.py [--seeds 10:15] [--topics cs.CL,cs.NE,eess.IV,cs.RO]
                                               [--variants base,r5,...] [--to-recall 0.95]

The task of ``bench_text_review.py`` (the bundled arXiv abstracts, one topic against the rest, the same two
priors per seed: one positive, one negative drawn with the seed; largest score next until the recall
``--to-recall`` is reached), with models that ASReview's default lacks, each learned exactly after every
label.  ``base`` is the review model (``core.presets.DOCUMENT_REVIEW``, learned by ``dual-cd`` on the sparse
rows), which reads the documents in ASReview's order (``bench_text_review.py`` runs ASReview itself), so a
variant that needs fewer labels than ``base`` needs fewer than ASReview on these priors.

Variants (``--variants``; all by default):

* ``C0.05``, ``C0.3``: the review model with another C (ASReview's is 0.11);
* ``r5``, ``r20``: another balance ratio (ASReview's is 9.8);
* ``wordchar``: the review model on word uni+bigrams and character 2-5-grams side by side (each block of
  unit length, the row scaled to unit length);
* ``sq+hinge``: two models' opinions, the review model and the same with the hinge loss (``ramp``): the next
  document is the one with the best sum of its two ranks among all documents;
* ``sq+char``: the review model on words and the same model on character n-grams, ranks summed;
* ``inc-auto``: the exact incremental solver (hinge, free bias, linear kernel, ``class_weight="balanced"``)
  choosing its C by leave-one-out from the labels (``auto=("C",)``: at 20, 40, 80, 160 labels).

Printed: per variant and topic the labels read (the priors included) to 50%, 80% and 95% recall, mean over
the seeds, with the difference from ``base``; then the mean over the topics.  Development seeds (10-14 by
default) are not those of the figures of ``bench_text_review.py`` (0-9).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.stats import rankdata

from benchmarks.bench_text_review import RECALLS, priors, recall_labels
from core.features import tfidf_features
from core.presets import DOCUMENT_REVIEW
from core.solvers import make_solver

ROOT = Path(__file__).resolve().parent.parent
TOPICS = ("cs.CL", "cs.NE", "eess.IV", "cs.RO")
REVIEW = {k: v for k, v in DOCUMENT_REVIEW["solver_params"].items() if k != "max_nonsv"}


def _review(**changes) -> tuple[str, dict, str]:
    return ("dual-cd", {**REVIEW, **changes}, "word")


VARIANTS: dict[str, dict] = {
    "base": {"models": [_review()]},
    "C0.05": {"models": [_review(C=0.05)]},
    "C0.3": {"models": [_review(C=0.3)]},
    "r5": {"models": [_review(balance_ratio=5.0)]},
    "r20": {"models": [_review(balance_ratio=20.0)]},
    "wordchar": {"models": [("dual-cd", REVIEW, "word+char")]},
    "sq+hinge": {"models": [_review(), ("ramp", {**REVIEW, "loss": "hinge", "max_nonsv": None}, "word")]},
    "sq+char": {"models": [_review(), ("dual-cd", REVIEW, "char")]},
    "inc-auto": {
        "models": [("incremental", {"kernel": "linear", "C": 1.0, "class_weight": "balanced", "auto": ("C",)}, "word")]
    },
}


class Features:
    """The TF-IDF rows of the abstracts (word, char, both), made once each."""

    def __init__(self, docs: list[str]):
        self.docs = docs
        self.made: dict[str, sp.csr_matrix] = {}

    def __call__(self, kind: str) -> sp.csr_matrix:
        if kind not in self.made:
            if kind == "word+char":
                both = sp.hstack([self("word"), self("char")]) / np.sqrt(2.0)
                self.made[kind] = sp.csr_matrix(both)
            else:
                self.made[kind] = tfidf_features(self.docs, analyzer=kind)[0]
        return self.made[kind]


def run(variant: dict, features: Features, y: np.ndarray, seed: int, to_recall: float) -> dict[float, int]:
    """Labels read to each recall level: largest (summed-rank) score next, every model learning every label."""
    models = [make_solver(solver, features(kind), **params) for solver, params, kind in variant["models"]]
    pos, neg = priors(y, seed)
    order = [pos, neg]
    read = np.zeros(len(y), dtype=bool)
    read[order] = True
    for model in models:
        model.learn(pos, 1)
        model.learn(neg, -1)
    target = int(np.ceil(to_recall * (y > 0).sum()))
    while int((y[order] > 0).sum()) < target:
        scores = [np.asarray(m.decision_function(), dtype=float) for m in models]
        score = scores[0].copy() if len(scores) == 1 else sum(rankdata(s) for s in scores)
        score[read] = -np.inf
        q = int(np.argmax(score))
        order.append(q)
        read[q] = True
        for model in models:
            model.learn(q, int(y[q]))
    return recall_labels(y[order], int((y > 0).sum()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="10:15", help="first:last+1")
    parser.add_argument("--topics", default=",".join(TOPICS))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--to-recall", type=float, default=0.95)
    args = parser.parse_args()
    first, stop = (int(v) for v in args.seeds.split(":"))
    frame = pd.read_csv(ROOT / "assets" / "arxiv_abstracts.csv.gz", dtype=str, keep_default_na=False)
    features = Features((frame["title"] + "\n\n" + frame["abstract"]).tolist())
    levels = [r for r in RECALLS if r <= args.to_recall]
    rows = []
    for name in args.variants.split(","):
        for topic in args.topics.split(","):
            y = np.array([1 if topic in c.split() else -1 for c in frame["categories"]])
            t0 = time.perf_counter()
            for seed in range(first, stop):
                labels = run(VARIANTS[name], features, y, seed, args.to_recall)
                rows.append({"variant": name, "topic": topic, "seed": seed, **{r: labels[r] for r in levels}})
            mean = pd.DataFrame(rows[-(stop - first) :])[levels].mean()
            print(
                f"{name:10s} {topic:8s} "
                + " / ".join(f"{v:.1f}" for v in mean)
                + f"  ({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )
    table = pd.DataFrame(rows).groupby(["variant", "topic"], sort=False)[levels].mean()
    print(f"\nlabels to {' / '.join(f'{r:.0%}' for r in levels)} recall, mean of seeds {first}-{stop - 1}:")
    print(table.to_string(float_format=lambda v: f"{v:.1f}"))
    print("\nmean over the topics:")
    print(table.groupby("variant", sort=False).mean().to_string(float_format=lambda v: f"{v:.1f}"))


if __name__ == "__main__":
    main()
