"""The per-document work of the TFRecords stage: tokenize, build instances, mask, serialize.

No Beam here. Two generators per document and dupe pass, so the output does not depend on workers:
- instance creation (`pipelines.instances.create_instances`: target lengths, splits, swaps,
  truncation, NSP's random B) draws from `document_rng(seed, doc_hash, dupe)` alone;
- the static masks of instance `index` come from `masking_rng(seed, doc_hash, dupe, index)` =
  `PCG64([seed, doc_hash, dupe, index])`, one generator per instance, independent of the first:
  record by record what `albert.masking.mask_instance` gives with that generator, so that instances
  of many documents are masked together by one `albert.batch_masking.mask_batch` call.
`doc_hash = stable_hash(doc_key)`. Dynamic masking writes instances unmasked and draws nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

from albert import masking
from albert import pretraining_example as features
from albert.batch_masking import mask_batch
from albert.hashing import stable_hash
from albert.tokenization import AlbertTokenizer
from pipelines.instances import (
    Instance,
    RandomDocument,
    create_instances,
    encode_sentences,
    uncounted,
)
from pipelines.runner import Counter
from pipelines.tfrecords_config import TFRecordsConfig

MASK_BATCH_ROWS = 512  # instances masked by one mask_batch call: its per-step cost is shared


class DocumentPass(NamedTuple):
    """One document (its sentences' id arrays) in one dupe pass; NSP's random B from
    `random_document`."""

    doc_key: bytes
    sentences: Sequence[np.ndarray]
    dupe: int
    random_document: RandomDocument | None = None


def document_rng(seed: int, doc_hash: int, dupe: int) -> np.random.Generator:
    """The generator of a document's instance creation in one dupe pass."""
    return np.random.Generator(np.random.PCG64([seed, doc_hash, dupe]))


def masking_rng(seed: int, doc_hash: int, dupe: int, index: int) -> np.random.Generator:
    """The generator of the static masks of a document's instance `index` in one dupe pass."""
    return np.random.Generator(np.random.PCG64([seed, doc_hash, dupe, index]))


def instance_sort_key(seed: int, doc_key: bytes, dupe: int, index: int) -> bytes:
    """A stable pseudo-random key: shuffles instances globally across and within shards."""
    return (
        stable_hash(b"%d\x00%s\x00%d\x00%d" % (seed, doc_key, dupe, index)).to_bytes(8, "big")
        + doc_key
    )


def mask_instances(
    created: Sequence[Instance],
    boundaries: Sequence[np.ndarray],
    generators: Sequence[np.random.Generator],
    options: masking.MaskingOptions,
    ngram_counts: np.ndarray | None = None,
) -> list[masking.Masked]:
    """`masking.mask_instance(created[i].input_ids, boundaries[i], generators[i], options)` of
    every instance, by one `mask_batch` call over the instances padded to a common length."""
    if not created:
        return []
    lengths = [len(instance.input_ids) for instance in created]
    ids = np.zeros((len(created), max(lengths)), np.int64)
    is_word_start = np.zeros(ids.shape, bool)
    for row, (instance, boundary) in enumerate(zip(created, boundaries)):
        ids[row, : lengths[row]] = instance.input_ids
        is_word_start[row, : lengths[row]] = boundary
    batch = mask_batch(ids, is_word_start, generators, options, ngram_counts)
    return [
        masking.Masked(
            batch.masked_ids[row, :length], batch.positions[row, :count], batch.labels[row, :count]
        )
        for row, (length, count) in enumerate(zip(lengths, batch.counts.tolist()))
    ]


class InstanceWriter:
    """One document's work for the TFRecords stage: tokenize, build instances, mask, serialize.

    Thread-safe. Counts go to `inc` (documents, sentences, tokens, instances, masked tokens and
    n-grams ...)."""

    def __init__(self, config: TFRecordsConfig, inc: Counter = uncounted):
        self.config, self.inc = config, inc
        self.tokenizer = AlbertTokenizer(config.spm_model, do_lower_case=config.do_lower_case)
        vocab = self.tokenizer.sp.id_to_piece(list(range(self.tokenizer.vocab_size)))
        self.start_table = masking.start_piece_table(vocab)
        self.start_table[[self.tokenizer.cls_id, self.tokenizer.sep_id]] = True
        self.options = masking.MaskingOptions.for_vocabulary(
            self.tokenizer.vocab_size,
            self.tokenizer.is_control,
            masked_lm_prob=config.masked_lm_prob,
            max_predictions_per_seq=config.max_predictions_per_seq,
            ngram=config.ngram,
            favor_shorter_ngram=config.favor_shorter_ngram,
            mask_id=self.tokenizer.mask_id,
        )

    def encode(self, lines: list[str]) -> list[np.ndarray]:
        """The token ids of a document's sentences (sentences with none dropped), counted."""
        sentences = encode_sentences(self.tokenizer, lines)
        self.inc("documents")
        self.inc("sentences", len(sentences))
        self.inc("document_tokens", sum(len(s) for s in sentences))
        return sentences

    def examples(self, passes: Iterable[DocumentPass]) -> Iterator[tuple[bytes, bytes]]:
        """(sort key, serialized example) of every instance of the given document passes, in order.
        Static masks: up to `MASK_BATCH_ROWS` instances, of one or many documents, at a time by one
        `mask_batch` call (the bytes do not depend on how passes are grouped)."""
        pending: list[tuple[bytes, Instance, np.ndarray, np.random.Generator | None]] = []
        for doc_key, document, dupe, random_document in passes:
            doc_hash = stable_hash(doc_key)
            created = create_instances(
                document,
                document_rng(self.config.seed, doc_hash, dupe),
                max_seq_length=self.config.max_seq_length,
                short_seq_prob=self.config.short_seq_prob,
                objective=self.config.objective,
                random_document=random_document,
                cls_id=self.tokenizer.cls_id,
                sep_id=self.tokenizer.sep_id,
                inc=self.inc,
            )
            for index, instance in enumerate(created):
                key = instance_sort_key(self.config.seed, doc_key, dupe, index)
                generator = None
                if self.config.masking == "static":
                    generator = masking_rng(self.config.seed, doc_hash, dupe, index)
                pending.append((key, instance, self.start_table[instance.input_ids], generator))
                if len(pending) == MASK_BATCH_ROWS:
                    yield from self._serialize(pending)
                    pending = []
        yield from self._serialize(pending)

    def _serialize(self, pending) -> Iterator[tuple[bytes, bytes]]:
        """Mask (static) and serialize (sort key, instance, boundary, masking generator) rows."""
        config = self.config
        keys, created, boundaries, generators = zip(*pending) if pending else ((),) * 4
        ngram_counts = np.zeros(config.ngram + 1, dtype=np.int64)
        if config.masking == "static":
            masked = mask_instances(created, boundaries, generators, self.options, ngram_counts)
        else:
            empty = np.zeros(0, np.int64)
            masked = [masking.Masked(instance.input_ids, empty, empty) for instance in created]
        for key, instance, boundary, (masked_ids, positions, labels) in zip(
            keys, created, boundaries, masked
        ):
            example = features.encode_example(
                masked_ids,
                instance.segment_ids,
                boundary,
                positions,
                labels,
                instance.label,
                config.max_seq_length,
                config.max_predictions_per_seq,
            )
            yield key, example
        self.inc("instances", len(created))
        self.inc("tokens", sum(len(instance.input_ids) for instance in created))
        self.inc("masked_tokens", sum(len(m.positions) for m in masked))
        self.inc("label_1", sum(instance.label for instance in created))
        for n in range(1, config.ngram + 1):
            if ngram_counts[n]:
                self.inc(f"masked_ngrams_{n}", int(ngram_counts[n]))
