"""Evaluation-set contamination of a segmented corpus, as pure functions: the n-gram index of the
evaluation examples, the overlaps of one corpus document with it, and the report.

An example is contaminated when one of its texts shares a word n-gram (default 13 words, GPT-3's
measure) of normalised text (`pipelines.common.word_ngrams`: case, punctuation, whitespace and
Unicode form folded) with a corpus document. Texts are indexed one by one, so no n-gram spans two
texts of an example; a text that several examples share (a SQuAD context, a RACE article) is indexed
once. An overlap is reported per example and document: the longest run of consecutive shared n-grams
(its length in words) and the document's sentence lines that run covers. The segmented corpus keeps
sentences and documents, not paragraphs: the passage an overlap reports, and `--remove` removes, is
the run of sentence lines its shared n-grams cover.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from albert.hashing import stable_hash
from pipelines.common.word_ngrams import normalised_words, word_ngrams
from pipelines.decontaminate.eval_sets import EvalExample, EvalSplit

DEFAULT_NGRAM = 13
TEXTS_PER_EXAMPLE = 8
"""A text's id is `example number * 8 + its place among the example's texts` (RACE has 6)."""
SPLIT_BITS = 32
"""An example's number is `split index << 32 | its place in the split`."""


@dataclass(frozen=True, eq=False)
class NgramIndex:
    """`stable_hash` of an n-gram -> the ids of the texts holding it, as three arrays: `keys`
    (uint64, sorted, unique) and the text ids of `keys[i]`, `text_ids[starts[i]:starts[i + 1]]`
    (sorted). Arrays, not a dict: Beam encodes and sizes a side input of arrays in no time, and
    took 20 s over a dict of SQuAD dev's quarter million n-grams."""

    keys: np.ndarray
    starts: np.ndarray
    text_ids: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)

    def lookup(self, hashes: Sequence[int]) -> Iterator[tuple[int, np.ndarray]]:
        """(position, text ids) for each of `hashes` that is a key, in position order."""
        if not len(self.keys) or not len(hashes):
            return
        values = np.array(hashes, dtype=np.uint64)
        slots = np.minimum(np.searchsorted(self.keys, values), len(self.keys) - 1)
        for position in np.flatnonzero(self.keys[slots] == values):
            slot = slots[position]
            yield int(position), self.text_ids[self.starts[slot] : self.starts[slot + 1]]


Sharers = dict[int, tuple[int, ...]]
"""The id of a text several examples share -> those examples' numbers, sorted."""


@dataclass(frozen=True)
class Overlap:
    """Example `example` (its number) shares a run of `words` words with corpus document
    `document`, on its sentence lines `first_line`..`last_line` (0-based, inclusive)."""

    example: int
    document: str
    first_line: int
    last_line: int
    words: int


def ngram_hash(ngram: str) -> int:
    return stable_hash(ngram.encode("utf-8"))


def text_hashes(text: str, n: int) -> set[int]:
    """The hashes of the text's normalised word n-grams (none for fewer than `n` words)."""
    return {ngram_hash(gram) for gram in word_ngrams(normalised_words(text), n)}


def example_number(split: int, position: int) -> int:
    return split << SPLIT_BITS | position


def split_of(number: int) -> int:
    return number >> SPLIT_BITS


def position_of(number: int) -> int:
    return number & ((1 << SPLIT_BITS) - 1)


def split_index(
    examples: Iterable[EvalExample], split: int, n: int
) -> tuple[NgramIndex, dict[int, list[int]], int, list[str]]:
    """One split's part of the index: (its n-gram index, shared text id -> example numbers, the
    number of examples with at least one n-gram, the example ids in order)."""
    keys: list[int] = []
    owners: list[int] = []
    text_ids: dict[str, int] = {}
    has_ngram: dict[int, bool] = {}
    users: dict[int, list[int]] = {}
    ids: list[str] = []
    checkable = 0
    for position, example in enumerate(examples):
        number = example_number(split, position)
        ids.append(example.id)
        for field, text in enumerate(example.texts[:TEXTS_PER_EXAMPLE]):
            text_id = text_ids.setdefault(text, number * TEXTS_PER_EXAMPLE + field)
            if text_id not in has_ngram:
                hashes = text_hashes(text, n)
                has_ngram[text_id] = bool(hashes)
                keys += hashes
                owners += [text_id] * len(hashes)
            if users.setdefault(text_id, [])[-1:] != [number]:
                users[text_id].append(number)
        checkable += any(has_ngram[text_ids[text]] for text in example.texts[:TEXTS_PER_EXAMPLE])
    shared = {text_id: numbers for text_id, numbers in users.items() if len(numbers) > 1}
    index = _index_of(np.array(keys, dtype=np.uint64), np.array(owners, dtype=np.int64))
    return index, shared, checkable, ids


def _index_of(keys: np.ndarray, text_ids: np.ndarray) -> NgramIndex:
    """The index of (key, text id) pairs, each pair once."""
    order = np.lexsort((text_ids, keys))
    keys, text_ids = keys[order], text_ids[order]
    unique, starts = np.unique(keys, return_index=True)
    return NgramIndex(unique, np.append(starts, len(keys)).astype(np.int64), text_ids)


def merge_index(
    parts: Iterable[tuple[NgramIndex, dict[int, list[int]]]],
) -> tuple[NgramIndex, Sharers]:
    """The whole index from the splits' parts (the same for any order of parts: text ids and shared
    texts are the splits' own)."""
    keys, text_ids, shared = [], [], {}
    for part, part_shared in parts:
        keys.append(np.repeat(part.keys, np.diff(part.starts)))
        text_ids.append(part.text_ids)
        shared.update(part_shared)
    index = _index_of(
        np.concatenate(keys or [np.zeros(0, np.uint64)]),
        np.concatenate(text_ids or [np.zeros(0, np.int64)]),
    )
    return index, {text_id: tuple(sorted(numbers)) for text_id, numbers in sorted(shared.items())}


def _longest_run(positions: list[int]) -> tuple[int, int]:
    """(first, last) of the longest run of consecutive values in sorted `positions` (the earliest
    of equally long runs)."""
    best = (positions[0], positions[0])
    start = previous = positions[0]
    for position in positions[1:]:
        if position != previous + 1:
            start = position
        previous = position
        if previous - start > best[1] - best[0]:
            best = (start, previous)
    return best


def document_overlaps(
    key: str, lines: Sequence[str], index: tuple[NgramIndex, Sharers], n: int
) -> tuple[list[Overlap], set[int]]:
    """The overlaps of one corpus document (its sentence lines) with the index, one per example
    (its longest run over the example's texts), sorted; and every line a shared n-gram touches."""
    ngrams, shared = index
    words: list[str] = []
    line_of: list[int] = []
    for line_number, line in enumerate(lines):
        line_words = normalised_words(line)
        words += line_words
        line_of += [line_number] * len(line_words)
    matched: dict[int, list[int]] = {}
    for position, text_ids in ngrams.lookup([ngram_hash(g) for g in word_ngrams(words, n)]):
        for text_id in text_ids.tolist():
            matched.setdefault(text_id, []).append(position)
    best: dict[int, Overlap] = {}
    touched: set[int] = set()
    for text_id, positions in sorted(matched.items()):
        first, last = _longest_run(positions)
        run = Overlap(-1, key, line_of[first], line_of[last + n - 1], last - first + n)
        for example in shared.get(text_id, (text_id // TEXTS_PER_EXAMPLE,)):
            if example not in best or run.words > best[example].words:
                best[example] = Overlap(example, key, run.first_line, run.last_line, run.words)
        for position in positions:
            touched.update(line_of[position : position + n])
    return [best[example] for example in sorted(best)], touched


def remaining_lines(lines: Sequence[str], touched: set[int]) -> list[str]:
    """The document's lines but those `touched` by an overlap."""
    return [line for number, line in enumerate(lines) if number not in touched]


def contamination_report(
    splits: Sequence[EvalSplit],
    read: Iterable[tuple[int, int, int, list[str]]],
    overlaps: Iterable[Overlap],
    n: int,
) -> dict:
    """contamination.json: per split (in `splits` order) its examples, those with an n-gram, the
    contaminated ones and their overlaps sorted by example then document. `read` holds (split
    index, examples, examples with an n-gram, example ids) per split."""
    by_split = {index: (examples, checkable, ids) for index, examples, checkable, ids in read}
    found: dict[int, list[Overlap]] = {}
    for overlap in overlaps:
        found.setdefault(split_of(overlap.example), []).append(overlap)
    sets = []
    for index, split in enumerate(splits):
        examples, checkable, ids = by_split[index]
        listed = sorted(found.get(index, []), key=lambda o: (o.example, o.document, o.first_line))
        sets.append(
            {
                "name": split.name,
                "split": split.split,
                "path": split.path,
                "examples": examples,
                "examples_with_ngram": checkable,
                "contaminated": len({overlap.example for overlap in listed}),
                "overlaps": [_overlap_json(overlap, ids) for overlap in listed],
            }
        )
    return {"ngram": n, "sets": sets}


def _overlap_json(overlap: Overlap, ids: list[str]) -> dict:
    return {
        "example": ids[position_of(overlap.example)],
        "document": overlap.document,
        "lines": [overlap.first_line, overlap.last_line],
        "words": overlap.words,
    }


def overlaps_from(records: Iterable[tuple]) -> Iterator[Overlap]:
    """Overlaps from the plain tuples a pipeline carries."""
    return (Overlap(*record) for record in records)
