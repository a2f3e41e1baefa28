"""``python -m core`` in a subprocess, on real CSV files (good and malformed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.svm import SVC

from core.datasets import make_gaussians, standardize, stratified_split
from core.metrics import roc_auc

pytestmark = pytest.mark.processes  # python -m core in a subprocess (a slow lane)

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "core", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def gauss_csv(tmp_path_factory):
    X, y = make_gaussians(200, np.random.default_rng(0), separation=2.5, n_features=3)
    path = tmp_path_factory.mktemp("cli") / "gauss.csv"
    lines = ["f1,f2,f3,outcome"] + [
        ",".join(repr(float(v)) for v in row) + f",{'sick' if t > 0 else 'well'}" for row, t in zip(X, y, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path, X, y


def test_fit_json_reports_the_design_fields_and_matches_sklearn(gauss_csv):
    path, X, y = gauss_csv
    r = run_cli(
        "fit",
        "--data",
        path,
        "--label-column",
        "outcome",
        "--positive",
        "sick",
        "--solver",
        "lasvm",
        "--kernel",
        "rbf",
        "--C",
        "1",
        "--gamma",
        "0.5",
        "--scale",
        "standard",
        "--test-fraction",
        "0.25",
        "--seed",
        "3",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for key in (
        "accuracy",
        "auc",
        "n_sv",
        "fit_seconds",
        "kernel_evals",
        "dual_objective",
        "solver",
        "n_train",
        "n_test",
    ):
        assert key in out, key
    assert out["solver"] == "lasvm" and out["n_train"] == 150 and out["n_test"] == 50
    assert out["n_sv"] > 0 and out["kernel_evals"] > 0 and out["dual_objective"] > 0 and out["fit_seconds"] >= 0
    # the same split and scaling, fitted by scikit-learn's SVC, as an independent reference
    train, test = stratified_split(y, 0.25, np.random.default_rng(3))
    Xtr, mean, scale = standardize(X[train])
    Xte = (X[test] - mean) / scale
    sk = SVC(kernel="rbf", C=1.0, gamma=0.5).fit(Xtr, y[train])
    assert abs(out["accuracy"] - sk.score(Xte, y[test])) <= 0.04
    assert abs(out["auc"] - roc_auc(y[test], sk.decision_function(Xte))) <= 0.03
    assert out["accuracy"] > 0.8


def test_fit_table_output(gauss_csv):
    path, _, _ = gauss_csv
    r = run_cli("fit", "--data", path, "--label-column", "outcome", "--solver", "ramp")
    assert r.returncode == 0, r.stderr
    for words in (
        "accuracy (test)",
        "ROC AUC (test)",
        "support vectors",
        "kernel evaluations",
        "dual objective",
        "positive: well",
    ):  # default positive: the larger label value ('well' > 'sick')
        assert words in r.stdout
    assert r.stderr == ""


def test_fit_bundled_without_a_file():
    r = run_cli("fit", "--data", "bundled:breast-cancer", "--scale", "standard", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["positive"] == "malignant" and out["n_train"] + out["n_test"] == 569
    assert out["auc"] > 0.95


def write(tmp_path, name, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


# (file contents, extra arguments, text the one-line message must contain)
BAD = {
    "missing file": (None, [], "file not found"),
    "missing column": (b"x,y\n1,a\n2,b\n", ["--label-column", "target"], "label column 'target' not found"),
    "non-numeric": (
        b"x,z,y\n1,2,a\n3,abc,b\n",
        ["--label-column", "y"],
        "non-numeric value 'abc' in column 'z', row 2",
    ),
    "three classes": (b"x,y\n1,a\n2,b\n3,c\n4,a\n", ["--label-column", "y"], "has 3 classes ('a', 'b', 'c')"),
    "one class": (b"x,y\n1,a\n2,a\n", ["--label-column", "y"], "only one class ('a')"),
    "ragged": (b"x,y\n1,a\n2,b,3\n3,a\n", ["--label-column", "y"], "line 3 has 3 fields but the header has 2"),
    "empty": (b"", ["--label-column", "y"], "the file is empty"),
    "not utf-8": ("x,y\n1,caf\xe9\n2,b\n".encode("latin-1"), ["--label-column", "y"], "not UTF-8"),
    "positive absent": (
        b"x,y\n1,a\n2,b\n",
        ["--label-column", "y", "--positive", "c"],
        "positive value 'c' does not occur",
    ),
    "no label column": (b"x,y\n1,a\n2,b\n", [], "--label-column is required"),
}


# These go through a real subprocess; the rest call the same entry point in-process (faster).
SUBPROCESS_CASES = ("missing file", "missing column", "non-numeric", "three classes")


def check_one_error_line(returncode, stdout, stderr, expected):
    assert returncode == 2
    assert stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and expected in lines[0], lines[0]
    assert "Traceback" not in stderr


@pytest.mark.parametrize("case", list(BAD))
def test_fit_bad_input_one_line_exit_2(tmp_path, case, capsys):
    from core.cli import main

    data, extra, expected = BAD[case]
    path = tmp_path / "missing.csv" if data is None else write(tmp_path, "bad.csv", data)
    if case in SUBPROCESS_CASES:
        r = run_cli("fit", "--data", path, *extra)
        check_one_error_line(r.returncode, r.stdout, r.stderr, expected)
    else:
        code = main(["fit", "--data", str(path), *extra])
        captured = capsys.readouterr()
        check_one_error_line(code, captured.out, captured.err, expected)


def test_fit_refuses_a_wide_file_and_a_gzip_bomb_before_reading_them(tmp_path, capsys, monkeypatch):
    import core.datasets
    from core.cli import main
    from tests.core.test_datasets import gzip_bomb, refused_before_pandas, wide_csv

    refused_before_pandas(monkeypatch)
    wide = wide_csv(tmp_path / "wide.csv")
    code = main(["fit", "--data", str(wide), "--label-column", "a"])
    captured = capsys.readouterr()
    check_one_error_line(
        code,
        captured.out,
        captured.err,
        "wide.csv: 1,000,000 columns; MarginLab reads CSV files of at most 10,000 columns",
    )
    monkeypatch.setattr(core.datasets, "MAX_CSV_BYTES", 8 << 20)
    bomb = gzip_bomb(tmp_path / "bomb.csv.gz", megabytes=32)
    code = main(["fit", "--data", str(bomb), "--label-column", "y"])
    captured = capsys.readouterr()
    check_one_error_line(code, captured.out, captured.err, "bomb.csv.gz: more than 8 MB once decompressed")


def test_bad_arguments_exit_2():
    r = run_cli("fit", "--data", "bundled:digits", "--C", "-1")
    assert r.returncode == 2 and "positive number" in r.stderr
    r = run_cli("fit", "--data", "bundled:digits", "--solver", "svmlight")
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = run_cli("fit", "--data", "bundled:nothing")
    assert r.returncode == 2 and "unknown bundled dataset 'nothing'" in r.stderr


def test_compare_argument_parsing():
    from core.cli import build_parser

    args = build_parser().parse_args(
        [
            "compare",
            "--data",
            "d.csv",
            "--label-column",
            "y",
            "--positive",
            "1",
            "--strategies",
            "near-boundary,random",
            "--solver",
            "incremental",
            "--kernel",
            "rbf",
            "--C",
            "10",
            "--gamma",
            "0.5",
            "--scale",
            "standard",
            "--budget",
            "50",
            "--seeds",
            "4",
            "--initial",
            "4",
            "--test-fraction",
            "0.3",
            "--out",
            "r.csv",
            "--json",
        ]
    )
    assert args.strategies == "near-boundary,random" and args.solver == "incremental"
    assert (args.budget, args.seeds, args.initial, args.test_fraction) == (50, 4, 4, 0.3)
    assert (args.C, args.gamma, args.scale, args.out, args.json) == (10.0, 0.5, "standard", "r.csv", True)
    defaults = build_parser().parse_args(["compare", "--data", "d.csv", "--strategies", "random", "--budget", "9"])
    assert defaults.solver is None and defaults.C is None and defaults.gamma is None  # (see hyper_options)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["compare", "--data", "d.csv", "--strategies", "random"])  # --budget required


def need_experiment():
    import importlib.util

    if importlib.util.find_spec("core.experiment") is None:
        pytest.skip("core.experiment has not landed yet")


def test_compare_writes_tidy_rows_and_json_summary(gauss_csv, tmp_path):
    need_experiment()
    import pandas as pd

    path, _, _ = gauss_csv
    out = tmp_path / "results.csv"
    r = run_cli(
        "compare",
        "--data",
        path,
        "--label-column",
        "outcome",
        "--positive",
        "sick",
        "--strategies",
        "near-boundary,random",
        "--C",
        "1",
        "--gamma",
        "0.5",
        "--scale",
        "standard",
        "--budget",
        "20",
        "--seeds",
        "2",
        "--initial",
        "4",
        "--test-fraction",
        "0.3",
        "--out",
        out,
        "--json",
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    by_strategy = {row["strategy"]: row for row in summary["summary"]}
    assert set(by_strategy) == {"near-boundary", "random"}
    for row in by_strategy.values():
        assert row["n_seeds"] == 2 and 0.0 < row["alc_mean"] <= 1.2
    assert by_strategy["near-boundary"]["solver"] == "incremental"  # the strategy's default solver
    rows = pd.read_csv(out)
    assert list(rows.columns[:9]) == [
        "strategy",
        "solver",
        "seed",
        "n_labels",
        "auc",
        "accuracy",
        "n_sv",
        "update_ms",
        "query_ms",
    ]
    assert rows["n_labels"].max() == 20 and set(rows["seed"]) == {0, 1}
    assert len(rows) == 2 * 2 * 20  # strategies x seeds x labels


def test_compare_table_and_errors(gauss_csv):
    need_experiment()
    path, _, _ = gauss_csv
    r = run_cli(
        "compare",
        "--data",
        path,
        "--label-column",
        "outcome",
        "--strategies",
        "random",
        "--solver",
        "lasvm",
        "--budget",
        "12",
        "--seeds",
        "1",
    )
    assert r.returncode == 0, r.stderr
    assert "ALC" in r.stdout and "random" in r.stdout
    r = run_cli(
        "compare",
        "--data",
        path,
        "--label-column",
        "outcome",
        "--strategies",
        "psychic,random",
        "--budget",
        "12",
        "--seeds",
        "1",
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown strategy 'psychic'" in r.stderr


def test_fit_in_process_options(tmp_path, capsys):
    from core.cli import main

    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    digit = np.where(X[:, 0] > 0.5, "a", np.where(X[:, 0] < -0.5, "b", "c"))
    path = tmp_path / "three.csv"
    path.write_text("u,v,cls\n" + "".join(f"{a},{b},{c}\n" for (a, b), c in zip(X, digit, strict=True)))
    code = main(
        [
            "fit",
            "--data",
            str(path),
            "--label-column",
            "cls",
            "--positive",
            "a",
            "--one-vs-rest",
            "--solver",
            "incremental",
            "--test-fraction",
            "0",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["evaluated_on"] == "train" and out["n_test"] == 0 and out["n_train"] == 60
    assert out["positive"] == "a" and out["negative"] == "rest"
    assert out["accuracy"] > 0.9


def test_compare_checks_out_before_running(gauss_csv, tmp_path):
    """A folder that does not exist is reported at once, in one line, before any run."""
    need_experiment()
    path, _, _ = gauss_csv
    out = tmp_path / "missing-folder" / "rows.csv"
    r = run_cli(
        "compare",
        "--data",
        path,
        "--label-column",
        "outcome",
        "--strategies",
        "random",
        "--budget",
        "12",
        "--seeds",
        "1",
        "--out",
        out,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "does not exist" in r.stderr and str(out.parent) in r.stderr
    r = run_cli(
        "compare",
        "--data",
        path,
        "--label-column",
        "outcome",
        "--strategies",
        "random",
        "--budget",
        "12",
        "--seeds",
        "1",
        "--out",
        tmp_path,
    )
    assert r.returncode == 2 and "is a folder" in r.stderr


def test_a_closed_pipe_ends_quietly(gauss_csv):
    """``python -m core fit ... | head -c 10``: no 'error: Broken pipe' once the reader has gone."""
    path, _, _ = gauss_csv
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "core", "fit", "--data", str(path), "--label-column", "outcome", "--solver", "lasvm"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # the reader goes away before the table is printed
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert b"Broken pipe" not in stderr and b"error" not in stderr, stderr


def test_compare_warns_when_the_initial_labels_use_the_whole_budget(gauss_csv):
    need_experiment()
    path, _, _ = gauss_csv
    r = run_cli(
        "compare",
        "--data",
        path,
        "--label-column",
        "outcome",
        "--strategies",
        "near-boundary",
        "--budget",
        "6",
        "--seeds",
        "1",
    )  # the default 10 initial labels exceed the budget
    assert r.returncode == 0, r.stderr
    assert "warning: the 10 initial labels use the whole --budget 6" in r.stderr
    r = run_cli(
        "compare",
        "--data",
        path,
        "--label-column",
        "outcome",
        "--strategies",
        "near-boundary",
        "--budget",
        "6",
        "--seeds",
        "1",
        "--initial",
        "2",
    )
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def test_compare_stopping_rules_write_tidy_stops(gauss_csv, tmp_path):
    need_experiment()
    import pandas as pd

    path, _, y = gauss_csv
    stops = tmp_path / "stops.csv"
    r = run_cli(
        "compare",
        "--data",
        path,
        "--label-column",
        "outcome",
        "--positive",
        "sick",
        "--strategies",
        "largest-positive,random",
        "--scale",
        "standard",
        "--budget",
        "120",
        "--seeds",
        "2",
        "--test-fraction",
        "0",
        "--stopping",
        "statistical,knee,margin,stability,consecutive:20",
        "--target-recall",
        "0.9",
        "--confidence",
        "0.9",
        "--stops-out",
        stops,
    )
    assert r.returncode == 0, r.stderr
    assert "recall 95%" in r.stdout and "WSS@95" in r.stdout  # per strategy, without an evaluation set
    assert "consecutive:20" in r.stdout and "reached 90%" in r.stdout and f"stops written to {stops}" in r.stdout
    table = pd.read_csv(stops)
    assert list(table.columns) == [
        "strategy",
        "solver",
        "seed",
        "rule",
        "n_labels_at_stop",
        "recall_at_stop",
        "positives_total",
    ]
    assert len(table) == 2 * 2 * 5  # largest-positive and random, two seeds, five rules
    assert set(table["positives_total"]) == {int(np.sum(y > 0))}  # every item is in the pool
    never = table["n_labels_at_stop"].isna()
    assert (table.loc[never, "recall_at_stop"].isna()).all()
    assert (table.loc[~never, "n_labels_at_stop"] <= 120).all()


def test_compare_stopping_errors(gauss_csv, tmp_path):
    need_experiment()
    path, _, _ = gauss_csv
    base = (
        "compare",
        "--data",
        path,
        "--label-column",
        "outcome",
        "--strategies",
        "random",
        "--budget",
        "12",
        "--seeds",
        "1",
    )
    for extra, words in [
        (("--stopping", "knee,oracle"), "--stopping: unknown stopping rule 'oracle'"),
        (("--stopping", "consecutive"), "consecutive:50"),
        (("--stops-out", tmp_path / "s.csv"), "--stops-out needs --stopping"),
        (("--stopping", "knee", "--stops-out", tmp_path / "missing" / "s.csv"), "the folder"),
    ]:
        r = run_cli(*base, *extra)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and words in r.stderr, r.stderr
    r = run_cli(*base, "--stopping", "knee", "--target-recall", "1.2")
    assert r.returncode == 2 and "--target-recall" in r.stderr


# -- untidy tables, documents and molecules --------------------------------------------------------


def test_fit_reads_a_semicolon_file_with_decimal_commas_gaps_and_a_ten_class_label(tmp_path, capsys):
    """The issue's untidy table: semicolons, decimal commas, gaps, a constant column, --positive 8 of ten."""
    from core.cli import main

    rng = np.random.default_rng(2)
    n = 200
    digit = rng.integers(0, 10, n)
    X = rng.normal(size=(n, 3)) + (digit == 8)[:, None] * 2.5
    X[:, 2] *= 1000  # a feature on another scale: standardised by default
    lines = ["alpha;beta;gamma;constant;digit"]
    for i in range(n):
        cells = [f"{v:.4f}".replace(".", ",") for v in X[i]]
        if i % 17 == 3:
            cells[1] = ""
        lines.append(";".join(cells + ["7", str(digit[i])]))
    path = tmp_path / "untidy.csv"
    path.write_text("\n".join(lines) + "\n")
    args = [
        "fit",
        "--data",
        str(path),
        "--label-column",
        "digit",
        "--positive",
        "8",
        "--solver",
        "incremental",
        "--json",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "missing values in 1 column(s), 12 row(s): 'beta' 12 (first: row 4 (line 5 of the file))" in err
    assert main([*args, "--missing", "impute"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "note: dropped 1 constant column(s): 'constant'" in captured.err
    assert "note: filled in missing values: 'beta' 12 with the median" in captured.err
    assert out["positive"] == "8" and out["negative"] == "rest" and out["n_features"] == 3
    assert out["scale"] == "standard" and out["auc"] > 0.9
    assert main([*args, "--missing", "drop", "--sep", ",", "--test-fraction", "0"]) == 2
    assert "seems to be separated by semicolons" in capsys.readouterr().err


def write_documents(
    path: Path, topics: dict[str, str], *, n: int, every: int, seed: int, words: int, with_id: bool = False
) -> Path:
    """A CSV of short documents: every ``every``-th is "yes" with its topic words, the rest "no"."""
    rng = np.random.default_rng(seed)
    filler = "study data model results analysis method sample".split()
    with open(path, "w") as f:
        f.write("id,abstract,included\n" if with_id else "abstract,included\n")
        for i in range(n):
            label = "yes" if i % every == 0 else "no"
            text = " ".join(rng.choice(topics[label].split(), words).tolist() + rng.choice(filler, 6).tolist())
            f.write((f"{i}," if with_id else "") + f'"{text}",{label}\n')
    return path


def test_fit_on_a_text_column_and_on_smiles(tmp_path, capsys):
    from core.cli import main

    path = write_documents(
        tmp_path / "docs.csv",
        {"yes": "trauma ptsd symptoms trajectories resilience anxiety", "no": "software fault defect code"},
        n=120,
        every=6,
        seed=3,
        words=4,
        with_id=True,
    )
    code = main(
        [
            "fit",
            "--data",
            str(path),
            "--label-column",
            "included",
            "--positive",
            "yes",
            "--text-column",
            "abstract",
            "--text-svd",
            "20",
            "--solver",
            "incremental",
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = json.loads(captured.out)
    assert out["n_features"] == 20 and out["auc"] > 0.95
    assert "note: not used as features: 'id'" in captured.err
    smiles = tmp_path / "mols.csv"
    smiles.write_text("smiles,active\nCCO,1\nc1ccccc1,0\nC1CC,1\n")
    assert main(["fit", "--data", str(smiles), "--label-column", "active", "--smiles-column", "smiles"]) == 2
    assert "1 invalid SMILES in column 'smiles': row 3 (line 4 of the file): 'C1CC'" in capsys.readouterr().err


def test_compare_runs_the_review_model_on_sparse_documents_and_refuses_what_it_would_override(tmp_path, capsys):
    """--model review: the ramp solver with the class weights, on the TF-IDF rows as they are (no SVD)."""
    from core.cli import main

    need_experiment()
    topics = {"yes": "robot grasping locomotion manipulator tactile", "no": "parsing translation corpus grammar"}
    path = write_documents(tmp_path / "docs.csv", topics, n=150, every=10, seed=5, words=3)
    rows = tmp_path / "rows.csv"
    code = main(
        [
            "compare",
            "--data",
            str(path),
            "--label-column",
            "included",
            "--positive",
            "yes",
            "--text-column",
            "abstract",
            "--strategies",
            "largest-positive",
            "--budget",
            "60",
            "--seeds",
            "2",
            "--test-fraction",
            "0",
            "--model",
            "review",
            "--out",
            str(rows),
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    import pandas as pd

    table = pd.read_csv(rows)
    assert set(table["solver"]) == {"ramp"}
    found = table[table.strategy == "largest-positive"].groupby("seed")["recall"].max()
    assert (found == 1.0).all(), found  # 15 positives with their own words: all found within 60 labels
    assert "largest-positive" in json.dumps(summary)
    for extra, flag in (
        (["--C", "2"], "--C"),
        (["--solver", "lasvm"], "--solver"),
        (["--kernel", "rbf"], "--kernel"),
        (["--tol", "0.01"], "--tol"),
    ):
        assert (
            main(
                [
                    "compare",
                    "--data",
                    str(path),
                    "--label-column",
                    "included",
                    "--positive",
                    "yes",
                    "--text-column",
                    "abstract",
                    "--strategies",
                    "largest-positive",
                    "--budget",
                    "20",
                    "--model",
                    "review",
                    *extra,
                ]
            )
            == 2
        )
        err = capsys.readouterr().err
        assert f"--model review sets the solver, kernel, C, class weights and tolerance itself; leave out {flag}" in err
    assert (
        main(
            [
                "compare",
                "--data",
                str(path),
                "--label-column",
                "included",
                "--positive",
                "yes",
                "--text-column",
                "abstract",
                "--strategies",
                "largest-positive,near-boundary",
                "--budget",
                "20",
                "--class-weight",
                "balanced",
                "--balance-ratio",
                "9.8",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--balance-ratio: only the ramp solver takes these (add --solver ramp); the run would use incremental" in err
    assert (
        main(
            [
                "fit",
                "--data",
                str(path),
                "--label-column",
                "included",
                "--positive",
                "yes",
                "--text-column",
                "abstract",
                "--text-svd",
                "10",
                "--solver",
                "ramp",
                "--loss",
                "hinge",
                "--balance-ratio",
                "4",
            ]
        )
        == 2
    )
    assert "--balance-ratio needs --class-weight balanced" in capsys.readouterr().err


def test_class_weight_reaches_every_solver_and_its_saved_state(tmp_path, capsys):
    """--class-weight balanced gives the incremental, active-set and LASVM solvers per-class boxes (not only
    the ramp solver); the runs' solvers carry it in their parameters, so a saved state resumes with it."""
    from core.cli import build_parser, main, ramp_options

    parser = build_parser()
    for solver in ("incremental", "active-set", "lasvm", "ramp"):
        args = parser.parse_args(
            ["fit", "--data", "x.csv", "--label-column", "y", "--solver", solver, "--class-weight", "balanced"]
        )
        assert ramp_options(args, [solver]) == {"class_weight": "balanced"}
    args = parser.parse_args(["fit", "--data", "x.csv", "--label-column", "y"])
    assert ramp_options(args, ["incremental"]) == {}  # the default: no weights, as before
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    label = np.where(X[:, 0] > 1.0, "yes", "no")  # about 16% positives
    path = tmp_path / "rare.csv"
    path.write_text("a,b,label\n" + "".join(f"{a},{b},{c}\n" for (a, b), c in zip(X, label, strict=True)))
    for solver in ("incremental", "active-set", "lasvm"):
        code = main(
            [
                "fit",
                "--data",
                str(path),
                "--label-column",
                "label",
                "--positive",
                "yes",
                "--solver",
                solver,
                "--class-weight",
                "balanced",
                "--json",
            ]
        )
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert {"accuracy", "auc", "n_sv"} <= set(json.loads(captured.out))


def test_compare_runs_the_model_suited_to_the_data_as_the_app_does():
    """--model auto (the default): the review model for documents searched with largest-positive, as the app's
    New session form chooses it; the standard SVM when another heuristic is among them or an option is given;
    said with the run."""
    from core.presets import DOCUMENT_REVIEW

    base = (
        "compare",
        "--data",
        "bundled:arxiv",
        "--budget",
        "14",
        "--seeds",
        "1",
        "--test-fraction",
        "0",
        "--initial",
        "4",
        "--json",
    )
    review = run_cli(*base, "--strategies", "largest-positive")
    assert review.returncode == 0, review.stderr
    assert "model: review, suited to arxiv (documents searched with largest-positive" in review.stderr
    out = json.loads(review.stdout)
    assert out["model"] == "review" and out["summary"][0]["solver"] == DOCUMENT_REVIEW["solver"]
    mixed = run_cli(*base, "--strategies", "largest-positive,random")
    assert mixed.returncode == 0, mixed.stderr
    assert json.loads(mixed.stdout)["model"] == "standard" and "model: standard" in mixed.stderr
    given = run_cli(*base, "--strategies", "largest-positive", "--C", "2")
    assert given.returncode == 0, given.stderr
    assert json.loads(given.stdout)["model"] == "standard"  # an option of the SVM given: that SVM
    assert {s["solver"] for s in json.loads(given.stdout)["summary"]} == {"incremental"}
    explicit = run_cli(*base, "--strategies", "largest-positive", "--model", "standard")
    assert json.loads(explicit.stdout)["model"] == "standard" and "model:" not in explicit.stderr


def test_the_app_and_the_cli_choose_the_model_with_the_same_rule():
    from app.services.common import model_choice
    from core.presets import PRESETS, suited_model

    documents = {"feature_blocks": [{"kind": "tfidf", "start": 0, "stop": 5}]}
    table = {"feature_blocks": [{"kind": "numeric", "start": 0, "stop": 5}]}
    for meta in (documents, table):
        for strategy in ("largest-positive", "near-boundary"):
            solver, params = model_choice("auto", None, meta, 1.0, "scale", strategy=strategy)
            expected = suited_model(meta["feature_blocks"], [strategy], chosen=False)
            assert (solver, params == PRESETS["review"]["solver_params"]) == (
                ("ramp", True) if expected == "review" else (None, False)
            )
    assert suited_model(documents["feature_blocks"], ["largest-positive"], chosen=False) == "review"
    assert suited_model(documents["feature_blocks"], ["largest-positive", "random"], chosen=False) == "standard"
    assert suited_model(documents["feature_blocks"], ["largest-positive"], chosen=True) == "standard"
    assert suited_model(table["feature_blocks"], ["largest-positive"], chosen=False) == "standard"


def test_C_and_gamma_auto_are_parsed_and_become_the_exact_solvers_choice_from_the_labels():
    """--C auto / --gamma auto: the solver's ``auto`` (core.solvers.auto_hyper) from the starting values C 1 and
    gamma scale; left out, auto where the run has an exact solver (the others keep 1 and scale); numbers as
    before; auto with only a non-exact solver is refused, naming the exact ones."""
    from core.cli import CLIError, build_parser, describe_hyper, hyper_options, ramp_options
    from core.presets import solver_for

    parser = build_parser()

    def parsed(*extra):
        return parser.parse_args(["compare", "--data", "d.csv", "--strategies", "random", "--budget", "9", *extra])

    args = parsed("--C", "auto", "--gamma", "auto")
    assert (args.C, args.gamma) == ("auto", "auto")
    # (chosen in the background, each used DEFAULT_LAG labels later, as in the app)
    assert hyper_options(args, ["incremental"]) == {"C": 1.0, "gamma": "scale", "auto": ["C", "gamma"], "auto_lag": 10}
    assert hyper_options(parsed("--C", "auto", "--gamma", "0.5"), ["active-set"]) == {
        "C": 1.0,
        "gamma": 0.5,
        "auto": ["C"],
        "auto_lag": 10,
    }
    assert hyper_options(parsed("--C", "10", "--gamma", "scale"), ["incremental"]) == {"C": 10.0, "gamma": "scale"}
    assert hyper_options(parsed(), ["incremental", "lasvm"]) == {
        "C": 1.0,
        "gamma": "scale",
        "auto": ["C", "gamma"],
        "auto_lag": 10,
    }
    assert hyper_options(parsed(), ["lasvm"]) == {"C": 1.0, "gamma": "scale"}
    with pytest.raises(CLIError, match="--C auto: chosen from the labels by the exact solvers only"):
        hyper_options(parsed("--C", "auto"), ["incremental", "lasvm"])
    with pytest.raises(SystemExit):
        parsed("--C", "often")
    # --class-weight auto: the class weight chosen with them (from none), by the exact solvers only
    weighed = parsed("--class-weight", "auto")
    assert hyper_options(weighed, ["incremental"]) == {
        "C": 1.0,
        "gamma": "scale",
        "auto": ["C", "gamma", "class_weight"],
        "auto_lag": 10,
    }
    assert ramp_options(weighed, ["incremental"]) == {}
    assert describe_hyper(hyper_options(weighed, ["active-set"])) == (
        "C, gamma and the class weight chosen from the labels by exact leave-one-out at 20, 40, 80 and 160 labels, "
        "each used 10 labels later (C 1, gamma scale, no class weights until then)"
    )
    with pytest.raises(CLIError, match="--class-weight auto: chosen from the labels by the exact solvers only"):
        hyper_options(weighed, ["lasvm"])
    # the non-exact solver of a run keeps the starting values
    params = {"C": 1.0, "gamma": "scale", "auto": ["C", "gamma"], "auto_lag": 10}
    assert solver_for("lasvm", params, np.zeros((3, 2))) == ("lasvm", {"C": 1.0, "gamma": "scale"})
    assert solver_for("incremental", params, np.zeros((3, 2))) == ("incremental", params)


def test_compare_with_C_and_gamma_from_the_labels_says_so(gauss_csv):
    path, _, _ = gauss_csv
    base = (
        "compare",
        "--data",
        path,
        "--label-column",
        "outcome",
        "--strategies",
        "near-boundary",
        "--budget",
        "25",
        "--seeds",
        "1",
    )
    r = run_cli(*base)
    assert r.returncode == 0, r.stderr
    assert (
        "model standard; C and gamma chosen from the labels by exact leave-one-out at 20, 40, 80 and 160 labels, "
        "each used 10 labels later (C 1, gamma scale until then)"
    ) in r.stdout
    fixed = run_cli(*base, "--C", "2", "--gamma", "0.5")
    assert fixed.returncode == 0, fixed.stderr
    assert "model standard; C 2, gamma 0.5" in fixed.stdout
    refused = run_cli(*base, "--C", "auto", "--solver", "lasvm")
    assert refused.returncode == 2 and "exact solvers only (incremental, active-set)" in refused.stderr
    weighed = run_cli(*base, "--class-weight", "auto")
    assert weighed.returncode == 0, weighed.stderr
    assert (
        "model standard; C, gamma and the class weight chosen from the labels by exact leave-one-out at 20, 40, "
        "80 and 160 labels, each used 10 labels later (C 1, gamma scale, no class weights until then)"
    ) in weighed.stdout


@pytest.fixture
def animals_csv(tmp_path):
    """Three classes in three blobs, 15 items each, named in the label column."""
    rng = np.random.default_rng(2)
    centres = {"cat": (0.0, 0.0), "dog": (2.5, 0.0), "fox": (1.2, 2.2)}
    lines = ["u,v,animal"] + [
        f"{a + 0.6 * rng.standard_normal():.6f},{b + 0.6 * rng.standard_normal():.6f},{name}"
        for name, (a, b) in centres.items()
        for _ in range(15)
    ]
    path = tmp_path / "animals.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_compare_classes_writes_rows_with_the_class_names_and_a_json_summary(animals_csv, tmp_path, capsys):
    import pandas as pd

    from core.cli import main

    out = tmp_path / "rows.csv"
    code = main(
        [
            "compare",
            "--data",
            str(animals_csv),
            "--label-column",
            "animal",
            "--classes",
            "--strategies",
            "smallest-margin,random",
            "--C",
            "2",
            "--gamma",
            "0.5",
            "--budget",
            "12",
            "--seeds",
            "2",
            "--initial",
            "3",
            "--accuracy-levels",
            "0.6,0.9",
            "--out",
            str(out),
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result = json.loads(captured.out)
    assert result["classes"] == ["cat", "dog", "fox"] and result["config"]["solver"] == "incremental"
    assert [r["strategy"] for r in result["summary"]] == ["smallest-margin", "random"]
    for r in result["summary"]:
        assert r["n_seeds"] == 2 and 0 <= r["final_accuracy_mean"] <= 1 and "labels_acc_60" in r
        assert r["label_ms_median"] > 0
    rows = pd.read_csv(out)
    assert list(rows.columns[:6]) == ["strategy", "solver", "seed", "n_labels", "accuracy", "macro_auc"]
    assert len(rows) == 2 * 2 * 12 and set(rows["label"]) <= {"cat", "dog", "fox"}
    # the printed table: the curves with mean ± sd, the labels to reach each accuracy
    code = main(
        [
            "compare",
            "--data",
            str(animals_csv),
            "--label-column",
            "animal",
            "--classes",
            "cat,dog,fox",
            "--strategies",
            "least-certain-class",
            "--budget",
            "8",
            "--seeds",
            "1",
            "--initial",
            "3",
        ]
    )
    text = capsys.readouterr().out
    assert code == 0 and "3 classes (cat, dog, fox)" in text and "least-certain-class acc" in text
    assert "to acc 0.95" in text and "±" in text


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--classes", "--positive", "dog"],
            "--positive (one class against the rest) and --classes (every class kept) exclude each other",
        ),
        (["--classes", "cat,dog"], "values that are not among the classes given (cat, dog): 'fox' (15 items)"),
        (["--classes", "cat,dog,fox,wolf"], "class 'wolf' does not occur in label column 'animal'"),
        (["--classes", "--stopping", "knee"], "--stopping: not for K classes (--classes)"),
        (["--classes", "--C", "auto"], "--C auto: not for K classes"),
        (["--target-class", "dog"], "--target-class goes with --classes"),
    ],
)
def test_compare_classes_refusals_name_what_is_wrong(animals_csv, capsys, extra, message):
    from core.cli import main

    code = main(
        [
            "compare",
            "--data",
            str(animals_csv),
            "--label-column",
            "animal",
            "--strategies",
            "smallest-margin",
            "--budget",
            "5",
            "--seeds",
            "1",
            *extra,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_compare_classes_refuses_binary_strategies_and_a_target_class_left_out(animals_csv, capsys):
    from core.cli import main

    base = ["compare", "--data", str(animals_csv), "--label-column", "animal", "--classes", "--budget", "5"]
    assert main([*base, "--strategies", "near-boundary"]) == 2
    assert (
        "unknown K-class strategy 'near-boundary'; with --classes choose from smallest-margin"
        in capsys.readouterr().err
    )
    assert main([*base, "--strategies", "target-class"]) == 2
    assert "give --target-class NAME, one of cat, dog, fox" in capsys.readouterr().err
    one = animals_csv.parent / "one.csv"
    one.write_text("u,animal\n1,dog\n2,dog\n3,dog\n")
    assert (
        main(
            [
                "compare",
                "--data",
                str(one),
                "--label-column",
                "animal",
                "--classes",
                "--strategies",
                "random",
                "--budget",
                "2",
            ]
        )
        == 2
    )
    assert "has only one class ('dog'); K classes need at least two" in capsys.readouterr().err
