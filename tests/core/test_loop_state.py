"""Saved loop states (core.loop_state) stay readable: a state written before the loop was split into
its parts (tests/data/loop_state_v2_*, format 2) loads, is written again unchanged, and continues as
the loop its events give."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from core.datasets import make_banana
from core.loop import STATE_FORMAT, ActiveLearningLoop

DATA = Path(__file__).resolve().parents[1] / "data"
# the saved states' recipe: near-boundary, seed 3, 4 initial labels, 24 answers (a skip at the 6th,
# an undo after the 10th), to_state(previous=2); the pool and evaluation set below
CONFIG = dict(strategy="near-boundary", seed=3, initial=4)


def pools():
    X, y = make_banana(120, np.random.default_rng(11))
    Xe, ye = make_banana(40, np.random.default_rng(12))
    return X, y, Xe, ye


def saved(solver: str):
    with np.load(DATA / f"loop_state_v2_{solver}.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads((DATA / f"loop_state_v2_{solver}.json").read_text(encoding="utf-8"))
    return arrays, meta


@pytest.mark.parametrize("solver", ["lasvm", "incremental"])
def test_a_saved_state_is_written_again_unchanged(solver):
    """Restoring then saving changes nothing: every array (the solver's, the previous solver states
    of a non-exact solver, the kept scores and the rows kept in the buffer, in their order) and the
    meta, bit for bit (no computation happens between the two)."""
    arrays, meta = saved(solver)
    assert meta["format"] == STATE_FORMAT
    X, _, Xe, ye = pools()
    restored = ActiveLearningLoop.from_state(arrays, meta, X, eval_X=Xe, eval_y=ye)
    again, again_meta = restored.to_state(previous=2)
    assert sorted(again) == sorted(arrays)
    for name, value in arrays.items():
        assert again[name].dtype == value.dtype and again[name].shape == value.shape, name
        assert again[name].tobytes() == value.tobytes(), name
    again_meta = json.loads(json.dumps(again_meta))
    # (one known difference, the solvers': a restored solver writes the gamma "scale" stood for, the
    # number its kernel holds, which the saved kernel already names)
    params, again_params = meta["solver"].pop("params"), again_meta["solver"].pop("params")
    assert again_params == {**params, "gamma": meta["solver"]["kernel"]["gamma"]}
    assert again_meta == meta
    if solver == "lasvm":  # (the non-exact solver's state from before its last two labels)
        assert len(meta["previous"]) == 2


@pytest.mark.parametrize("solver", ["lasvm", "incremental"])
def test_a_saved_state_continues_as_the_loop_its_events_give(solver):
    """The restored loop is the loop rebuilt from its events, and both go on alike: the same queries,
    labels and undos, scores equal to rounding (the state may have been written on another machine)."""
    arrays, meta = saved(solver)
    X, y, Xe, ye = pools()
    restored = ActiveLearningLoop.from_state(arrays, meta, X, eval_X=Xe, eval_y=ye)
    rebuilt = ActiveLearningLoop.from_events(
        arrays["events"].tolist(), X, eval_X=Xe, eval_y=ye, solver=solver, **CONFIG
    )
    assert restored.config() == rebuilt.config()
    for step in range(12):
        for loop in (restored, rebuilt):
            if step in (3, 8):
                loop.undo()
            q = loop.next_query()
            loop.teach(q.index, int(y[q.index]))
        assert restored.events == rebuilt.events
        np.testing.assert_allclose(restored.pool_scores(), rebuilt.pool_scores(), rtol=0, atol=1e-9)
        np.testing.assert_allclose(restored.evaluation_scores(), rebuilt.evaluation_scores(), rtol=0, atol=1e-9)
    assert [r.item for r in restored.history] == [r.item for r in rebuilt.history]
