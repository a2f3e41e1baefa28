"""The thread configuration a benchmark measured under, as it prints it.

Benchmarks never set thread variables: they run as a user's installation does.
This prints what threadpoolctl finds (each BLAS / OpenMP library, its version and
thread count), whether any thread variable was set from outside, the cores and
the load average, so that every table says what it was measured with.
"""

from __future__ import annotations

import os

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
    lines = [f"threads: thread variables: {env}; {cores} cores available; load average {load:.1f} at start"]
    for info in threadpool_info():
        lines.append(f"  {info.get('user_api')}: {info.get('internal_api')} {info.get('version')} "
                     f"({os.path.basename(info.get('filepath', ''))}), {info.get('num_threads')} threads")
    lines.append("  (the solvers run their per-label algebra on one BLAS thread themselves: core.threads)")
    return "\n".join(lines)
