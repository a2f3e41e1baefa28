"""The package and its lock files agree, the Makefile's fast lane names real markers, and no test or
benchmark changes the import path itself (the editable install and pytest's ``pythonpath`` do)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def pins(path: Path) -> dict[str, Requirement]:
    """The requirements of a lock file by canonical name (following ``-r``), each an exact ``==`` pin."""
    found: dict[str, Requirement] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            found.update(pins(path.parent / line[3:].strip()))
            continue
        requirement = Requirement(line)
        specifiers = list(requirement.specifier)
        assert len(specifiers) == 1 and specifiers[0].operator == "==", f"{path.name}: {line} is not an exact pin"
        found[canonicalize_name(requirement.name)] = requirement
    return found


def declared() -> list[tuple[str, Requirement]]:
    """(where, requirement) for each dependency of ``[project]`` and of each extra."""
    project = PYPROJECT["project"]
    found = [("dependencies", Requirement(text)) for text in project["dependencies"]]
    for extra, texts in project["optional-dependencies"].items():
        found += [(f"extra {extra}", Requirement(text)) for text in texts]
    return found


def test_the_lock_file_pins_every_dependency_and_extra_within_its_range():
    locked = pins(ROOT / "requirements.txt")
    wrong = []
    for where, requirement in declared():
        pin = locked.get(canonicalize_name(requirement.name))
        if pin is None:
            wrong.append(f"{requirement} ({where}) is not in requirements.txt")
            continue
        version = next(iter(pin.specifier)).version
        if not requirement.specifier.contains(version, prereleases=True):
            wrong.append(f"{requirement} ({where}): requirements.txt pins {version}")
        if not requirement.extras <= pin.extras:
            wrong.append(f"{requirement} ({where}): requirements.txt pins it without {requirement.extras - pin.extras}")
    assert wrong == []


def test_the_extras_are_the_optional_parts():
    assert set(PYPROJECT["project"]["optional-dependencies"]) == {"molecules", "cluster", "postgres"}


def test_the_lock_files_hold_the_build_backend_and_the_linters():
    """``pip install --no-build-isolation -e .`` builds with the locked setuptools; `make lint` runs mypy."""
    backend = Requirement(PYPROJECT["build-system"]["requires"][0])
    setuptools = pins(ROOT / "requirements.txt")[canonicalize_name(backend.name)]
    assert backend.specifier.contains(next(iter(setuptools.specifier)).version)
    assert {"ruff", "mypy", "pre-commit", "pytest"} <= set(pins(ROOT / "requirements-dev.txt"))


def fast_lane_markers(makefile: str) -> set[str]:
    expression = re.search(r"^FAST_LANE\s*:=\s*(.+)$", makefile, re.MULTILINE)
    assert expression, "the Makefile defines no FAST_LANE"
    return set(re.findall(r"[a-z_]+", expression.group(1))) - {"not", "and", "or"}


def test_the_fast_lane_leaves_out_registered_markers_only():
    """A misspelt marker in ``-m`` deselects nothing, silently: every name must be registered."""
    registered = {line.split(":", 1)[0] for line in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]}
    left_out = fast_lane_markers((ROOT / "Makefile").read_text(encoding="utf-8"))
    assert left_out <= registered, f"not registered in pyproject.toml: {left_out - registered}"
    assert {"browser", "postgresql", "dask", "processes", "app", "hypothesis"} <= left_out


def test_fast_lane_markers_reads_the_expression():
    assert fast_lane_markers("X := 1\nFAST_LANE := not (browser or app)\n") == {"browser", "app"}
    with pytest.raises(AssertionError):
        fast_lane_markers("FAST := not app\n")


def test_no_test_or_benchmark_changes_the_import_path():
    edits = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("tests", "benchmarks")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"sys\.path\.(insert|append)\(", line) and path != Path(__file__).resolve()
    ]
    assert edits == []


def test_a_postgresql_case_of_an_engine_fixture_is_in_the_postgresql_lane():
    """The engine-parametrized fixtures mark their PostgreSQL parameter (conftest.ENGINE_PARAMS)."""
    from tests.conftest import ENGINE_PARAMS

    marked = {param.values[0]: [mark.name for mark in param.marks] for param in ENGINE_PARAMS}
    assert marked == {"sqlite": [], "postgresql": ["postgresql"]}


def _starts_processes(tree: ast.Module, path: Path, seen: dict[Path, set[str]]) -> set[str]:
    """Names of the module-level functions of ``tree`` that start a Python process (name ``sys.executable`` or
    make a ``multiprocessing`` process), themselves or through a module-level function of this module or of a
    test module they import."""
    if path in seen:
        return seen[path]
    seen[path] = set()
    found, calls, modules = set(), {}, set()  # calls: the names each function uses
    for top in tree.body:
        inside = list(ast.walk(top))
        modules |= {
            node.module
            for node in inside
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tests.")
        }
        if not isinstance(top, ast.FunctionDef):
            continue
        calls[top.name] = {node.id for node in inside if isinstance(node, ast.Name)}
        if any(
            isinstance(node, ast.Attribute) and node.attr in ("executable", "Process", "get_context") for node in inside
        ):
            found.add(top.name)
    starters: set[str] = set()
    for module in sorted(modules):
        source = ROOT / (module.replace(".", "/") + ".py")
        if source.exists():
            starters |= _starts_processes(ast.parse(source.read_text(encoding="utf-8")), source, seen)
    while more := {name for name, used in calls.items() if name not in found and used & (found | starters)}:
        found |= more
    seen[path] = found | starters
    return seen[path]


def _marks(decorators: list[ast.expr]) -> set[str]:
    """The ``pytest.mark.NAME`` names in decorators or a ``pytestmark`` value."""
    return {
        node.attr
        for expr in decorators
        for node in ast.walk(expr)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "mark"
    }


#: the lanes whose tests start other Python processes (a Dask cluster's workers, AppTest's concurrent sessions)
PROCESS_LANES = {"processes", "dask", "app"}


def test_a_test_that_starts_a_python_process_is_in_the_processes_lane():
    """The fast lane leaves out the tests that start other Python processes: each is marked ``processes``
    (or is in another lane that starts them)."""
    unmarked, seen = [], {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path.parent.name == "browser":  # (the browser lane starts a server for every test)
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        starters = _starts_processes(tree, path, seen)
        module_marks = _marks(
            [
                node.value
                for node in tree.body
                if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
            ]
        )
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_") and node.name in starters:
                if not PROCESS_LANES & (module_marks | _marks(node.decorator_list)):
                    unmarked.append(f"{path.relative_to(ROOT)}::{node.name}")
    assert unmarked == []


def test_starts_processes_follows_helpers_and_imports():
    tree = ast.parse(
        "import sys, subprocess\n"
        "def helper():\n    return subprocess.run([sys.executable, '-c', 'pass'])\n"
        "def via():\n    return helper()\n"
        "def test_a():\n    via()\n"
        "def test_b():\n    from tests.core.test_cli import run_cli\n    run_cli('fit')\n"
        "def test_c():\n    assert 1 + 1 == 2\n"
    )
    found = _starts_processes(tree, ROOT / "tests" / "made_up.py", {})
    assert {"helper", "via", "test_a", "test_b"} <= found and "test_c" not in found
    assert _marks(
        ast.parse("@pytest.mark.processes\n@pytest.mark.parametrize('a', [1])\ndef f(a): pass\n").body[0].decorator_list
    ) == {"processes", "parametrize"}


def test_the_fast_lane_runs_on_workers_that_the_dev_lock_installs():
    """`make test-fast` runs pytest -n (pytest-xdist), so the lock file of the tests pins pytest-xdist."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^test-fast:.*\n\t(.+)$", makefile, re.MULTILINE)
    assert recipe, "the Makefile has no test-fast recipe"
    assert re.search(r"\s-n\s+\$\(FAST_WORKERS\) --dist loadfile\s", recipe.group(1)), recipe.group(1)
    assert re.search(r"^FAST_WORKERS \?= 2$", makefile, re.MULTILINE)
    assert {"pytest-xdist", "execnet"} <= set(pins(ROOT / "requirements-dev.txt"))
    test_recipe = re.search(r"^test:.*\n\t(.+)$", makefile, re.MULTILINE)
    assert test_recipe and " -n " not in test_recipe.group(1)  # `make test` stays one process


def test_the_code_is_as_ruff_formats_it_and_lint_checks_that():
    """`make lint` checks the formatting before the lint rules, and every file is as `ruff format` writes it
    (ruff is the lock file's, a compiled program: no Python process is started)."""
    import subprocess
    import sysconfig

    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^lint:.*\n((?:\t.+\n)+)", makefile, re.MULTILINE)
    assert recipe and "ruff format --check core storage app tests benchmarks" in recipe.group(1)
    ruff = Path(sysconfig.get_path("scripts")) / "ruff"
    if not ruff.exists():
        pytest.skip("ruff is not installed next to this Python (make test installs it)")
    folders = ["core", "storage", "app", "tests", "benchmarks"]
    done = subprocess.run([str(ruff), "format", "--check", *folders], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_makefile_s_install_messages_do_not_promise_a_first_start_only():
    """A start after an interrupted install, or after an upgrade of the lock files, runs an install again:
    its message says so rather than "first start only" a second time."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    said = re.findall(r'^\t@echo "(MarginLab: [^"]*)"$', makefile, re.MULTILINE)
    installs = [line for line in said if "installing" in line or "creating" in line]
    assert len(installs) == 3, said
    assert not [line for line in installs if "first start only" in line], installs
    (runtime,) = [line for line in installs if "requirements.txt into" in line]
    assert "interrupted" in runtime and "upgrade" in runtime, runtime
