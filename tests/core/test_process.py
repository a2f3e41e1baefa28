"""Process-wide settings of the entry points (core.process)."""

import numpy as np
import pytest

from core.process import prefer_small_pages

madvise = pytest.importorskip("numpy._core.multiarray")._set_madvise_hugepage


def test_numpy_huge_page_advice_is_switched_off_unless_the_user_chose(monkeypatch):
    before = madvise(True)  # (returns the setting it replaces)
    try:
        monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
        assert prefer_small_pages() is True
        assert madvise(True) is False  # it was off
        big = np.ones(2**20)  # arrays are still made as usual
        assert big.sum() == 2**20
        monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")  # the user's choice decides
        assert prefer_small_pages() is False
        assert madvise(True) is True  # left on
    finally:
        madvise(before)
