"""Solver registry: ``make_solver("incremental", X, C=1.0, ...)``.

Names (docs/design.md): ``incremental``, ``lasvm``, ``ramp``, ``active-set``.
Modules are imported on first use so that one solver's import cost is not paid
by users of another.
"""

from __future__ import annotations

import importlib

from core.solvers.base import (
    ConvergenceWarning,
    IterationLimitError,
    NumericalError,
    OnlineSolver,
    StepResult,
)

_MODULES = {
    "incremental": ("core.solvers.incremental", "IncrementalSVM"),
    "lasvm": ("core.solvers.lasvm", "LASVM"),
    "ramp": ("core.solvers.ramp", "OnlineSVMR"),
    "active-set": ("core.solvers.active_set", "ActiveSetSVM"),
}
SOLVER_NAMES = tuple(_MODULES)
# found by name (saved states, ``make_solver``) but not offered on its own: the review model's solver on
# sparse rows, which ``core.presets.solver_for`` picks
_MODULES["dual-cd"] = ("core.solvers.dual_cd", "DualCDSVM")


def solver_class(name: str) -> type[OnlineSolver]:
    if name not in _MODULES:
        raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(SOLVER_NAMES)}")
    module, cls = _MODULES[name]
    return getattr(importlib.import_module(module), cls)


def make_solver(name: str, X=None, **params) -> OnlineSolver:
    return solver_class(name)(X, **params)


__all__ = ["ConvergenceWarning", "IterationLimitError", "NumericalError", "OnlineSolver", "SOLVER_NAMES",
           "StepResult", "make_solver", "solver_class"]
