"""Compile the kernel routines and the solvers' Numba loops into Numba's on-disk cache, in an order
that serves the first labels first, and say how far it has got.

What there is to compile (``PLAN``): every kernel routine of :mod:`core._kernels_jit` for each
feature dtype it serves, and each solver's loops (a small run of the solver, ``warm_up``), one
*unit* each: 33 units, about 250 s of compiling on a quiet 2-core machine and up to 800 s on a
busy one.  The first start of a new installation pays that once; every later process loads the
machine code from the cache (about a second for everything).

The order is the demo's: first what the Label page needs to show the default session's first
item on the bundled digits (``FIRST_ITEM_ROUTINES``), then what its first label needs (``FIRST_LABEL_*``:
the near-boundary heuristic's incremental solver with the rbf kernel on float64 rows), then what its
first choice of C and gamma from the labels needs (``FIRST_CHOICE_ROUTINES``: the New session form
chooses them by default, first at 20 labels, ``core.solvers.auto_hyper``), then the rest (the other
solvers, the other kernels' routines, float32 rows).  Nothing else of the demo's first 160 labels
needs compiled code (tests/core/test_compile_plan.py records it).

Two ways to run it:

* ``preload()`` (the app, at start): one background thread of the server's process, in that
  order, while the server already serves pages.  A page that needs a unit meanwhile waits for
  it (a kernel routine being compiled: for that routine; otherwise for Numba's compiler lock) and
  then runs the compiled code, as always: which code path runs never
  depends on timing, and a routine compiled early or late is the same machine code (the same
  bits).  ``progress()`` tells the pages how far it is, and the console hears of every unit it
  compiles, so a first start never looks hung.  One process only: Numba keeps one cache index
  per function with no lock between processes, and two processes compiling different signatures
  of one function at once could mix up their entries.
* ``python -m core.solvers._compile [--jobs N]`` (``make test``, ``make bench``): the whole
  plan in N processes (default: 2, or 1 on a 1-core machine), each function's units in one
  process: the kernels' routines first (a routine's float64 and float32 variants together), then
  the solvers' loops (which call the kernels' routines, by then in the cache).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, replace

from core import solvers
from core.solvers.auto_hyper import DEFAULT_MOMENTS
from core.strategies import DEFAULT_SOLVER, DEFAULT_STRATEGY

#: each solver's compiled loops: the module whose ``warm_up()`` compiles them with the argument types
#: the solver passes (the solvers' registry entries, ``core.solvers.Solver.warm_up``)
SOLVER_WARM_UPS = solvers.REGISTRY.name_table(lambda e: e.warm_up, where=lambda e: e.warm_up is not None)

#: the kernel routines the Label page needs to show the demo's first item (its row terms)
FIRST_ITEM_ROUTINES = ("dense_row_terms",)
#: and then to learn the first labels with the default session (near-boundary: the incremental
#: solver, rbf kernel, float64 rows) and ask for the next item
FIRST_LABEL_ROUTINES = (
    "dense_rows",
    "diag_values",
    "add_weighted_rows",
    "rows_dot",
    "masked_argmin_abs",
    "masked_count_abs_below",
)
FIRST_LABEL_SOLVER = DEFAULT_SOLVER[DEFAULT_STRATEGY]
#: and then to choose C and gamma from the labels (the leave-one-out decision values of the labelled rows,
#: a block of kernel values), first at the label that reaches AUTO_FIRST_MOMENT labels
FIRST_CHOICE_ROUTINES = ("dense_block",)
AUTO_FIRST_MOMENT = DEFAULT_MOMENTS[0]

HEARTBEAT_S = 8.0  # a compile still going on is mentioned again after this long without news (< 10 s)


@dataclass(frozen=True)
class Unit:
    """One entry of the plan: a kernel routine for one feature dtype, or one solver's loops."""

    kind: str  # "kernel" or "solver"
    name: str  # the routine's name, or the solver's key in SOLVER_WARM_UPS
    dtype: str = "float64"

    @property
    def label(self) -> str:
        return f"kernel {self.name} ({self.dtype})" if self.kind == "kernel" else f"{self.name} solver"

    @property
    def cache_entry(self) -> str:
        """What Numba keeps one cache index for: a routine (all its dtypes), or a solver's loops."""
        return f"{self.kind}:{self.name}"

    def compile(self) -> None:
        """Compile it, or load it from Numba's cache."""
        if self.kind == "kernel":
            from core import _kernels_jit

            _kernels_jit.routine(self.name, self.dtype)
        else:
            importlib.import_module(str(SOLVER_WARM_UPS[self.name])).warm_up()  # (only solvers with one)


def build_plan() -> tuple[Unit, ...]:
    """Every unit, the demo's first item, first label and first choice of C and gamma first."""
    from core import _kernels_jit

    dtypes = {
        name: ("float64",) if name in _kernels_jit.FLOAT64_ONLY else ("float64", "float32")
        for name in _kernels_jit.ROUTINE_NAMES
    }
    first = [Unit("kernel", name) for name in FIRST_ITEM_ROUTINES + FIRST_LABEL_ROUTINES]
    first.append(Unit("solver", FIRST_LABEL_SOLVER))
    first += [Unit("kernel", name) for name in FIRST_CHOICE_ROUTINES]
    rest = [Unit("kernel", name) for name in _kernels_jit.ROUTINE_NAMES if Unit("kernel", name) not in first]
    rest += [Unit("solver", name) for name in SOLVER_WARM_UPS if name != FIRST_LABEL_SOLVER]
    rest += [
        Unit("kernel", name, dtype)
        for name in _kernels_jit.ROUTINE_NAMES
        for dtype in dtypes[name]
        if dtype != "float64"
    ]
    return (*first, *rest)


PLAN = build_plan()
#: how many units of PLAN the default session's first labels need (they come first)
N_FOR_LABELLING = len(FIRST_ITEM_ROUTINES) + len(FIRST_LABEL_ROUTINES) + 1
#: and how many its first choice of C and gamma from the labels needs (the next ones)
N_FOR_CHOOSING = N_FOR_LABELLING + len(FIRST_CHOICE_ROUTINES)


# --------------------------------------------------------------------------- knowing a compile from a load
class _CompileWatch:
    """Counts Numba's compilations in this process (its ``numba:compile`` events, which a load from
    the cache does not raise), and how many are under way."""

    def __init__(self):
        from numba.core import event

        watch = self

        class Listener(event.Listener):
            def on_start(self, ev):
                with watch._lock:
                    watch.started += 1
                    watch.depth += 1

            def on_end(self, ev):
                with watch._lock:
                    watch.depth -= 1

        self._lock = threading.Lock()
        self.started = 0
        self.depth = 0
        event.register("numba:compile", Listener())


_watch: _CompileWatch | None = None
_watch_lock = threading.Lock()


def compile_watch() -> _CompileWatch:
    global _watch
    with _watch_lock:
        if _watch is None:
            _watch = _CompileWatch()
        return _watch


def run_unit(unit: Unit) -> tuple[float, bool]:
    """Compile (or load) ``unit``; returns the seconds it took and whether Numba compiled anything
    (False: it all came from the cache)."""
    watch = compile_watch()
    before = watch.started
    start = time.perf_counter()
    unit.compile()
    return time.perf_counter() - start, watch.started > before


# --------------------------------------------------------------------------- progress, for people
@dataclass(frozen=True)
class Progress:
    """How far this process's preparation of the compiled code (``preload``) has got."""

    done: int = 0  # units of PLAN ready (compiled or loaded)
    total: int = len(PLAN)
    compiling: bool = False  # Numba has compiled something: the code was not in the cache (a first start)
    current: str | None = None  # the unit being prepared
    finished: bool = False

    for_labelling: int = N_FOR_LABELLING  # the first units of PLAN, which the default session's first labels need
    for_choosing: int = N_FOR_CHOOSING  # and its first choice of C and gamma from the labels ...
    first_choice_at: int = AUTO_FIRST_MOMENT  # ... made at the label that reaches this many labels

    @property
    def ready_for_labelling(self) -> int:
        """How many of the units the default session's first labels need are ready."""
        return min(self.done, self.for_labelling)

    @property
    def preparing_first_labels(self) -> bool:
        """True while a first start compiles what labelling needs (a label given meanwhile waits for it)."""
        return self.compiling and not self.finished and self.done < self.for_labelling

    @property
    def preparing_first_choice(self) -> bool:
        """True while a first start, labelling's part ready, compiles what the first choice of C and gamma
        from the labels needs (the label that reaches ``AUTO_FIRST_MOMENT`` meanwhile waits for it)."""
        return self.compiling and not self.finished and self.for_labelling <= self.done < self.for_choosing


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds // 60:.0f} min {seconds % 60:02.0f} s"


def _to_console(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Reporter:
    """Tells the console what is being compiled: what it is as it starts, a line per unit compiled,
    and every ``HEARTBEAT_S`` without news what is still being compiled.  Silent while everything
    comes from the cache (a later start).  A start after an interrupted compile says, as it starts, how many
    parts the earlier start had compiled (those it loaded from the cache until then)."""

    PREFIX = "MarginLab: "

    def __init__(self, total: int, intro: str, write: Callable[[str], None] = _to_console):
        self.total, self.intro, self._write = total, intro, write
        self._start = self._last_news = time.monotonic()
        self.announced = False
        self.loaded = 0  # parts that came from the cache before anything was compiled
        self._lock = threading.Lock()

    def say(self, text: str) -> None:
        with self._lock:
            if not self.announced:
                self.announced = True
                resumed = (
                    f"; resuming: {self.loaded} of {self.total} parts were compiled by an earlier start."
                    if self.loaded
                    else ""
                )
                self._write(self.PREFIX + (self.intro.removesuffix(".") + resumed if resumed else self.intro))
            self._write(self.PREFIX + text)
            self._last_news = time.monotonic()

    def unit_done(self, done: int, unit: Unit, seconds: float, compiled: bool) -> None:
        if not compiled and not self.announced:
            self.loaded += 1
        if compiled:
            self.say(f"compiled {done}/{self.total} parts: {unit.label} in {seconds:.1f} s")

    def still_compiling(self, done: int, labels: Iterable[str], *, seen: bool = True) -> None:
        """What is being compiled: at once when Numba is ``seen`` compiling and nothing was said yet,
        then whenever nothing was said for ``HEARTBEAT_S``."""
        if (seen and not self.announced) or time.monotonic() - self._last_news >= HEARTBEAT_S:
            self.say(
                f"compiling {', '.join(labels)} ({done}/{self.total} ready, "
                f"{_minutes(time.monotonic() - self._start)} so far)"
            )

    def finished(self, done: int) -> None:
        if self.announced:
            self.say(
                f"compiled code ready ({done}/{self.total} parts) after "
                f"{_minutes(time.monotonic() - self._start)}; later starts load it from the cache."
            )


# --------------------------------------------------------------------------- in this process, in the background
class _State:
    """``preload``'s progress, shared with the pages."""

    def __init__(self):
        self._lock = threading.Lock()
        self._progress = Progress()
        self._compiles_before: int | None = None  # Numba's compile count when the preload began

    def begin(self) -> None:
        self._compiles_before = compile_watch().started

    def update(self, **changes) -> None:
        with self._lock:
            self._progress = replace(self._progress, **changes)

    def snapshot(self) -> Progress:
        with self._lock:
            found = self._progress
        if (
            not found.compiling
            and self._compiles_before is not None
            and compile_watch().started > self._compiles_before
        ):
            found = replace(found, compiling=True)  # (known as the first compile begins, not once it ends)
        return found


_state = _State()


def progress() -> Progress:
    """How far this process's ``preload`` has got (nothing compiling when it was never started)."""
    return _state.snapshot()


BACKGROUND_INTRO = (
    "compiling the model's code for this computer in the background (once per installation: a few "
    f"minutes; the app is ready meanwhile, a first label waits until the first {N_FOR_LABELLING} "
    f"of the {len(PLAN)} parts are ready, and the label that first chooses C and gamma from the "
    f"labels (at {AUTO_FIRST_MOMENT} labels) until the first {N_FOR_CHOOSING} are)."
)


def warm_up(
    plan: Sequence[Unit] = PLAN, reporter: Reporter | None = None, state: _State | None = None
) -> list[tuple[Unit, float, bool]]:
    """Compile or load every unit of ``plan`` in this process, in order; returns (unit, seconds,
    compiled) for each.  ``state`` follows it for ``progress()``; ``reporter`` tells the console
    (while Numba compiles: at once, then at every unit and at least every ``HEARTBEAT_S``)."""
    reporter = reporter or Reporter(len(plan), BACKGROUND_INTRO)
    watch = compile_watch()
    results: list[tuple[Unit, float, bool]] = []
    current: list[Unit] = []
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(0.5):
            if watch.depth > 0 and current:
                reporter.still_compiling(len(results), [current[0].label])

    threading.Thread(target=heartbeat, name="marginlab-compile-heartbeat", daemon=True).start()
    try:
        for unit in plan:
            current[:] = [unit]
            if state is not None:
                state.update(current=unit.label)
            seconds, compiled = run_unit(unit)
            results.append((unit, seconds, compiled))
            if state is not None:
                state.update(done=len(results), compiling=state.snapshot().compiling or compiled)
            reporter.unit_done(len(results), unit, seconds, compiled)
    finally:
        stop.set()
        if state is not None:
            state.update(current=None, finished=True)
    return results


def _preload_all() -> None:
    reporter = Reporter(len(PLAN), BACKGROUND_INTRO)
    warm_up(PLAN, reporter, _state)
    reporter.finished(len(PLAN))


_preloading: threading.Thread | None = None
_preload_lock = threading.Lock()


def preload() -> threading.Thread:
    """Compile or load the whole plan in a background (daemon) thread, once per process, and return it.

    A ``learn`` that arrives meanwhile waits for Numba's compiler lock and then runs compiled as
    always: which code path runs never depends on timing.
    """
    global _preloading
    with _preload_lock:
        if _preloading is None:
            _state.begin()
            _preloading = threading.Thread(target=_preload_all, name="marginlab-numba-preload", daemon=True)
            _preloading.start()
        return _preloading


# --------------------------------------------------------------------------- the whole plan, in several processes
def phases(plan: Sequence[Unit] = PLAN) -> list[list[list[Unit]]]:
    """The plan as phases of groups for several processes: each group holds every unit of one cache
    entry (a function's variants are compiled by one process), and the solvers' loops, which call
    the kernels' routines, come in a phase after the kernels'."""
    result = []
    for kind in ("kernel", "solver"):
        groups: dict[str, list[Unit]] = {}
        for unit in plan:
            if unit.kind == kind:
                groups.setdefault(unit.cache_entry, []).append(unit)
        result.append(list(groups.values()))
    return result


def group_label(units: Sequence[Unit]) -> str:
    """``kernel dense_rows (float64, float32)``: a group's units in a few words."""
    first = units[0]
    if first.kind == "kernel":
        return f"kernel {first.name} ({', '.join(u.dtype for u in units)})"
    return " and ".join(u.label for u in units)


def compile_group(units: Sequence[Unit]) -> list[tuple[Unit, float, bool]]:
    """A worker process's job: compile or load ``units`` in order."""
    return [(unit, *run_unit(unit)) for unit in units]


def compile_in_processes(jobs: int, reporter: Reporter, plan: Sequence[Unit] = PLAN) -> list[tuple[Unit, float, bool]]:
    """The whole ``plan`` in ``jobs`` worker processes, phase after phase, at most ``jobs`` groups at a
    time (so what is running is known and said)."""
    import multiprocessing

    results: list[tuple[Unit, float, bool]] = []
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for groups in phases(plan):
            waiting = list(groups)
            running: dict[Future, Sequence[Unit]] = {}  # a group being compiled, by its future
            while waiting or running:
                while waiting and len(running) < jobs:
                    group = waiting.pop(0)
                    running[pool.submit(compile_group, group)] = group
                finished, _ = wait(running, timeout=1.0, return_when=FIRST_COMPLETED)
                for future in finished:
                    running.pop(future)
                    for unit, seconds, compiled in future.result():
                        results.append((unit, seconds, compiled))
                        reporter.unit_done(len(results), unit, seconds, compiled)
                if running and not finished:  # (the workers' compiles are not seen from here: the heartbeat says it)
                    reporter.still_compiling(len(results), [group_label(g) for g in running.values()], seen=False)
    return results


def default_jobs() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def main(argv: Sequence[str] | None = None, write: Callable[[str], None] = _to_console) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.solvers._compile", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="worker processes (default: %(default)s)")
    args = parser.parse_args(argv)
    jobs = max(1, args.jobs)
    intro = (
        f"compiling the model's code for this computer into Numba's cache ({len(PLAN)} parts in {jobs} "
        f"process{'es' if jobs > 1 else ''}; once per installation, a few minutes)."
    )
    reporter = Reporter(len(PLAN), intro, write)
    start = time.perf_counter()
    results = compile_in_processes(jobs, reporter) if jobs > 1 else warm_up(PLAN, reporter)
    compiled = sum(1 for _, _, was_compiled in results if was_compiled)
    write(
        f"{Reporter.PREFIX}compiled code ready: {len(results)} parts ({compiled} compiled, "
        f"{len(results) - compiled} from the cache) in {time.perf_counter() - start:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
