"""The documentation: a README a newcomer can read, and links that lead somewhere.

The README stays a user's page (at most ``README_MAX_LINES`` lines) that opens with the two
commands, and every relative link or image in the README and in ``docs/`` names a file of the
repository (and, with ``#anchor``, a heading of that file). No module refers to a design
document outside the repository: the design is ``docs/design.md``.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
README_MAX_LINES = 300
#: the README's first lines: the title and the two commands, exactly
README_OPENING = [
    "# MarginLab",
    "",
    "```",
    "make run     # start the app on the bundled demo dataset (digits, 8 vs rest) with a SQLite file, "
    "at http://127.0.0.1:8501",
    "make test    # install what the tests need (Python packages, Debian's chromium and postgresql) and run them",
    "```",
]
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def links(markdown: str) -> list[str]:
    """The targets of the links and images of a Markdown text, outside code."""
    prose = _INLINE_CODE.sub("", _FENCE.sub("", markdown))
    return _LINK.findall(prose)


def heading_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown text (lower case, punctuation dropped,
    spaces to hyphens, a repeated one numbered -1, -2, ...)."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for line in _FENCE.sub("", markdown).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        text = _INLINE_CODE.sub(lambda m: m.group(0).strip("`"), match.group(1)).lower()
        slug = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN").replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def broken_links(document: Path, root: Path = ROOT) -> list[str]:
    """Each relative link of ``document`` that names no file of the repository ``root``, or no heading."""
    broken = []
    for target in links(document.read_text(encoding="utf-8")):
        if _EXTERNAL.match(target):
            continue
        if target.startswith("/"):
            broken.append(f"{target} (an absolute path, not a link inside the repository)")
            continue
        path_part, _, anchor = target.partition("#")
        linked = (document.parent / path_part).resolve() if path_part else document
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif root not in linked.parents and linked != root:
            broken.append(f"{target} (outside the repository)")
        elif anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked.read_text(encoding="utf-8")):
            broken.append(f"{target} (no heading #{anchor} in {linked.name})")
    return broken


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; at most {README_MAX_LINES}"


def test_readme_starts_with_the_two_commands():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[: len(README_OPENING)] == README_OPENING


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(document):
    assert broken_links(document) == [], f"broken links in {document.relative_to(ROOT)}"


def test_docs_link_every_document_from_the_readme():
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in links(README.read_text(encoding="utf-8"))}
    unlinked = [p.name for p in DOCUMENTS[1:] if p.resolve() not in linked]
    assert unlinked == [], f"documents in docs/ that the README does not link: {unlinked}"


def test_no_module_refers_to_a_design_document_outside_the_repository():
    outside_name = "DESIGN" + ".md"  # (spelled in two parts so that this file does not match itself)
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("app", "core", "storage", "tests", "benchmarks")
        for path in (ROOT / folder).rglob("*.py")
        if outside_name in path.read_text(encoding="utf-8")
    ]
    assert offenders == [], f"modules naming {outside_name} instead of docs/design.md: {offenders}"


# -- the checks themselves


def test_broken_links_are_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A title\n\n## Its part\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/a.md) [ok](docs/a.md#its-part) [ok](#here) [web](https://example.org)\n"
        "`[in code](missing.md)`\n```\n[in a block](missing.md)\n```\n"
        "# Here\n[gone](docs/b.md) [no heading](docs/a.md#nowhere) ![image](docs/x.png) [abs](/etc/passwd)\n",
        encoding="utf-8",
    )
    assert broken_links(page, root=tmp_path) == [
        "docs/b.md (no such file)",
        "docs/a.md#nowhere (no heading #nowhere in a.md)",
        "docs/x.png (no such file)",
        "/etc/passwd (an absolute path, not a link inside the repository)",
    ]


def test_heading_anchors_follow_github():
    text = "# The first load, with the item's own element\n## `lasvm` memory\n## Notes\n## Notes\n"
    assert heading_anchors(text) == {"the-first-load-with-the-items-own-element", "lasvm-memory", "notes", "notes-1"}
