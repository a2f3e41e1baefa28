"""Registries: a query strategy and a solver are each one entry, and every list of them derives from one.

In the manner of ASReview LAB (one module per role, each with a registry that the app and the
command line read): :mod:`core.strategies` keeps the query strategies, :mod:`core.solvers` the
solvers, each in a :class:`Registry` of frozen entries (:class:`core.strategies.Strategy`,
:class:`core.solvers.Solver`).  The app's choices, the command line's choices and the loop's
checks are read from the entries (``strategy.streams``, ``solver.exact_unlearn``, ...), never from
a list of names of their own.

The names the contracts promise (``STRATEGY_NAMES``, ``DEFAULT_SOLVER``, ``SOLVER_NAMES``, the
app's ``LABEL_STRATEGIES``, ...) are live views (:class:`NameList`, :class:`NameTable`): each
reading sees the registry as it is then, so an entry registered after they were imported is in
them.  Registering is per process: a module that registers an entry when it is imported makes it
known wherever that module is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar


class Entry(Protocol):
    @property
    def name(self) -> str: ...  # read-only, so that frozen dataclasses are entries


E = TypeVar("E", bound=Entry)
V = TypeVar("V")


class Registry(Generic[E]):
    """Entries by name, in the order they were registered."""

    def __init__(self, kind: str, check: Callable[[E], None] | None = None):
        self.kind = kind  # "strategy", "solver": what error messages call an entry
        self._check = check
        self._entries: dict[str, E] = {}

    def register(self, entry: E, *, replace: bool = False) -> E:
        """Add ``entry`` (``replace=True``: in place of the entry of that name); returns it."""
        name = getattr(entry, "name", None)
        if not isinstance(name, str) or not name.strip() or name != name.strip() or "," in name:
            raise ValueError(
                f"a {self.kind} name must be a non-empty string without commas or surrounding spaces, got {name!r}"
            )
        if name in self._entries and not replace:
            raise ValueError(f"a {self.kind} named {name!r} is registered already (replace=True to replace it)")
        if self._check is not None:
            self._check(entry)
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> E:
        """Remove the entry ``name`` and return it."""
        entry = self.get(name)
        del self._entries[name]
        return entry

    def get(self, name: str) -> E:
        """The entry ``name``; a ``ValueError`` naming the registered ones otherwise."""
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise ValueError(f"unknown {self.kind} {name!r}; choose one of {', '.join(self._entries)}") from None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries

    def entries(self, where: Callable[[E], bool] | None = None) -> tuple[E, ...]:
        """The entries (those for which ``where`` is true), in registration order."""
        return tuple(e for e in self._entries.values() if where is None or where(e))

    def names(self, where: Callable[[E], bool] | None = None) -> tuple[str, ...]:
        return tuple(e.name for e in self.entries(where))

    def name_list(self, where: Callable[[E], bool] | None = None, *, first: str | None = None) -> NameList:
        """A live view of ``names(where)``, with ``first`` (a default, when it is among them) put first."""

        def current() -> tuple[str, ...]:
            names = self.names(where)
            return (first, *(n for n in names if n != first)) if first in names else names

        return NameList(current)

    def name_table(self, value: Callable[[E], V], where: Callable[[E], bool] | None = None) -> NameTable[V]:
        """A live read-only mapping name -> ``value(entry)`` over the entries for which ``where`` is true."""
        return NameTable(self, value, where)


class NameList(Sequence[str]):
    """A tuple of names read afresh from a registry at every use (compares equal to that tuple).

    Streamlit's widgets take lists and tuples only: give them ``list(view)``."""

    def __init__(self, current: Callable[[], tuple[str, ...]]):
        self._current = current

    def __getitem__(self, k):
        return self._current()[k]

    def __len__(self) -> int:
        return len(self._current())

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __contains__(self, name: object) -> bool:
        return name in self._current()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (NameList, tuple, list)):
            return self._current() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (its contents change with the registry)

    def __repr__(self) -> str:
        return repr(self._current())


class NameTable(Mapping[str, V]):
    """A read-only mapping name -> a value of the entry, read afresh from a registry at every use."""

    def __init__(self, registry: Registry, value: Callable[[Any], V], where: Callable[[Any], bool] | None):
        self._registry = registry
        self._value = value
        self._where = where

    def __getitem__(self, name: str) -> V:
        if name not in self._registry:
            raise KeyError(name)
        entry = self._registry.get(name)
        if self._where is not None and not self._where(entry):
            raise KeyError(name)
        return self._value(entry)

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry.names(self._where))

    def __len__(self) -> int:
        return len(self._registry.names(self._where))

    def __repr__(self) -> str:
        return repr(dict(self.items()))


__all__ = ["NameList", "NameTable", "Registry"]
