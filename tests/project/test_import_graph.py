"""The modules of ``app/`` import one another without a circle.

Every import counts: at the top of a module, inside a function, and under
``if TYPE_CHECKING:`` (an import that only a type checker reads still ties the two
modules together for a reader).  A package's ``__init__`` is a module like the
others; importing ``a.b.c`` is not counted as importing ``a.b``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "app"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def app_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}


def imported(tree: ast.AST, name: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that the module ``name`` imports, anywhere in its ``tree``."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            submodules = {f"{source}.{alias.name}" for alias in node.names} & modules
            found.update(submodules)  # ``from pkg import module``: that module
            if len(submodules) < len(node.names):
                found.add(source)  # ... and pkg itself when a name is not one of its modules
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    modules = app_modules()
    return {
        name: imported(
            ast.parse(path.read_text(encoding="utf-8"), str(path)), name, path.name == "__init__.py", set(modules)
        )
        for name, path in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle of imports in each strongly connected part of ``graph`` (Tarjan), as a path that
    ends where it starts (see ``tangled`` for every module of each part)."""
    return [circle_in(graph, set(part)) for part in tangled(graph)]


def tangled(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of ``graph`` of more than one module: within each, every module
    imports every other one, directly or not (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                parts.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return parts


def circle_in(graph: dict[str, set[str]], part: set[str]) -> list[str]:
    """A shortest path from the first module of ``part`` back to itself, within ``part``."""
    start = min(part)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for other in sorted(graph[node] & part):
                if other == start:
                    return paths[node] + [start]
                if other not in paths:
                    paths[other] = paths[node] + [other]
                    following.append(other)
        frontier = following
    raise AssertionError(f"no circle through {start}")  # (a strongly connected part always has one)


def test_the_finder_sees_a_circle_through_function_level_and_type_checking_imports():
    sources = {
        "app.a": "from app.b import thing\n",
        "app.b": "def f():\n    from app.c import other\n",
        "app.c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from app import a\n",
        "app": "",
        "app.d": "from app.a import thing\n",
    }
    graph = {name: imported(ast.parse(text), name, name == "app", set(sources)) for name, text in sources.items()}
    assert graph["app.c"] == {"app.a"}  # ``from app import a``: the module app.a
    assert cycles(graph) == [["app.a", "app.b", "app.c", "app.a"]]
    assert cycles({**graph, "app.c": set()}) == []


def test_no_module_of_app_takes_part_in_an_import_circle():
    graph = import_graph()
    assert "app.services.marginlab" in graph and graph["app.services.marginlab"]  # (the walk found the modules)
    found = cycles(graph)
    assert not found, "import circles in app/: " + "; ".join(
        f"{' -> '.join(circle)} (tangled with it: {', '.join(part)})"
        for circle, part in zip(found, tangled(graph), strict=True)
    )
