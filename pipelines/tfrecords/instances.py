"""Documents -> pretraining instances ([CLS] A [SEP] B [SEP]) for SOP or NSP, as
google-research/albert.

Pure functions over token-id arrays; all randomness comes from the `numpy.random.Generator` passed
in. `pipelines.tfrecords.instance_writer.InstanceWriter` does one document's whole work for the
TFRecords stage (tokenize, build instances, mask, serialize).

Per document (the reference's `create_instances_from_document`): the target length is
`max_seq_length - 3`, or with probability `short_seq_prob` a random length in
[2, max_seq_length - 3]; sentences are gathered into a chunk until it reaches the target or the
document ends; the chunk is split after a random number of sentences into A and B; the longer of A
and B loses a token from the front or the back at random until both fit.

- SOP (ALBERT): with probability 0.5 A and B are swapped, label 1 = swapped, 0 = original order.
  Decision: a chunk of ONE sentence is split inside that sentence at a random piece boundary (the
  reference instead takes B from a random other document, which mixes an NSP example into SOP data).
  A one-sentence chunk of a single piece cannot be split: it is skipped and counted
  (`skipped_single_piece_chunks`).
- NSP (BERT baseline): with probability 0.5, or always for a one-sentence chunk, B comes from a
  random other document (label 1) and the sentences not used for A go back to the document, as the
  reference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

import numpy as np

from pipelines.common.runner import Counter

Objective = Literal["sop", "nsp"]
RandomDocument = Callable[[np.random.Generator], Sequence[np.ndarray]]
"""Draws another document (its sentences' id arrays) for NSP's random B."""


@dataclasses.dataclass(frozen=True)
class Instance:
    """One pretraining pair before masking. `label` 1 = swapped (SOP) or random B (NSP)."""

    input_ids: np.ndarray  # int64 [CLS] A [SEP] B [SEP], unpadded
    segment_ids: np.ndarray  # int64, 0 for [CLS] A [SEP], 1 for B [SEP]
    label: int


def uncounted(name: str, amount: int = 1) -> None:
    """A Counter that counts nothing."""


def encode_sentences(tokenizer, lines: Sequence[str]) -> list[np.ndarray]:
    """Token ids of each line, exactly `tokenizer.encode(line)`, encoded as one SentencePiece batch.

    Lines whose text holds a digit before a comma take the tokenizer's own path (its digit-comma
    rule); the rest are preprocessed (a fast path for ASCII text) and encoded in C++ together.
    Empty results are dropped, as the reference drops sentences with no tokens.
    """
    lower = tokenizer.do_lower_case
    texts = [
        _preprocess_ascii(line, lower) if line.isascii() else tokenizer.preprocess(line)
        for line in lines
    ]
    encoded = tokenizer.sp.encode(texts, num_threads=1)
    sentences = []
    for line, text, ids in zip(lines, texts, encoded):
        if "," in text and _has_digit_comma(text):
            ids = tokenizer.encode(line)
        if ids:
            sentences.append(np.asarray(ids, dtype=np.int64))
    return sentences


def _preprocess_ascii(line: str, lower: bool) -> str:
    """`AlbertTokenizer.preprocess` for ASCII text (accent stripping is then a no-op)."""
    text = " ".join(line.split())
    return text.lower() if lower else text


def _has_digit_comma(text: str) -> bool:
    index = text.find(",", 1)
    while index > 0:
        if text[index - 1].isdigit():
            return True
        index = text.find(",", index + 1)
    return False


def pack_document(sentences: Sequence[np.ndarray]) -> bytes:
    """A document's sentences as compact bytes (cheap for Beam to move; numpy arrays get
    pickled)."""
    lengths = np.array([len(s) for s in sentences], dtype="<i4")
    ids = np.concatenate(sentences).astype("<i4") if sentences else np.zeros(0, "<i4")
    return len(sentences).to_bytes(4, "little") + lengths.tobytes() + ids.tobytes()


def unpack_document(packed: bytes) -> list[np.ndarray]:
    """The inverse of `pack_document` (int64 id arrays)."""
    count = int.from_bytes(packed[:4], "little")
    lengths = np.frombuffer(packed, dtype="<i4", count=count, offset=4)
    ids = np.frombuffer(packed, dtype="<i4", offset=4 + 4 * count).astype(np.int64)
    return np.split(ids, np.cumsum(lengths)[:-1]) if count else []


def target_length(rng: np.random.Generator, max_num_tokens: int, short_seq_prob: float) -> int:
    """`max_num_tokens`, or with probability `short_seq_prob` a uniform length in
    [2, max_num_tokens]."""
    if rng.random() < short_seq_prob:
        return int(rng.integers(2, max_num_tokens + 1))
    return max_num_tokens


def truncate_pair(
    tokens_a: np.ndarray, tokens_b: np.ndarray, max_num_tokens: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Drop tokens from the longer side (B on a tie), each from the front or back at random."""
    excess = len(tokens_a) + len(tokens_b) - max_num_tokens
    if excess <= 0:
        return tokens_a, tokens_b
    from_front = (rng.random(excess) < 0.5).tolist()
    a_start, a_end, b_start, b_end = 0, len(tokens_a), 0, len(tokens_b)
    for front in from_front:
        if a_end - a_start > b_end - b_start:
            if front:
                a_start += 1
            else:
                a_end -= 1
        elif front:
            b_start += 1
        else:
            b_end -= 1
    return tokens_a[a_start:a_end], tokens_b[b_start:b_end]


def assemble(
    tokens_a: np.ndarray, tokens_b: np.ndarray, label: int, cls_id: int, sep_id: int
) -> Instance:
    """[CLS] A [SEP] B [SEP] with segment ids 0/1."""
    input_ids = np.concatenate(([cls_id], tokens_a, [sep_id], tokens_b, [sep_id])).astype(np.int64)
    segment_ids = np.zeros(len(input_ids), dtype=np.int64)
    segment_ids[len(tokens_a) + 2 :] = 1
    return Instance(input_ids, segment_ids, label)


def create_instances(
    document: Sequence[np.ndarray],
    rng: np.random.Generator,
    *,
    max_seq_length: int,
    short_seq_prob: float,
    objective: Objective = "sop",
    random_document: RandomDocument | None = None,
    cls_id: int = 2,
    sep_id: int = 3,
    inc: Counter = uncounted,
) -> Iterator[Instance]:
    """The instances of one document (its sentences as id arrays)."""
    if objective == "nsp" and random_document is None:
        raise ValueError("objective 'nsp' needs random_document")
    max_num_tokens = max_seq_length - 3
    target = target_length(rng, max_num_tokens, short_seq_prob)
    chunk: list[np.ndarray] = []
    length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target:
            a_end = int(rng.integers(1, len(chunk))) if len(chunk) >= 2 else 1
            if objective == "nsp":
                pair = _nsp_pair(chunk, a_end, target, rng, random_document)
                i -= len(chunk) - a_end if pair[2] else 0
            else:
                pair = _sop_pair(chunk, a_end, rng)
            if pair is None:
                inc("skipped_single_piece_chunks")
            else:
                tokens_a, tokens_b, label = pair
                tokens_a, tokens_b = truncate_pair(tokens_a, tokens_b, max_num_tokens, rng)
                yield assemble(tokens_a, tokens_b, label, cls_id, sep_id)
            chunk, length = [], 0
        i += 1


def _sop_pair(chunk, a_end, rng):
    if len(chunk) == 1:
        sentence = chunk[0]
        if len(sentence) < 2:
            return None
        split = int(rng.integers(1, len(sentence)))
        tokens_a, tokens_b = sentence[:split], sentence[split:]
    else:
        tokens_a, tokens_b = np.concatenate(chunk[:a_end]), np.concatenate(chunk[a_end:])
    if rng.random() < 0.5:
        return tokens_b, tokens_a, 1
    return tokens_a, tokens_b, 0


def _nsp_pair(chunk, a_end, target, rng, random_document):
    tokens_a = np.concatenate(chunk[:a_end])
    if len(chunk) == 1 or rng.random() < 0.5:
        other = random_document(rng)
        target_b = target - len(tokens_a)
        start = int(rng.integers(0, len(other)))
        pieces, gathered = [], 0
        for sentence in other[start:]:
            pieces.append(sentence)
            gathered += len(sentence)
            if gathered >= target_b:
                break
        return tokens_a, np.concatenate(pieces), 1
    return tokens_a, np.concatenate(chunk[a_end:]), 0
