"""Numbers in messages, written for people: four significant digits, no float noise."""

from __future__ import annotations

import math

SIGNIFICANT_DIGITS = 4


def for_people(value: float) -> str:
    """``value`` to four significant digits: 70.57499999999999 -> "70.57", 3.0 -> "3",
    123456.7 -> "123500", 0.000123456 -> "0.0001235"; NaN and infinities as Python writes them."""
    number = float(value)
    if not math.isfinite(number) or number == 0:
        return str(int(number)) if number == 0 else str(number)
    magnitude = math.floor(math.log10(abs(number)))
    if magnitude < -6:
        return f"{number:.{SIGNIFICANT_DIGITS}g}"
    decimals = SIGNIFICANT_DIGITS - 1 - magnitude
    rounded = round(number, decimals)
    if rounded.is_integer():
        return str(int(rounded))
    return f"{rounded:.{max(decimals, 0)}f}".rstrip("0").rstrip(".")


def signed(value: float, decimals: int = 3) -> str:
    """A score with its sign to ``decimals`` places, never a negative zero: 0.1234 -> "+0.123",
    -0.00002 -> "0.000" (a score that rounds to zero has no side)."""
    rounded = round(float(value), decimals)
    if rounded == 0:
        return f"{0:.{decimals}f}"
    return f"{rounded:+.{decimals}f}"


def count(n: int, word: str, plural: str | None = None) -> str:
    """``n`` and the word in its number: count(1, "label") -> "1 label", count(3, "label") -> "3 labels",
    count(2, "item", "items") as given; thousands separated ("1,250 labels")."""
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"
