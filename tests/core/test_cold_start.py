"""The ``spread`` cold start (k-means++ seeding, ``core.cold_start``): deterministic, covers the pool, says why."""

from __future__ import annotations

import numpy as np
import pytest

from core.loop import ActiveLearningLoop


def _clusters():
    """One large cluster (400 items) and four small ones (8 items each), far apart."""
    rng = np.random.default_rng(11)
    centres = np.array([[0, 0], [12, 0], [0, 12], [-12, 0], [0, -12]], dtype=float)
    sizes = [400, 8, 8, 8, 8]
    X = np.vstack([c + rng.normal(scale=0.5, size=(n, 2)) for c, n in zip(centres, sizes, strict=True)])
    cluster = np.repeat(np.arange(5), sizes)
    return X, cluster


def _cold_picks(X, cold_start: str, seed: int, n: int) -> list[tuple[int, str]]:
    loop = ActiveLearningLoop(
        X, strategy="largest-positive", seed=seed, cold_start=cold_start, solver_params={"kernel": "linear"}
    )
    out = []
    for _ in range(n):
        q = loop.next_query()
        out.append((q.index, q.reason, q.strategy))
        loop.teach(q.index, -1)  # one class only: the cold start goes on
    return out


def test_spread_cold_start_is_deterministic_for_a_seed_and_covers_the_pool():
    X, cluster = _clusters()
    for seed in range(5):
        picks = _cold_picks(X, "spread", seed, 8)
        assert picks == _cold_picks(X, "spread", seed, 8)  # the same questions for the same seed
        assert set(cluster[[i for i, _, _ in picks]]) == set(range(5)), seed  # every cluster within 8 questions
    # a uniform draw mostly stays in the large cluster (98% of the pool)
    random_reach = [len(set(cluster[[i for i, _, _ in _cold_picks(X, "random", seed, 8)]])) for seed in range(5)]
    assert max(random_reach) < 5


def test_spread_cold_start_says_why_it_chose_an_item():
    X, _ = _clusters()
    picks = _cold_picks(X, "spread", 0, 3)
    assert picks[0][2] == "spread (cold start)"
    assert picks[0][1] == (
        "cold start, spread over the pool (k-means++ seeding): the first item, drawn uniformly at random"
    )
    assert picks[1][1].startswith(
        "cold start, spread over the pool (k-means++ seeding): drawn with probability "
        "in proportion to its squared distance to the nearest item already asked ("
    )
    assert "times the average over the 430 unlabelled items" in picks[2][1]


@pytest.mark.processes  # python -m core (or python -c) in a subprocess
def test_compare_takes_the_cold_start(tmp_path):
    from tests.core.test_cli import run_cli

    X, cluster = _clusters()
    path = tmp_path / "clusters.csv"
    path.write_text(
        "a,b,kind\n"
        + "".join(
            f"{float(a)!r},{float(b)!r},{'rare' if c == 3 else 'common'}\n"
            for (a, b), c in zip(X, cluster, strict=True)
        )
    )
    args = (
        "compare",
        "--data",
        path,
        "--label-column",
        "kind",
        "--positive",
        "rare",
        "--strategies",
        "largest-positive",
        "--budget",
        "12",
        "--seeds",
        "2",
        "--test-fraction",
        "0",
    )
    r = run_cli(*args, "--cold-start", "spread", "--json")
    assert r.returncode == 0, r.stderr
    import json

    assert json.loads(r.stdout)["config"]["cold_start"] == "spread"
    r = run_cli(*args, "--cold-start", "kmeans")
    assert r.returncode == 2 and "invalid choice: 'kmeans'" in r.stderr
