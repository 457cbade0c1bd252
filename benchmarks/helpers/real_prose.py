"""The kinds of real prose of the quality mix (benchmarks/helpers/quality_mix.py) that web-page
rules misjudge, read from Debian's packages and the machine's own documents:
- `scripture`: the King James Bible as Debian's `bible-kjv-text` carries it (its compressed data
  file, read by `bible-kjv`'s program), one chapter per document, one numbered verse a paragraph;
- `statute`: the licences of /usr/share/common-licenses (legal text of numbered clauses), runs of
  consecutive paragraphs of at least 120 words;
- `manual`: sections of the Debian Reference (`debian-reference-en`, `-de`: its plain-text
  edition), paragraphs joined from their wrapped lines, code lines as their own paragraphs, tables
  drawn in ASCII art left out (an HTML converter renders them otherwise), sections of over 50
  words;
- `man_page`: the DESCRIPTION of the machine's manual pages (English: sections 5 and 8, German:
  /usr/share/man/de, those whose description is German), rendered by `man` on one line per
  paragraph;
- `short`: sections of 30-50 words, the first paragraphs of the manual's sections.

The Debian packages are downloaded once into a cache (`debian_folder`, as udhr_texts.udhr_folder
fills its own) with apt-get and dpkg-deb; RuntimeError (one line) where that is not possible.
Each document comes with `held_out`: a half of every kind chosen by its source (a book of the
Bible, a licence, a chapter of the manual, a page), reported apart from the other half."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

from albert.hashing import stable_hash
from benchmarks.helpers.udhr_texts import UDHR_CACHE, chunks

PACKAGES = ("bible-kjv", "bible-kjv-text", "debian-reference-en", "debian-reference-de")
LICENCES = Path("/usr/share/common-licenses")
MAN_PAGES = {"en": ("/usr/share/man/man5", "/usr/share/man/man8"), "de": ("/usr/share/man/de",)}
_HEADING = re.compile(r"^\d+(\.\d+)*\.\s\S")
_CHAPTER = re.compile(r"^(\S.*) (\d+)$")
_VERSE = re.compile(r"^ +(\d+) (.*)$")


class Prose(NamedTuple):
    """One document of real prose: kind, language, source name, paragraphs, held out or not."""

    kind: str
    language: str
    source: str
    paragraphs: tuple[str, ...]
    held_out: bool


def held_out(source: str) -> bool:
    """Whether a source belongs to the held-out half (a stable hash of its name)."""
    return stable_hash(source.encode()) % 2 == 1


def debian_folder() -> Path:
    """The PACKAGES extracted: $ALBERT_DEBIAN_TEXTS, else a cache that apt-get and dpkg-deb fill
    once. Raises RuntimeError (one line) where neither is possible."""
    if os.environ.get("ALBERT_DEBIAN_TEXTS"):
        return Path(os.environ["ALBERT_DEBIAN_TEXTS"])
    folder = UDHR_CACHE / "debian-texts"
    if (folder / "kjv.txt").is_file():
        return folder
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"the Debian packages {', '.join(PACKAGES)} need {tool}")
    with tempfile.TemporaryDirectory() as temp:
        run = lambda *command: subprocess.run(command, check=True, capture_output=True, cwd=temp)
        try:
            run("apt-get", "download", *PACKAGES)
        except subprocess.CalledProcessError as error:
            message = error.stderr.decode(errors="replace").strip().splitlines()[-1:]
            raise RuntimeError(f"apt-get download {' '.join(PACKAGES)}: {message}") from None
        for archive in sorted(Path(temp).glob("*.deb")):
            run("dpkg-deb", "-x", str(archive), str(folder))
        bible = subprocess.run(
            [str(folder / "usr/bin/bible"), "-p", str(folder / "usr/lib"), "gen1:1-rev22:21"],
            check=True,
            capture_output=True,
        )
    (folder / "kjv.txt").write_bytes(bible.stdout)
    return folder


def scripture(folder: Path) -> list[Prose]:
    """Every chapter of the King James Bible: its verses, numbered, one a paragraph."""
    docs: list[Prose] = []
    book, verses = "", []

    def close():
        if verses:
            docs.append(Prose("scripture", "en", title, tuple(verses), held_out(book)))

    title = ""
    for line in (folder / "kjv.txt").read_text(encoding="utf-8").splitlines():
        if chapter := _CHAPTER.match(line):
            close()
            book, title, verses = chapter.group(1), line, []
        elif verse := _VERSE.match(line):
            verses.append(f"{verse.group(1)} {verse.group(2)}")
        elif line.strip() and verses:
            verses[-1] += " " + line.strip()
    close()
    return docs


def _blocks(lines: list[str]) -> list[list[str]]:
    """Runs of non-blank lines."""
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    return [block for block in blocks if block]


def _paragraphs(block: list[str]) -> list[str]:
    """A block's paragraphs: its lines joined, or each line alone where they are code (a prompt
    "$ " or "# " first) or a table drawn in ASCII art (left out)."""
    first = " ".join(block[0].split())
    if first.startswith(("|", "+-")):
        return []
    if first.startswith(("$ ", "# ")):
        return [line.strip() for line in block]
    return [" ".join(" ".join(line.split()) for line in block)]


def statutes() -> list[Prose]:
    """The licences' paragraphs in runs of at least 120 words (not the symbolic links)."""
    docs = []
    for path in sorted(LICENCES.iterdir()):
        if path.is_symlink() or not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        paragraphs = [p for block in _blocks(lines) for p in _paragraphs(block)]
        for index, run in enumerate(chunks(paragraphs, "en", 120)):
            docs.append(Prose("statute", "en", f"{path.name}#{index}", run, held_out(path.name)))
    return docs


def manual_sections(folder: Path, language: str) -> list[Prose]:
    """The Debian Reference's sections in `language` (after its table of contents): their
    paragraphs, sections of over 50 words as `manual`, the first paragraphs of the others of 30
    words or more, up to 50, as `short`."""
    path = folder / f"usr/share/debian-reference/debian-reference.{language}.txt.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    sections: list[tuple[str, list[str]]] = []
    for line in lines:
        if _HEADING.match(line):
            sections.append((line.strip(), []))
        elif sections:
            sections[-1][1].append(line)
    docs = []
    for title, body in sections:
        paragraphs = [p for block in _blocks(body) for p in _paragraphs(block)]
        words = sum(len(p.split()) for p in paragraphs)
        chapter = f"{language}:{title.split('.')[0]}"
        if words > 50:
            docs.append(Prose("manual", language, title, tuple(paragraphs), held_out(chapter)))
        short: list[str] = []
        for paragraph in paragraphs:
            if sum(len(p.split()) for p in short) + len(paragraph.split()) > 50:
                break
            short.append(paragraph)
        if 30 <= sum(len(p.split()) for p in short):
            docs.append(Prose("short", language, title, tuple(short), held_out(chapter)))
    return docs


DESCRIPTION = {"en": "DESCRIPTION", "de": "BESCHREIBUNG"}
GERMAN_WORDS = frozenset(
    ("der", "die", "das", "und", "ist", "nicht", "ein", "eine", "mit", "von", "zu", "den", "sie")
    + ("werden", "wird", "auf", "für", "im", "dem", "des")
)
"""German function words: a German page's description holds them (one left untranslated under a
translated heading does not)."""


def _in_language(paragraphs: list[str], language: str) -> bool:
    """Whether a description is in `language`: for German, 10% or more of its words are
    GERMAN_WORDS (the truth of the mix: no language identifier of ours decides it; German prose
    has 15-25%, a half-translated page 5%)."""
    if language != "de":
        return True
    words = [word.lower() for paragraph in paragraphs for word in paragraph.split()]
    return sum(word in GERMAN_WORDS for word in words) >= 0.1 * len(words)


def _description(text: str, language: str) -> list[str]:
    """The paragraphs of a rendered manual page's DESCRIPTION in `language` (an untranslated page
    has none)."""
    paragraphs, inside = [], False
    for line in text.splitlines():
        if line and not line[0].isspace():
            inside = line.strip() == DESCRIPTION[language]
        elif inside and line.strip():
            paragraphs.append(" ".join(line.split()))
    return paragraphs


def man_pages(language: str, count: int) -> list[Prose]:
    """The DESCRIPTION of the first `count` manual pages in `language` (by file name) whose
    description has over 50 words, in that language (a page whose description is another's
    copy, or a link to one, left out)."""
    paths = sorted(path for folder in MAN_PAGES[language] for path in Path(folder).rglob("*.gz"))
    environment = {**os.environ, "MANWIDTH": "5000", "LC_ALL": "C.UTF-8"}
    docs, seen = [], set()
    for path in paths:
        rendered = subprocess.run(
            ["man", "-l", str(path)], capture_output=True, env=environment, check=False
        ).stdout.decode("utf-8", errors="replace")
        paragraphs = _description(re.sub(r".\x08", "", rendered), language)
        if (
            sum(len(p.split()) for p in paragraphs) > 50
            and _in_language(paragraphs, language)
            and tuple(paragraphs) not in seen
        ):
            seen.add(tuple(paragraphs))
            docs.append(
                Prose("man_page", language, path.name, tuple(paragraphs), held_out(path.name))
            )
            if len(docs) == count:
                break
    return docs
