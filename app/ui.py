"""Streamlit helpers shared by the pages: the service singleton, session defaults, item display.

The engine lives inside one ``MarginLab`` service per process and database URL
(``st.cache_resource``); database sessions are never cached or kept in
``st.session_state``: every repository call opens and closes its own.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app.service import LabellingRun, MarginLab
from storage.engine import database_url
from storage.errors import SchemaVersionError

DEFAULTS = {
    "session_id": None,  # the labelling session shown on the Label page
    "annotator": "",
    "outcome": None,  # the last Positive/Negative/Skip/Undo outcome
    "comparison_id": None,
    "start_error": None,
}


@st.cache_resource(show_spinner="Opening the database…")
def _service_for(url: str) -> MarginLab:
    service = MarginLab.from_url(url)
    service.ensure_demo_dataset()
    return service


def service() -> MarginLab:
    """The process's service for ``$MARGINLAB_DATABASE_URL`` (default: SQLite in the data folder)."""
    try:
        return _service_for(database_url())
    except SchemaVersionError as error:
        st.error(str(error))
        st.stop()


def init_state() -> None:
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)


def show_outcome() -> None:
    outcome = st.session_state.get("outcome")
    if outcome is None:
        return
    if outcome.ok:
        st.caption(outcome.message)
    elif outcome.kind == "error":
        st.error(outcome.message)
    else:
        st.warning(outcome.message)


def pixel_image(pixels: np.ndarray, cell: int = 20) -> np.ndarray:
    """A grey image in [0, 1] (ink high) as crisp enlarged pixels, dark ink on white."""
    ink = 1.0 - np.asarray(pixels, dtype=float)
    return np.kron(ink, np.ones((cell, cell)))


def show_item(run: LabellingRun, item_index: int) -> None:
    """The item as it is meant to be seen: an image, a text, or a compact table row."""
    image = run.item_image(item_index)
    if image is not None:
        h, w = image.shape
        cell = max(4, 192 // max(h, w))
        st.image(pixel_image(image, cell), clamp=True, width=w * cell)
        return
    text = run.item_text(item_index)
    if text is not None:
        with st.container(border=True):
            st.text(text)  # the item's own words: plain text, no Markdown interpretation
        return
    row = run.item_features(item_index).T.reset_index()
    row.columns = ["feature", "value"]
    st.dataframe(row, hide_index=True, height=min(36 + 35 * len(row), 320), width="stretch")
