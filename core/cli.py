"""Command line: ``python -m core fit`` and ``python -m core compare`` (docs/cli.md; contract: docs/design.md).

``fit`` trains an :class:`~core.estimator.OnlineSVC` on a CSV file (or a
bundled dataset, ``--data bundled:digits``) and reports held-out accuracy and
ROC AUC, support vectors, kernel evaluations, dual objective and time.
``compare`` runs query strategies side by side (``core.experiment``).

Bad input (a missing file, a missing column, a non-numeric value, a label
column with other than two classes, ...) prints one line ``error: ...`` to
stderr and exits with status 2; no traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.class_experiment import ACCURACY_LEVELS
from core.dask_runs import SCHEDULER_ENV
from core.datasets import BUNDLED, DataError, Dataset, load_bundled, load_csv, stratified_split
from core.features import Standardizer, scale_features
from core.kernels import KERNEL_NAMES
from core.metrics import accuracy, roc_auc
from core.multi_label_experiment import SEPARATOR
from core.multiclass import MULTICLASS_STRATEGIES, MULTILABEL_STRATEGIES
from core.presets import PRESETS, has_documents, preset_of, suited_model, taken_by
from core.priors import PriorError, read_keys, rows_of_keys
from core.settings import STANDARD_MODEL, SessionSettings, SettingsError
from core.solvers import SOLVER_NAMES
from core.solvers import get as solver_entry
from core.solvers.auto_hyper import DEFAULT_LAG, DEFAULT_MOMENTS
from core.strategies import COLD_STARTS, DEFAULT_COLD_START, STRATEGY_NAMES
from core.strategies import get as strategy_entry

EXIT_USAGE = 2
BUNDLED_PREFIX = "bundled:"
SOLVERS = SOLVER_NAMES  # (a live view of the solvers' registry)
EXACT_SOLVERS = [name for name in SOLVER_NAMES if solver_entry(name).exact_unlearn]
# --C / --gamma left out are "auto" when the run's solvers include an exact one (bench_auto_hyper.py:
# docs/benchmarks.md, "C and gamma from the labels")
AUTO_BY_DEFAULT = True
KERNEL_CHOICES = tuple(dict.fromkeys((*KERNEL_NAMES, "rbf", "linear", "poly", "tanimoto")))


class CLIError(Exception):
    """A problem with the user's input: reported on one line, exit status 2."""


# -- argument parsing ----------------------------------------------------------


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return value


def _open_fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1, got {text!r}")
    return value


def _gamma(text: str) -> float | str:
    if text in ("scale", "auto"):
        return text
    return _positive_float(text)


def _C(text: str) -> float | str:
    return "auto" if text == "auto" else _positive_float(text)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _prior_counts(text: str) -> tuple[int, int]:
    from core.priors import parse_counts

    try:
        return parse_counts(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _separator(text: str) -> str:
    names = {"auto": "auto", "comma": ",", "semicolon": ";", "tab": "\t", "\\t": "\t", "pipe": "|"}
    value = names.get(text, text)
    if value not in ("auto", ",", ";", "\t", "|"):
        raise argparse.ArgumentTypeError(f"expected auto, ',', ';', tab or '|', got {text!r}")
    return value


def _decimal(text: str) -> str:
    if text not in ("auto", ".", ","):
        raise argparse.ArgumentTypeError(f"expected auto, '.' or ',', got {text!r}")
    return text


def _data_arguments(p: argparse.ArgumentParser, repeatable: bool = False, required: bool = True) -> None:
    g = p.add_argument_group("data")
    g.add_argument(
        "--data",
        required=required,
        metavar="FILE.csv",
        action="append" if repeatable else "store",
        help="CSV file with a header row, or bundled:NAME ("
        + ", ".join(BUNDLED)
        + ")"
        + (
            "; repeat it to run the same study on several datasets (each read with the same options)"
            if repeatable
            else ""
        ),
    )
    g.add_argument("--label-column", metavar="COL", help="column holding the class labels (required for a CSV file)")
    g.add_argument(
        "--positive",
        metavar="VALUE",
        help="label value of the positive class; on a column with more than two values, that value "
        "against the rest (default: the larger of two values)",
    )
    g.add_argument(
        "--feature-columns",
        metavar="A,B,...",
        help="comma-separated numeric feature columns (default: every column but the label; none when "
        "--text-column or --smiles-column is given)",
    )
    g.add_argument(
        "--one-vs-rest",
        action="store_true",
        help="accepted for compatibility: --positive on a many-valued column is already one vs the rest",
    )
    g.add_argument(
        "--drop-constant",
        action="store_true",
        help="accepted for compatibility: constant feature columns are dropped by default (with a notice)",
    )
    g.add_argument("--keep-constant", action="store_true", help="keep constant feature columns")
    g.add_argument(
        "--scale",
        choices=("none", "standard"),
        default="standard",
        help="standardise the numeric features with statistics of the unlabelled data "
        "(default standard; text and fingerprint features are never centred)",
    )
    g.add_argument(
        "--sep", type=_separator, default="auto", metavar="auto|,|;|tab||", help="delimiter (default: detected)"
    )
    g.add_argument(
        "--decimal",
        type=_decimal,
        default="auto",
        metavar="auto|.|,",
        help="decimal separator (default: detected; ',' only with another delimiter)",
    )
    g.add_argument(
        "--missing",
        choices=("error", "drop", "impute"),
        default="error",
        help="empty/NA cells: error (default; lists every affected column), drop the rows, or impute "
        "(median of a number, most frequent category)",
    )
    g.add_argument(
        "--one-hot",
        action="append",
        default=[],
        metavar="COL",
        help="one-hot encode this text-valued column (repeatable)",
    )
    g.add_argument(
        "--text-column",
        action="append",
        default=[],
        metavar="COL",
        help="free-text column as TF-IDF features, kept sparse (repeatable)",
    )
    g.add_argument(
        "--text-analyzer",
        choices=("word", "char"),
        default="word",
        help="TF-IDF terms: word uni- and bigrams (default) or character 2-5-grams",
    )
    g.add_argument(
        "--text-min-df",
        type=_positive_int,
        default=1,
        help="keep terms found in at least this many documents (default 1)",
    )
    g.add_argument(
        "--text-max-features", type=_positive_int, default=None, help="keep at most this many terms (the most frequent)"
    )
    g.add_argument(
        "--text-svd",
        type=_positive_int,
        default=None,
        metavar="K",
        help="reduce the TF-IDF rows to K dense components (truncated SVD)",
    )
    g.add_argument(
        "--text-blocks",
        action="store_true",
        help="several --text-column: one vocabulary per column (default: each row's texts joined "
        "into one document, title then abstract)",
    )
    g.add_argument("--smiles-column", metavar="COL", help="SMILES column as Morgan fingerprints (RDKit)")
    g.add_argument("--fingerprint-radius", type=int, default=2, help="Morgan radius (default 2)")
    g.add_argument("--fingerprint-bits", type=_positive_int, default=2048, help="fingerprint length (default 2048)")
    g.add_argument(
        "--invalid-smiles",
        choices=("error", "drop"),
        default="error",
        help="rows whose SMILES RDKit cannot read: error (default, lists them) or drop",
    )


def _model_arguments(p: argparse.ArgumentParser, solver_default: str | None, auto: bool = False) -> None:
    g = p.add_argument_group("model")
    g.add_argument(
        "--model",
        choices=(*(("auto",) if auto else ()), "standard", *PRESETS),
        default="auto" if auto else "standard",
        help="'review': the model for finding rare relevant documents (ASReview's default model, "
        "learned exactly after every label: ramp solver, squared hinge, kernel <x,z>+1, C 0.11, "
        "classes re-weighted 9.8:1 after every label); it sets the solver, kernel, C and weights. "
        "'standard': the options below"
        + (
            ". 'auto' (default): the model suited to the data, as the app's New session form "
            "chooses it: review for documents searched with largest-positive and none of the "
            "options below given, standard otherwise"
            if auto
            else " (default)"
        ),
    )
    g.add_argument(
        "--solver",
        choices=SOLVERS,
        default=None,
        help="solver" + (f" (default: {solver_default})" if solver_default else " (default: each strategy's own)"),
    )
    g.add_argument(
        "--kernel",
        choices=KERNEL_CHOICES,
        default=None,
        help="kernel (default: what suits the features: rbf for numbers, linear for documents, "
        "tanimoto for fingerprints)",
    )
    g.add_argument(
        "--C",
        type=_C,
        default=None,
        help="box constraint: a number, or 'auto': chosen from the labels by exact leave-one-out at "
        f"{', '.join(str(m) for m in DEFAULT_MOMENTS)} labels (the exact solvers, incremental and "
        "active-set) "
        f"(default: {'auto with an exact solver, else ' if AUTO_BY_DEFAULT else ''}1)",
    )
    g.add_argument(
        "--gamma",
        type=_gamma,
        default=None,
        help="rbf / poly kernel width: a number, 'scale' (1 / (features x variance)) or 'auto' (rbf: "
        "chosen from the labels with C, between 0.5 and 2 x the median heuristic; the exact solvers) "
        f"(default: {'auto with an exact solver and the rbf kernel, else ' if AUTO_BY_DEFAULT else ''}"
        "scale)",
    )
    g.add_argument("--degree", type=_positive_int, default=3, help="polynomial degree (default 3)")
    g.add_argument("--coef0", type=float, default=1.0, help="polynomial offset (default 1)")
    g.add_argument("--tol", type=_positive_float, default=1e-3, help="solver tolerance (default 1e-3)")
    g.add_argument(
        "--class-weight",
        choices=("none", "balanced", "auto"),
        default="none",
        help="per-class boxes C w_y: 'balanced' weighs each class by the labels given (scikit-learn's "
        "n / (2 n_c), re-set when the rounded class ratio changes; with the ramp solver after every "
        "label, the positives together weighing --balance-ratio times the negatives); 'auto': none or "
        "balanced, chosen from the labels with C and gamma (the exact solvers) (default none)",
    )
    g.add_argument(
        "--balance-ratio",
        type=_positive_float,
        default=1.0,
        metavar="R",
        help="with --class-weight balanced: the positives' total weight over the negatives' (default 1; "
        "ASReview uses 9.8)",
    )
    g.add_argument(
        "--loss",
        choices=("ramp", "hinge", "squared_hinge"),
        default=None,
        help="ramp solver: 'ramp' (default) gives examples far on the wrong side weight 0; 'hinge' keeps "
        "them (the convex SVM without bias); 'squared_hinge' squares the hinge (liblinear's L2-loss "
        "SVM, as ASReview)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m core", description="MarginLab: online and incremental SVMs, active learning."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{fit,compare,replay}")

    fit = sub.add_parser(
        "fit",
        help="train one solver and report held-out accuracy and AUC",
        description="Train an OnlineSVC on a CSV file and evaluate it on a stratified held-out part.",
    )
    _data_arguments(fit)
    _model_arguments(fit, "lasvm")
    fit.add_argument("--epochs", type=_positive_int, default=1, help="passes over the training data (default 1)")
    fit.add_argument(
        "--test-fraction",
        type=_fraction,
        default=0.25,
        help="held-out fraction, stratified (default 0.25; 0 evaluates on the training data)",
    )
    fit.add_argument("--seed", type=int, default=0, help="seed of the split and the learning order (default 0)")
    fit.add_argument("--json", action="store_true", help="print one JSON object instead of a table")

    _compare_parser(sub)
    _replay_parser(sub)
    return parser


def _compare_parser(sub) -> None:
    cmp_ = sub.add_parser(
        "compare",
        help="compare query strategies side by side",
        description="Run active-learning strategies over the same seeds with the true labels "
        "as the oracle and report learning curves.",
    )
    _data_arguments(cmp_, repeatable=True)
    cmp_.add_argument(
        "--strategies",
        required=True,
        metavar="a,b,c",
        help="comma-separated strategy names, e.g. near-boundary,random; the strategies: "
        + ", ".join(STRATEGY_NAMES)
        + " (with --classes: "
        + ", ".join(MULTICLASS_STRATEGIES)
        + ")",
    )
    _model_arguments(cmp_, None, auto=True)
    cmp_.add_argument("--budget", type=_positive_int, required=True, help="labels per run, the initial ones included")
    cmp_.add_argument("--seeds", type=_positive_int, default=3, help="number of seeds (default 3)")
    cmp_.add_argument(
        "--initial",
        type=_positive_int,
        default=None,
        metavar="N0",
        help="labels drawn at random before the strategy takes over (default: the experiment's)",
    )
    cmp_.add_argument(
        "--test-fraction",
        type=_fraction,
        default=None,
        help="held-out fraction, stratified per seed (default: the experiment's; 0 keeps every item "
        "in the pool: recall measures only, no AUC)",
    )
    cmp_.add_argument("--out", metavar="results.csv", help="write the tidy per-label rows to this CSV file")
    cmp_.add_argument(
        "--cold-start",
        choices=COLD_STARTS,
        default=None,
        help="how items are chosen until both classes have a label: random (the default), one-class "
        "(the most anomalous first) or spread (k-means++ seeding over the pool)",
    )
    _compare_option_groups(cmp_)
    cmp_.add_argument(
        "--jobs",
        type=_positive_int,
        default=1,
        help="seeds run in parallel processes (default 1); with --scheduler local, the number of "
        "workers (default: one per core)",
    )
    cmp_.add_argument(
        "--scheduler",
        metavar="ADDRESS|local",
        help="run on Dask distributed: 'local' starts a cluster on this machine for the study, an "
        "address (tcp://host:8786) uses a running scheduler, 'none' runs here (default: "
        f"${SCHEDULER_ENV} if set, else here)",
    )
    cmp_.add_argument("--json", action="store_true", help="print the summary as JSON")


def _compare_option_groups(cmp_: argparse.ArgumentParser) -> None:
    """compare's prior knowledge, stopping rules and K classes."""
    known = cmp_.add_argument_group("prior knowledge (core.priors)")
    known.add_argument(
        "--prior",
        type=_prior_counts,
        metavar="P,N",
        help="P known positives and N known negatives drawn per seed from the true labels of the "
        "pool, learned before the first question (ASReview's --n-prior-included/"
        "--n-prior-excluded); --initial then defaults to 0",
    )
    known.add_argument(
        "--prior-keys",
        metavar="FILE",
        help="the known items instead: a text file of item keys, one a line (values of "
        "--key-column, else item numbers 0..n-1); --initial then defaults to 0",
    )
    known.add_argument(
        "--key-column",
        metavar="COL",
        help="column of unique item keys: what --prior-keys names, and how --json names the priors (prior_keys)",
    )
    stop = cmp_.add_argument_group("stopping rules (core.stopping)")
    stop.add_argument(
        "--stopping",
        metavar="RULES",
        help="rules run beside each strategy: statistical, statistical-knee, statistical-run, knee, "
        "margin, stability, consecutive:N "
        "(comma-separated, e.g. statistical,knee,margin,stability,consecutive:50)",
    )
    stop.add_argument(
        "--target-recall",
        type=_open_fraction,
        default=0.95,
        help="recall the statistical rule must show (default 0.95)",
    )
    stop.add_argument(
        "--confidence",
        type=_open_fraction,
        default=0.95,
        help="confidence of the statistical rule's test (default 0.95)",
    )
    stop.add_argument(
        "--stops-out",
        metavar="stops.csv",
        help="write one row per strategy, seed and rule (labels and recall at stop) to this CSV file",
    )
    many = cmp_.add_argument_group("K classes (core.multiclass)")
    many.add_argument(
        "--classes",
        nargs="?",
        const="",
        default=None,
        metavar="A,B,...",
        help="keep every value of the label column as a class (no --positive) and compare the K-class "
        "strategies: " + ", ".join(MULTICLASS_STRATEGIES) + "; with names, the classes expected "
        "(a value of the column not among them is refused); accuracy and macro AUC on the "
        "held-out part",
    )
    many.add_argument("--target-class", metavar="NAME", help="the class the target-class strategy screens for")
    many.add_argument(
        "--multi-label",
        action="store_true",
        help="with --classes: each item carries any set of the classes; a label cell holds the class names "
        "separated by --label-separator ('(none)': none of them), the strategies are "
        + ", ".join(MULTILABEL_STRATEGIES)
        + "; Hamming accuracy, macro AUC and per-class precision, recall, F1 and AUC on the held-out part",
    )
    many.add_argument(
        "--label-separator",
        metavar="MARK",
        help=f"with --multi-label: what separates the class names in a label cell (default {SEPARATOR!r})",
    )
    many.add_argument(
        "--accuracy-levels",
        metavar="0.8,0.9,...",
        help="with --classes: accuracies whose labels to reach the summary gives (default "
        + ",".join(format(v, "g") for v in ACCURACY_LEVELS)
        + ")",
    )


def _replay_parser(sub) -> None:
    rep = sub.add_parser(
        "replay",
        help="replay a labelled session under other heuristics",
        description="Replay the items a session labelled, with its final answers as the oracle, "
        "under other heuristics (core.replay): which would have found its positives "
        "with fewer labels? The session's own heuristic runs too, as the reference.",
    )
    what = rep.add_argument_group("what to replay (one of)")
    what.add_argument(
        "--session", type=int, metavar="N", help="a stored labelling session (corrections applied, skips left out)"
    )
    what.add_argument(
        "--project",
        type=int,
        metavar="N",
        help="a stored team project (the settled answers, else each item's first answer; with named "
        "classes, the settled class, else the first class answered; with several classes per item, the "
        "settled set, else the first set answered)",
    )
    what.add_argument(
        "--labels",
        metavar="FILE",
        help="a CSV file of labels in the order given, against --data: an item column (item_key, "
        "or item_index 0..n-1) and a label column (label_value +1/-1/0, or label: the data's "
        "class names, positive/negative, yes/no; empty or skipped: a skip); a MarginLab export "
        "is one",
    )
    what.add_argument(
        "--classes",
        nargs="?",
        const="",
        default=None,
        metavar="A,B,...",
        help="with --labels: the label column names a class per item (not positive / negative), replayed with "
        "the strategies for named classes; with names, the classes in that order (a class not among them is "
        "refused), else those found",
    )
    what.add_argument(
        "--multi-label",
        action="store_true",
        help="with --labels --classes: a label cell holds an item's classes separated by --label-separator "
        "('(none)': none of them), replayed with the multi-label strategies",
    )
    what.add_argument(
        "--label-separator",
        metavar="MARK",
        help=f"with --multi-label: what separates the class names in a label cell (default {SEPARATOR!r})",
    )
    rep.add_argument(
        "--database",
        metavar="URL",
        help="the database of --session / --project (default: $MARGINLAB_DATABASE_URL, else the app's own file)",
    )
    rep.add_argument("--key-column", metavar="COL", help="column of --data holding the item keys the labels name")
    _data_arguments(rep, required=False)
    rep.add_argument(
        "--strategies",
        required=True,
        metavar="a,b,c",
        help="heuristics to replay, comma-separated (the session's own is added as the reference): "
        + ", ".join(STRATEGY_NAMES)
        + "; with named classes: "
        + ", ".join(MULTICLASS_STRATEGIES)
        + "; with several classes per item: "
        + ", ".join(MULTILABEL_STRATEGIES),
    )
    _model_arguments(rep, None)
    rep.add_argument("--seeds", type=_positive_int, default=3, help="number of seeds (default 3)")
    rep.add_argument(
        "--initial",
        type=int,
        default=10,
        metavar="N0",
        help="labels drawn at random before each heuristic takes over (default 10)",
    )
    rep.add_argument("--budget", type=_positive_int, default=None, help="labels per run (default: every labelled item)")
    rep.add_argument("--out", metavar="results.csv", help="write the tidy per-label rows to this CSV file")
    rep.add_argument("--jobs", type=_positive_int, default=1, help="runs in parallel processes (default 1)")
    rep.add_argument("--json", action="store_true", help="print the summary as JSON")


# -- data ------------------------------------------------------------------------


def load_data(
    args: argparse.Namespace, source: str | None = None, notice_prefix: str = "", labels_required: bool = True
) -> Dataset:
    """The dataset named by ``--data`` (or ``source``: a CSV path or ``bundled:NAME``), with binary labels."""
    source = args.data if source is None else source
    kept = getattr(args, "classes", None)  # (compare --classes: every class kept)
    label_mode = "binary" if kept is None else "classes"
    class_names = ([c.strip() for c in kept.split(",") if c.strip()] or None) if kept else None
    if source.startswith(BUNDLED_PREFIX):
        name = source[len(BUNDLED_PREFIX) :]
        if name not in BUNDLED:
            raise CLIError(f"unknown bundled dataset {name!r}; choose one of {', '.join(BUNDLED)}")
        return load_bundled(name, positive=args.positive, label_mode=label_mode, class_names=class_names)
    if not Path(source).is_file():
        raise CLIError(f"file not found: {source}" if not Path(source).exists() else f"{source} is not a file")
    if not args.label_column and labels_required:
        raise CLIError("--label-column is required: name the column that holds the class labels")
    features = None
    if args.feature_columns:
        features = [c.strip() for c in args.feature_columns.split(",") if c.strip()]
    ds = load_csv(
        source,
        label_column=args.label_column,
        positive=args.positive,
        feature_columns=features,
        one_vs_rest=args.one_vs_rest,
        constant_columns="keep" if args.keep_constant else "drop",
        sep=args.sep,
        decimal=args.decimal,
        missing=args.missing,
        one_hot=args.one_hot,
        text_columns=args.text_column,
        text_analyzer=args.text_analyzer,
        text_min_df=args.text_min_df,
        text_max_features=args.text_max_features,
        text_svd=args.text_svd,
        text_blocks=args.text_blocks,
        smiles_column=args.smiles_column,
        fingerprint_radius=args.fingerprint_radius,
        fingerprint_bits=args.fingerprint_bits,
        invalid_smiles=args.invalid_smiles,
        seed=getattr(args, "seed", 0),
        key_column=getattr(args, "key_column", None),
        label_mode=label_mode,
        class_names=class_names,
    )
    for notice in ds.notices:
        print(f"note: {notice_prefix}{notice}", file=sys.stderr)
    return ds


def dataset_names(sources: Sequence[str]) -> list[str]:
    """What the ``dataset`` column calls each ``--data``: its file name (``digits`` for ``bundled:digits``),
    or the path as given when two files have the same name."""

    def short(source: str) -> str:
        return source[len(BUNDLED_PREFIX) :] if source.startswith(BUNDLED_PREFIX) else Path(source).name

    names = [short(s) for s in sources]
    names = [s if names.count(n) > 1 else n for s, n in zip(sources, names, strict=True)]
    for k, name in enumerate(names):
        if name in names[:k]:
            raise CLIError(f"--data names {sources[k]} twice")
    return names


def model_options(args: argparse.Namespace, solver_default: str | None) -> dict:
    """Resolve ``--model``: the named model's solver (into ``args.solver``) and its solver parameters.

    A named model sets the solver, kernel, C and class weights itself; a flag that would change them is
    refused rather than silently overridden.
    """
    if args.model == "standard":
        args.solver = args.solver or solver_default
        return {}
    preset = PRESETS[args.model]
    given = [
        flag
        for flag, on in (
            ("--kernel", args.kernel is not None),
            ("--C", args.C is not None),
            ("--gamma", args.gamma is not None),
            ("--degree", args.degree != 3),
            ("--coef0", args.coef0 != 1.0),
            ("--class-weight", args.class_weight != "none"),
            ("--balance-ratio", args.balance_ratio != 1.0),
            ("--loss", args.loss is not None),
            ("--tol", args.tol != 1e-3 and "tol" in preset["solver_params"]),
        )
        if on
    ]
    if args.solver not in (None, preset["solver"]):
        given.insert(0, "--solver")
    if given:
        raise CLIError(
            f"--model {args.model} sets the solver, kernel, C, class weights and tolerance itself; "
            f"leave out {', '.join(given)} (or use --model standard)"
        )
    args.solver = preset["solver"]
    return dict(preset["solver_params"])


def _model_flags_given(args: argparse.Namespace) -> bool:
    """Whether any option of the model was given (then ``--model auto`` is the standard model with them)."""
    return any(
        (
            args.solver is not None,
            args.kernel is not None,
            args.C is not None,
            args.gamma is not None,
            args.degree != 3,
            args.coef0 != 1.0,
            args.class_weight != "none",
            args.balance_ratio != 1.0,
            args.loss is not None,
            args.tol != 1e-3,
        )
    )


def hyper_options(args: argparse.Namespace, solvers: Sequence[str | None]) -> dict:
    """C and gamma from the command line as solver parameters: ``--C auto`` / ``--gamma auto`` are the
    solver's ``auto`` (``core.solvers.auto_hyper``; the starting values C = 1 and gamma = "scale"), which
    only the exact solvers take (a clear error when another would get them).  Left out, they are "auto"
    where every solver of the run is exact (``AUTO_BY_DEFAULT``; the other solvers take the starting
    values: ``core.presets.solver_for``), else 1 and "scale".  ``--class-weight auto`` adds the class weight
    (none or balanced, starting from none) to what the exact solvers choose."""
    exact = [s for s in solvers if s is not None and solver_entry(s).exact_unlearn]
    others = sorted({str(s) for s in solvers if s not in exact})
    explicit = [
        flag
        for flag, value in (("--C", args.C), ("--gamma", args.gamma), ("--class-weight", args.class_weight))
        if value == "auto"
    ]
    if explicit and others:
        raise CLIError(
            f"{' and '.join(explicit)} auto: chosen from the labels by the exact solvers only "
            f"({', '.join(EXACT_SOLVERS)}); the run would use {', '.join(others)} (add --solver "
            f"{EXACT_SOLVERS[0]}, or give a number)"
        )
    by_default = AUTO_BY_DEFAULT and bool(exact)
    auto = [
        name
        for name, value in (("C", args.C), ("gamma", args.gamma))
        if value == "auto" or (value is None and by_default)
    ]
    params = {
        "C": 1.0 if args.C in (None, "auto") else args.C,
        "gamma": "scale" if args.gamma in (None, "auto") else args.gamma,
    }
    if args.class_weight == "auto":
        auto.append("class_weight")
    if auto:
        params["auto"] = auto
        # chosen in the background and used DEFAULT_LAG labels later, as in the app (``fit`` takes ``auto`` only:
        # a batch has no later labels to wait for)
        params["auto_lag"] = DEFAULT_LAG
    return params


def _for_kernel(hyper: dict, kernel: str) -> dict:
    """``hyper_options`` for one kernel: gamma is chosen from the labels for the rbf kernel only."""
    auto = [name for name in hyper.get("auto", []) if name != "gamma" or kernel == "rbf"]
    out = {k: v for k, v in hyper.items() if k != "auto"}
    return {**out, "auto": auto} if auto else out


def describe_hyper(params: dict) -> str:
    """How C and gamma are set, in words (printed with the run)."""
    auto = params.get("auto") or []
    if not auto:
        return f"C {params.get('C', 1.0):g}, gamma {params.get('gamma', 'scale')}"
    *chosen, final = [k if k != "class_weight" else "the class weight" for k in auto]
    names = f"{', '.join(chosen)} and {final}" if chosen else final
    fixed = [
        f"{k} {params[k] if isinstance(params[k], str) else format(params[k], 'g')}"
        for k in ("C", "gamma")
        if k not in auto
    ]
    *first, last = (str(m) for m in DEFAULT_MOMENTS)
    start = ", ".join({"C": "C 1", "gamma": "gamma scale"}.get(k, "no class weights") for k in auto)
    lag = params.get("auto_lag") or 0
    return (
        f"{names} chosen from the labels by exact leave-one-out at {', '.join(first)} and {last} labels"
        + (f", each used {lag} labels later" if lag else "")
        + f" ({start} until then)"
        + (f"; {', '.join(fixed)}" if fixed else "")
    )


def ramp_options(args: argparse.Namespace, solvers: Sequence[str | None]) -> dict:
    """The ramp solver's own options from the command line (its registry entry's ``own_params``; a clear
    error when another solver would get them), and ``--class-weight``, which every solver takes."""
    options = {}
    shared = {"class_weight": args.class_weight} if args.class_weight not in ("none", "auto") else {}
    if args.balance_ratio != 1.0:
        if args.class_weight != "balanced":
            raise CLIError("--balance-ratio needs --class-weight balanced")
        options["balance_ratio"] = args.balance_ratio
    if args.loss is not None:
        options["loss"] = args.loss
        if args.loss != "ramp":
            options["max_nonsv"] = None  # the (squared) hinge problem keeps every example (no removal step)
    given = {"balance_ratio", "loss"} & set(options)

    def takes(solver: str | None) -> bool:
        return solver is not None and solver in SOLVER_NAMES and given <= solver_entry(solver).own_params

    if given and not all(takes(solver) for solver in solvers):
        names = ", ".join(sorted({str(s) for s in solvers if not takes(s)}))
        flags = " and ".join(
            f for f, on in (("--balance-ratio", "balance_ratio" in options), ("--loss", "loss" in options)) if on
        )
        takers = [name for name in SOLVER_NAMES if takes(name)]
        who = (
            f"only the {' or '.join(takers)} solver takes these (add --solver {takers[0]})"
            if takers
            else "no solver takes all of these"
        )
        raise CLIError(f"{flags}: {who}; the run would use {names}")
    return {**shared, **options}


def kernel_for(args: argparse.Namespace, ds: Dataset) -> str:
    """``--kernel``, or the kernel that suits the features (rbf, linear for documents, tanimoto for bits)."""
    kernel = args.kernel or ds.default_kernel
    if kernel not in KERNEL_NAMES:
        raise CLIError(
            f"the {kernel} kernel is not available in this version; choose --kernel "
            f"{' or '.join(KERNEL_NAMES)} (or reduce text with --text-svd)"
        )
    return kernel


def _json_number(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


# -- fit ---------------------------------------------------------------------------


def run_fit(args: argparse.Namespace) -> dict[str, Any]:
    from core.estimator import OnlineSVC

    model_params = model_options(args, "lasvm")
    ds = load_data(args)
    kernel = model_params.get("kernel") or kernel_for(args, ds)
    y = ds.y
    assert y is not None  # load_data asked for the label column (labels_required)
    rng = np.random.default_rng(args.seed)
    train, test = stratified_split(y, args.test_fraction, rng)
    Xtr, ytr = ds.X[train], y[train]
    if len(np.unique(ytr)) < 2:
        raise CLIError("the training part holds only one class; use more data or a smaller --test-fraction")
    Xte, yte = (ds.X[test], y[test]) if len(test) else (Xtr, ytr)
    if args.scale == "standard" and not (ds.is_sparse and ds.numeric_columns is None):
        # statistics of the training part only (the held-out part plays new data); numeric columns only
        scaler = Standardizer(ds.numeric_columns).fit(Xtr)
        Xtr = scaler.transform(Xtr)
        Xte = scaler.transform(Xte) if len(test) else Xtr
    hyper: dict[str, Any] = hyper_options(args, [args.solver]) if not model_params else {"C": 1.0, "gamma": "scale"}
    auto = {"auto": hyper["auto"]} if "auto" in hyper else {}
    clf = OnlineSVC(
        solver=args.solver,
        kernel=kernel,
        C=hyper["C"],
        gamma=hyper["gamma"],
        tol=args.tol,
        epochs=args.epochs,
        random_state=args.seed,
        degree=args.degree,
        coef0=args.coef0,
        solver_params={**ramp_options(args, [args.solver]), **auto, **model_params} or None,
    )
    t0 = time.perf_counter()
    try:
        clf.fit(Xtr, ytr)
    except (TypeError, ValueError) as exc:
        if not ds.is_sparse:
            raise
        raise CLIError(
            f"fit cannot train on sparse features in this version ({exc}); reduce text with "
            "--text-svd K (the labelling app takes them as they are)"
        ) from None
    fit_seconds = time.perf_counter() - t0
    fitted_kernel = clf.solver_.kernel
    assert fitted_kernel is not None  # the solver took its kernel in fit
    scores = clf.decision_function(Xte)
    pred = np.where(scores > 0, 1.0, -1.0)
    negative, positive = ds.classes if ds.classes else ("-1", "+1")
    result = {
        "dataset": ds.name,
        "positive": positive,
        "negative": negative,
        "solver": args.solver,
        "kernel": kernel,
        "model": args.model,
        "C": model_params.get("C", clf.solver_.C),
        "gamma": fitted_kernel.gamma,
        "scale": args.scale,
        "n_features": int(ds.X.shape[1]),
        "sparse": bool(ds.is_sparse),
        "notices": list(ds.notices),
        "n_train": int(len(train)),
        "n_test": int(len(test)),
        "evaluated_on": "test" if len(test) else "train",
        "accuracy": accuracy(yte, pred),
        "auc": roc_auc(yte, scores),
        "train_accuracy": accuracy(ytr, np.where(clf.decision_function(Xtr) > 0, 1.0, -1.0)),
        "n_sv": int(len(clf.support_)),
        "n_bound": int(clf.solver_.n_bound_),
        "n_support": [int(v) for v in clf.n_support_],
        "fit_seconds": fit_seconds,
        "kernel_evals": int(clf.n_kernel_evals_),
        "dual_objective": clf.dual_objective_,
        "kkt_gap": clf.kkt_gap_,
        "epochs": args.epochs,
        "seed": args.seed,
    }
    return {k: _json_number(v) for k, v in result.items()}


def format_fit(result: dict[str, Any]) -> str:
    def fmt(v):
        if v is None:
            return "n/a"
        if isinstance(v, float):
            return f"{v:.6g}"
        return str(v)

    rows = [
        ("dataset", f"{result['dataset']} (positive: {result['positive']})"),
        (
            "solver",
            f"{result['solver']}  kernel {result['kernel']}, C {fmt(result['C'])}, gamma {fmt(result['gamma'])}",
        ),
        ("examples", f"{result['n_train']} train, {result['n_test']} test, {result['n_features']} features"),
        (f"accuracy ({result['evaluated_on']})", fmt(result["accuracy"])),
        (f"ROC AUC ({result['evaluated_on']})", fmt(result["auc"])),
        ("support vectors", f"{result['n_sv']} ({result['n_bound']} at C)"),
        ("kernel evaluations", fmt(result["kernel_evals"])),
        ("dual objective", fmt(result["dual_objective"])),
        ("KKT gap", fmt(result["kkt_gap"])),
        ("fit seconds", f"{result['fit_seconds']:.3f}"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


# -- compare -----------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """Plain JSON values: NaN/inf -> null, numpy scalars -> Python numbers."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _json_number(value)
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def _check_writable(path: str, option: str = "--out") -> None:
    """Fail early when ``--out`` cannot be written (missing folder, a folder, no permission)."""
    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    if os.path.isdir(target):
        raise CLIError(f"{option} {path} is a folder; give a file name such as results.csv")
    if not os.path.isdir(folder):
        raise CLIError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(target) and not os.access(target, os.W_OK)):
        raise CLIError(f"{option} {path}: no permission to write there")


def _default_initial(experiment) -> int | None:
    """``run_comparison``'s default number of initial (random) labels."""
    import inspect

    default = inspect.signature(experiment.run_comparison).parameters.get("initial")
    return None if default is None or default.default is inspect.Parameter.empty else int(default.default)


def _prior_options(args: argparse.Namespace) -> dict:
    """``--prior`` / ``--prior-keys`` as ``run_comparison``'s options (the keys read, not yet matched)."""
    if args.prior is not None and args.prior_keys:
        raise CLIError("give --prior P,N (drawn per seed) or --prior-keys FILE (given items), not both")
    if args.prior is not None:
        return {"prior": args.prior}
    if args.prior_keys:
        try:
            return {"prior_keys": read_keys(args.prior_keys)}
        except PriorError as exc:
            raise CLIError(f"--prior-keys: {exc}") from None
    return {}


def _compare_stopping(args: argparse.Namespace) -> list[str] | None:
    """``--stopping`` as rule names (checked), and ``--stops-out`` checked against it."""
    stopping = None
    if args.stopping:
        from core.stopping import parse_rules

        try:
            stopping = [str(rule) for rule in parse_rules(args.stopping)]
        except ValueError as error:
            raise CLIError(f"--stopping: {error}") from None
    if args.stops_out:
        if not stopping:
            raise CLIError("--stops-out needs --stopping: name the rules whose stops to write")
        _check_writable(args.stops_out, "--stops-out")
    return stopping


def _suited_model(ds: Dataset, label: str, strategies: list[str], options: dict) -> str:
    """``--model auto`` on one dataset: the model suited to it (``core.presets.suited_model``), said on the
    console where there is a choice (documents); a named model's solver and parameters go into ``options``."""
    chosen = suited_model(ds.feature_blocks or [], strategies, chosen=False)
    if has_documents(ds.feature_blocks or []):  # (where there is a choice to tell of)
        print(
            f"model: {chosen}, suited to {label} ("
            + (
                "documents searched with " + ", ".join(strategies)
                if chosen != "standard"
                else "the review model is for documents searched with largest-positive alone"
            )
            + "; --model standard or review chooses)",
            file=sys.stderr,
        )
    if chosen != "standard":
        options.update(solver=PRESETS[chosen]["solver"], solver_params=dict(PRESETS[chosen]["solver_params"]))
    return chosen


def _compare_output(
    args: argparse.Namespace,
    results: dict,
    datasets: dict,
    models: dict,
    stopping: list[str] | None,
    hyper_words: dict[str, str] | None = None,
) -> str:
    """Write ``--out`` / ``--stops-out`` and return what ``compare`` prints (the summary, or JSON)."""
    from core import experiment

    names = list(datasets)
    several = len(names) > 1
    if args.out:  # one dataset: as before; several: with a first column naming the dataset
        (experiment.study_table(results, "rows") if several else results[names[0]].rows).to_csv(args.out, index=False)
    if args.stops_out:
        (experiment.study_table(results, "stops") if several else results[names[0]].stops).to_csv(
            args.stops_out, index=False
        )
    if args.json:
        payloads = []
        for name, result in results.items():
            ds = datasets[name]
            payload = {
                "dataset": name if several else ds.name,
                "positive": ds.classes[1] if ds.classes else None,
                "model": models[name],
                "config": result.config,
                "summary": result.summary.to_dict(orient="records"),
                "references": result.references.to_dict(orient="records"),
            }
            if stopping:
                payload.update(stop_summary=result.stop_summary.to_dict(orient="records"))
            if result.config.get("priors") and ds.item_keys is not None:  # the priors by their keys too
                payload.update(
                    prior_keys={seed: [ds.item_keys[r] for r in rows] for seed, rows in result.config["priors"].items()}
                )
            payloads.append(payload)
        extra = {"out": args.out, **({"stops_out": args.stops_out} if stopping else {})}
        return json.dumps(_jsonable({"datasets": payloads, **extra} if several else {**payloads[0], **extra}))
    blocks = []
    words = hyper_words or {}
    for name, result in results.items():
        ds = datasets[name]
        blocks.append(
            f"{name if several else ds.name}: {len(ds)} items, positive "
            f"{ds.classes[1] if ds.classes else '+1'}, model {models[name]}"
            + (f"; {words[name]}" if name in words else "")
            + f"\n{result.summary_text()}"
        )
    text = "\n\n".join(blocks)
    if args.out:
        text += f"\nrows written to {args.out}"
    if args.stops_out:
        text += f"\nstops written to {args.stops_out}"
    return text


def compare_settings(
    args: argparse.Namespace, strategies: Sequence[str], solver_params: dict[str, Any], solver: str | None = None
) -> list[SessionSettings]:
    """Each strategy's settings from the flags (``core.settings.SessionSettings``, which checks them and names
    a refused one): its solver (``solver``, else ``--solver``, else the strategy's own), the solver parameters
    ``solver_params`` under their own names, ``--cold-start`` and ``--initial``.  The runs take their solver
    and solver parameters from these."""
    initial = args.initial if args.initial is not None else _default_initial_labels()
    chosen = solver or args.solver
    try:
        return [
            SessionSettings(
                strategy=name,
                solver=chosen,
                model=preset_of(chosen, solver_params) or STANDARD_MODEL,
                **taken_by(chosen or strategy_entry(name).default_solver, solver_params),
                cold_start=args.cold_start or DEFAULT_COLD_START,
                initial=initial or 0,
            )
            for name in strategies
        ]
    except (SettingsError, ValueError) as error:  # (ValueError: a strategy not registered, named by the registry)
        raise CLIError(str(error)) from None


def _default_initial_labels() -> int | None:
    from core import experiment

    return _default_initial(experiment)


def run_compare(args: argparse.Namespace) -> str:
    """Run ``core.experiment.run_comparison`` and return what to print (summary table or JSON)."""
    try:
        from core import experiment
    except ImportError as exc:
        raise CLIError(f"compare is not available: the experiment module could not be imported ({exc})") from None
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if not strategies:
        raise CLIError("--strategies is empty: give comma-separated strategy names")
    if len(set(strategies)) != len(strategies):
        raise CLIError(f"--strategies lists a strategy twice: {args.strategies}")
    if args.classes is not None:
        return run_class_compare(args, strategies)
    for flag, value in (
        ("--target-class", args.target_class),
        ("--accuracy-levels", args.accuracy_levels),
        ("--multi-label", args.multi_label or None),
        ("--label-separator", args.label_separator),
    ):
        if value is not None:
            raise CLIError(f"{flag} goes with --classes (every class of the label column kept)")
    if args.model == "auto":  # (resolved per dataset once its features are known)
        args.model = "standard" if _model_flags_given(args) else "auto"
    model_params = model_options(args, None) if args.model != "auto" else {}
    unknown = [s for s in strategies if s not in experiment.DEFAULT_SOLVER]
    solvers_used = [args.solver or experiment.DEFAULT_SOLVER.get(s) for s in strategies if s not in unknown]
    ramp_params = ramp_options(args, solvers_used)  # before the data are read
    hyper = hyper_options(args, solvers_used) if args.model in ("standard", "auto") else {}
    if args.out:
        _check_writable(args.out)  # before the runs, not after minutes of work
    stopping = _compare_stopping(args)
    prior_options = _prior_options(args)
    if prior_options and args.initial is None:
        args.initial = 0  # the priors are the start: no random labels after them unless asked for
    initial = args.initial if args.initial is not None else _default_initial(experiment)
    _warn_initial(initial, args.budget)
    sources = args.data if isinstance(args.data, list) else [args.data]
    names = dataset_names(sources)
    several = len(sources) > 1
    datasets, data = {}, {}
    per_dataset: dict[str, dict[str, Any]] = {}  # each dataset's options for the study
    models = dict.fromkeys(names, args.model)  # the model each dataset ran with
    hyper_words: dict[str, str] = {}  # how C and gamma were set, for the standard model
    for source, name in zip(sources, names, strict=True):
        ds = load_data(args, source, notice_prefix=f"{name}: " if several else "")
        # Unsupervised and label-free, so scaling over all items (pool and held-out part) leaks no labels.
        X = scale_features(ds.X, args.scale, ds.numeric_columns)
        datasets[name], data[name] = ds, (X, ds.y)
        kernel = kernel_for(args, ds)
        per_dataset[name] = {
            "solver_params": dict(
                kernel=kernel, **_for_kernel(hyper, kernel), degree=args.degree, coef0=args.coef0, tol=args.tol
            )
        }
        per_dataset[name]["solver_params"].update(ramp_params, **model_params)
        if args.model == "auto":
            models[name] = _suited_model(ds, name if several else ds.name, strategies, per_dataset[name])
        if models[name] == "standard":
            hyper_words[name] = describe_hyper(per_dataset[name]["solver_params"])
        settings = compare_settings(
            args, strategies, per_dataset[name]["solver_params"], per_dataset[name].get("solver")
        )
        shared: dict[str, Any] = {}  # (the records differ only in auto, which an exact solver's record keeps)
        for record in settings:
            shared.update(record.solver_params())
        per_dataset[name].update(solver={s.strategy: s.solver for s in settings}, solver_params=shared)
    if "prior_keys" in prior_options:
        if several:
            raise CLIError("--prior-keys names items of one dataset: give one --data")
        ds = datasets[names[0]]
        try:
            keys = prior_options.pop("prior_keys")
            optional_rows = rows_of_keys(keys, ds.item_keys, len(ds), source=f"--prior-keys {args.prior_keys}")
        except PriorError as exc:
            raise CLIError(str(exc)) from None
        prior_options.update(prior_items=optional_rows, prior_names=[f"{key!r} (line {line})" for line, key in keys])
    optional = dict(prior_options)
    for option, value in (
        ("cold_start", args.cold_start),
        ("initial", args.initial),
        ("test_fraction", args.test_fraction),
    ):
        if value is not None:
            optional[option] = value
    if stopping:
        optional.update(stopping=stopping, target_recall=args.target_recall, confidence=args.confidence)
    try:
        results = experiment.run_study(
            data,
            dataset_options=per_dataset,
            strategies=strategies,
            solver=args.solver,
            budget=args.budget,
            seeds=args.seeds,
            n_jobs=args.jobs,
            scheduler=args.scheduler,
            **optional,
        )
    except (experiment.SchedulerError, PriorError) as exc:
        raise CLIError(str(exc)) from None
    except (TypeError, ValueError) as exc:
        if not any(ds.is_sparse for ds in datasets.values()):
            raise
        raise CLIError(
            f"compare cannot run on sparse features in this version ({exc}); reduce text with "
            "--text-svd K (the labelling app takes them as they are)"
        ) from None
    return _compare_output(args, results, datasets, models, stopping, hyper_words)


def _warn_initial(initial: int | None, budget: int) -> None:
    if initial is not None and initial >= budget:
        print(
            f"warning: the {initial} initial labels use the whole --budget {budget}: every label is "
            "drawn at random and the strategies never choose an item (lower --initial or raise --budget)",
            file=sys.stderr,
        )


# the binary compare's options that a K-class comparison does not take (flag, given?)
def _binary_only(args: argparse.Namespace) -> list[str]:
    return [
        flag
        for flag, on in (
            ("--prior", args.prior is not None),
            ("--prior-keys", args.prior_keys is not None),
            ("--stopping", args.stopping is not None),
            ("--stops-out", args.stops_out is not None),
            ("--cold-start", args.cold_start is not None),
            ("--one-vs-rest", args.one_vs_rest),
            ("--class-weight", args.class_weight != "none"),
            ("--balance-ratio", args.balance_ratio != 1.0),
            ("--loss", args.loss is not None),
            (f"--model {args.model}", args.model not in ("auto", "standard")),
            ("--scheduler", args.scheduler not in (None, "none")),
        )
        if on
    ]


def _accuracy_levels(text: str | None) -> tuple[float, ...]:
    if text is None:
        return ACCURACY_LEVELS
    try:
        levels = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise CLIError(f"--accuracy-levels: expected comma-separated numbers between 0 and 1, got {text!r}") from None
    if not levels or not all(0.0 < v <= 1.0 for v in levels):
        raise CLIError(f"--accuracy-levels: expected comma-separated numbers between 0 and 1, got {text!r}")
    return levels


def run_class_compare(args: argparse.Namespace, strategies: list[str]) -> str:
    """``compare --classes``: the K-class strategies (``core.class_experiment``) on one dataset whose label
    column keeps every value as a class; return what to print (summary or JSON)."""
    from core import class_experiment

    if args.positive is not None:
        raise CLIError(
            "--positive (one class against the rest) and --classes (every class kept) exclude each other: give one"
        )
    refused = _binary_only(args)
    if refused:
        raise CLIError(
            f"{', '.join(refused)}: not for K classes (--classes) in this version; leave "
            f"{'it' if len(refused) == 1 else 'them'} out"
        )
    multi = bool(args.multi_label)
    if args.label_separator is not None and not multi:
        raise CLIError("--label-separator goes with --multi-label")
    if multi and args.target_class is not None:
        raise CLIError("--target-class screens for one class per item: not with --multi-label")
    known = MULTILABEL_STRATEGIES if multi else MULTICLASS_STRATEGIES
    unknown = [s for s in strategies if s not in known]
    if unknown:
        raise CLIError(
            f"unknown {'multi-label' if multi else 'K-class'} strategy {unknown[0]!r}; with --classes"
            f"{' --multi-label' if multi else ''} choose from {', '.join(known)}"
        )

    sources = args.data if isinstance(args.data, list) else [args.data]
    if len(sources) > 1:
        raise CLIError("--classes compares on one dataset: give one --data")
    auto = [flag for flag, value in (("--C", args.C), ("--gamma", args.gamma)) if value == "auto"]
    if auto:
        raise CLIError(
            f"{' and '.join(auto)} auto: not for K classes in this version; give a number (default C 1, gamma scale)"
        )
    levels = _accuracy_levels(args.accuracy_levels)
    if args.out:
        _check_writable(args.out)
    if multi:
        return _multi_label_compare(args, strategies, sources[0], levels)
    ds = load_data(args, sources[0])
    assert ds.class_y is not None and ds.class_names is not None  # (read with every class kept)
    if "target-class" in strategies and args.target_class not in ds.class_names:
        raise CLIError(
            "--strategies target-class screens for one class: give --target-class NAME, one of "
            f"{', '.join(ds.class_names)}" + (f" (not {args.target_class!r})" if args.target_class else "")
        )
    initial = args.initial if args.initial is not None else 10
    _warn_initial(initial, args.budget)
    solver = args.solver or class_experiment.DEFAULT_SOLVER
    params = _class_params(args, ds)
    X = scale_features(ds.X, args.scale, ds.numeric_columns)
    try:
        result = class_experiment.run_class_comparison(
            X,
            ds.class_y,
            ds.class_names,
            strategies=strategies,
            solver=solver,
            solver_params=params,
            budget=args.budget,
            seeds=args.seeds,
            initial=initial,
            target=args.target_class,
            accuracy_levels=levels,
            n_jobs=args.jobs,
            **({"test_fraction": args.test_fraction} if args.test_fraction is not None else {}),
        )
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    written = _class_result_written(args, ds, ds.class_names, result)
    if written is not None:
        return written
    names = list(ds.class_names)
    shown = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
    text = (
        f"{ds.name}: {len(ds)} items, {len(names)} classes ({shown}); {solver}, kernel {params['kernel']}, "
        f"C {params['C']:g}, gamma {params['gamma']}\n{result.summary_text()}"
    )
    return text + (f"\nrows written to {args.out}" if args.out else "")


def _class_result_written(args: argparse.Namespace, ds: Dataset, names, result, **more: Any) -> str | None:
    """A K-class or multi-label comparison's rows to ``--out``; with ``--json`` the JSON to print (``more``:
    keys of its own), else None."""
    if args.out:
        result.to_csv(args.out)
    if not args.json:
        return None
    return json.dumps(
        _jsonable(
            {
                "dataset": ds.name,
                "classes": list(names),
                **{k: v for k, v in more.items() if k != "per_class"},
                "config": result.config,
                "summary": result.summary.to_dict(orient="records"),
                **({"per_class": more["per_class"]} if "per_class" in more else {}),
                "runs": result.runs.to_dict(orient="records"),
                "curve": result.curve.to_dict(orient="records"),
                "out": args.out,
            }
        )
    )


def _class_params(args: argparse.Namespace, ds: Dataset) -> dict[str, Any]:
    """The solver parameters of a K-class or multi-label comparison."""
    return dict(
        kernel=kernel_for(args, ds),
        C=1.0 if args.C is None else args.C,
        gamma="scale" if args.gamma is None else args.gamma,
        degree=args.degree,
        coef0=args.coef0,
        tol=args.tol,
    )


def _multi_label_compare(args: argparse.Namespace, strategies: list[str], source: str, levels) -> str:
    """``compare --classes --multi-label`` (``core.multi_label_experiment``): every distinct cell of the label
    column read as a value, then split into class names; return what to print (summary or JSON)."""
    from core import class_experiment, multi_label_experiment

    named = [c.strip() for c in args.classes.split(",") if c.strip()] if args.classes else None
    ds = load_data(argparse.Namespace(**{**vars(args), "classes": ""}), source)  # (the names apply to the sets)
    assert ds.class_y is not None and ds.class_names is not None
    separator = SEPARATOR if args.label_separator is None else args.label_separator
    try:
        Y, names = multi_label_experiment.label_sets([ds.class_names[k] for k in ds.class_y], separator, named)
    except ValueError as exc:
        raise CLIError(f"{ds.name}: {exc}") from None
    initial = args.initial if args.initial is not None else 10
    _warn_initial(initial, args.budget)
    solver = args.solver or class_experiment.DEFAULT_SOLVER
    params = _class_params(args, ds)
    try:
        result = multi_label_experiment.run_multi_label_comparison(
            scale_features(ds.X, args.scale, ds.numeric_columns),
            Y,
            names,
            strategies=strategies,
            solver=solver,
            solver_params=params,
            budget=args.budget,
            seeds=args.seeds,
            initial=initial,
            accuracy_levels=levels,
            n_jobs=args.jobs,
            **({"test_fraction": args.test_fraction} if args.test_fraction is not None else {}),
        )
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    written = _class_result_written(
        args,
        ds,
        names,
        result,
        multi_label=True,
        separator=separator,
        per_class=result.per_class.to_dict(orient="records"),
    )
    if written is not None:
        return written
    sizes = ", ".join(f"{n} {int(c)}" for n, c in zip(names, Y.sum(axis=0), strict=True))
    text = (
        f"{ds.name}: {len(ds)} items, {len(names)} classes, several per item ({sizes}; none of them "
        f"{int((~Y.any(axis=1)).sum())}); {solver}, kernel {params['kernel']}, C {params['C']:g}, gamma "
        f"{params['gamma']}\n{result.summary_text()}"
    )
    return text + (f"\nrows written to {args.out}" if args.out else "")


# -- replay ------------------------------------------------------------------------


def _stored_replay(args: argparse.Namespace):
    """(features, labelled items) of ``--session`` / ``--project`` read from the database (the only command
    that reads one: storage is imported here, when asked for)."""
    import storage
    from core import replay
    from storage import repository as repo
    from storage import teams
    from storage.engine import is_sqlite

    url = args.database or storage.database_url()
    if is_sqlite(url):
        from sqlalchemy.engine import make_url

        path = make_url(url).database
        if path and path != ":memory:" and not Path(path).expanduser().is_file():
            raise CLIError(f"no database at {path} (give --database URL)")
    engine = storage.make_engine(url)
    info: repo.SessionInfo | teams.ProjectInfo
    try:
        if args.session is not None:
            info = repo.get_session(engine, args.session)
            labelled = replay.session_items(
                repo.label_events(engine, args.session),
                strategy=info.strategy,
                solver=info.solver,
                params=info.params,
                source=f"session {info.id}",
            )
        else:
            info = teams.get_project(engine, args.project)
            settled = replay.settled_answers(
                teams.settlements(engine, args.project),
                classes=bool(info.params.get("classes")),
                multi_label=info.params.get("multi_label") is True,
            )
            labelled = replay.project_items(
                teams.project_answers(engine, args.project)[1],
                settled,
                strategy=info.strategy,
                solver=info.solver,
                params=info.params,
                source=f"project {info.id}",
            )
        dataset = repo.get_dataset(engine, info.dataset_id)
        X, *_ = repo.load_dataset_arrays(engine, info.dataset_id, writable=False)
    except (storage.StorageError, replay.ReplayError) as exc:
        raise CLIError(str(exc)) from None
    finally:
        engine.dispose()
    scaling = info.params.get("scaling", dataset.meta.get("scaling", "none"))
    return replay.session_features(X, scaling, dataset.meta.get("feature_blocks")), labelled


def _file_replay(args: argparse.Namespace):
    """(features, labelled items) of ``--labels FILE`` against ``--data`` (with ``--classes``, a class or, with
    ``--multi-label``, a set of classes per item)."""
    from core import replay

    if not args.data:
        raise CLIError("--labels FILE needs --data FILE: the items the labels name")
    named = args.classes is not None
    if args.multi_label and not named:
        raise CLIError("--multi-label goes with --classes (and --labels FILE)")
    if args.label_separator is not None and not args.multi_label:
        raise CLIError("--label-separator goes with --multi-label")
    # (the analyst's data need no label column; one given is kept out of the features, every value a class)
    data_args = argparse.Namespace(**{**vars(args), "classes": "" if named and args.label_column else None})
    ds = load_data(data_args, labels_required=False)
    try:
        if named:
            labelled = replay.read_class_labels(
                args.labels,
                ds.item_keys,
                len(ds),
                names=[c.strip() for c in args.classes.split(",") if c.strip()] or None,
                multi_label=bool(args.multi_label),
                separator=SEPARATOR if args.label_separator is None else args.label_separator,
                key_column=args.key_column,
            )
        else:
            labelled = replay.read_labels(args.labels, ds.item_keys, len(ds), ds.classes, key_column=args.key_column)
    except replay.ReplayError as exc:
        raise CLIError(str(exc)) from None
    if args.model == "standard" and not _model_flags_given(args):
        labelled.solver_params = {"kernel": kernel_for(args, ds)}
    return scale_features(ds.X, args.scale, ds.numeric_columns), labelled


def run_replay(args: argparse.Namespace) -> str:
    """Replay ``--session`` / ``--project`` / ``--labels`` (``core.replay``) and return what to print."""
    from core import replay

    given = [name for name in ("session", "project", "labels") if getattr(args, name) is not None]
    if len(given) != 1:
        raise CLIError(
            "give one of --session N or --labels FILE (or --project N): what to replay"
            if not given
            else f"give one of --{' or --'.join(given)}, not both"
        )
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if not strategies:
        raise CLIError("--strategies is empty: give comma-separated heuristic names")
    if args.out:
        _check_writable(args.out)
    if not args.labels and (args.classes is not None or args.multi_label or args.label_separator is not None):
        raise CLIError(
            "--classes, --multi-label and --label-separator go with --labels FILE (a stored session names its classes)"
        )
    X, labelled = _file_replay(args) if args.labels else _stored_replay(args)
    if labelled.classes:  # a session with named classes: the K-class (or multi-label) strategies
        return _class_replay(args, X, labelled, strategies)
    unknown = [s for s in strategies if s not in STRATEGY_NAMES]
    if unknown:
        raise CLIError(f"unknown heuristic {unknown[0]!r}; choose from {', '.join(STRATEGY_NAMES)}")
    options: dict[str, Any] = {}
    if args.model != "standard" or _model_flags_given(args):  # the model given, for every heuristic
        model_params = model_options(args, None)
        options = dict(
            solver=args.solver,
            solver_params=dict(
                dict(
                    kernel=args.kernel or labelled.solver_params.get("kernel", "rbf"),
                    C=args.C,
                    gamma=args.gamma,
                    degree=args.degree,
                    coef0=args.coef0,
                    tol=args.tol,
                ),
                **ramp_options(args, [args.solver]),
                **model_params,
            ),
        )
    return _replayed(args, replay.run_replay, X, labelled, strategies, options, replay.CAVEAT, replay.replay_text)


def _replayed(
    args: argparse.Namespace, run, X, labelled, strategies, options: dict, caveat: str | Callable[[dict], str], words
) -> str:
    """Run a replay (``run``: ``core.replay.run_replay`` or ``run_class_replay``), write ``--out``, and return
    what to print: ``--json``'s record (what was replayed, the configuration, the summary, the caveat, or
    ``caveat`` of what was replayed) or ``words`` of the result."""
    from core import replay

    try:
        result = run(
            X,
            labelled,
            strategies=strategies,
            seeds=args.seeds,
            budget=args.budget,
            initial=args.initial,
            n_jobs=args.jobs,
            **options,
        )
    except replay.ReplayError as exc:
        raise CLIError(str(exc)) from None
    if args.out:
        result.to_csv(args.out)
    if args.json:
        return json.dumps(
            _jsonable(
                {
                    "replay": {k: v for k, v in result.config["replay"].items() if k != "rows"},
                    "config": {k: v for k, v in result.config.items() if k != "replay"},
                    "summary": result.summary.to_dict(orient="records"),
                    "caveat": caveat if isinstance(caveat, str) else caveat(result.config["replay"]),
                    "out": args.out,
                }
            )
        )
    return words(result) + (f"\nrows written to {args.out}" if args.out else "")


def _class_replay(args: argparse.Namespace, X, labelled, strategies: list[str]) -> str:
    """Replay a session or team project with named classes (``core.replay.run_class_replay``; a multi-label
    one ``run_multi_label_replay``) and return what to print: with the session's (or project's) model, or the
    one given (one-vs-rest machines of ``--solver``; an option left out keeps the session's value)."""
    from core import replay

    kind = "several classes per item" if labelled.multi_label else "named classes"
    refused = [
        flag
        for flag, on in (
            (f"--model {args.model}", args.model not in ("auto", "standard")),
            ("--class-weight", args.class_weight != "none"),
            ("--balance-ratio", args.balance_ratio != 1.0),
            ("--loss", args.loss is not None),
            ("--C auto", args.C == "auto"),
            ("--gamma auto", args.gamma == "auto"),
        )
        if on
    ]
    if refused:
        raise CLIError(
            f"{', '.join(refused)}: for two classes only; {labelled.source} has {kind} (its replay takes "
            "--solver, --kernel, --C, --gamma, --degree, --coef0 and --tol)"
        )
    options: dict[str, Any] = {}
    if _model_flags_given(args):
        own = labelled.solver_params
        given = {"kernel": args.kernel, "C": args.C, "gamma": args.gamma}
        given |= {
            name: value
            for name, value, default in (
                ("degree", args.degree, 3),
                ("coef0", args.coef0, 1.0),
                ("tol", args.tol, 1e-3),
            )
            if value != default
        }
        options = dict(
            solver=args.solver,
            solver_params={
                "kernel": own.get("kernel", "rbf"),
                **{k: v for k, v in own.items() if k not in ("auto", "auto_lag")},
                **{k: v for k, v in given.items() if v is not None},
            },
        )
    return _replayed(
        args,
        replay.run_multi_label_replay if labelled.multi_label else replay.run_class_replay,
        X,
        labelled,
        strategies,
        options,
        replay.class_replay_caveat,
        replay.class_replay_text,
    )


# -- entry point -------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "fit":
            result = run_fit(args)
            print(json.dumps(result) if args.json else format_fit(result))
        else:
            output = run_compare(args) if args.command == "compare" else run_replay(args)
            if isinstance(output, str) and output:
                print(output)
    except (CLIError, DataError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # the reader went away (``| head``): stop quietly, as command line tools do
        # (the closed pipe is pointed at /dev/null so the flush at exit cannot fail again)
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


__all__ = [
    "CLIError",
    "build_parser",
    "dataset_names",
    "format_fit",
    "load_data",
    "main",
    "run_compare",
    "run_fit",
    "run_replay",
]
