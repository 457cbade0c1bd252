"""The corpus `make run` uses when none is given: a real Wikipedia dump sample that ships offline.

gensim (a pinned dependency for this reason) ships `enwiki-latest-pages-articles1.xml-p000000010p000030302
-shortened.bz2` in its wheel: 206 real English Wikipedia pages (~5.7M characters of wikitext, CC BY-SA)
in the dump's own XML + bz2 format. It therefore exercises the real Wikipedia path of the segment stage
(XML streaming, wikitext cleaning, redirects and non-article pages skipped), is small enough for an
end-to-end run on a laptop CPU in minutes, and needs neither the network nor `../shared`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from albert.stage import StageError

DEFAULT_CORPUS_FILE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def default_corpus() -> str:
    """Path of the Wikipedia sample inside the installed gensim package (gensim is not imported)."""
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise StageError("the default corpus ships with gensim==4.4.0, which is not installed; pass --input")
    path = Path(next(iter(spec.submodule_search_locations))) / "test" / "test_data" / DEFAULT_CORPUS_FILE
    if not path.is_file():
        raise StageError(f"{path}: the Wikipedia sample is missing from the gensim install; pass --input")
    return str(path)
