"""Compile the solvers' Numba loops once, into Numba's cache (``make`` runs this after installing).

Without it the first label of a fresh installation waits for the compiler (about 16 s for the
incremental solver on a busy 2-core machine); with the cache, a process still pays about a second
at its first ``learn`` (importing Numba, loading the loops), which a long-running process such as
the app can take off the first label with :func:`preload` at start.

Run:  python -m core.solvers._compile
"""

from __future__ import annotations

import threading
import time

from core.kernels import compile_routines
from core.solvers import _active_set_jit, _incremental_jit, _ramp_jit, lasvm


def warm_up() -> tuple[float, float, float, float, float]:
    """Compile or load the kernel routines and the solvers' loops; returns the seconds each took."""
    start = time.perf_counter()
    compile_routines(("float64", "float32"))
    kernels = time.perf_counter() - start
    return kernels, _incremental_jit.warm_up(), _active_set_jit.warm_up(), lasvm.warm_up(), _ramp_jit.warm_up()


_preloading: threading.Thread | None = None
_preload_lock = threading.Lock()


def preload() -> threading.Thread:
    """Load the compiled loops in a background (daemon) thread, once per process, and return it.

    A ``learn`` that arrives meanwhile waits for Numba's compiler lock and then runs compiled as
    always: which code path runs never depends on timing.
    """
    global _preloading
    with _preload_lock:
        if _preloading is None:
            _preloading = threading.Thread(target=warm_up, name="marginlab-numba-preload", daemon=True)
            _preloading.start()
        return _preloading


if __name__ == "__main__":
    ker, inc, act, las, ramp = warm_up()
    print(f"compiled routines ready: kernels {ker:.1f} s, incremental {inc:.1f} s, active-set {act:.1f} s, "
          f"lasvm {las:.1f} s, ramp {ramp:.1f} s")
