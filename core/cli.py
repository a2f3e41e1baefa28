"""Command line: ``python -m core fit`` and ``python -m core compare`` (see DESIGN.md).

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.datasets import BUNDLED, DataError, Dataset, load_bundled, load_csv, standardize, stratified_split
from core.metrics import accuracy, roc_auc

EXIT_USAGE = 2
BUNDLED_PREFIX = "bundled:"
SOLVERS = ("incremental", "lasvm", "ramp", "active-set")


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


def _gamma(text: str) -> float | str:
    if text in ("scale", "auto"):
        return text
    return _positive_float(text)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _data_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--data", required=True, metavar="FILE.csv",
                   help="CSV file with a header row, or bundled:NAME (" + ", ".join(BUNDLED) + ")")
    g.add_argument("--label-column", metavar="COL", help="column holding the class labels (required for a CSV file)")
    g.add_argument("--positive", metavar="VALUE",
                   help="label value of the positive class (default: the larger of the two values)")
    g.add_argument("--feature-columns", metavar="A,B,...",
                   help="comma-separated feature columns (default: every column but the label)")
    g.add_argument("--one-vs-rest", action="store_true",
                   help="with --positive: treat every other label value as negative")
    g.add_argument("--drop-constant", action="store_true", help="drop constant feature columns instead of failing")
    g.add_argument("--scale", choices=("none", "standard"), default="none",
                   help="standardise features (mean and scale from the training part only)")


def _model_arguments(p: argparse.ArgumentParser, solver_default: str | None) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--solver", choices=SOLVERS, default=solver_default,
                   help="solver" + (f" (default: {solver_default})" if solver_default else
                                    " (default: each strategy's own)"))
    g.add_argument("--kernel", choices=("rbf", "linear", "poly", "tanimoto"), default="rbf",
                   help="kernel (tanimoto: non-negative features such as fingerprint bits)")
    g.add_argument("--C", type=_positive_float, default=1.0, help="box constraint (default 1)")
    g.add_argument("--gamma", type=_gamma, default="scale",
                   help="kernel width: a number, 'scale' (default) or 'auto'")
    g.add_argument("--degree", type=_positive_int, default=3, help="polynomial degree (default 3)")
    g.add_argument("--coef0", type=float, default=1.0, help="polynomial offset (default 1)")
    g.add_argument("--tol", type=_positive_float, default=1e-3, help="solver tolerance (default 1e-3)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core",
                                     description="MarginLab: online and incremental SVMs, active learning.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{fit,compare}")

    fit = sub.add_parser("fit", help="train one solver and report held-out accuracy and AUC",
                         description="Train an OnlineSVC on a CSV file and evaluate it on a stratified held-out part.")
    _data_arguments(fit)
    _model_arguments(fit, "lasvm")
    fit.add_argument("--epochs", type=_positive_int, default=1, help="passes over the training data (default 1)")
    fit.add_argument("--test-fraction", type=_fraction, default=0.25,
                     help="held-out fraction, stratified (default 0.25; 0 evaluates on the training data)")
    fit.add_argument("--seed", type=int, default=0, help="seed of the split and the learning order (default 0)")
    fit.add_argument("--json", action="store_true", help="print one JSON object instead of a table")

    cmp_ = sub.add_parser("compare", help="compare query strategies side by side",
                          description="Run active-learning strategies over the same seeds with the true labels "
                                      "as the oracle and report learning curves.")
    _data_arguments(cmp_)
    cmp_.add_argument("--strategies", required=True, metavar="a,b,c",
                      help="comma-separated strategy names, e.g. near-boundary,random")
    _model_arguments(cmp_, None)
    cmp_.add_argument("--budget", type=_positive_int, required=True,
                      help="labels per run, the initial ones included")
    cmp_.add_argument("--seeds", type=_positive_int, default=3, help="number of seeds (default 3)")
    cmp_.add_argument("--initial", type=_positive_int, default=None, metavar="N0",
                      help="labels drawn at random before the strategy takes over (default: the experiment's)")
    cmp_.add_argument("--test-fraction", type=_fraction, default=None,
                      help="held-out fraction, stratified per seed (default: the experiment's)")
    cmp_.add_argument("--out", metavar="results.csv", help="write the tidy per-label rows to this CSV file")
    cmp_.add_argument("--jobs", type=_positive_int, default=1, help="seeds run in parallel processes (default 1)")
    cmp_.add_argument("--json", action="store_true", help="print the summary as JSON")
    return parser


# -- data ------------------------------------------------------------------------

def load_data(args: argparse.Namespace) -> Dataset:
    """The dataset named by ``--data`` (a CSV path or ``bundled:NAME``), with binary labels."""
    if args.data.startswith(BUNDLED_PREFIX):
        name = args.data[len(BUNDLED_PREFIX):]
        if name not in BUNDLED:
            raise CLIError(f"unknown bundled dataset {name!r}; choose one of {', '.join(BUNDLED)}")
        return load_bundled(name, positive=args.positive)
    if not Path(args.data).is_file():
        raise CLIError(f"file not found: {args.data}" if not Path(args.data).exists() else
                       f"{args.data} is not a file")
    if not args.label_column:
        raise CLIError("--label-column is required: name the column that holds the class labels")
    features = None
    if args.feature_columns:
        features = [c.strip() for c in args.feature_columns.split(",") if c.strip()]
    return load_csv(args.data, label_column=args.label_column, positive=args.positive, feature_columns=features,
                    one_vs_rest=args.one_vs_rest, constant_columns="drop" if args.drop_constant else "error")


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

    ds = load_data(args)
    rng = np.random.default_rng(args.seed)
    train, test = stratified_split(ds.y, args.test_fraction, rng)
    Xtr, ytr = ds.X[train], ds.y[train]
    if len(np.unique(ytr)) < 2:
        raise CLIError("the training part holds only one class; use more data or a smaller --test-fraction")
    Xte, yte = (ds.X[test], ds.y[test]) if len(test) else (Xtr, ytr)
    if args.scale == "standard":
        Xtr, mean, scale = standardize(Xtr)
        Xte = (Xte - mean) / scale if len(test) else Xtr
    clf = OnlineSVC(solver=args.solver, kernel=args.kernel, C=args.C, gamma=args.gamma, tol=args.tol,
                    epochs=args.epochs, random_state=args.seed, degree=args.degree, coef0=args.coef0)
    t0 = time.perf_counter()
    clf.fit(Xtr, ytr)
    fit_seconds = time.perf_counter() - t0
    scores = clf.decision_function(Xte)
    pred = np.where(scores > 0, 1.0, -1.0)
    negative, positive = ds.classes if ds.classes else ("-1", "+1")
    result = {
        "dataset": ds.name,
        "positive": positive,
        "negative": negative,
        "solver": args.solver,
        "kernel": args.kernel,
        "C": args.C,
        "gamma": clf.solver_.kernel.gamma,
        "scale": args.scale,
        "n_features": int(ds.X.shape[1]),
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
        ("solver", f"{result['solver']}  kernel {result['kernel']}, C {fmt(result['C'])}, "
                   f"gamma {fmt(result['gamma'])}"),
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


def _check_writable(path: str) -> None:
    """Fail early when ``--out`` cannot be written (missing folder, a folder, no permission)."""
    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    if os.path.isdir(target):
        raise CLIError(f"--out {path} is a folder; give a file name such as results.csv")
    if not os.path.isdir(folder):
        raise CLIError(f"--out {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(target) and not os.access(target, os.W_OK)):
        raise CLIError(f"--out {path}: no permission to write there")


def _default_initial(experiment) -> int | None:
    """``run_comparison``'s default number of initial (random) labels."""
    import inspect

    default = inspect.signature(experiment.run_comparison).parameters.get("initial")
    return None if default is None or default.default is inspect.Parameter.empty else int(default.default)


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
    if args.out:
        _check_writable(args.out)  # before the runs, not after minutes of work
    initial = args.initial if args.initial is not None else _default_initial(experiment)
    if initial is not None and initial >= args.budget:
        print(f"warning: the {initial} initial labels use the whole --budget {args.budget}: every label is "
              "drawn at random and the strategies never choose an item (lower --initial or raise --budget)",
              file=sys.stderr)
    ds = load_data(args)
    X = ds.X
    if args.scale == "standard":
        # Unsupervised and label-free, so scaling over all items (pool and held-out part) leaks no labels.
        X = standardize(X)[0]
    solver_params = dict(kernel=args.kernel, C=args.C, gamma=args.gamma, degree=args.degree, coef0=args.coef0,
                         tol=args.tol)
    optional = {}
    if args.initial is not None:
        optional["initial"] = args.initial
    if args.test_fraction is not None:
        optional["test_fraction"] = args.test_fraction
    result = experiment.run_comparison(X, ds.y, strategies=strategies, solver=args.solver,
                                       solver_params=solver_params, budget=args.budget, seeds=args.seeds,
                                       n_jobs=args.jobs, **optional)
    if args.out:
        result.to_csv(args.out)
    if args.json:
        payload = {"dataset": ds.name, "positive": ds.classes[1] if ds.classes else None,
                   "config": result.config, "summary": result.summary.to_dict(orient="records"),
                   "references": result.references.to_dict(orient="records"), "out": args.out}
        return json.dumps(_jsonable(payload))
    text = f"{ds.name}: {len(ds)} items, positive {ds.classes[1] if ds.classes else '+1'}\n{result.summary_text()}"
    if args.out:
        text += f"\nrows written to {args.out}"
    return text


# -- entry point -------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "fit":
            result = run_fit(args)
            print(json.dumps(result) if args.json else format_fit(result))
        else:
            output = run_compare(args)
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


__all__ = ["CLIError", "build_parser", "format_fit", "load_data", "main", "run_compare", "run_fit"]
