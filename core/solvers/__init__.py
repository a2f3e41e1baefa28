"""Solver registry: ``make_solver("incremental", X, C=1.0, ...)``.

Each solver is one entry (:class:`Solver`: name, class, whether unlearning is exact, the module
whose ``warm_up()`` compiles its loops, the parameters only it takes among those the command line
and the app offer); every list of solvers (the command line's and the app's choices, the compile
plan, the exact solvers) derives from the registry (:mod:`core.registry`).  Adding a solver is its
module (a subclass of :class:`OnlineSolver`) and one ``register(Solver(...))``.

Names (docs/design.md): ``incremental``, ``lasvm``, ``ramp``, ``active-set``.  Classes named by
``"module:Class"`` are imported on first use so that one solver's import cost is not paid by users
of another.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from core.registry import Registry
from core.solvers.base import (
    ConvergenceWarning,
    IterationLimitError,
    NumericalError,
    OnlineSolver,
    StepResult,
)


@dataclass(frozen=True)
class Solver:
    """One solver.

    ``cls``: the :class:`OnlineSolver` subclass, or ``"module:Class"`` to import it on first use.
    ``exact_unlearn``: unlearning equals training without the example (the class says the same:
    checked when it is loaded); the loop and the History page rely on it.  ``warm_up``: the module
    whose ``warm_up()`` compiles the solver's loops into Numba's cache (``core.solvers._compile``),
    or None.  ``own_params``: the parameters offered by the command line and the app that only
    this solver takes (the others refuse them with a message naming the solvers that do).
    ``reference_at_once``: the comparisons' full-data reference learns its items in one
    ``learn_many`` call rather than one at a time.  ``words``: what it is in a screener's words (the app
    shows these; the name stays for Advanced and the files).  ``offered``: named in the lists the command line and
    the app offer (False: found by name, for saved states and ``make_solver``, but chosen by the code).
    """

    name: str
    cls: str | type
    exact_unlearn: bool = False
    warm_up: str | None = None
    own_params: frozenset[str] = frozenset()
    reference_at_once: bool = False
    offered: bool = True
    words: str = ""

    @property
    def label(self) -> str:
        """What the app shows for it: its words, else its name."""
        return self.words or self.name

    def load(self) -> type[OnlineSolver]:
        """The solver's class (imported on first use), checked against the entry."""
        cls = self.cls
        if isinstance(cls, str):
            module, _, attr = cls.partition(":")
            cls = getattr(importlib.import_module(module), attr)
        if not (isinstance(cls, type) and issubclass(cls, OnlineSolver)):
            raise TypeError(f"solver {self.name!r}: {cls!r} is not an OnlineSolver class")
        if cls.name != self.name or bool(cls.exact_unlearn) != self.exact_unlearn:
            raise TypeError(
                f"solver {self.name!r}: its class {cls.__name__} says name={cls.name!r}, "
                f"exact_unlearn={cls.exact_unlearn}; the registry entry says name={self.name!r}, "
                f"exact_unlearn={self.exact_unlearn}"
            )
        return cls


def _check_entry(entry: Solver) -> None:
    if not isinstance(entry, Solver):
        raise TypeError(f"a solver entry is a core.solvers.Solver, got {type(entry).__name__}")
    if not isinstance(entry.cls, str):
        entry.load()  # a class given as such is checked now


REGISTRY: Registry[Solver] = Registry("solver", _check_entry)
# register(Solver(...)) makes a solver known to the loop, the estimator, the command line and the app
# (replace=True: in place of the entry of that name); get(name) is its entry (a ValueError naming the
# solvers otherwise); names(); unregister(name)
register, unregister, get, names = REGISTRY.register, REGISTRY.unregister, REGISTRY.get, REGISTRY.names

for _entry in (
    Solver(
        "incremental",
        "core.solvers.incremental:IncrementalSVM",
        exact_unlearn=True,
        warm_up="core.solvers._incremental_jit",
        words="the thorough model",
    ),
    # (lasvm's warm-up lives beside its class, its loops in _lasvm_compiled)
    Solver("lasvm", "core.solvers.lasvm:LASVM", warm_up="core.solvers.lasvm", words="the quick model"),
    Solver(
        "ramp",
        "core.solvers.ramp:OnlineSVMR",
        warm_up="core.solvers._ramp_jit",
        own_params=frozenset({"balance_ratio", "loss"}),
        reference_at_once=True,
        words="the quick model that ignores outliers",
    ),
    Solver(
        "active-set",
        "core.solvers.active_set:ActiveSetSVM",
        exact_unlearn=True,
        warm_up="core.solvers._active_set_jit",
        words="the thorough model (second method)",
    ),
    # the review model's solver on sparse rows, which core.presets.solver_for picks (not offered on its own)
    Solver(
        "dual-cd",
        "core.solvers.dual_cd:DualCDSVM",
        warm_up="core.solvers._dual_cd_jit",
        offered=False,
        words="the review model",
    ),
):
    register(_entry)
del _entry

#: the names of the solvers offered, a live view of the registry
SOLVER_NAMES = REGISTRY.name_list(lambda e: e.offered)


def solver_class(name: str) -> type[OnlineSolver]:
    return get(name).load()


def make_solver(name: str, X=None, **params) -> OnlineSolver:
    return solver_class(name)(X, **params)


__all__ = [
    "REGISTRY",
    "SOLVER_NAMES",
    "ConvergenceWarning",
    "IterationLimitError",
    "NumericalError",
    "OnlineSolver",
    "Solver",
    "StepResult",
    "get",
    "make_solver",
    "names",
    "register",
    "solver_class",
    "unregister",
]
