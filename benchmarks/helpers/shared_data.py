"""The shared corpora the benchmarks read (../shared/data, or $ALBERT_SHARED_DATA)."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(
    os.environ.get("ALBERT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")
)
WIKIPEDIA_SAMPLE = (
    SHARED / "wikipedia" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
)
# The books + Wikipedia corpus: segment's inputs (the books are latin-1 where not UTF-8).
BOOKS_AND_WIKIPEDIA = [str(SHARED / "books" / "*.txt"), str(WIKIPEDIA_SAMPLE)]
# The prose books (no verse, no plays), by file stem.
PROSE_BOOKS = (
    "austen-emma",
    "austen-persuasion",
    "austen-sense",
    "chesterton-ball",
    "chesterton-brown",
    "chesterton-thursday",
    "melville-moby_dick",
)
