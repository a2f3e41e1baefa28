"""Prior knowledge in simulations (``compare --prior``, ``--prior-keys``; ``core.priors``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.experiment import run_comparison
from core.loop import ActiveLearningLoop
from core.metrics import labels_to_recall
from core.priors import PRIOR, PriorError, draw, rows_of_keys
from tests.core.test_cli import run_cli


@pytest.fixture(scope="module")
def rare_csv(tmp_path_factory):
    """240 items, 24 positives (10%), with a key column."""
    rng = np.random.default_rng(7)
    y = np.where(np.arange(240) % 10 == 0, 1, -1)
    X = rng.normal(size=(240, 3)) + 1.5 * (y > 0)[:, None]
    path = tmp_path_factory.mktemp("priors") / "rare.csv"
    lines = ["id,f1,f2,f3,outcome"] + [
        f"item-{i:03d}," + ",".join(repr(float(v)) for v in row) + f",{'yes' if t > 0 else 'no'}"
        for i, (row, t) in enumerate(zip(X, y, strict=True))
    ]
    path.write_text("\n".join(lines) + "\n")
    return path, X, y


def _compare(path, *extra):
    return run_cli(
        "compare",
        "--data",
        path,
        "--label-column",
        "outcome",
        "--positive",
        "yes",
        "--key-column",
        "id",
        "--strategies",
        "largest-positive,near-boundary",
        "--budget",
        "20",
        "--seeds",
        "3",
        *extra,
    )


@pytest.mark.processes  # python -m core (or python -c) in a subprocess
def test_compare_prior_records_the_same_priors_for_every_strategy_of_a_seed(rare_csv, tmp_path):
    path, _, y = rare_csv
    out = tmp_path / "rows.csv"
    r = _compare(path, "--prior", "1,1", "--out", out, "--json", "--prior-keys", "x")
    assert r.returncode == 2 and "not both" in r.stderr  # one way of giving priors at a time
    r = _compare(path, "--prior", "1,1", "--out", out, "--json")
    assert r.returncode == 0, r.stderr
    config = json.loads(r.stdout)["config"]
    assert config["prior"] == "1,1" and config["initial"] == 0  # the priors are the start
    rows = pd.read_csv(out)
    priors = rows[rows["prior"]]
    assert len(priors) == 2 * 3 * 2  # 2 strategies (no random added) x 3 seeds x (1 positive + 1 negative)
    for seed, part in priors.groupby("seed"):
        firsts = rows[(rows["seed"] == seed) & (rows["n_labels"] <= 2)]
        assert firsts["prior"].all()  # learned first
        per_strategy = {s: tuple(g.sort_values("n_labels")["item"]) for s, g in part.groupby("strategy")}
        assert len(set(per_strategy.values())) == 1, per_strategy  # the same items for every strategy
        assert sorted(part.groupby("strategy").first()["label"]) == [1, 1]
        assert y[config["priors"][str(seed)]].tolist() == [1, -1]  # dataset rows: one positive, one negative
    assert len({tuple(v) for v in config["priors"].values()}) > 1  # drawn per seed


def test_recall_counts_priors_as_asreview_does():
    y = np.where(np.arange(200) % 10 == 0, 1, -1)
    X = np.random.default_rng(3).normal(size=(200, 2)) + 2.0 * (y > 0)[:, None]
    res = run_comparison(
        X,
        y,
        strategies=["largest-positive"],
        budget=60,
        seeds=[4],
        initial=0,
        test_fraction=0.0,
        prior=(2, 3),
        baseline=False,
    )
    rows = res.rows
    assert rows["prior"].tolist()[:5] == [True] * 5 and not rows["prior"].iloc[5:].any()
    assert sorted(rows["label"].iloc[:5]) == [-1, -1, -1, 1, 1]
    # the priors on neither side: 20 positives in the pool, 2 of them priors
    after = rows["label"].to_numpy()[5:]
    expected = np.cumsum(after > 0) / 18
    assert np.allclose(rows["recall"].to_numpy()[5:], expected)
    assert np.all(rows["recall"].to_numpy()[:5] == 0)
    run = res.runs.iloc[0]
    assert run["positives_total"] == 18 and run["pool_size"] == 195
    assert run["labels_recall_50"] == labels_to_recall(after, 18, 0.5)
    assert res.config["priors"][4] == sorted(res.config["priors"][4], key=lambda r: -y[r])  # positives first
    assert "as ASReview counts them" in res.summary_text()


@pytest.mark.processes  # python -m core (or python -c) in a subprocess
def test_prior_keys_learned_first_and_bad_keys_named(rare_csv, tmp_path):
    path, _, y = rare_csv
    keys = tmp_path / "known.txt"
    keys.write_text("# known items\nitem-010\n\nitem-003\n")
    r = _compare(path, "--prior-keys", keys, "--test-fraction", "0", "--json")
    assert r.returncode == 0, r.stderr
    payload = json.loads(r.stdout)
    assert payload["prior_keys"] == {str(s): ["item-010", "item-003"] for s in range(3)}
    assert payload["config"]["priors"] == {str(s): [10, 3] for s in range(3)}
    keys.write_text("item-010\nitem-999\n")
    r = _compare(path, "--prior-keys", keys, "--test-fraction", "0")
    assert r.returncode == 2
    assert f"--prior-keys {keys}, line 2: 'item-999' is the key of no item" in r.stderr
    assert "Traceback" not in r.stderr
    keys.write_text("item-010\n")
    r = _compare(path, "--prior-keys", keys)  # the default test fraction holds some out
    assert r.returncode == 2 and "'item-010' (line 1) is in the held-out evaluation set of seed" in r.stderr
    r = _compare(path, "--prior", "30,1")
    assert r.returncode == 2 and "asks for 30 known positives, but the pool of seed 0 has only" in r.stderr


def test_prior_helpers_refuse_what_cannot_be_used():
    with pytest.raises(PriorError, match="only 1 positives"):
        draw(np.array([1, -1, -1]), 2, 0, seed=0)
    assert rows_of_keys([(1, "2")], None, 5).tolist() == [2]  # without keys: item numbers
    with pytest.raises(PriorError, match="line 1: '7' is not an item number 0..4"):
        rows_of_keys([(1, "7")], None, 5)
    with pytest.raises(PriorError, match="given twice"):
        rows_of_keys([(1, "a"), (3, "a")], ["a", "b"], 2)
    with pytest.raises(PriorError, match="held-out"):
        run_comparison(
            np.arange(40.0).reshape(20, 2),
            np.arange(20) % 4 == 0,
            strategies=["random"],
            budget=5,
            seeds=1,
            prior_items=list(range(20)),
        )


def test_loop_records_the_provenance_of_a_prior():
    X = np.random.default_rng(0).normal(size=(30, 2))
    loop = ActiveLearningLoop(X, strategy="near-boundary")
    assert loop.teach(3, 1, provenance=PRIOR).asked_by == "prior"
    assert loop.teach(4, -1).asked_by == "analyst"
