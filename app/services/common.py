"""What every part of the service shares: the choices offered, defaults, results and errors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.strategies import DEFAULT_SOLVER  # default solver of each heuristic (DESIGN.md)

#: heuristics an analyst can label with (``gradient`` needs the true labels: simulation only)
LABEL_STRATEGIES = ("near-boundary", "largest-positive", "randomized-search", "autoactive", "ramp-region", "random")
#: heuristics the Compare page can simulate (the true labels play the oracle)
COMPARE_STRATEGIES = (*LABEL_STRATEGIES, "gradient")
#: solvers the Label page offers
SOLVERS = ("incremental", "lasvm", "ramp", "active-set")
#: defaults for the RBF kernel: C = 1 and gamma = 1 / (n_features * Var(X)) ("scale")
DEFAULT_C = 1.0
DEFAULT_GAMMA = "scale"
#: share of a dataset with true labels held out to draw the live ROC curve and AUC
EVAL_FRACTION = 0.3
#: ... and at most this many items (the live evaluation stays cheap on large datasets)
EVAL_MAX_ITEMS = 2000

DEMO_NAME = "digits: 8 vs rest"

VALUE_NAMES = {1: "positive", -1: "negative", 0: "skip"}

__all__ = ["COMPARE_STRATEGIES", "DEFAULT_C", "DEFAULT_GAMMA", "DEFAULT_SOLVER", "DEMO_NAME", "EVAL_FRACTION",
           "EVAL_MAX_ITEMS", "LABEL_STRATEGIES", "SOLVERS", "VALUE_NAMES", "Outcome", "ServiceError",
           "scale_features"]


class ServiceError(Exception):
    """Something the user asked for cannot be done; the message says why."""


@dataclass(frozen=True)
class Outcome:
    """What happened to a Positive / Negative / Skip / Undo request."""

    ok: bool
    message: str
    kind: str = "info"  # "info", "warning" or "error"


def scale_features(X: np.ndarray, scaling: str) -> np.ndarray:
    """``none`` or ``standard`` (zero mean, unit variance per column; constant columns left at 0)."""
    if scaling in (None, "", "none"):
        return np.asarray(X, dtype=np.float64)
    if scaling != "standard":
        raise ServiceError(f"Unknown scaling '{scaling}'; choose 'none' or 'standard'.")
    from core.datasets import standardize

    return standardize(X)[0]  # (scaled X, mean, scale)
