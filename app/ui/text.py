"""User text shown as it is: no Markdown, link, emoji or reordering comes out of a name, a key or a cell."""

from __future__ import annotations

import re

import pandas as pd

#: ASCII punctuation: CommonMark lets a backslash make any of these a literal character
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
#: where Streamlit's Markdown finds links, emoji and icons in text whose escapes are already
#: resolved (GFM autolinks ``http://``, ``www.``, ``a@b.c``; ``:smile:``, ``:material/home:``)
_SHORTCUTS = re.compile(r"(?<=[:@])(?=\S)|(?<=www)(?=\.)", re.IGNORECASE)
#: U+2060 WORD JOINER: invisible, and breaks those patterns
WORD_JOINER = "\u2060"


#: characters that reorder the text around them (bidirectional embeddings, overrides and isolates: U+202A-E,
#: U+2066-9): a name holding U+202E shows backwards and can pass for another ("Trojan Source")
_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def visible(text: object) -> str:
    """``text`` with every bidirectional control character written out as its code point (``[U+202E]``), for
    elements that show text as it is (options of a select box, table cells, ``st.text``)."""
    return _BIDI_CONTROLS.sub(lambda found: f"[U+{ord(found.group()):04X}]", str(text))


def visible_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell through ``visible`` (a table shows its cells as they are, so a key or a
    column name from the user's file could otherwise turn the text around it)."""
    shown = frame.rename(columns=lambda name: visible(name) if isinstance(name, str) else name)
    for column in shown.columns:
        if not pd.api.types.is_numeric_dtype(shown[column]) and not pd.api.types.is_datetime64_any_dtype(shown[column]):
            shown[column] = shown[column].map(lambda cell: visible(cell) if isinstance(cell, str) else cell)
    return shown


def plain(text: object) -> str:
    """``text`` shown as it is by an element that renders Markdown (``st.error``, ``st.caption``,
    ``st.markdown``, ...): no link, image, emphasis, code, HTML, math, directive, emoji or icon can
    come out of it.

    Every user-controlled string (file, column and dataset names, item keys and text,
    annotator names, messages that quote them) goes through this before such an element.
    Every ASCII punctuation character is backslash-escaped; autolinks, emoji and icons are
    found after escapes are resolved, so an invisible word joiner follows each ``:`` and ``@``
    that something follows, and separates ``www`` from a following ``.``.  Characters that reorder
    text are written out as their code (:func:`visible`).
    """
    return _PUNCTUATION.sub(r"\\\1", _SHORTCUTS.sub(WORD_JOINER, visible(text)))
