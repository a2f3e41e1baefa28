"""The pages reach ``core`` and ``storage`` only through the service.

The rule read here from the source (``ast``, no import is run): a page (``app/views/*.py``), a widget
module of ``app/ui/``, and every other module of ``app/`` that one of them imports outside
``app/services/`` (``app.auth``, ``app.charts``, the Label page's panels, ...) imports nothing of
``core``, ``storage`` or SQLAlchemy: not at the top, not inside a function, not by ``importlib.import_module``
or ``__import__``.  What a page needs of them (the bundled datasets' list, the kernels' names, the number
formats, the database's address) comes from ``app.services`` and its submodules.  No exception is made for
``app/ui/``: the formatting helpers of ``core.formatting`` reach it through ``app.services.formatting`` like
everything else.

The errors a page catches are the service's own (``ServiceError`` and its subclasses, which the service makes
of storage's, the database's and core's at its boundary: ``app.services.errors``), or Python's: no error
class of ``core``, ``storage`` or SQLAlchemy is caught, nor imported, by any of those modules.
"""

from __future__ import annotations

import ast
import builtins
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
#: packages a page must not import: the service translates and re-exports what the pages need of them
BEHIND_THE_SERVICE = ("core", "storage", "sqlalchemy")


def imported_names(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import in ``source``, wherever it stands (a function's body included)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # a relative import inside app/ stays inside app/
                continue
            found += [(node.lineno, node.module or "")]
            # ``from app import auth`` imports the module app.auth
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names if node.module == "app"]
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and (
                (isinstance(node.func, ast.Name) and node.func.id == "__import__")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            )
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def module_file(name: str) -> Path | None:
    """The file of an ``app.`` module (a package's ``__init__.py``), or None when it is not one."""
    path = ROOT.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def page_side_modules() -> list[Path]:
    """The pages, the ``app/ui`` modules, and every ``app`` module outside ``app/services`` they import
    (and those import, and so on)."""
    start = sorted((APP / "views").glob("*.py")) + sorted((APP / "ui").glob("*.py"))
    seen: dict[Path, None] = {}
    todo = list(start)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen[path] = None
        for _, name in imported_names(path.read_text(encoding="utf-8")):
            if name == "app.services" or name.startswith("app.services.") or not name.startswith("app."):
                continue
            target = module_file(name)
            if target is not None and target not in seen:
                todo.append(target)
    return list(seen)


def test_the_page_side_of_app_finds_its_modules():
    modules = {path.relative_to(ROOT).as_posix() for path in page_side_modules()}
    assert {"app/views/label.py", "app/views/data.py", "app/auth.py", "app/charts.py"} <= modules
    assert not any(name.startswith("app/services/") for name in modules)


def test_imported_names_sees_imports_inside_functions_and_by_name():
    source = (
        "import core.kernels\nfrom storage.errors import StorageError\n"
        "def f():\n    from core import explain\n    import importlib\n"
        "    importlib.import_module('storage.engine')\n    __import__('core.formatting')\n"
    )
    assert [name for _, name in imported_names(source)] == [
        "core.kernels",
        "storage.errors",
        "core",
        "importlib",
        "storage.engine",
        "core.formatting",
    ]


def test_pages_and_widgets_import_neither_core_nor_storage():
    offending = [
        f"{path.relative_to(ROOT).as_posix()}:{line} imports {name}"
        for path in page_side_modules()
        for line, name in imported_names(path.read_text(encoding="utf-8"))
        if name.split(".")[0] in BEHIND_THE_SERVICE
    ]
    assert offending == []


def caught_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of every name an ``except`` clause of ``source`` catches (in a tuple, or unpacked by ``*``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            parts = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            for part in parts:
                part = part.value if isinstance(part, ast.Starred) else part
                found.append((node.lineno, ast.unparse(part)))
    return found


def imported_from(source: str) -> dict[str, str]:
    """name -> the module it is imported from, for every ``from module import name [as alias]`` of ``source``."""
    return {
        alias.asname or alias.name: f"{node.module}:{alias.name}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and not node.level
        for alias in node.names
    }


def error_classes(value: object) -> list[type]:
    """The exception classes ``value`` is (a class, or a tuple of them as ``except`` takes); [] for anything else."""
    if isinstance(value, tuple):
        return [c for v in value for c in error_classes(v)]
    return [value] if isinstance(value, type) and issubclass(value, BaseException) else []


def foreign_errors(value: object) -> list[str]:
    """The error classes of ``value`` that are neither Python's own nor the service's."""
    from app.services import ServiceError

    return [
        f"{c.__module__}.{c.__qualname__}"
        for c in error_classes(value)
        if c.__module__ != "builtins" and not issubclass(c, ServiceError)
    ]


def test_foreign_errors_sees_storage_s_core_s_and_sqlalchemy_s_classes_in_a_tuple():
    from sqlalchemy.exc import SQLAlchemyError

    from app.services import ServiceError
    from core.datasets import DataError
    from storage.errors import StorageError

    assert foreign_errors((ServiceError, (StorageError, ValueError), DataError, SQLAlchemyError)) == [
        "storage.errors.StorageError",
        "core.ingest.errors.DataError",
        "sqlalchemy.exc.SQLAlchemyError",
    ]
    assert foreign_errors(ValueError) == foreign_errors("ServiceError") == []
    assert [
        name
        for _, name in caught_names(
            "try:\n    f()\nexcept (*REFUSED, ValueError) as e:\n    pass\nexcept DataError:\n    pass\n"
        )
    ] == ["REFUSED", "ValueError", "DataError"]


def test_pages_and_widgets_catch_and_import_only_the_service_s_errors_and_python_s():
    """A page catches ``ServiceError`` (or a subclass), or a Python error of its own doing; never storage's,
    the database's or core's, not even in a tuple the service hands it, and it imports none of them."""
    offending = []
    for path in page_side_modules():
        source = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT).as_posix()
        names = imported_from(source)
        own = {node.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)}
        for line, name in caught_names(source):
            if name in own or (name in names and not names[name].startswith("app.")):
                continue  # (a class of its own; streamlit's, say)
            if name in names:
                module, _, attribute = names[name].partition(":")
                value = getattr(importlib.import_module(module), attribute)
            elif hasattr(builtins, name):
                continue
            elif "views" not in path.parts:  # a name the module sets (``PAGE_ERRORS``): what it is, imported
                value = getattr(importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts)), name)
            else:
                offending.append(f"{where}:{line} catches {name}, neither imported nor Python's")
                continue
            offending += [f"{where}:{line} catches {error}" for error in foreign_errors(value)]
        for name, origin in names.items():
            module, _, attribute = origin.partition(":")
            if module.startswith("app.services"):
                value = getattr(importlib.import_module(module), attribute, None)
                offending += [f"{where} imports {error} as {name}" for error in foreign_errors(value)]
    assert offending == []
