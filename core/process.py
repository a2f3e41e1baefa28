"""Settings an entry point makes for its whole process (the app's server, ``python -m core``).

The library itself changes no process-wide state: a Python user's own NumPy is left as it is.

**Huge pages.**  On Linux NumPy asks the kernel for transparent huge pages for every array of
4 MB or more (``madvise(MADV_HUGEPAGE)``).  Where the kernel's policy for such advice is to
compact memory at the moment a page is first touched (``defrag`` set to ``madvise``, the default
of Debian and Ubuntu), a fresh large array can stall on that compaction once memory is
fragmented, whether or not a huge page is then granted.  Measured on a 2-core machine with that
policy: gathering a fresh 158 MB array took 0.29-0.34 s with the advice and 0.06 s without, and
reopening a 1M-row session (reading, gathering and scaling its rows, restoring the solver)
1.28-1.49 s with it and 1.07-1.08 s without (``benchmarks/bench_scale_app.py --resume``, three
runs each, alternated).  The entry points therefore switch the advice off, unless the user set
``NUMPY_MADVISE_HUGEPAGE`` (NumPy's own switch, read when NumPy is imported), which then decides.
"""

from __future__ import annotations

import os


def prefer_small_pages() -> bool:
    """Stop NumPy advising huge pages for new arrays (see the module notes); True when switched off
    here, False when ``NUMPY_MADVISE_HUGEPAGE`` is set (the user's choice) or NumPy has no switch."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return False
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # pragma: no cover - NumPy before 2.0 named the module numpy.core
        try:
            from numpy.core.multiarray import _set_madvise_hugepage
        except ImportError:
            return False
    _set_madvise_hugepage(False)
    return True
