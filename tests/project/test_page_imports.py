"""The pages reach ``core`` and ``storage`` only through the service.

The rule read here from the source (``ast``, no import is run): a page (``app/views/*.py``), a widget
module of ``app/ui/``, and every other module of ``app/`` that one of them imports outside
``app/services/`` (``app.auth``, ``app.charts``, the Label page's panels, ...) imports nothing of
``core`` or ``storage``: not at the top, not inside a function, not by ``importlib.import_module`` or
``__import__``.  What a page needs of them (the bundled datasets' list, the kernels' names, the errors
a call may raise, the number formats, the database's address) comes from ``app.services`` and its
submodules.  No exception is made for ``app/ui/``: the formatting helpers of ``core.formatting`` reach
it through ``app.services.formatting`` like everything else.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
#: packages a page must not import: the service translates and re-exports what the pages need of them
BEHIND_THE_SERVICE = ("core", "storage")


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
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Name) and node.func.id == "__import__")
                   or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"))):
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
    source = ("import core.kernels\nfrom storage.errors import StorageError\n"
              "def f():\n    from core import explain\n    import importlib\n"
              "    importlib.import_module('storage.engine')\n    __import__('core.formatting')\n")
    assert [name for _, name in imported_names(source)] == [
        "core.kernels", "storage.errors", "core", "importlib", "storage.engine", "core.formatting"]


def test_pages_and_widgets_import_neither_core_nor_storage():
    offending = [f"{path.relative_to(ROOT).as_posix()}:{line} imports {name}"
                 for path in page_side_modules()
                 for line, name in imported_names(path.read_text(encoding="utf-8"))
                 if name.split(".")[0] in BEHIND_THE_SERVICE]
    assert offending == []
