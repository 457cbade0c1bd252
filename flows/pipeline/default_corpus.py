"""The corpus `make run` uses when none is given: the demo corpus shipped with the package.

`flows/pipeline/demo_corpus/` (package data; its README.md gives the sources, attribution and
licences) holds a real English Wikipedia dump sample in the dump's own XML + bz2 format, so the demo
exercises the real Wikipedia path of the segment stage (XML streaming, wikitext cleaning, redirects
and non-article pages skipped), is small enough for an end-to-end run on a laptop CPU in minutes,
and needs neither the network nor `../shared`.
"""

from __future__ import annotations

from pathlib import Path

from albert.errors import StageError

DEMO_CORPUS_DIR = Path(__file__).resolve().parent / "demo_corpus"
DEMO_CORPUS_FILES = ("enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",)


def default_corpus() -> list[str]:
    """Paths of the demo corpus files inside the installed package."""
    paths = [DEMO_CORPUS_DIR / name for name in DEMO_CORPUS_FILES]
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise StageError(f"{missing[0]}: the demo corpus is missing from the install; pass --input")
    return [str(path) for path in paths]
