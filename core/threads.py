"""Threads, chosen inside the library (never through environment variables).

Two kinds of work, two policies:

* **Kernel blocks** (a kernel row over a large pool, K(pool, support vectors),
  ...) run in MarginLab's compiled routines (:mod:`core._kernels_jit`), which
  release the GIL; :func:`run_chunks` splits a large block into row ranges and
  runs them on a shared pool of worker threads, one per core by default
  (:func:`set_kernel_threads`).  Each kernel value is computed by one thread
  in a fixed order, so the results are the same bits with 1 thread or many.
  (A thread pool of our own rather than Numba's ``parallel=True``: Numba's
  default "workqueue" threading layer aborts the process when two threads call
  parallel code at once, which the app does whenever two analysts label at
  the same time.)
* **Small per-label algebra** (a solver's learn / unlearn / finish: products
  of a few hundred numbers, rank-one updates) runs with **one BLAS thread**:
  at these sizes threads cost more than they save (the per-label time of the
  incremental solver on a 3,600-item pool was 12x slower with the default
  threads), and a BLAS result can depend on how many threads shared it, which
  would make a solver's state depend on the machine's load or settings.
  :func:`blas_single_thread` is a context (reentrant and thread-safe) that the
  solvers enter in every public method (see ``core.solvers.base``).  While
  any thread is inside it, the process's BLAS libraries run on one thread
  (threadpoolctl's controllers, set once on entry and restored when the last
  thread leaves).
(A library threaded with OpenMP keeps a limit per thread: it is set and
restored in each thread that enters.  threadpoolctl lets only one Python
thread change OpenBLAS's process-wide pool, so the limit is set through the
library's own call; this module's lock and count keep threads from undoing
each other's limit.)  The solvers' compiled hot loops use no BLAS at all.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Literal

# ---------------------------------------------------------------------------- kernel threads
_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_n_threads: int | None = None


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - platforms without affinity
        return max(1, os.cpu_count() or 1)


def kernel_threads() -> int:
    """Threads used for a large kernel block (default: every available core)."""
    return _n_threads if _n_threads is not None else available_cores()


def set_kernel_threads(n: int | None) -> None:
    """Use ``n`` threads for large kernel blocks (``None``: every available core).

    Results do not depend on it; only the speed does.
    """
    global _n_threads, _pool
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"the number of kernel threads must be an integer >= 1 or None, got {n!r}")
    with _pool_lock:
        _n_threads = n
        old, _pool = _pool, None
    if old is not None:
        old.shutdown(wait=False)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=kernel_threads(), thread_name_prefix="marginlab-kernel")
        return _pool


_ahead_pool: ThreadPoolExecutor | None = None


def run_ahead(fn: Callable, *args) -> Future:
    """Start ``fn(*args)`` on the one background worker for work done ahead of need (e.g. the
    kernel row of the item an analyst is reading); its own thread, so that ``fn`` may use
    ``run_chunks`` without waiting on itself."""
    global _ahead_pool
    with _pool_lock:
        if _ahead_pool is None:
            _ahead_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="marginlab-ahead")
        pool = _ahead_pool
    return pool.submit(fn, *args)


def split(n: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` nearly equal ranges covering 0..n."""
    parts = max(1, min(parts, n))
    edges = [n * k // parts for k in range(parts + 1)]
    return [(edges[k], edges[k + 1]) for k in range(parts) if edges[k] < edges[k + 1]]


def run_chunks(work: Callable[[int, int], None], n: int, cost: float, *, min_cost: float = 1e6) -> int:
    """Call ``work(start, stop)`` over ranges covering 0..n; returns the number of threads used.

    ``cost`` estimates the operations of the whole job; below ``min_cost`` (or
    with one kernel thread) it runs in the calling thread.  ``work`` must
    write only its own part of the output.
    """
    threads = min(kernel_threads(), n, max(1, int(cost // min_cost)))
    if threads <= 1:
        work(0, n)
        return 1
    ranges = split(n, threads)
    futures = [_executor().submit(work, a, b) for a, b in ranges[1:]]
    work(*ranges[0])  # the calling thread takes a share too
    for fut in futures:
        fut.result()
    return len(ranges)


# ---------------------------------------------------------------------------- BLAS threads
_blas_lock = threading.Lock()
_blas_depth = 0
_blas_saved: list[tuple[object, int]] = []
_blas_controllers: Sequence | None = None
_per_thread = threading.local()  # libraries whose limit is per thread (OpenMP layer): depth and saved values


def _controllers() -> Sequence:
    """threadpoolctl's controllers of the BLAS libraries loaded in this process (found once)."""
    global _blas_controllers
    if _blas_controllers is None:
        import scipy.linalg  # noqa: F401  (loads SciPy's BLAS too, so that it is found)
        from threadpoolctl import ThreadpoolController

        _blas_controllers = list(ThreadpoolController().select(user_api="blas").lib_controllers)
    return _blas_controllers


def refresh_blas_libraries() -> None:
    """Look for BLAS libraries again (after loading one that was not loaded before)."""
    global _blas_controllers
    with _blas_lock:
        _blas_controllers = None


def _per_thread_limit(lib) -> bool:
    """Whether the library's limit applies to the calling thread only (OpenMP-threaded builds)."""
    return getattr(lib, "threading_layer", None) == "openmp"


def _set_threads(lib, n: int) -> None:
    """Set a library's thread count, from whichever Python thread calls.

    threadpoolctl (3.8) lets only one "controlling" Python thread change OpenBLAS's process-wide
    pool and silently ignores the others; the app labels from several threads (one per
    browser session), so the limit is set through the library's own call, and this module's
    lock and count make sure that threads never undo each other's limit.
    """
    real = getattr(lib, "_real_set_num_threads", None)
    (real or lib.set_num_threads)(n)


class _SingleThreadBLAS:
    """The context of :func:`blas_single_thread` (one shared, stateless instance)."""

    __slots__ = ()

    def __enter__(self) -> _SingleThreadBLAS:
        global _blas_depth
        depth = getattr(_per_thread, "depth", 0)
        if depth == 0:  # per-thread limits: this thread's own, saved for it
            saved = []
            for lib in _controllers():
                if _per_thread_limit(lib):
                    n = lib.num_threads
                    if n != 1:
                        _set_threads(lib, 1)
                        saved.append((lib, n))
            _per_thread.saved = saved
        _per_thread.depth = depth + 1
        with _blas_lock:  # process-wide limits: set by the first thread in, restored by the last out
            if _blas_depth == 0:
                saved = []
                for lib in _controllers():
                    if not _per_thread_limit(lib):
                        n = lib.num_threads
                        if n != 1:
                            _set_threads(lib, 1)
                            saved.append((lib, n))
                _blas_saved[:] = saved
            _blas_depth += 1
        return self

    def __exit__(self, *exc) -> Literal[False]:
        global _blas_depth
        with _blas_lock:
            _blas_depth -= 1
            if _blas_depth == 0:
                for lib, n in _blas_saved:
                    _set_threads(lib, n)
                _blas_saved.clear()
        _per_thread.depth -= 1
        if _per_thread.depth == 0:
            for lib, n in _per_thread.saved:
                _set_threads(lib, n)
            _per_thread.saved = []
        return False


_SINGLE = _SingleThreadBLAS()


def blas_single_thread() -> _SingleThreadBLAS:
    """Context: BLAS runs on one thread inside it (reentrant, thread-safe; see the module notes)."""
    return _SINGLE


def single_threaded_blas(method: Callable) -> Callable:
    """Decorator: run ``method`` inside :func:`blas_single_thread`."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with _SINGLE:
            return method(*args, **kwargs)

    wrapper.__wrapped_single_thread__ = True  # type: ignore[attr-defined]  # a mark tests read
    return wrapper


__all__ = [
    "available_cores",
    "blas_single_thread",
    "kernel_threads",
    "refresh_blas_libraries",
    "run_chunks",
    "set_kernel_threads",
    "single_threaded_blas",
    "split",
]
