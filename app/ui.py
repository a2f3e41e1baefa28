"""Streamlit helpers shared by the pages: the service singleton, session defaults, item display.

The engine lives inside one ``MarginLab`` service per process and database URL
(``st.cache_resource``); database sessions are never cached or kept in
``st.session_state``: every repository call opens and closes its own.
"""

from __future__ import annotations

import logging
import re

import numpy as np
import pandas as pd
import streamlit as st
from sqlalchemy.exc import SQLAlchemyError

from app.services import LabellingRun, MarginLab, ServiceError
from app.services.common import gamma_value
from app.services.database import database_problem
from storage.engine import database_url
from storage.errors import StorageError

logger = logging.getLogger(__name__)

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


#: ASCII punctuation: CommonMark lets a backslash make any of these a literal character
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
#: where Streamlit's Markdown finds links, emoji and icons in text whose escapes are already
#: resolved (GFM autolinks ``http://``, ``www.``, ``a@b.c``; ``:smile:``, ``:material/home:``)
_SHORTCUTS = re.compile(r"(?<=[:@])(?=\S)|(?<=www)(?=\.)", re.IGNORECASE)
#: U+2060 WORD JOINER: invisible, and breaks those patterns
WORD_JOINER = "\u2060"


def plain(text: object) -> str:
    """``text`` shown as it is by an element that renders Markdown (``st.error``, ``st.caption``,
    ``st.markdown``, ...): no link, image, emphasis, code, HTML, math, directive, emoji or icon can
    come out of it.

    Every user-controlled string (file, column and dataset names, item keys and text,
    annotator names, messages that quote them) goes through this before such an element.
    Every ASCII punctuation character is backslash-escaped; autolinks, emoji and icons are
    found after escapes are resolved, so an invisible word joiner follows each ``:`` and ``@``
    that something follows, and separates ``www`` from a following ``.``.
    """
    return _PUNCTUATION.sub(r"\\\1", _SHORTCUTS.sub(WORD_JOINER, str(text)))


def service() -> MarginLab:
    """The process's service for ``$MARGINLAB_DATABASE_URL`` (default: SQLite in the data folder).

    A database that cannot be used (another program's file, a damaged one, a newer schema)
    gets a page that says so, and the page stops there.
    """
    try:
        return _service_for(database_url())
    except (ServiceError, StorageError, SQLAlchemyError) as error:
        logger.error("the database cannot be used", exc_info=error)
        database_failed(error)
        st.stop()


def database_failed(error: Exception) -> None:
    """Say that the database cannot be opened or used (no traceback, no server path)."""
    st.error(plain(database_problem(error)))


#: smallest C the New session form accepts (any positive C is a valid SVM; the solvers take 1e-6 and 1e6)
C_MIN = 1e-12


def parse_gamma(text: str) -> float | str:
    """The gamma field of the New session form: ``scale``, ``auto`` or a positive number.

    Raises ``ValueError`` with a message for the person who typed it.
    """
    value = str(text).strip()
    try:
        return gamma_value(value or "scale")
    except ServiceError:
        raise ValueError(f"gamma must be 'scale' or a positive number such as 0.01, not '{value}'.") from None


def why_chosen(shown) -> str:
    """One line under the item: which heuristic asked, its score, and its reason."""
    score = "not scored yet" if shown.score is None else f"f(x) = {shown.score:+.3f}"
    reason = str(shown.reason or "").strip()
    return f"Chosen by **{plain(shown.strategy)}** · {plain(score)}" + (f" · {plain(reason)}" if reason else "")


def live_roc(run: LabellingRun):
    """The live ROC curve, or None until both a positive and a negative label are in.

    Before that the model has not seen both classes, and the curve (a diagonal
    of a constant score, or the trace of a one-class model) says nothing.
    """
    if run.n_positive == 0 or run.n_positive == run.n_labels:
        return None
    return run.roc()


def data_error_text(error: Exception, filename: str | None) -> str:
    """A data error message naming the uploaded file (the loader only sees bytes and says 'data')."""
    text = str(error)
    if filename and text.startswith("data: "):
        return f"{filename}: {text[len('data: '):]}"
    return text


@st.cache_data(max_entries=8, show_spinner=False)
def _preview(_service: MarginLab, data: bytes, sep: str = "auto", decimal: str = "auto"):
    return _service.preview_csv(data, sep=sep, decimal=decimal)


def csv_preview(service: MarginLab, data: bytes, sep: str = "auto", decimal: str = "auto"):
    """The preview of an uploaded file (delimiter and decimal separator detected unless given), parsed
    once per file and choice (the Data page reruns on every choice)."""
    return _preview(service, data, sep, decimal)


def unreadable_csv(preview, filename: str) -> str | None:
    """Why an uploaded file cannot be imported at all (no header, no rows), or None."""
    if not any(str(h).strip() for h in preview.header):
        return f"{filename}: the file is empty (a CSV needs a header row and at least one data row)."
    if preview.n_rows == 0:
        return f"{filename}: the file has a header but no data rows."
    return None


SUMMARY_NOTE = ("ALC: area under the test-AUC learning curve, normalised (0 = chance, 1 = the full-data AUC from "
                "the first label); mean ± std over seeds. \"To 95 %\": labels until the test AUC first reached "
                "95 % of the full-data AUC (mean over the seeds that did; how many did). W/T/L: seeds on which "
                "the heuristic's ALC beat, tied or lost to random.")


def comparison_problem(budget: int, initial: int) -> str | None:
    """Why a comparison with these counts would compare nothing, or None."""
    if initial >= budget:
        return (f"The {initial} initial labels use the whole budget of {budget}: every label would be "
                "drawn at random and the heuristics would never choose an item. Lower the initial labels "
                "or raise the budget.")
    return None


def _number(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(value) else value


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The comparison summary with readable headers and cells (no raw None / NaN)."""
    if summary is None or summary.empty:
        return pd.DataFrame()

    def pm(mean, std) -> str:
        mean, std = _number(mean), _number(std)
        return "–" if mean is None else f"{mean:.3f} ± {std or 0.0:.3f}"

    def reach(labels, reached, seeds) -> str:
        labels, reached = _number(labels), int(_number(reached) or 0)
        return "never" if labels is None or reached == 0 else f"{labels:.0f} ({reached}/{int(seeds)} seeds)"

    def pair(a, b) -> str:
        a, b = _number(a), _number(b)
        return "–" if a is None else f"{a:.2f} / {b:.2f}"

    def wtl(r) -> str:
        w, t, lo = _number(r.get("wins")), _number(r.get("ties")), _number(r.get("losses"))
        return "baseline" if w is None else f"{w:.0f} / {t or 0:.0f} / {lo or 0:.0f}"

    rows = []
    for r in summary.to_dict(orient="records"):
        seeds = _number(r.get("n_seeds")) or 0
        rows.append({
            "heuristic": r.get("strategy"), "solver": r.get("solver"), "seeds": int(seeds),
            "ALC": pm(r.get("alc_mean"), r.get("alc_std")),
            "ALC (log2 labels)": pm(r.get("alc_log2_mean"), r.get("alc_log2_std")),
            "to 95 %": reach(r.get("labels_95"), r.get("reached_95"), seeds),
            "to 99 %": reach(r.get("labels_99"), r.get("reached_99"), seeds),
            "final AUC": _number(r.get("final_auc")), "full-data AUC": _number(r.get("reference_auc")),
            "support vectors": _number(r.get("final_n_sv")),
            "update ms p50 / p95": pair(r.get("update_ms_median"), r.get("update_ms_p95")),
            "query ms p50 / p95": pair(r.get("query_ms_median"), r.get("query_ms_p95")),
            "vs random W / T / L": wtl(r),
        })
    return pd.DataFrame(rows)


def init_state() -> None:
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)


def show_outcome() -> None:
    outcome = st.session_state.get("outcome")
    if outcome is None:
        return
    if outcome.ok and outcome.kind == "info":
        st.caption(plain(outcome.message))
    elif outcome.kind == "error":
        st.error(plain(outcome.message))
    else:
        st.warning(plain(outcome.message))


def pixel_image(pixels: np.ndarray, cell: int = 20) -> np.ndarray:
    """A grey image in [0, 1] (ink high) as crisp enlarged pixels, dark ink on white."""
    ink = 1.0 - np.asarray(pixels, dtype=float)
    return np.kron(ink, np.ones((cell, cell)))


#: a document taller than this (pixels) scrolls inside its box: nothing is cut off
DOCUMENT_HEIGHT = 360
_WORD = re.compile(r"\w\w+")


def highlighted_markdown(text: str, contributions: list[tuple[str, float]] | None) -> str:
    """The document as Markdown that shows it as plain text, with the words of the terms that pushed
    its score up on green and down on red (Streamlit's background directives).

    Every character of the document goes through :func:`plain`, so nothing in it can become
    Markdown, HTML or a directive; the directives around highlighted words are MarginLab's own.
    """
    up: set[str] = set()
    down: set[str] = set()
    for term, value in contributions or []:
        words = term.split(":", 1)[-1].split() if ":" in term else term.split()
        (up if value > 0 else down).update(w.lower() for w in words)
    pieces, last = [], 0
    for match in _WORD.finditer(text):
        word = match.group(0)
        colour = "green" if word.lower() in up else "red" if word.lower() in down else None
        if colour is None:
            continue
        pieces.append(plain(text[last:match.start()]))
        pieces.append(f":{colour}-background[{plain(word)}]")
        last = match.end()
    pieces.append(plain(text[last:]))
    # a line break in the document stays a line break
    return "".join(pieces).replace("\r\n", "\n").replace("\n", "  \n")


def show_item(run: LabellingRun, item_index: int) -> None:
    """The item as it is meant to be seen: an image, a molecule, a document, or a compact table row."""
    image = run.item_image(item_index)
    if image is not None:
        h, w = image.shape
        cell = max(4, 192 // max(h, w))
        st.image(pixel_image(image, cell), clamp=True, width=w * cell)
        return
    svg = run.item_svg(item_index)
    if svg is not None:
        # RDKit's drawing, shown as an image (never as HTML); the SMILES below as plain text
        st.image(svg, width=360)
        st.caption(plain(run.item_text(item_index)))
        return
    text = run.item_text(item_index)
    if text is not None:
        contributions = run.term_contributions(item_index)
        long = len(text) > 700 or text.count("\n") > 12
        with st.container(border=True, height=DOCUMENT_HEIGHT if long else "content", key="item_text"):
            if contributions:
                st.markdown(highlighted_markdown(text, contributions))
            else:
                st.text(text)  # the item's own words: plain text, no Markdown interpretation
        if long:
            st.caption(f"{len(text):,} characters; scroll the box to read the whole text.")
        if contributions:
            ups = [f"{plain(t)} (+{v:.3f})" for t, v in contributions if v > 0][:6]
            downs = [f"{plain(t)} ({v:.3f})" for t, v in contributions if v < 0][:6]
            st.caption("Terms that pushed the score up: " + (", ".join(ups) or "none")
                       + " · down: " + (", ".join(downs) or "none"))
        return
    row = run.item_features(item_index).T.reset_index()
    row.columns = ["feature", "value"]
    st.dataframe(row, hide_index=True, height=min(36 + 35 * len(row), 320), width="stretch")
