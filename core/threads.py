"""BLAS threads chosen inside the library, never through environment variables.

The exact solvers' per-label work (``learn`` / ``unlearn`` / ``finish``) is
small algebra: products of a few hundred numbers, rank-one updates of a
matrix of a few hundred rows.  At these sizes a multi-threaded BLAS costs more
than it saves (thread hand-offs of tens of microseconds per call, many calls
per label): the incremental solver's per-label time on a 3,600 x 784 pool was
6x slower with the default two threads than with one.  And a BLAS result can
depend on how many threads shared the work, which would make a solver's state
depend on the machine's settings.

:func:`blas_single_thread` is a context (reentrant and thread-safe) that the
solvers enter in their public methods: while any thread is inside it, the
BLAS libraries of the process (NumPy's and SciPy's OpenBLAS, found once with
threadpoolctl) run on one thread; the setting found on entry is restored when
the last thread leaves.  (A library threaded with OpenMP keeps a limit per
thread: it is set and restored in each thread that enters.)  Another thread's
BLAS work meanwhile also runs on one thread: the limit of a pthreads OpenBLAS
is process-wide.  One module-level set of threadpoolctl controllers is
reused: entering costs a few microseconds, where ``threadpool_limits(1)``
(which looks for the libraries again every time) costs about 0.7 ms.

The solvers' hot loops (``core.solvers._compiled``) use no BLAS at all, so
their results do not depend on the thread setting in any case.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence

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

    def __exit__(self, *exc) -> bool:
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

    wrapper.__wrapped_single_thread__ = True
    return wrapper


__all__ = ["blas_single_thread", "refresh_blas_libraries", "single_threaded_blas"]
