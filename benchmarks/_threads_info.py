"""The thread configuration a benchmark measured under, as it prints it.

Benchmarks never set thread variables: they run as a user's installation does.
This prints what threadpoolctl finds (each BLAS / OpenMP library, its version and
thread count), whether any thread variable was set from outside, the cores and
the load average, so that every table says what it was measured with.
"""

from __future__ import annotations

import os
import platform
import time

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def thread_configuration() -> str:
    """One line per thread pool, after NumPy, SciPy and scikit-learn are loaded."""
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    import sklearn.svm  # noqa: F401
    from threadpoolctl import threadpool_info

    env = ", ".join(f"{v}={os.environ[v]}" for v in THREAD_VARIABLES if v in os.environ) or "none set"
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover
        cores = os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        machine_description(),
        f"threads: thread variables: {env}; {cores} cores available; load average {load:.1f} at start",
    ]
    for info in threadpool_info():
        lines.append(
            f"  {info.get('user_api')}: {info.get('internal_api')} {info.get('version')} "
            f"({os.path.basename(info.get('filepath', ''))}), {info.get('num_threads')} threads"
        )
    lines.append("  (the solvers run their per-label algebra on one BLAS thread themselves: core.threads)")
    return "\n".join(lines)


def machine_description() -> str:
    """The CPU (model, widest vector extension) and how fast one thread reads memory (NumPy's sum
    over 128 MiB, best of five).  The large-pool figures are bound by memory reads (a kernel row
    over the pool, the kept rows of the margin vectors), so they differ between machines with it:
    NumPy's ``X @ v`` over 100k x 784 took 12.8 ms on one 2-core machine and 25 ms on another."""
    import numpy as np

    model, flags = "", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and not model:
                    model = value.strip()
                elif key.strip() in ("flags", "Features") and not flags:
                    flags = set(value.split())
    except OSError:  # pragma: no cover  (not Linux)
        pass
    vector = next((name for name in ("avx512f", "avx2", "avx", "sse4_2", "asimd") if name in flags), "unknown")
    a = np.ones(16 * 2**20)
    a.sum()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        a.sum()
        best = min(best, time.perf_counter() - t0)
    return (
        f"machine: {model or platform.processor() or platform.machine()}; widest vector extension "
        f"{vector}; one thread reads memory at {a.nbytes / best / 1e9:.1f} GB/s (NumPy sum over 128 MiB)"
    )
