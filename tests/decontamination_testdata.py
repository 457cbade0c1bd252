"""SQuAD dev passages, lightly edited, planted in real books: the decontamination tests' and
benchmark's corpus with a known truth."""

from __future__ import annotations

import json
import re
from pathlib import Path

_WORD = re.compile(r"[A-Za-z]{5,}")


def squad_passages(squad_json: Path, count: int, stride: int = 37) -> list[tuple[str, list[str]]]:
    """(context, its question ids) of `count` SQuAD paragraphs of at least 60 words, every
    `stride`-th one in file order (so that they come from many articles)."""
    paragraphs = [
        (paragraph["context"], [qa["id"] for qa in paragraph["qas"]])
        for article in json.loads(squad_json.read_text(encoding="utf-8"))["data"]
        for paragraph in article["paragraphs"]
        if len(paragraph["context"].split()) >= 60
    ]
    return paragraphs[::stride][:count]


def lightly_edited(text: str, kind: int) -> str:
    """The text as a copy might carry it: by `kind`, all lower case or upper case, its commas
    dropped or doubled, and always one word near the middle changed."""
    middle = len(text) // 2
    word = _WORD.search(text, middle) or _WORD.search(text)
    text = text[: word.start()] + "changed" + text[word.end() :]
    text = text.lower() if kind % 2 == 0 else text.upper()
    return text.replace(",", "") if kind % 3 == 0 else text.replace(",", " ,,")


def plant(book: str, passages: list[str]) -> str:
    """The book's text with each passage inserted as a paragraph of its own, spread evenly over
    the book (at paragraph breaks)."""
    breaks = [match.start() for match in re.finditer(r"\n\s*\n", book)]
    cuts = [
        breaks[(index + 1) * len(breaks) // (len(passages) + 1)] for index in range(len(passages))
    ]
    parts, start = [], 0
    for cut, passage in zip(cuts, passages):
        parts += [book[start:cut], f"\n\n{passage}"]
        start = cut
    return "".join(parts) + book[start:]


def _book_text(path: Path) -> str:
    """A book's text: UTF-8, or Latin-1 where a Gutenberg file is not UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def planted_books(
    books: list[Path], squad_json: Path, per_book: int, directory: Path
) -> tuple[list[Path], set[str]]:
    """The books, each with `per_book` edited SQuAD passages planted, written to `directory`; and
    the ids of the planted passages' questions."""
    passages = squad_passages(squad_json, per_book * len(books))
    written, questions = [], set()
    for index, book in enumerate(books):
        mine = passages[index * per_book : (index + 1) * per_book]
        edited = [lightly_edited(context, kind) for kind, (context, _) in enumerate(mine)]
        path = directory / book.name
        path.write_text(plant(_book_text(book), edited), encoding="utf-8")
        written.append(path)
        questions.update(question for _, ids in mine for question in ids)
    return written, questions
