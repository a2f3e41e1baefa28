"""Resident memory of the benchmark's own process (Linux ``/proc/self``), shared by the benchmarks."""

from __future__ import annotations

MiB = 2**20


def status(key: str, default: float | None = None) -> float:
    """A VmRSS / VmHWM line of /proc/self/status, in MiB; ``default`` where there is none (not Linux)
    when given, else RuntimeError."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    if default is not None:
        return default
    raise RuntimeError(f"{key} not in /proc/self/status")


def reset_peak(missing_ok: bool = False) -> None:
    """Make VmHWM start again from the current resident set (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        if not missing_ok:
            raise
