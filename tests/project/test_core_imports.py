"""No import circle through the active-learning loop's modules in ``core/``, and none in ``storage/``:
the rule ``test_import_graph.py`` checks for ``app/`` (every import counts, ``TYPE_CHECKING`` ones
too), read for these packages.  (``core/`` as a whole still has circles, within ``core.solvers`` and
between ``core.datasets`` and ``core.ingest``; the loop's modules must not join one.)"""

from __future__ import annotations

import ast

from tests.project.test_import_graph import ROOT, cycles, imported, module_name, tangled

LOOP_MODULES = {"core.loop", "core.pool_scores", "core.evaluation", "core.loop_state", "core.loop_records", "core.undo"}


def package_graph(package: str) -> dict[str, set[str]]:
    modules = {module_name(p): p for p in sorted((ROOT / package).rglob("*.py"))}
    return {
        name: imported(
            ast.parse(path.read_text(encoding="utf-8"), str(path)), name, path.name == "__init__.py", set(modules)
        )
        for name, path in modules.items()
    }


def test_the_loop_modules_take_part_in_no_import_circle():
    graph = package_graph("core")
    assert LOOP_MODULES <= set(graph) and graph["core.loop"] >= LOOP_MODULES - {"core.loop"}
    circles = [part for part in tangled(graph) if LOOP_MODULES & set(part)]
    assert not circles, f"import circles through the loop's modules: {circles}"


def test_no_module_of_storage_takes_part_in_an_import_circle():
    graph = package_graph("storage")
    assert "storage.repository" in graph and graph["storage.repository"]  # (the walk found the modules)
    assert cycles(graph) == []
