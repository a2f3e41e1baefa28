"""The app's first start on a new installation: while the background compile prepares what labelling
needs (``core.solvers._compile``), the labelling pages say so instead of seeming to hang on a label."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
import streamlit as st

from app.services import startup
from core.solvers._compile import AUTO_FIRST_MOMENT, N_FOR_CHOOSING, N_FOR_LABELLING, PLAN, Progress
from tests.app import test_app
from tests.app.test_app import click, start_app, start_session

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

NOTICE = "Preparing the model for this computer (once;"


def notices(at) -> list[str]:
    return [i.value for i in at.info if NOTICE in i.value]


def spinners(monkeypatch) -> list[str]:
    """The texts of the spinners the app shows from now on (they are gone from the page once done)."""
    shown, real = [], st.spinner

    @contextmanager
    def recording(text="", **kwargs):
        shown.append(text)
        with real(text, **kwargs):
            yield

    monkeypatch.setattr(st, "spinner", recording)
    return shown


def test_the_label_page_says_the_model_is_being_prepared_until_labelling_s_part_is_compiled(db_url, monkeypatch):
    compiling = Progress(done=3, compiling=True, current="kernel diag_values (float64)")
    monkeypatch.setattr(startup, "compiled_code_progress", lambda: compiling)
    spun = spinners(monkeypatch)
    at = start_app()
    start_session(at, "ada", "near-boundary")
    (notice,) = notices(at)
    # the parts counted as the console counts them: of the whole plan, the first N_FOR_LABELLING for labelling
    assert f"3 of {len(PLAN)} parts ready; labelling needs the first {N_FOR_LABELLING} (3 ready)" in notice
    assert "saved at once" in notice
    assert [p.value for p in at.get("progress")] == [int(100 * 3 / N_FOR_LABELLING)]
    assert not any(NOTICE in text for text in spun)
    # a label given now waits for the compile: while it does, a spinner says why (the page is greyed out)
    click(at, "positive")
    assert [text for text in spun if NOTICE in text] == [spun[-1]] and "your answer is saved" in spun[-1]

    # labelling's part compiled, not yet the first choice of C and gamma's: the big notice goes, a line says
    # which label may wait, and an answer meanwhile has a spinner that says why, in case it is that label
    compiling = Progress(done=N_FOR_LABELLING, compiling=True, current=PLAN[N_FOR_LABELLING].label)
    click(at, "negative")
    assert notices(at) == []
    (line,) = [c.value for c in at.caption if NOTICE in c.value]
    assert (
        f"Choosing C and gamma from your labels (at {AUTO_FIRST_MOMENT} labels, when set for this session) "
        f"needs the first {N_FOR_CHOOSING}: the label that reaches it may wait"
    ) in line
    assert len([text for text in spun if NOTICE in text]) == 2
    assert f"at {AUTO_FIRST_MOMENT} labels, C and gamma are chosen from your labels" in spun[-1]

    # that part compiled too (the rest goes on in the background, and no label of the demo waits for it):
    # nothing more to say
    compiling = Progress(done=N_FOR_CHOOSING, compiling=True, current=PLAN[N_FOR_CHOOSING].label)
    click(at, "negative")
    assert notices(at) == [] and not [c.value for c in at.caption if NOTICE in c.value]
    assert len([text for text in spun if NOTICE in text]) == 2


def test_the_notice_and_the_console_count_the_same_parts():
    from core.solvers import _compile

    said = []
    reporter = _compile.Reporter(len(PLAN), _compile.BACKGROUND_INTRO, write=said.append)
    reporter.unit_done(1, PLAN[0], 1.0, compiled=True)
    assert f"the first {N_FOR_LABELLING} of the {len(PLAN)} parts" in said[0]
    # and which label waits for more: the one that first chooses C and gamma from the labels
    assert (
        f"the label that first chooses C and gamma from the labels (at {AUTO_FIRST_MOMENT} labels) until the "
        f"first {N_FOR_CHOOSING} are" in said[0]
    )
    assert said[1].startswith(f"MarginLab: compiled 1/{len(PLAN)} parts: ")


def test_a_start_that_loads_the_compiled_code_from_the_cache_says_nothing(db_url, monkeypatch):
    monkeypatch.setattr(startup, "compiled_code_progress", lambda: Progress(done=4, compiling=False))
    spun = spinners(monkeypatch)
    at = start_app()
    start_session(at, "ada", "near-boundary")
    click(at, "positive")
    assert notices(at) == [] and not any(NOTICE in text for text in spun)


def test_label_together_says_it_too(db_url, monkeypatch):
    from tests.app.test_app import ensure_account

    monkeypatch.setattr(
        startup,
        "compiled_code_progress",
        lambda: Progress(done=N_FOR_LABELLING - 1, compiling=True, current=PLAN[0].label),
    )
    spun = spinners(monkeypatch)
    ensure_account(db_url, "ann", role="annotator")
    owner = start_app("olga")
    owner.switch_page("views/projects.py").run()
    owner.text_input(key="project_name").input("screening")
    owner.multiselect(key="project_members").select("ann")
    owner.button(key="FormSubmitter:new_project-Create project").click().run()
    assert not owner.exception, owner.exception
    ann = start_app("ann", role="annotator")
    (notice,) = notices(ann)
    assert f"{N_FOR_LABELLING - 1} of {len(PLAN)} parts ready" in notice
    (button,) = [b for b in ann.button if b.key and b.key.startswith("team_positive_")]
    button.click().run()
    assert not ann.exception, ann.exception
    assert [text for text in spun if NOTICE in text] == [spun[-1]]


def test_the_server_says_it_is_starting_before_its_warm_start(monkeypatch, capsys):
    """The warm start (imports, the database) runs before Streamlit prints its address: seconds, more
    on a busy machine, that the console must not spend silent."""
    from streamlit.web import cli

    from app import serve

    said_before = []
    monkeypatch.setattr(serve, "warm_start", lambda: said_before.append(capsys.readouterr().err))
    monkeypatch.setattr(serve, "warm_first_page", lambda: None)
    monkeypatch.setattr("core.process.prefer_small_pages", lambda: False)  # (NumPy's setting stays as it is)
    monkeypatch.setattr(cli, "main", lambda: None)
    monkeypatch.setattr("sys.argv", ["serve"])
    serve.main([])
    assert said_before == [serve.STARTING + "\n"]


def test_a_slow_warm_start_says_every_few_seconds_that_it_is_still_at_work(monkeypatch, capsys):
    """On a busy machine the imports and the database take longer than 10 s: the console says so while
    it waits, every ``HEARTBEAT_S`` seconds, and is quiet once the warm start is done."""
    import threading

    from app import serve
    from app.services import startup

    waits = []

    class Slow(threading.Event):
        def wait(self, timeout=None):  # four waits of the heartbeat, then ready (no clock involved)
            waits.append(timeout)
            return len(waits) > 4

    monkeypatch.setattr(startup, "warm_start", lambda url: Slow())
    serve.warm_start()
    lines = capsys.readouterr().err.splitlines()
    assert waits == [serve.HEARTBEAT_S] * 5 and serve.HEARTBEAT_S < 10
    assert len(lines) == 4 and all(
        line.startswith("MarginLab: still loading the app and opening its database (") for line in lines
    ), lines
