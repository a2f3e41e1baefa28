"""Copies of a solver kept by the active-learning loop (:mod:`core.loop`) to undo a label exactly, and
the bytes they hold (counted against the loop's undo budget)."""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from core.solvers.base import OnlineSolver

_IMMUTABLE = (int, float, str, bool, type(None), np.integer, np.floating, np.bool_)


def _is_immutable(value) -> bool:
    return isinstance(value, _IMMUTABLE) or (type(value) is tuple and all(isinstance(x, _IMMUTABLE) for x in value))


def copy_value(value, memo: dict[int, Any]):
    """What ``copy.deepcopy`` gives, with cheap paths for arrays and flat containers of immutables."""
    key = id(value)
    if key in memo:
        return memo[key]
    if _is_immutable(value):
        return value
    clone: Any
    if type(value) is np.ndarray:
        clone = value.copy(order="K")
    elif type(value) in (list, set) and all(isinstance(x, _IMMUTABLE) for x in value):
        clone = type(value)(value)
    elif type(value) is dict and all(isinstance(k, _IMMUTABLE) and isinstance(v, _IMMUTABLE) for k, v in value.items()):
        clone = dict(value)
    else:
        clone = copy.deepcopy(value, memo)
    memo[key] = clone
    return clone


def held_bytes(value, skip: set[int]) -> int:
    """Bytes held by ``value`` and everything it refers to, except objects whose id is in ``skip``.

    Arrays count their data, containers and other objects their own size plus
    what they hold; ``skip`` grows with every object counted, so nothing is
    counted twice and objects shared with the live solver (given in ``skip``)
    are not counted at all.
    """
    key = id(value)
    if key in skip:
        return 0
    skip.add(key)
    if isinstance(value, np.ndarray):  # (an array that owns its data counts it in getsizeof)
        return sys.getsizeof(value) + (0 if value.base is None else held_bytes(value.base, skip))
    size = sys.getsizeof(value)
    if isinstance(value, (str, bytes, int, float, bool, type(None), np.generic)):
        return size
    if isinstance(value, dict):
        return size + sum(held_bytes(k, skip) + held_bytes(v, skip) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        if all(type(v) in (int, float) for v in value):  # (e.g. the learned indices: no recursion per item)
            return size + sum(map(sys.getsizeof, value))
        return size + sum(held_bytes(v, skip) for v in value)
    inner = getattr(value, "__dict__", None)
    return size + (0 if inner is None else held_bytes(inner, skip))


@dataclass
class SolverCopy:
    """A solver as it was before a label, kept for undo (made by ``copy_solver``).

    ``state`` is a copy of what the solver's ``__getstate__`` returns (the
    solver decides what a copy holds: quantities it can recompute from the
    data store, such as LASVM's kernel rows, are left out), ``nbytes``
    everything that copy holds.  ``restore()`` makes the solver again (with
    the class's ``__setstate__`` when it has one) from a fresh copy of the
    state, so the kept state never changes, however often it is restored.
    """

    cls: type[OnlineSolver]
    state: dict[str, Any]
    nbytes: int
    shared: tuple = ()  # the data store, kernel and kernel cache (shared, never copied)

    def restore(self) -> OnlineSolver:
        solver = self.cls.__new__(self.cls)
        memo: dict[int, Any] = {id(obj): obj for obj in self.shared}
        state = {name: copy_value(value, memo) for name, value in self.state.items()}
        if hasattr(solver, "__setstate__"):
            solver.__setstate__(state)
        else:
            solver.__dict__.update(state)
        return solver


def copy_solver(solver) -> SolverCopy:
    """A copy of the solver that shares its data store, kernel and kernel cache, with its size in bytes.

    The store only grows and the kernel cache is a function of the store, so
    sharing them is safe; everything else the solver's ``__getstate__``
    returns (coefficients, gradients, factorisations, the solver's random
    generator) is copied, so learning from the restored copy continues
    exactly as the original did.  The copy is ``copy.deepcopy`` of each
    attribute, except that arrays and flat lists / sets / dicts of numbers are
    copied directly: deepcopy walks a list of a thousand learned indices item
    by item, which made the copy the largest part of a label's update time.
    The size counts every object the copy holds (arrays, containers, numbers),
    so the undo budget bounds what the copies really take.
    """
    shared = [solver.store]
    if solver.cache is not None:
        shared.append(solver.cache)
    if solver.kernel is not None:
        shared.append(solver.kernel)
    memo: dict[int, Any] = {id(obj): obj for obj in shared}
    state = solver.__getstate__()
    copied = {name: copy_value(value, memo) for name, value in state.items()}
    nbytes = held_bytes(copied, {id(obj) for obj in shared})
    return SolverCopy(type(solver), copied, int(nbytes), tuple(shared))


__all__ = ["SolverCopy", "copy_solver", "copy_value", "held_bytes"]
