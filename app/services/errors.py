"""The service's boundary: the errors a page catches, and where storage's, the database's and core's become them.

A page catches ``ServiceError`` alone: a call refused, with a message for the person (a check of the service;
storage refusing, e.g. a name taken, a session closed meanwhile, a dataset gone; core refusing the input, e.g.
a CSV file that cannot be read), or its subclass ``DatabaseUnavailable``: the database failed under the call (a
server restarting, a full disk, a damaged page), said in the app's words (``database.database_problem``).

Every call a page makes passes one boundary, ``translated``: the public methods of the service's objects
(``service_boundary`` on their classes: the facade's parts, a labelling run with the parts it forwards to, a
team project's run, the item display, the replays) and ``startup.open_service``.  There storage's errors
(``storage.errors.StorageError``), the database's (``SQLAlchemyError``) and core's refusals of the input
(``REFUSALS``) become the service's, keeping their message, with the original as the cause (``raise ... from``).
Only the outermost boundary translates: inside the service, code keeps seeing storage's and core's own errors.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
from collections.abc import Callable, Iterator

from sqlalchemy.exc import SQLAlchemyError

from app.services.common import DatabaseUnavailable, ServiceError
from app.services.database import database_problem
from core.ingest.errors import DataError
from core.settings import SettingsError
from storage.errors import StorageError, UnusableDatabaseError

#: core's refusals of what the person gave (a file that cannot be read, a setting refused): said as they are
REFUSALS: tuple[type[Exception], ...] = (DataError, SettingsError)

#: whether a call is under way inside the boundary (in this thread): a nested call leaves its errors as they are
_inside = contextvars.ContextVar("inside_the_service", default=False)


def service_error(error: BaseException, also: tuple[type[BaseException], ...] = ()) -> ServiceError | None:
    """The service's error for ``error`` (None: it is not one to translate; a ``ServiceError`` is itself)."""
    if isinstance(error, ServiceError):
        return error
    if isinstance(error, UnusableDatabaseError):  # storage's words for another program's file, a damaged one
        return DatabaseUnavailable(str(error))
    if isinstance(error, SQLAlchemyError):
        return DatabaseUnavailable(database_problem(error))
    if isinstance(error, (StorageError, *REFUSALS, *also)):
        return ServiceError(str(error))
    return None


@contextlib.contextmanager
def translated(also: tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """Around a call into the service: what it raises leaves as the service's error (``service_error``; ``also``:
    more classes said as they are), unless a call further out does it."""
    if _inside.get():
        yield
        return
    token = _inside.set(True)
    try:
        yield
    except Exception as error:
        ours = service_error(error, also)
        if ours is None or ours is error:
            raise
        raise ours from error
    finally:
        _inside.reset(token)


def at_the_boundary(function: Callable | None = None, *, also: tuple[type[Exception], ...] = ()):
    """``function`` with its errors translated (as ``translated``); ``also``: e.g. ``ValueError`` for a call
    whose every ValueError is core refusing the settings asked for."""

    def wrap(target: Callable) -> Callable:
        if getattr(target, "__service_boundary__", False):
            return target

        @functools.wraps(target)
        def call(*args, **kwargs):
            if _inside.get():  # (a call from inside the service: as it is, and cheap)
                return target(*args, **kwargs)
            with translated(also):
                return target(*args, **kwargs)

        call.__service_boundary__ = True  # type: ignore[attr-defined]
        return call

    return wrap if function is None else wrap(function)


def service_boundary(cls: type) -> type:
    """Put every public method of ``cls`` (``__call__`` too), and every property's reading, at the boundary.
    Used on a class, or called after the methods a class forwards to its parts are set (``common.forwarded``)."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") and name != "__call__":
            continue
        if isinstance(member, staticmethod | classmethod):
            setattr(cls, name, type(member)(at_the_boundary(member.__func__)))
        elif isinstance(member, property) and member.fget is not None:
            setattr(cls, name, property(at_the_boundary(member.fget), member.fset, member.fdel, member.__doc__))
        elif inspect.isfunction(member):
            setattr(cls, name, at_the_boundary(member))
    return cls


__all__ = [
    "REFUSALS",
    "DatabaseUnavailable",
    "ServiceError",
    "at_the_boundary",
    "service_boundary",
    "service_error",
    "translated",
]
