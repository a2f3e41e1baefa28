"""Named models: a solver and its parameters, chosen together for a kind of review.

``DOCUMENT_REVIEW`` is the model for finding the rare relevant documents of a collection
(``largest-positive`` on TF-IDF rows).  It is ASReview LAB's default model, learned exactly after
every label by the ramp solver of Wang & Vucetic with the hinge loss (no CCCP step is needed: the
problem is the convex SVM without bias):

* kernel <x, z> + 1 (``poly``, degree 1, gamma 1, coef0 1): the intercept is a weight of a constant
  feature, penalised like the others (liblinear's ``intercept_scaling=1``);
* C = 0.11 and ``class_weight="balanced"`` with ``balance_ratio=9.8``: after every label the
  positives together weigh 9.8 times the negatives, all weights summing to the number of labels;
* the hinge loss where ASReview uses its square (the solvers here solve the hinge problem).

The constants are ASReview's own, not tuned on a benchmark; ``benchmarks/bench_text_review.py``
compares the two tools on the bundled abstracts.
"""

from __future__ import annotations

from typing import Any

DOCUMENT_REVIEW: dict[str, Any] = {
    "solver": "ramp",
    "solver_params": {"kernel": "poly", "degree": 1, "gamma": 1.0, "coef0": 1.0, "C": 0.11, "loss": "hinge",
                      "max_nonsv": None, "class_weight": "balanced", "balance_ratio": 9.8},
}

PRESETS: dict[str, dict[str, Any]] = {"review": DOCUMENT_REVIEW}

__all__ = ["DOCUMENT_REVIEW", "PRESETS"]
