"""The app's first start on a new installation: while the background compile prepares what labelling
needs (``core.solvers._compile``), the labelling pages say so instead of seeming to hang on a label."""

from __future__ import annotations

from app.services import startup
from core.solvers._compile import N_FOR_LABELLING, PLAN, Progress
from tests.test_app import click, db_url, start_app, start_session  # noqa: F401 (db_url: a fixture)

NOTICE = "Preparing the model for this computer (first start only)"


def notices(at) -> list[str]:
    return [i.value for i in at.info if NOTICE in i.value]


def test_the_label_page_says_the_model_is_being_prepared_until_labelling_s_part_is_compiled(db_url, monkeypatch):
    compiling = Progress(done=3, compiling=True, current="kernel diag_values (float64)")
    monkeypatch.setattr(startup, "compiled_code_progress", lambda: compiling)
    at = start_app()
    start_session(at, "ada", "near-boundary")
    (notice,) = notices(at)
    assert f"3 of {N_FOR_LABELLING} parts ready" in notice and "saved at once" in notice
    assert [p.value for p in at.get("progress")] == [int(100 * 3 / N_FOR_LABELLING)]

    # labelling's part compiled (the rest goes on in the background): nothing more to say
    compiling = Progress(done=N_FOR_LABELLING, compiling=True, current=PLAN[N_FOR_LABELLING].label)
    click(at, "positive")
    assert notices(at) == []


def test_a_start_that_loads_the_compiled_code_from_the_cache_says_nothing(db_url, monkeypatch):
    monkeypatch.setattr(startup, "compiled_code_progress", lambda: Progress(done=4, compiling=False))
    at = start_app()
    start_session(at, "ada", "near-boundary")
    assert notices(at) == []
