"""The held-out split of the TFRecords stage: whole documents, chosen by a stable hash of their
text.

The hash is independent of the seed, so every run on the same corpus holds out the same documents.
A document is held out when its hash is below a cutoff: the `heldout_fraction` quantile of the hash
space, raised if needed so that at least `heldout_min_documents` documents are held out (while at
least one is left for training). `heldout-documents-*.txt` lists them (hash, key).
"""

from __future__ import annotations

from typing import NamedTuple

import apache_beam as beam

from albert.hashing import stable_hash

HASH_SPACE = 1 << 63
HELDOUT_PREFIX = "heldout"
HELDOUT_LIST_PREFIX = "heldout-documents"


class Document(NamedTuple):
    """One document of the segmented corpus, after the spread over workers."""

    hash: int  # text_hash of its text
    key: bytes  # b"<file name>:<document index>"
    lines: list[str]  # its sentences, one a line, line breaks kept
    heldout: bool  # hash < the held-out cutoff


def text_hash(text: bytes) -> int:
    """The stable 63-bit hash of a document whose lines, joined, are `text` (UTF-8); 63 bits so
    that Beam encodes it as a signed 64-bit integer."""
    return stable_hash(b"document:" + text) >> 1


def heldout_cutoff(smallest: list[int], count: int, fraction: float, min_documents: int) -> int:
    """The hash below which a document is held out, from the corpus's `min_documents` smallest
    document hashes (sorted or not) and its document count: the `fraction` quantile of the hash
    space, raised to take in the `min_documents` smallest hashes while one document stays in
    training."""
    cutoff = HASH_SPACE if fraction >= 1 else int(fraction * HASH_SPACE)
    needed = min(min_documents, count - 1)
    if needed > 0:
        cutoff = max(cutoff, sorted(smallest)[needed - 1] + 1)
    return cutoff


class HeldoutCutoff(beam.PTransform):
    """document hashes -> one element: their `heldout_cutoff` (use it as an AsSingleton)."""

    def __init__(self, fraction: float, min_documents: int):
        super().__init__()
        self.fraction, self.min_documents = fraction, min_documents

    def expand(self, hashes):
        count = hashes | "Count" >> beam.combiners.Count.Globally()
        return (
            hashes
            | "Smallest" >> beam.combiners.Top.Smallest(max(1, self.min_documents))
            | "Cutoff"
            >> beam.Map(
                heldout_cutoff,
                count=beam.pvalue.AsSingleton(count),
                fraction=self.fraction,
                min_documents=self.min_documents,
            )
        )


def heldout_list_line(document: Document) -> tuple[bytes, bytes]:
    """(sort key, line) of the held-out documents' list: '<hash as 16 hex digits>\\t<key>'."""
    line = b"%016x\t%s\n" % (document.hash, document.key)
    return line, line


def few_documents_note(documents: int, heldout: int, min_documents: int) -> str | None:
    """One line when the corpus has fewer documents than `min_documents` (--heldout-min-documents):
    the counts and what the held-out split then measures; None otherwise."""
    if documents >= min_documents:
        return None
    scored = "that document" if heldout == 1 else "those documents"
    meaning = (
        "nothing is held out, so there are no held-out figures"
        if not heldout
        else f"held-out figures score {scored} only, not a sample of the corpus"
    )
    return (
        f"the corpus yields {documents} document{'s' if documents != 1 else ''}, fewer than "
        f"--heldout-min-documents {min_documents}: {heldout} held out whole, "
        f"{documents - heldout} trained on; {meaning} (split it into more documents: "
        "docs/segment.md)"
    )
