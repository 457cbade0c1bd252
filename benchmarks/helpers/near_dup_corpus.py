"""The planted corpora of benchmarks/near_dedup.py: the shared Wikipedia sample's articles and the
books cut into chunks, some followed by near-copies edited in one of five ways (a verse dropped,
1-4% of the words changed, case and punctuation changed, a notice added, a verse dropped and words
changed), the same for one seed; written as JSONL, and the document keys segment gives them."""

from __future__ import annotations

import json
import random
from pathlib import Path

from pipelines.segment import input_formats
from pipelines.segment import stage as segment

DATA = Path("..") / "shared" / "data"
WIKI = DATA / "wikipedia" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
BOOKS = DATA / "books"
NAME = "corpus.jsonl"
"""The corpus file's name: segment's document keys are made of it."""
NOTICE = "This text was scanned and proofread by volunteers. Distributed by a digital library."


def base_documents(chunk_words: int = 2000) -> list[str]:
    """The Wikipedia sample's articles (cleaned) and the books in chunks of ~`chunk_words`."""
    documents = []
    with open(WIKI, "rb") as raw:
        for doc in input_formats.read_documents(str(WIKI), raw, "auto", inc=lambda *_: None):
            text = "\n\n".join(segment.clean_paragraphs(doc.format, doc.text, "NFKC"))
            if len(text.split()) >= 50:
                documents.append(text)
    for path in sorted(BOOKS.glob("*.txt")):
        paragraphs = [p for p in path.read_text(encoding="latin-1").split("\n\n") if p.strip()]
        chunk: list[str] = []
        for paragraph in paragraphs:
            chunk.append(paragraph)
            if sum(len(p.split()) for p in chunk) >= chunk_words:
                documents.append("\n\n".join(chunk))
                chunk = []
    return documents


def plant(text: str, kind: int, generator: random.Random) -> str:
    """A near-copy of `text`: one of five kinds of edit."""
    paragraphs = text.split("\n\n")
    if kind in (0, 4) and len(paragraphs) > 2:  # a verse dropped
        del paragraphs[generator.randrange(len(paragraphs))]
        text = "\n\n".join(paragraphs)
    if kind in (1, 4):  # words changed: 1-4%
        rate = generator.choice((0.01, 0.02, 0.03, 0.04)) if kind == 1 else 0.01
        text = " ".join(w if generator.random() > rate else "changed" for w in text.split(" "))
    if kind == 2:
        text = text.upper().replace(",", " ;").replace(".", "!")
    if kind == 3:
        text = f"{NOTICE}\n\n{text}\n\n{NOTICE}"
    return text


def planted_corpus(
    copies: int = 1,
    every: int = 3,
    limit: int | None = None,
    seed: int = 44,
    chunk_words: int = 2000,
):
    """(documents, planted): every `every`-th of the first `limit` base documents followed by
    `copies` near-copies."""
    generator = random.Random(seed)
    documents, planted = [], 0
    for index, text in enumerate(base_documents(chunk_words)[:limit]):
        documents.append(text)
        for copy in range(copies if index % every == 0 else 0):
            documents.append(plant(text, (index // 3 + copy) % 5, generator))
            planted += 1
    return documents, planted


def keys(size: int) -> list[bytes]:
    """The keys segment gives the first `size` lines of NAME (lines count from 1): document n's
    key at index n."""
    return [segment.document_key(NAME, str(number + 1)) for number in range(size)]


def write_jsonl(documents: list[str], path: Path) -> float:
    """One `{"id": n, "text"}` line per document at `path`; the file's size in MB."""
    with path.open("w", encoding="utf-8") as handle:
        for number, text in enumerate(documents):
            handle.write(json.dumps({"id": str(number), "text": text}) + "\n")
    return path.stat().st_size / 1e6
