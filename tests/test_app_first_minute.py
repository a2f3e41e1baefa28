"""The first minute in the app: the demo open after the first sign-in, a New session form in a screener's
words, charts that mean something for the chosen model, no item held out unless asked, visible highlights.

Through ``streamlit.testing.v1.AppTest`` on the real entry point, each test on its own SQLite database.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests import test_app

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- (e) highlights that can be seen


def relative_luminance(colour: str) -> float:
    """WCAG 2.1 relative luminance of a #rrggbb colour."""
    channels = [int(colour.lstrip("#")[k:k + 2], 16) / 255 for k in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio of two colours, from 1 (the same) to 21 (black on white)."""
    light, dark = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


#: what Streamlit 1.67's light theme paints behind :green-background[...] and :red-background[...]
#: (its greenBackgroundColor and redBackgroundColor), for highlights written with those directives
STREAMLIT_BACKGROUNDS = {"green": "#F1FBF6", "red": "#FFF1F2"}


def highlights(markdown: str, text_colour: str) -> dict[str, tuple[str, str]]:
    """{highlighted word: (its text colour, its background colour)} in the Markdown of a document."""
    found = {}
    for word, foreground, background in re.findall(
            r'(?<!\\):color\[([^\]]+)\]\{foreground="(#[0-9a-fA-F]{6})" background="(#[0-9a-fA-F]{6})"\}', markdown):
        found[word] = (foreground, background)
    for name, word in re.findall(r"(?<!\\):(\w+)-background\[([^\]]+)\]", markdown):
        found[word] = (text_colour, STREAMLIT_BACKGROUNDS[name])
    return found


def test_highlighted_terms_stand_out_from_the_page_at_3_to_1_and_stay_readable():
    from app import ui

    theme = tomllib.loads((ROOT / "app" / ".streamlit" / "config.toml").read_text())["theme"]
    page, text_colour = theme["backgroundColor"], theme["textColor"]
    markdown = ui.highlighted_markdown("Trauma care after PTSD, not fractures",
                                       [("trauma", 0.4), ("ptsd", 0.1), ("fractures", -0.2)])
    found = highlights(markdown, text_colour)
    assert set(found) == {"Trauma", "PTSD", "fractures"}, markdown
    assert len({background for _, background in found.values()}) == 2  # up and down look different
    for word, (foreground, background) in found.items():
        assert contrast(background, page) >= 3.0, (word, background, round(contrast(background, page), 2))
        assert contrast(foreground, background) >= 4.5, (word, foreground, background)


def test_the_contrast_ratio_is_wcag_s():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the well-known grey just below AA
    assert contrast("#2b6cb0", "#2b6cb0") == 1.0
