"""Every relative link in README.md and docs/*.md points to a file that exists and, with an
`#anchor`, to a heading of it (GitHub's heading slugs); links inside code fences are not links."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(path: Path):
    """(line number, line) of `path` outside ``` fences."""
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield number, line


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of `path`'s headings, repeated ones numbered as GitHub does (`-1`, `-2`)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(path):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            found.add(base if count == 0 else f"{base}-{count}")
            seen[base] = count + 1
    return found


def broken_links(path: Path) -> list[str]:
    """`file:line: target: reason` for each relative link of `path` that leads nowhere."""
    broken = []
    for number, line in prose_lines(path):
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto: ...
            file_part, _, anchor = target.partition("#")
            destination = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(ROOT)}:{number}: {target}"
            if not destination.exists():
                broken.append(f"{where}: no such file")
            elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
                broken.append(f"{where}: no such heading")
    return broken


def test_every_relative_link_in_the_readme_and_docs_leads_somewhere():
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = [entry for document in documents for entry in broken_links(document)]
    assert not broken, "\n".join(broken)
