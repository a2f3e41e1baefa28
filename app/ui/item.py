"""The item as it is meant to be seen (an image, a molecule, a document, or a table row), why the model
asked about it, and what the Label panel draws after it (the live ROC curve, once the item is on screen)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from app.services import LabellingRun
from app.services.display import ItemDisplay, most_relevant
from app.services.formatting import signed
from app.services.vocabulary import heuristic_words, model_words
from app.ui.text import plain, visible

#: seconds the Label panel waits after the item's elements before it builds the charts: the browser
#: draws the item (a pass of 40-60 ms on a slow 2-core machine) before the charts arrive and Plotly's
#: drawing, 30-80 ms a chart there, holds up its next frame (30 ms was too short there: an image
#: item's next frame then waited behind the charts)
ITEM_FIRST_PAUSE_S = 0.06
#: the same, the first time a browser session shows the panel.  The page then has none of its elements'
#: code yet: the browser fetches each kind's code when it first arrives (a placeholder shows meanwhile),
#: and Plotly's, 4.7 MB, holds the page for 1.2-1.6 s while it is evaluated on a slow 2-core machine.
#: Charts sent 0.06 s after the item had a table item's grid and the answer buttons wait behind it
#: (sign-in click to the whole item 1.5-3.2 s, 100k-item session); sent 1 s after, the grid's and the
#: buttons' code has arrived and the item is drawn first (0.9-1.3 s).  0.5 s was not enough there.
FIRST_VIEW_PAUSE_S = 1.0


def pause_before_charts(state) -> float:
    """Seconds the Label panel waits, after writing the item, before it builds the charts:
    ``FIRST_VIEW_PAUSE_S`` the first time in a browser session (``state``: its session state, which
    is marked), ``ITEM_FIRST_PAUSE_S`` after that."""
    first_view = not state.get("label_charts_sent", False)
    state["label_charts_sent"] = True
    return FIRST_VIEW_PAUSE_S if first_view else ITEM_FIRST_PAUSE_S


@dataclass(frozen=True)
class PanelItem:
    """What a Label panel works out about the item before writing anything (see ``panel_item``)."""

    shown: object  # the run's shown item (None: every item answered)
    draw: Callable[[], None] | None  # draws the item (``item_view``)
    key: str | None  # the item's key
    form_open: bool  # the New session form covers the item: no answer key may act
    disabled: bool  # the answer buttons are
    item: int | None  # the item's index, in the buttons' keys
    last: int | None  # the item of the last answer, in Undo's key


def panel_item(run) -> PanelItem:
    """The item a Label panel shows and how its buttons stand.  Everything the item's column shows is worked
    out before its first element is written: the elements then leave together and the browser draws them in
    one pass, not one per arrival.  While the New session form is open it covers the item: a shortcut key
    typed there must not label an item nobody is looking at."""
    shown = run.shown
    form_open = bool(st.session_state.get("new_session_popover"))
    return PanelItem(
        shown=shown,
        draw=None if shown is None else item_view(run.item_display, shown.item_index),
        key=None if shown is None else run.item_display.key(shown.item_index),
        form_open=form_open,
        disabled=shown is None or form_open,
        item=None if shown is None else shown.item_index,
        last=run.answers[-1].item_index if run.answers else None,
    )


def draw_panel_item(at: PanelItem, why: str, detail: str | None = None) -> None:
    """The item's box of a Label panel: the item's number and key, the item, and ``why`` (Markdown) under it
    with ``detail`` as its tooltip; or that every item has been answered."""
    if at.shown is None:
        st.success("Every item of the pool has been answered.")
        return
    st.container(key="item_caption").markdown(f"**Item {at.item}**" + (f" · {plain(at.key)}" if at.key else ""))
    assert at.draw is not None
    at.draw()
    st.caption(why, help=detail)


def why_chosen(shown) -> str:
    """One line under the item: which heuristic asked, in words, and the model's score.  The heuristic's own
    reason, in its code's terms ("closest to the boundary, |f| = 0.012"), is ``why_chosen_in_detail``'s, shown
    only on demand (the line's tooltip)."""
    if shown.score is None or str(shown.strategy).endswith(COLD_START):
        # drawn before the model has seen a positive and a negative: its "score" (0, or -1 from one class) means nothing
        score = "no model yet"
    else:
        score = f"score {signed(shown.score)}"
    return f"Chosen by **{plain(heuristic_words(shown.strategy))}** · {plain(score)}"


#: the suffix of the heuristic that asked while the model waits for a positive and a negative
COLD_START = " (cold start)"
#: how the heuristic's own reason, in its code's terms, opens (a tooltip: kept out of plain sight)
FOR_ENGINEERS = "Details for engineers: "


def why_chosen_in_detail(shown) -> str:
    """For engineers: the heuristic's name and its reason, as it gave them (the caption's tooltip, so
    marked "Details for engineers")."""
    reason = str(shown.reason or "").strip()
    return FOR_ENGINEERS + f"{shown.strategy}" + (f": {reason}" if reason else "")


def duration(ms: float) -> str:
    """A time for people: "12.3 ms" below a second, "4.1 s" from 1,000 ms on."""
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1000:,.1f} s"


def model_timings(run, shown) -> str:
    """The line under the progress: how long the last model update and finding the next item took (each only once
    there is one: after a resume the model has not updated yet in this process) and the model in words."""
    parts = []
    if run.last_update_ms is not None:
        parts.append(f"Model updated in {duration(run.last_update_ms)}")
    if shown is not None and shown.query_ms is not None:
        parts.append(f"next item found in {duration(shown.query_ms)}")
    parts.append(model_words(run.info.solver, run.info.params))
    line = " · ".join(parts)
    return plain(line[:1].upper() + line[1:])  # (a sentence, whichever part comes first)


def live_roc(run: LabellingRun):
    """The live ROC curve, or None until both a positive and a negative label are in.

    Before that the model has not seen both classes, and the curve (a diagonal
    of a constant score, or the trace of a one-class model) says nothing.
    """
    if run.n_positive == 0 or run.n_positive == run.n_labels:
        return None
    return run.roc()


def pixel_svg(pixels: np.ndarray, cell: int = 20) -> str:
    """A grey image in [0, 1] (ink high) as an SVG of crisp ``cell``-pixel squares, dark ink on white.

    ``st.image`` puts an SVG into the page itself (a data URL) where a PNG becomes a file the browser
    fetches after the item has arrived, from a server then busy with the charts: the item would be on
    screen without its picture for a while."""
    ink = np.clip(np.nan_to_num(np.asarray(pixels, dtype=float)), 0.0, 1.0)
    h, w = ink.shape
    grey = np.rint(255 * (1.0 - ink)).astype(int)
    cells = "".join(
        f'<rect x="{x}" y="{y}" width="1" height="1" fill="#{v:02x}{v:02x}{v:02x}"/>'
        for (y, x), v in np.ndenumerate(grey)
        if v < 255
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w * cell}" '
        f'height="{h * cell}" shape-rendering="crispEdges"><rect width="{w}" height="{h}" fill="#fff"/>'
        f"{cells}</svg>"
    )


#: pictures up to this many pixels (64 x 64) go into the page as an SVG, one square per pixel; larger
#: ones as a PNG (an SVG of 10,000 squares is about 0.6 MB per item, the PNG a few kB)
SVG_PIXELS = 4096


def item_picture(pixels: np.ndarray) -> tuple[str | np.ndarray, int]:
    """An item's grey image in [0, 1] (ink high) as ``st.image`` takes it, enlarged to about 192 pixels
    a side, and its width on screen."""
    h, w = pixels.shape
    cell = max(4, 192 // max(h, w))
    if h * w <= SVG_PIXELS:
        return pixel_svg(pixels, cell), w * cell
    return np.kron(1.0 - np.nan_to_num(np.asarray(pixels, dtype=float)), np.ones((cell, cell))), w * cell


#: a document taller than this (pixels) scrolls inside its box: nothing is cut off
DOCUMENT_HEIGHT = 360
_WORD = re.compile(r"\w\w+")


#: a term is listed and highlighted when it moved the item's score by at least this share of all its
#: terms' moves together (sum of |w_t x_t|)
NOTABLE_SHARE = 0.05
#: terms listed (and highlighted) each way at most
TERMS_SHOWN = 6


def notable_terms(contributions: list[tuple[str, float]] | None) -> list[tuple[str, float]] | None:
    """The terms worth listing and highlighting, given all the item's terms: those that moved its score
    by at least ``NOTABLE_SHARE`` of the total movement (the sum of every term's |move|), at most
    ``TERMS_SHOWN`` up and as many down, the largest first.  A share of the total rather than of the
    largest move: when a document's score comes from many terms each moving it a little (common words,
    numbers), none stands out and the list is empty, rather than the least small of them."""
    if not contributions:
        return contributions
    total = sum(abs(v) for _, v in contributions)
    kept = sorted(((t, v) for t, v in contributions if abs(v) >= NOTABLE_SHARE * total), key=lambda tv: -abs(tv[1]))
    return [tv for tv in kept if tv[1] > 0][:TERMS_SHOWN] + [tv for tv in kept if tv[1] < 0][:TERMS_SHOWN]


def _two_digits(value: float) -> str:
    """A term's move with its sign to two significant digits: 0.4 -> "+0.40", -0.004567 -> "-0.0046"."""
    magnitude = math.floor(math.log10(abs(value))) if value else 0
    return f"{value:+.{max(1 - magnitude, 0)}f}"


def why_terms(notable: list[tuple[str, float]]) -> str:
    """The line under a document that says which terms (:func:`notable_terms`) moved its score, each
    in quotes so that a two-word term reads as one (“and call”), or that none stands out."""
    if not notable:
        return plain(
            "No single term stands out: the score comes from many terms, each moving it by less than "
            f"{NOTABLE_SHARE:.0%} of their total."
        )
    ups = [f"“{plain(t)}” ({plain(_two_digits(v))})" for t, v in notable if v > 0]
    downs = [f"“{plain(t)}” ({plain(_two_digits(v))})" for t, v in notable if v < 0]
    return "Terms that pushed the score up: " + (", ".join(ups) or "none") + " · down: " + (", ".join(downs) or "none")


#: highlighted document terms: the page's text colour on green (they pushed the score up) or on red (down).
#: Each background stands at least 3:1 against the page's (#ffffff, app/.streamlit/config.toml: 3.25:1
#: and 3.42:1, WCAG contrast), so a highlight can be seen, and the words at least 4.5:1 on it (5.0:1 and
#: 4.8:1), so they can be read.  (Streamlit's :green-background[...] and :red-background[...] are 1.06:1
#: and 1.10:1 on the light theme: nearly white.)
TERM_COLOURS = {"up": ("#1a202c", "#38a169"), "down": ("#1a202c", "#f0564f")}


def highlighted_markdown(text: str, contributions: list[tuple[str, float]] | None) -> str:
    """The document as Markdown that shows it as plain text, with the words of the terms that pushed
    its score up on green and down on red (``TERM_COLOURS``, Streamlit's color directive).

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
        way = "up" if word.lower() in up else "down" if word.lower() in down else None
        if way is None:
            continue
        foreground, background = TERM_COLOURS[way]
        pieces.append(plain(text[last : match.start()]))
        pieces.append(f':color[{plain(word)}]{{foreground="{foreground}" background="{background}"}}')
        last = match.end()
    pieces.append(plain(text[last:]))
    # a line break in the document stays a line break
    return "".join(pieces).replace("\r\n", "\n").replace("\n", "  \n")


def show_item(items: ItemDisplay, item_index: int) -> None:
    """The item as it is meant to be seen: an image, a molecule, a document, or a compact table row."""
    item_view(items, item_index)()


def item_view(items: ItemDisplay, item_index: int) -> Callable[[], None]:
    """Work out now what showing the item needs; the function returned draws it, with nothing left to
    compute.  ``items``: a session's or a project's ``run.item_display``, both shown alike.  The Label
    pages call it before they write the item's first element, so that the item's elements leave the
    server together and the browser draws them in one pass (elements that leave while Python still
    works on the next arrive one by one, and the browser draws each arrival)."""
    image = items.image(item_index)
    if image is not None:
        picture, width = item_picture(image)
        return lambda: st.image(picture, width=width, clamp=True)
    drawing = items.molecule_drawing(item_index)
    if drawing is not None:
        smiles = plain(items.text(item_index))

        def molecule() -> None:
            # RDKit's drawing, shown as an image (never as HTML), or why there is none; the SMILES below as
            # plain text
            if drawing.svg is not None:
                st.image(drawing.svg, width=360)
            else:
                st.caption(plain(drawing.note))
            st.caption(smiles)

        return molecule
    text = items.text(item_index)
    if text is not None:
        return _document_view(items, item_index, text)
    return _features_view(items, item_index)


def _document_view(items: ItemDisplay, item_index: int, text: str) -> Callable[[], None]:
    every = items.term_contributions(item_index, k=None)
    contributions = notable_terms(every)
    long = len(text) > 700 or text.count("\n") > 12
    marked = highlighted_markdown(text, contributions) if contributions else None
    terms = why_terms(contributions or []) if every else None  # (no model yet, or none of its terms)

    def document() -> None:
        # (keyed per item: the Projects page draws several items on one page)
        with st.container(border=True, height=DOCUMENT_HEIGHT if long else "content", key=f"item_text_{item_index}"):
            if marked is not None:
                st.markdown(marked)
            else:
                st.text(visible(text))  # the item's own words: plain text, no Markdown interpretation
        if long:
            st.caption(f"{len(text):,} characters; scroll the box to read the whole text.")
        if terms is not None:
            st.caption(terms)

    return document


#: rows of a table item's features in view; the table scrolls to the rest
TOP_FEATURES = 8


def feature_table(items: ItemDisplay, item_index: int) -> tuple[pd.DataFrame, bool]:
    """The item's features, most relevant to the current model first, with a 0-1 relevance
    (relative to the most relevant); and whether that order comes from a model (False: the
    dataset's order, before the model has support vectors)."""
    row = items.features(item_index)
    names, values = [str(name) for name in row.columns], row.to_numpy()[0]
    relevance = items.relevance(item_index)
    order = most_relevant(relevance, len(values))
    ranked = relevance is not None and float(np.max(relevance)) > 0
    share = (np.asarray(relevance)[order] / float(np.max(relevance))) if ranked else np.full(len(order), np.nan)
    table = pd.DataFrame({"feature": [names[j] for j in order], "value": values[order], "relevance": share})
    return table, ranked


RELEVANCE_HELP = (
    "How much the feature moves the model's decision about this item, relative to the most relevant "
    "one (linear kernel: |w_j x_j|; rbf: |df/dx_j| times the feature's spread)."
)


def _features_view(items: ItemDisplay, item_index: int) -> Callable[[], None]:
    """A table item: all its features in one table, the most relevant first (see ``core.explain``),
    ``TOP_FEATURES`` rows in view and the rest a scroll away (one table for the browser to draw)."""
    table, ranked = feature_table(items, item_index)
    if not ranked:
        table = table.drop(columns="relevance")
    columns = {
        "relevance": st.column_config.ProgressColumn(
            "relevance", format="%.2f", min_value=0.0, max_value=1.0, help=RELEVANCE_HELP
        )
    }
    rows = min(len(table), TOP_FEATURES)
    note = None
    if len(table) > rows:
        note = (
            f"All {len(table)} features, the ones that matter most to the model's decision about this item "
            "first; scroll the table for the rest."
            if ranked
            else f"All {len(table)} features in the dataset's order (scroll the table for the rest); once the model "
            "has support vectors, the ones that matter most to its decision come first."
        )

    def features() -> None:
        st.dataframe(table, hide_index=True, height=36 + 35 * rows, width="stretch", column_config=columns)
        if note is not None:
            st.caption(note)

    return features
