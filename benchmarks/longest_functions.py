"""The longest functions and methods of MarginLab's own code.

Run from the repository root::

    .venv/bin/python benchmarks/longest_functions.py            # the ten longest
    .venv/bin/python benchmarks/longest_functions.py --top 25   # more
    .venv/bin/python benchmarks/longest_functions.py --over 120 # every one over 120 lines

Reads the sources with ``ast`` (nothing is imported or run) under ``core/``,
``storage/`` and ``app/``, leaving out the generated Alembic migrations
(``storage/migrations/versions/``). A function's length is its lines from the
``def`` line to its last line, docstring and comments inside it included,
decorators not; a nested function is counted on its own and inside the one
that holds it. Methods are named ``Class.method``.
"""

from __future__ import annotations

import argparse
import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("core", "storage", "app")
EXCLUDED = ("storage/migrations/versions",)


@dataclass(frozen=True)
class Function:
    path: str
    name: str
    line: int
    length: int


def functions_in(source: str, path: str) -> list[Function]:
    """Every function and method defined in ``source``, with its length in lines."""
    found: list[Function] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                length = child.end_lineno - child.lineno + 1
                found.append(Function(path, name, child.lineno, length))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source, filename=path), "")
    return found


def source_files(root: Path = ROOT) -> list[Path]:
    files = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if not any(relative.startswith(excluded + "/") for excluded in EXCLUDED):
                files.append(path)
    return files


def longest(root: Path = ROOT) -> list[Function]:
    """All functions under the folders, longest first (ties by file and line)."""
    every = []
    for path in source_files(root):
        every += functions_in(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix())
    return sorted(every, key=lambda f: (-f.length, f.path, f.line))


def table(rows: list[Function]) -> str:
    lines = ["| lines | function | file:line |", "|---:|---|---|"]
    lines += [f"| {f.length} | `{f.name}` | `{f.path}:{f.line}` |" for f in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=10, help="how many to list (default 10)")
    parser.add_argument("--over", type=int, help="list every function longer than this many lines instead")
    args = parser.parse_args(argv)
    every = longest()
    rows = [f for f in every if f.length > args.over] if args.over is not None else every[: args.top]
    print(table(rows))
    print(f"\n{len(every)} functions in {', '.join(FOLDERS)}; {sum(f.length > 120 for f in every)} over 120 lines")


if __name__ == "__main__":
    main()
