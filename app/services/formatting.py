"""Numbers in the pages' words as in the service's messages (``core.formatting``): counts with their noun,
scores with their sign."""

from __future__ import annotations

from core.formatting import count, signed

__all__ = ["count", "signed"]
