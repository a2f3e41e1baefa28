"""A team project with named classes in a real browser (Debian's Chromium, headless): an annotator signs in,
answers with the keys 1 to 3, U takes her last answer back; each answer is stored with its class."""

from __future__ import annotations

import numpy as np
import pytest

from tests.browser.test_browser import (
    OWNER,
    OWNER_PASSWORD,
    AppServer,
    ensure_account,
    goto,
    item_caption,
    launch_browser,
    press_label_key,
    shown_item_index,
    wait_for_app,
)
from tests.browser.test_browser_classes import CLASSES

pytestmark = pytest.mark.browser


def class_project(tmp_path, **create) -> tuple[str, int, np.ndarray]:
    """A database with an owner, the annotator ann and a project of hers with three named classes on three
    separated groups (no answer yet; ``create``: other options of the project); its address, the project's id
    and each item's group."""
    from app.services import MarginLab
    from storage import repository as repo

    url = f"sqlite:///{tmp_path / 'team.db'}"
    ensure_account(url, "ann", role="annotator")
    ensure_account(url, OWNER, role="owner")
    svc = MarginLab.from_url(url)
    rng = np.random.default_rng(4)
    group = np.repeat([0, 1, 2], 15)
    X = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])[group] + rng.normal(0, 0.6, (45, 2))
    dataset_id = repo.import_dataset(svc.engine, name="blobs", X=X, feature_names=["a", "b"])
    create = {"strategy": "smallest-margin", "classes": CLASSES, **create}
    project_id = svc.create_project(
        svc.sign_in(OWNER, OWNER_PASSWORD),
        name="kinds",
        dataset_id=dataset_id,
        members=["ann"],
        overlap_share=0.0,
        **create,
    )
    svc.engine.dispose()
    return url, project_id, group


def test_an_annotator_answers_a_class_project_with_the_number_keys_and_u_undoes(tmp_path):
    from playwright.sync_api import sync_playwright

    from storage import teams
    from storage.engine import make_engine

    url, project_id, group = class_project(tmp_path)
    asked = []
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                goto(page, server.url, "ann", OWNER_PASSWORD)  # her landing page: Label together
                page.wait_for_selector(".st-key-item_caption", timeout=60_000)
                wait_for_app(page)
                buttons = page.locator(".st-key-team_buttons").inner_text(timeout=30_000).replace("\u2060", "")
                # each class by its name, its key only as the hint beside it (not "name (1)" besides)
                assert all(name in buttons for name in CLASSES) and "(1)" not in buttons, buttons
                assert "Positive" not in buttons
                page.mouse.click(5, 5)  # focus out of any input so the keys reach the buttons
                for _ in range(5):
                    item = shown_item_index(page)
                    asked.append(item)
                    press_label_key(page, str(int(group[item]) + 1), item_caption(page))
                    wait_for_app(page)
                press_label_key(page, "u", item_caption(page))
                wait_for_app(page)
                assert shown_item_index(page) == asked[-1]  # her last item is handed back to her
        finally:
            browser.close()
    engine = make_engine(url)
    try:
        _, answers = teams.project_answers(engine, project_id)
    finally:
        engine.dispose()
    assert [(a.annotator, a.item_index, a.answer_class) for a in answers] == [
        ("ann", i, int(group[i])) for i in asked[:-1]
    ]
