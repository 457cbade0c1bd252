"""The English sources of the quality mix (benchmarks/helpers/quality_mix.py), read from the shared
corpora as segment reads them: the Wikipedia sample's articles, passages of the books and SQuAD 1.1
dev contexts. Each reader returns the same text for the same arguments (the books' passages: for
the same generator state)."""

from __future__ import annotations

import bz2
import json
import random

from benchmarks.helpers.shared_data import SHARED, WIKIPEDIA_SAMPLE
from pipelines.segment import input_formats


def _ignore(_name: str, _amount: int) -> None:
    pass


def wikipedia_articles() -> list[tuple[str, ...]]:
    """The sample's main-namespace articles as cleaned paragraphs, those of >= 100 words."""
    from pipelines.segment import (
        stage as segment,  # Beam: loaded where the mix is built, not for its parts
    )

    articles = []
    with bz2.open(WIKIPEDIA_SAMPLE, "rb") as stream:
        for doc in input_formats.read_wikipedia(stream, "fail", _ignore):
            paragraphs = segment.clean_paragraphs("wikipedia", doc.text, "NFKC")
            if sum(len(p.split()) for p in paragraphs) >= 100:
                articles.append(paragraphs)
    return articles


def book_passages(per_book: int, generator: random.Random) -> dict[str, list[tuple[str, ...]]]:
    """{book stem: passages}: `per_book` runs of consecutive paragraphs of 300-800 words each,
    starting at random paragraphs (the books are decoded as segment decodes them)."""
    from pipelines.segment import stage as segment

    passages = {}
    for path in sorted((SHARED / "books").glob("*.txt")):
        with path.open("rb") as raw:
            (book,) = input_formats.read_book(raw, "latin-1", _ignore)
        paragraphs = segment.clean_paragraphs("books", book.text, "NFKC")
        population = range(len(paragraphs) // 10, len(paragraphs))
        starts = sorted(generator.sample(population, min(per_book, len(population))))
        chosen = []
        for start in starts:
            passage, words = [], 0
            for paragraph in paragraphs[start:]:
                if words + len(paragraph.split()) > 800 and words >= 300:
                    break
                passage.append(paragraph)
                words += len(paragraph.split())
                if words >= 300 and len(passage) >= 3:
                    break
            chosen.append(tuple(passage))
        passages[path.stem] = chosen
    return passages


def squad_contexts() -> list[str]:
    """SQuAD 1.1 dev contexts of >= 50 words, in file order."""
    data = json.loads((SHARED / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
    contexts = (p["context"] for article in data["data"] for p in article["paragraphs"])
    return [" ".join(c.split()) for c in contexts if len(c.split()) >= 50]
