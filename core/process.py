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

**malloc's mapping threshold is left as glibc sets it** (measured and decided against).  glibc
raises its threshold to the size of each mapped block freed, so after the first 8 MB kernel row
over a 1M-item pool is freed, later rows come from the heap, which keeps freed rows for reuse:
about 150 MiB of a 1M x 20 session's resident memory (after 150 labels, the solver's row cache
full).  Holding the threshold at 4 MiB (``mallopt(M_MMAP_THRESHOLD)``) gave those back, but then
every such row is mapped afresh and its 2,048 pages faulted in: at 1M x 20 a label took 42.6 / 87.4
ms (median / p95) against 34.2 / 66.0 ms, 879 against 1,036 MiB at its peak, and a restarted 1M-row
app session answered in 55 against 39 ms (``benchmarks/bench_loop_latency.py --part3-pool`` and
``bench_scale_app.py``, on a 2-core machine).  ``MALLOC_MMAP_THRESHOLD_=4194304`` in the
environment makes that trade for a process whose memory matters more than its latency.
"""

from __future__ import annotations

import os


def prefer_small_pages() -> bool:
    """Stop NumPy advising huge pages for new arrays (see the module notes); True when switched off
    here, False when ``NUMPY_MADVISE_HUGEPAGE`` is set (the user's choice) or NumPy has no switch."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return False
    try:
        from numpy._core.multiarray import _set_madvise_hugepage  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - NumPy before 2.0 named the module numpy.core
        try:
            from numpy.core.multiarray import _set_madvise_hugepage  # type: ignore[no-redef]
        except ImportError:
            return False
    _set_madvise_hugepage(False)
    return True
