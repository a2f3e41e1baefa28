"""Named models: a solver and its parameters, chosen together for a kind of review.

``DOCUMENT_REVIEW`` is the model for finding the rare relevant documents of a collection
(``largest-positive`` on TF-IDF rows).  It is ASReview LAB's default model (``elas_u4``: LinearSVC
with the squared hinge), learned exactly after every label by the ramp solver of Wang & Vucetic with
the squared hinge loss (no CCCP step is needed: the problem is the convex L2-loss SVM without bias):

* kernel <x, z> + 1 (``poly``, degree 1, gamma 1, coef0 1): the intercept is a weight of a constant
  feature, penalised like the others (liblinear's ``intercept_scaling=1``);
* C = 0.11 and ``class_weight="balanced"`` with ``balance_ratio=9.8``: after every label the
  positives together weigh 9.8 times the negatives, all weights summing to the number of labels;
* the squared hinge C_i max(0, 1 - y f(x))^2, as ASReview (liblinear's L2-loss SVM);
* ``tol=1e-6``: the KKT conditions to 1e-6 rather than the solvers' default 1e-3.  At 1e-3 the
  solution depends a little on the path the solver took, and documents whose scores nearly tie
  came in another order than with liblinear (a label more or less here and there); at 1e-6 the
  model is the optimum to the ranking's precision, and on the four topics of the bundled abstracts
  MarginLab reads the documents in the same order as ASReview (docs/benchmarks.md has the figures).

The model is not sparse: with the squared hinge and C this small, every labelled document is a
support vector and every unlabelled one lies inside the margin (|f| < 1), so counts of support
vectors or of items inside the margin follow the number of labels and say nothing of the model
(``"sparse": False``; the app draws the positives found against labels instead).

With the linear kernel on sparse rows (TF-IDF, as the app and the command line make for documents) the
model is one weight vector over the features plus the constant one, and ``solver_for`` has it learned
by the ``dual-cd`` solver (``core/solvers/dual_cd.py``: liblinear's dual coordinate descent, keeping
the weight vector beside the dual weights) instead of through the kernel matrix of the labelled
documents: the same problem and optimum to the same tolerance, at a cost per label that grows with
the labelled rows instead of with their cube.  Dense rows (SVD features, any CSV) stay with the ramp
solver.

The constants are ASReview's own, not tuned on a benchmark; ``benchmarks/bench_text_review.py``
compares the two tools on the bundled abstracts.  An earlier version used the hinge loss: on the
four topics of the bundled abstracts it found the positives of two of them sooner and those of
``cs.CL`` far later (the figures are in docs/benchmarks.md); ``loss="hinge"`` stays available.
"""

from __future__ import annotations

from typing import Any

import scipy.sparse as sp

from core.solvers import get as solver_entry
from core.solvers import names as solver_names

DOCUMENT_REVIEW: dict[str, Any] = {
    "solver": "ramp",
    "solver_params": {
        "kernel": "poly",
        "degree": 1,
        "gamma": 1.0,
        "coef0": 1.0,
        "C": 0.11,
        "loss": "squared_hinge",
        "tol": 1e-6,
        "max_nonsv": None,
        "class_weight": "balanced",
        "balance_ratio": 9.8,
    },
    "sparse": False,
    "words": "the review model",
}

PRESETS: dict[str, dict[str, Any]] = {"review": DOCUMENT_REVIEW}


def preset_of(solver: str, solver_params: dict[str, Any] | None) -> str | None:
    """The name of the preset whose solver and parameters these are exactly (None: a model of its own)."""
    return next(
        (
            name
            for name, preset in PRESETS.items()
            if solver == preset["solver"] and dict(solver_params or {}) == preset["solver_params"]
        ),
        None,
    )


def preset_words(name: str | None) -> str | None:
    """A preset's name in a screener's words ("the review model"), whichever solver learns it (``solver_for``);
    None for a name that is not a preset's ("standard": the SVM, named by its solver)."""
    return PRESETS[name]["words"] if name in PRESETS else None


def has_documents(feature_blocks: list[dict[str, Any]]) -> bool:
    """Whether a dataset's features hold documents (a TF-IDF block, or its SVD reduction)."""
    return any(b.get("kind") in ("tfidf", "svd") for b in feature_blocks)


def suited_model(feature_blocks: list[dict[str, Any]], strategies: list[str], chosen: bool) -> str:
    """The model "suited to the data" (the app's and the CLI's "auto"): ``review`` for documents (a dataset with a
    TF-IDF block) searched only by heuristics that ask about the likely positives first (``relevant_first``:
    ``largest-positive``), when no solver or parameter was ``chosen``; ``standard`` otherwise."""
    from core import strategies as registry

    documents = has_documents(feature_blocks)
    relevant_first = bool(strategies) and all(
        name in registry.REGISTRY and registry.get(name).relevant_first for name in strategies
    )
    return "review" if documents and relevant_first and not chosen else "standard"


def is_sparse(solver: str, solver_params: dict[str, Any] | None) -> bool:
    """Whether the model keeps some labels out of its support vectors and some items out of its margin, so that
    their counts tell something (every model but a preset declared ``"sparse": False``)."""
    name = preset_of(solver, solver_params)
    return name is None or bool(PRESETS[name].get("sparse", True))


def taken_by(solver: str, solver_params: dict[str, Any] | None) -> dict[str, Any]:
    """``solver_params`` as ``solver`` takes them: C and gamma from the labels (``auto``, with its grid and
    moments) are the exact solvers' (``core.solvers.auto_hyper``); a solver without exact unlearning keeps
    the starting values."""
    params = dict(solver_params or {})
    if params.get("auto") and solver in solver_names() and not solver_entry(solver).exact_unlearn:
        for key in ("auto", "auto_grid", "auto_moments", "auto_lag"):
            params.pop(key, None)
    return params


def solver_for(solver: str, solver_params: dict[str, Any] | None, X) -> tuple[str, dict[str, Any]]:
    """(solver, parameters) that learn the model ``solver`` with ``solver_params`` on the rows ``X``.

    The review model on sparse rows is learned by ``dual-cd`` (its ``max_nonsv``, which the squared
    hinge does not use, left out); C and gamma from the labels (``auto``) left out for a solver without
    exact unlearning (they are the exact solvers'); everything else as given.  ``random_state`` does not
    count as a model parameter here (the active-learning loop adds its seed)."""
    params = taken_by(solver, solver_params)
    model = {k: v for k, v in params.items() if k != "random_state"}
    if preset_of(solver, model) == "review" and sp.issparse(X):
        params.pop("max_nonsv", None)
        return "dual-cd", params
    return solver, params


__all__ = [
    "DOCUMENT_REVIEW",
    "PRESETS",
    "is_sparse",
    "has_documents",
    "preset_of",
    "preset_words",
    "solver_for",
    "suited_model",
    "taken_by",
]
