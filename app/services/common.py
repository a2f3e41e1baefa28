"""What every part of the service shares: the choices offered, defaults, results and errors."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from core import solvers, strategies
from core.registry import NameList
from core.settings import LEGACY_EVAL_FRACTION
from core.strategies import BASELINE, DEFAULT_SOLVER, DEFAULT_STRATEGY  # (docs/design.md)
from storage.export import dataset_class_names

# The choices offered, as live views of the registries of core.strategies and core.solvers: a strategy or
# solver registered there is offered here.
#: heuristics an analyst can label with, the default first (not those that read the true labels:
#: ``gradient`` is for simulations only)
LABEL_STRATEGIES = strategies.REGISTRY.name_list(lambda e: not e.needs_oracle, first=DEFAULT_STRATEGY)
#: how each heuristic picks the next item, in a screener's words (the New session form offers these)
STRATEGY_WORDS = strategies.REGISTRY.name_table(lambda e: e.label, where=lambda e: not e.needs_oracle)
#: heuristics that read the true labels: the Compare page's yardsticks (simulations only)
ORACLE_STRATEGIES = strategies.REGISTRY.name_list(lambda e: e.needs_oracle)
#: heuristics the Compare page can simulate (the true labels play the oracle): those, then the yardsticks
COMPARE_STRATEGIES = NameList(lambda: (*LABEL_STRATEGIES, *ORACLE_STRATEGIES))
#: solvers the Label page offers
SOLVERS = solvers.SOLVER_NAMES
#: solvers that unlearn an answer exactly (a changed answer is unlearned, not relearned from the start)
EXACT_SOLVERS = solvers.REGISTRY.name_list(lambda e: e.exact_unlearn)
#: defaults for the RBF kernel: C = 1 and gamma = 1 / (n_features * Var(X)) ("scale")
DEFAULT_C = 1.0
DEFAULT_GAMMA = "scale"
#: gamma by name: "scale" = 1 / (n_features * Var(X)), "auto" = 1 / n_features (as in scikit-learn)
GAMMA_NAMES = ("scale", "auto")
#: share of a dataset with true labels held out of a labelling session to draw the live ROC curve and AUC,
#: unless the analyst asks for an evaluation split: none (every item can be labelled; the live curve is
#: drawn from the scores the model gave the labelled items when it asked)
EVAL_FRACTION = 0.0
#: the share held out by a session stored without one (the default before the split was asked for):
#: such a session resumes with the split it was started with (read by ``core.settings``)
STORED_EVAL_FRACTION = LEGACY_EVAL_FRACTION
#: ... and at most this many items (the live evaluation stays cheap on large datasets)
EVAL_MAX_ITEMS = 2000

DEMO_NAME = "digits: 8 vs rest"
#: the name of the demo session the first owner finds open (``Sessions.open_demo_session``)
DEMO_SESSION_NAME = "Demo"

VALUE_NAMES = {1: "positive", -1: "negative", 0: "skip"}

__all__ = [
    "BASELINE",
    "COMPARE_STRATEGIES",
    "DEFAULT_C",
    "DEFAULT_GAMMA",
    "DEFAULT_SOLVER",
    "DEFAULT_STRATEGY",
    "DEMO_NAME",
    "DEMO_SESSION_NAME",
    "EVAL_FRACTION",
    "EVAL_MAX_ITEMS",
    "EXACT_SOLVERS",
    "FIND_CHARS",
    "GAMMA_NAMES",
    "LABEL_STRATEGIES",
    "ORACLE_STRATEGIES",
    "SOLVERS",
    "STORED_EVAL_FRACTION",
    "STRATEGY_WORDS",
    "VALUE_NAMES",
    "DatabaseUnavailable",
    "Outcome",
    "ServiceError",
    "class_names",
    "database_trouble",
    "find_words",
    "forwarded",
    "gamma_value",
    "numeric_columns",
    "penalty_value",
    "positive_meaning",
    "positive_number",
    "scale_features",
    "scaled_row_blocks",
    "scaling_name",
    "session_kernel",
    "tuned_params",
    "whole_number",
]


class ServiceError(Exception):
    """Something the user asked for cannot be done; the message says why (the one error a page catches:
    ``errors`` translates storage's, the database's and core's into it)."""


class DatabaseUnavailable(ServiceError):
    """The database failed under a call (a server restarting, a full disk, a damaged page, another program's
    file); the message says so in the app's words, with a way on."""


@dataclass(frozen=True)
class Outcome:
    """What happened to a Positive / Negative / Skip / Undo request."""

    ok: bool
    message: str
    kind: str = "info"  # "info", "warning" or "error"


def scaling_name(scaling: str | None) -> str:
    """``none`` (also for None or "") or ``standard``; anything else is refused, naming the choices."""
    if scaling in (None, "", "none"):
        return "none"
    if scaling != "standard":
        raise ServiceError(f"Unknown scaling '{scaling}'; choose 'none' or 'standard'.")
    return scaling


def scale_features(X, scaling: str, numeric_columns=None):
    """``none`` or ``standard``: zero mean, unit variance of the numeric columns (``numeric_columns``;
    every column of a dense matrix when None), constant columns left at 0. A sparse matrix stays
    sparse: its TF-IDF or fingerprint columns are never centred."""
    from core.features import scale_features as scale

    return scale(X, scaling_name(scaling), numeric_columns)


def scaled_row_blocks(X, scaling: str, numeric_columns, *row_sets):
    """``scale_features(X, ...)[rows]`` for each of ``row_sets``, without scaling the whole of X."""
    from core.features import scaled_row_blocks as blocks

    return blocks(X, scaling_name(scaling), numeric_columns, *row_sets)


def numeric_columns(meta: dict) -> list[int] | None:
    """The columns standard scaling applies to, from a dataset's stored feature blocks (None: all)."""
    blocks = meta.get("feature_blocks")
    if not blocks:
        return None
    return [j for b in blocks if b.get("kind") == "numeric" for j in range(int(b["start"]), int(b["stop"]))]


def session_kernel(meta: dict) -> str:
    """The kernel a new session uses on a dataset: the one that suits its features when this version
    has it (linear for documents, tanimoto for fingerprints), else rbf."""
    from core.kernels import KERNEL_NAMES

    kernel = str(meta.get("default_kernel", "rbf"))
    return kernel if kernel in KERNEL_NAMES else "rbf"


def model_choice(
    model: str | None,
    solver: str | None,
    meta: dict,
    C: float,
    gamma: float | str,
    strategy: str | None = None,
    tuned: dict | None = None,
) -> tuple[str | None, dict]:
    """(solver, solver parameters) for a session or a comparison on a dataset with ``meta``.

    ``model`` "standard" (or None): ``solver`` as given (None: each heuristic's own) with the dataset's
    kernel, C and gamma, and the ``tuned`` parameters the analyst set (``tuned_params``: a kernel, a
    loss, a tolerance; none: the solver's defaults).  A named model of ``core.presets`` ("review"): its
    own solver and parameters; another solver chosen with it is refused, and so are ``tuned`` ones; C
    and gamma are not used.  "auto" (the New session form's default): the review model for documents
    (a dataset with text features) searched most likely relevant first (a heuristic whose entry says
    ``relevant_first``: ``largest-positive``) and no solver or parameter chosen, otherwise "standard".
    """
    from core.presets import PRESETS, suited_model

    tuned = dict(tuned or {})
    if model == "auto":
        model = suited_model(
            meta.get("feature_blocks", []), [strategy] if strategy else [], chosen=solver is not None or bool(tuned)
        )
    if model in (None, "", "standard"):
        return solver, {"kernel": session_kernel(meta), "C": C, "gamma": gamma, **tuned}
    if model not in PRESETS:
        raise ServiceError(f"Unknown model '{model}'; choose auto, standard or {', '.join(PRESETS)}.")
    preset = PRESETS[model]
    if solver not in (None, preset["solver"]):
        raise ServiceError(
            f"The {model} model runs on the {preset['solver']} solver; choose that solver or the default, not {solver}."
        )
    if tuned:
        raise ServiceError(
            f"The {model} model sets its own {' and '.join(tuned)}; choose the SVM to set "
            f"{'them' if len(tuned) > 1 else 'it'}."
        )
    return preset["solver"], dict(preset["solver_params"])


def tuned_params(
    *, kernel: str | None = None, loss: str | None = None, tol: Any = None, solver: str | None = None
) -> dict:
    """The solver parameters an analyst set under Advanced, checked: ``kernel`` (None or "auto": the one
    that suits the data), ``loss`` (None: the solver's own; only the ramp solver, ``solver``, takes one),
    ``tol`` (None: the solver's default).  Nothing set gives ``{}``: the defaults, bit for bit."""
    from core.kernels import KERNEL_NAMES
    from core.solvers.base import TOL_MAX
    from core.solvers.ramp import LOSSES

    tuned: dict[str, Any] = {}
    if kernel not in (None, "", "auto"):
        if kernel not in KERNEL_NAMES:
            raise ServiceError(f"Unknown kernel '{kernel}'; choose one of {', '.join(KERNEL_NAMES)}.")
        tuned["kernel"] = kernel
    if loss not in (None, ""):
        if loss not in LOSSES:
            raise ServiceError(f"Unknown loss '{loss}'; choose one of {', '.join(LOSSES)}.")
        if not (solver in solvers.REGISTRY and "loss" in solvers.get(solver).own_params):
            takers = " or ".join(e.name for e in solvers.REGISTRY.entries(lambda e: "loss" in e.own_params))
            raise ServiceError(
                f"The loss is the {takers} solver's choice; the {solver} solver learns the hinge "
                f"loss. Choose the {takers} solver, or leave the loss as it is."
            )
        tuned["loss"] = loss
    if tol not in (None, ""):
        tol = positive_number(tol, "The tolerance")
        if tol >= TOL_MAX:
            raise ServiceError(f"The tolerance must be below {TOL_MAX:g}, not {tol:g}.")
        tuned["tol"] = tol
    return tuned


def positive_number(value: Any, name: str) -> float:
    """``value`` as a positive finite float; otherwise a ``ServiceError`` naming the parameter and the value."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not np.isfinite(number) or number <= 0:
        raise ServiceError(f"{name} must be a positive finite number, not {value!r}.")
    return number


def penalty_value(value: Any) -> float:
    """The penalty C: a positive number within what the solvers take (``core.solvers.base.C_RANGE``),
    checked before anything is stored."""
    from core.solvers.base import C_RANGE

    number = positive_number(value, "C")
    if not C_RANGE[0] <= number <= C_RANGE[1]:
        raise ServiceError(f"C must be between {C_RANGE[0]:g} and {C_RANGE[1]:g}, not {value!r}.")
    return number


def gamma_value(value: Any) -> float | str:
    """The RBF kernel's gamma: one of ``GAMMA_NAMES`` or a positive finite number."""
    if isinstance(value, str) and value.strip().lower() in GAMMA_NAMES:
        return value.strip().lower()
    try:
        return positive_number(value, "gamma")
    except ServiceError:
        names = ", ".join(f"'{n}'" for n in GAMMA_NAMES)
        raise ServiceError(f"gamma must be {names} or a positive finite number, not {value!r}.") from None


def whole_number(value: Any, name: str, *, low: int = 0, high: int | None = None) -> int:
    """``value`` as an int in [low, high]; otherwise a ``ServiceError`` naming the parameter and the value."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if (
        isinstance(value, bool)
        or not np.isfinite(number)
        or number != int(number)
        or number < low
        or (high is not None and number > high)
    ):
        bound = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise ServiceError(f"{name} must be a whole number {bound}, not {value!r}.")
    return int(number)


def database_trouble(error: Exception) -> str:
    """What a database error says, without the statement and parameters SQLAlchemy adds (e.g. the
    driver's "database or disk is full")."""
    cause = getattr(error, "orig", None) or error
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__


#: at most this many characters of what the analyst is looking for are kept (a session's or a project's)
FIND_CHARS = 200


def find_words(find: object) -> str | None:
    """What to find as it is kept: spaces and line breaks folded into single spaces, at most
    ``FIND_CHARS`` characters; None when nothing is left."""
    return " ".join(str(find or "").split())[:FIND_CHARS] or None


def class_names(meta: dict[str, Any] | None) -> dict[int, str]:
    """``{+1: positive class name, -1: negative class name, 0: "skipped"}`` of a dataset (its ``meta``): the
    names its export writes."""
    return dataset_class_names(meta)


def positive_meaning(find: str | None, names: dict[int, str]) -> str | None:
    """What a Positive answer means: the words of whoever set the labelling up when there are some, else the
    dataset's positive class when it has one (None: neither)."""
    return find or (names[1] if names[1] != "positive" else None)


#: the Label page's answer buttons (a two-class session)
ANSWER_BUTTONS = {1: "Positive", -1: "Negative", 0: "Skip"}


def answer_words(value: int, names: dict[int, str]) -> str:
    """A two-class answer as the pages say it: the Label page's button, with the dataset's own class name
    beside it when it has one ("Positive (8)", "Negative (rest)"); ``names[0]`` ("skipped") for a skip."""
    if value == 0:
        return names[0]
    button = ANSWER_BUTTONS[value]
    return button if names[value].lower() == button.lower() else f"{button} ({names[value]})"


def find_placeholder(names: dict[int, str]) -> str:
    """The placeholder of "What to find" for a dataset with these class names: what an empty field leaves."""
    if names[1].lower() == ANSWER_BUTTONS[1].lower():
        return "empty: just Positive / Negative"
    return f"empty: the dataset's own classes, {answer_words(1, names)} / {answer_words(-1, names)}"


def forwarded(part: str, name: str, source: type):
    """What ``owner.name`` is when ``owner.part`` (a ``source``) does it: a method handing its arguments
    on (with ``source.name``'s signature and docstring), or a read-only property for an attribute.
    A facade or a run says so once per name instead of inheriting every part's methods."""
    target = inspect.getattr_static(source, name)
    if isinstance(target, staticmethod):
        target = target.__func__
    if not callable(target):  # a property, or a plain attribute
        return property(
            lambda self: getattr(getattr(self, part), name),
            doc=getattr(target, "__doc__", None) if isinstance(target, property) else None,
        )

    @functools.wraps(target)
    def forward(self, *args, **kwargs):
        return getattr(getattr(self, part), name)(*args, **kwargs)

    return forward
