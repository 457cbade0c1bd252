"""The truth benchmarks/near_dedup.py scores against: the exact Jaccard of every pair of documents'
word 5-gram sets, the redundant copies it implies (the groups of pairs >= 0.8, all but one of each
group) and a removed set's scores (recall of those copies, removals without a partner >= 0.5)."""

from __future__ import annotations

from collections import defaultdict

from pipelines.common.word_ngrams import normalised_words, word_ngrams


def truth_pairs(documents: list[str]) -> dict[tuple[int, int], float]:
    """Exact Jaccard of every pair sharing a shingle (an inverted index, not n^2 set operations)."""
    sets = [set(word_ngrams(normalised_words(text), 5)) for text in documents]
    index: dict[str, list[int]] = defaultdict(list)
    for number, shingles in enumerate(sets):
        for shingle in shingles:
            index[shingle].append(number)
    shared: dict[tuple[int, int], int] = defaultdict(int)
    for holders in index.values():
        for i, first in enumerate(holders):
            for second in holders[i + 1 :]:
                shared[first, second] += 1
    return {
        pair: count / (len(sets[pair[0]]) + len(sets[pair[1]]) - count)
        for pair, count in shared.items()
    }


def components(pairs, size: int) -> list[set[int]]:
    """The connected groups (two documents or more) of `pairs` over documents 0..size-1."""
    parent = list(range(size))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for first, second in pairs:
        parent[find(first)] = find(second)
    groups: dict[int, set[int]] = defaultdict(set)
    for number in range(size):
        groups[find(number)].add(number)
    return [group for group in groups.values() if len(group) > 1]


def scores(removed: set[int], truth: dict, size: int) -> dict:
    """Recall of redundant copies (truth >= 0.8) and removed documents without a partner >= 0.5."""
    groups = components([p for p, j in truth.items() if j >= 0.8], size)
    redundant = sum(len(g) - 1 for g in groups)
    found = sum(min(len(g & removed), len(g) - 1) for g in groups)
    partnered = {d for p, j in truth.items() if j >= 0.5 for d in p}
    return {
        "removed": len(removed),
        "redundant_copies": redundant,
        "recall": round(found / redundant, 4) if redundant else None,
        "removed_without_partner_0_5": sorted(removed - partnered),
    }
