"""Compile the solvers' Numba loops once, into Numba's cache (``make`` runs this after installing).

Without it the first label of a fresh installation waits for the compiler (tens of seconds on
a busy 2-core machine); with the cache, a process loads them in about half a second.

Run:  python -m core.solvers._compile
"""

from __future__ import annotations

from core.solvers import _active_set_jit, _incremental_jit

if __name__ == "__main__":
    print(f"compiled solver loops ready: incremental {_incremental_jit.warm_up():.1f} s, "
          f"active-set {_active_set_jit.warm_up():.1f} s")
