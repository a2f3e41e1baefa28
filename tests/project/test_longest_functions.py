"""benchmarks/longest_functions.py: the lengths it reports and the files it reads."""

from __future__ import annotations

from benchmarks.longest_functions import ROOT, functions_in, longest, source_files

SOURCE = '''
import functools


def top(a):
    """Docstring
    on two lines."""
    def inner():
        return a

    return inner


class Holder:
    @functools.cache
    def method(self):
        return 1

    async def waiting(self):
        pass
'''


def test_lengths_count_from_the_def_line_to_the_last_docstring_included():
    found = {f.name: (f.line, f.length) for f in functions_in(SOURCE, "x.py")}
    assert found == {
        "top": (5, 7),
        "top.inner": (8, 2),
        "Holder.method": (16, 2),
        "Holder.waiting": (19, 2),
    }


def test_reads_core_storage_and_app_but_not_the_generated_migrations():
    relative = [path.relative_to(ROOT).as_posix() for path in source_files()]
    assert {path.split("/")[0] for path in relative} == {"core", "storage", "app"}
    assert "storage/migrations/env.py" in relative
    assert (ROOT / "storage/migrations/versions").is_dir()
    assert not any(path.startswith("storage/migrations/versions/") for path in relative)


def test_longest_first():
    lengths = [f.length for f in longest()]
    assert lengths == sorted(lengths, reverse=True)
