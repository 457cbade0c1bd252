"""Which documents are near-duplicates: candidates, their exact check, clusters, the one kept.

A node names a document: one tag byte, REFERENCE (a document of an earlier corpus, given by its
signature files: never removed, never output) or CURRENT (a document of this run), then its 8-byte
key. Nodes sort references first, then by key.

`candidate_pairs` takes the members of one LSH bucket: a band collision only makes a candidate.
`accepted` checks a candidate by the exact Jaccard similarity of the two shingle sets: a pair is
accepted at `threshold` or above, whatever the signatures estimate. `removals` takes every accepted
pair at once (a small set) and forms connected components; each keeps its smallest node (a
reference where it holds one, then the smallest key), which depends on nothing but the documents,
so neither on the runner, the workers nor the input order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

import numpy as np

from pipelines.dedup import minhash

REFERENCE, CURRENT = b"\x00", b"\x01"
NODE_BYTES = 1 + minhash.KEY_BYTES


class Member(NamedTuple):
    """A document in an LSH bucket: its node and signature."""

    node: bytes
    signature: np.ndarray


class Pair(NamedTuple):
    """An accepted pair: `first` sorts before `second`; `similarity` is the exact Jaccard
    similarity of their shingle sets."""

    first: bytes
    second: bytes
    similarity: float
    first_text: str
    second_text: str


class Removal(NamedTuple):
    """A removed document: `node` duplicates `duplicate_of` (an accepted pair of `similarity`),
    through which it joins the cluster whose kept document is `kept`."""

    node: bytes
    text: str
    duplicate_of: bytes
    duplicate_of_text: str
    similarity: float
    kept: bytes


def node(tag: bytes, key: bytes) -> bytes:
    return tag + key


def is_reference(name: bytes) -> bool:
    return name[:1] == REFERENCE


def key_of(name: bytes) -> bytes:
    return name[1:]


def candidate_pairs(members: Iterable[Member], threshold: float) -> Iterator[tuple[bytes, bytes]]:
    """The candidate pairs (first node, second node) of one bucket, members given in node order.

    Each current member is a candidate with each of the bucket's representatives so far: every
    reference, and every current member whose signature estimated none before it at `threshold`
    or above. So a bucket of m copies of a few documents costs m times their representatives, not
    m squared; a member left out of the representatives meets the later ones through the one it
    resembles (the clusters are connected components) or in another band. References are never
    candidates with each other. A pair may come from several bands: callers count it once."""
    nodes: list[bytes] = []
    signatures: list[np.ndarray] = []
    for member in members:
        resembles = False
        if signatures and not is_reference(member.node):
            scores = minhash.similarities(np.stack(signatures), member.signature)
            resembles = bool(np.any(scores >= threshold))
            for first in nodes:
                yield first, member.node
        if not resembles:
            nodes.append(member.node)
            signatures.append(member.signature)


def accepted(first: np.ndarray, second: np.ndarray, threshold: float) -> float | None:
    """The exact Jaccard similarity of two shingle sets where it is at least `threshold`, else
    None."""
    similarity = minhash.shingle_jaccard(first, second)
    return similarity if similarity >= threshold else None


def removals(pairs: Iterable[Pair]) -> tuple[list[Removal], int]:
    """(every removed current document, the number of clusters) from the accepted pairs.

    A cluster is a connected component; its smallest node is kept and every other current node is
    removed, naming the node it was reached from in a breadth-first walk from the kept one (the
    smallest first) and that pair's similarity. Repeated pairs count once."""
    neighbours: dict[bytes, dict[bytes, float]] = {}
    texts: dict[bytes, str] = {}
    for pair in pairs:
        neighbours.setdefault(pair.first, {})[pair.second] = pair.similarity
        neighbours.setdefault(pair.second, {})[pair.first] = pair.similarity
        texts[pair.first], texts[pair.second] = pair.first_text, pair.second_text
    seen: set[bytes] = set()
    removed: list[Removal] = []
    clusters = 0
    for kept in sorted(neighbours):
        if kept in seen:
            continue
        clusters += 1
        seen.add(kept)
        frontier = [kept]
        while frontier:
            following = []
            for parent in frontier:
                for child in sorted(neighbours[parent]):
                    if child in seen:
                        continue
                    seen.add(child)
                    following.append(child)
                    if not is_reference(child):
                        removed.append(
                            Removal(
                                child,
                                texts[child],
                                parent,
                                texts[parent],
                                neighbours[parent][child],
                                kept,
                            )
                        )
            frontier = following
    removed.sort()
    return removed, clusters
