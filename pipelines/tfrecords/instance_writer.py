"""The per-document work of the TFRecords stage: tokenize, build instances, mask, serialize.

No Beam here. Two generators per document and dupe pass, so the output does not depend on workers:
- instance creation (`pipelines.tfrecords.instances.create_instances`: target lengths, splits,
  swaps, truncation, NSP's random B) draws from `document_rng(seed, doc_hash, dupe)` alone;
- the static masks of instance `index` come from `masking_rng(seed, doc_hash, dupe, index)` =
  `PCG64([seed, doc_hash, dupe, index])`, one generator per instance, independent of the first:
  record by record what `albert.masking.mask_instance` gives with that generator, so that instances
  of many documents are masked together by one `albert.batch_masking.mask_batch` call.
`doc_hash = stable_hash(doc_key)`. Dynamic masking writes instances unmasked and draws nothing.
Word starts (`token_boundary`) are the reference's per-piece rule, or with a `word_segmenter` the
segmenter's words, carried from `encode` to `_serialize` in the ids (see
`pipelines.tfrecords.word_starts`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

from albert import masking
from albert import pretraining_example as features
from albert.batch_masking import mask_batch
from albert.hashing import stable_hash
from albert.languages import language_profile
from albert.tokenization import AlbertTokenizer
from pipelines.common.runner import Counter
from pipelines.tfrecords.config import TFRecordsConfig
from pipelines.tfrecords.instances import (
    Instance,
    RandomDocument,
    create_instances,
    encode_sentences,
    uncounted,
)
from pipelines.tfrecords.word_starts import (
    attach_bare_underlines,
    bare_underline_id,
    encode_with_word_starts,
    flag_word_starts,
    split_word_start_flags,
)

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


def padded_rows(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The arrays as the rows of one int64 [B, longest] array, zero-padded, and their lengths."""
    lengths = np.array([len(array) for array in arrays], dtype=np.int64)
    rows = np.zeros((len(arrays), int(lengths.max(initial=0))), dtype=np.int64)
    rows[np.arange(rows.shape[1]) < lengths[:, None]] = np.concatenate(arrays) if arrays else []
    return rows, lengths


def vocabulary_tokenizer(config: TFRecordsConfig) -> AlbertTokenizer:
    """The stage's tokenizer: --spm-model with the preprocessing its record states, checked against
    --do-lower-case and --language where given (`AlbertTokenizer`)."""
    return AlbertTokenizer(
        config.spm_model, do_lower_case=config.do_lower_case, language=config.language
    )


def with_word_segmenter(config: TFRecordsConfig, tokenizer: AlbertTokenizer) -> TFRecordsConfig:
    """`config` with its word segmenter settled: as given, else the language profile's
    (`albert.languages`) of --language or the vocabulary record's language, else "none" (the
    reference's rule: a vocabulary without a language)."""
    if config.word_segmenter is not None:
        return config
    language = config.language or tokenizer.preprocessing.language
    segmenter = language_profile(language).word_segmenter if language else "none"
    return config.model_copy(update={"word_segmenter": segmenter})


class InstanceWriter:
    """The TFRecords stage's work on documents: tokenize (one at a time), build instances, mask
    and serialize (many documents' instances together).

    Thread-safe. Counts go to `inc` (documents, sentences, tokens, instances, masked tokens and
    n-grams ...)."""

    def __init__(self, config: TFRecordsConfig, inc: Counter = uncounted):
        self.tokenizer = vocabulary_tokenizer(config)
        self.config = config = with_word_segmenter(config, self.tokenizer)
        self.inc = inc
        vocab = self.tokenizer.sp.id_to_piece(list(range(self.tokenizer.vocab_size)))
        self.start_table = masking.start_piece_table(vocab)
        self.start_table[[self.tokenizer.cls_id, self.tokenizer.sep_id]] = True
        if config.word_segmenter != "none":
            self.expansions = self.tokenizer.digit_comma_expansions()
            self.underline_id = bare_underline_id(self.tokenizer)
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
        """The token ids of a document's sentences (sentences with none dropped), counted; with a
        word segmenter, word starts are flagged in them (`word_starts.flag_word_starts`)."""
        segmenter = self.config.word_segmenter
        if segmenter == "none":
            sentences = encode_sentences(self.tokenizer, lines)
        else:
            encoded = (
                encode_with_word_starts(self.tokenizer, self.expansions, line, segmenter)
                for line in lines
            )
            sentences = [flag_word_starts(ids, starts) for ids, starts in encoded if len(ids)]
        self.inc("documents")
        self.inc("sentences", len(sentences))
        self.inc("document_tokens", sum(len(s) for s in sentences))
        return sentences

    def examples(self, passes: Iterable[DocumentPass]) -> Iterator[tuple[bytes, bytes]]:
        """(sort key, serialized example) of every instance of the given document passes, in order.
        Static masks: up to `MASK_BATCH_ROWS` instances, of one or many documents, at a time by one
        `mask_batch` call (the bytes do not depend on how passes are grouped)."""
        pending: list[tuple[bytes, Instance, np.random.Generator | None]] = []
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
                pending.append((key, instance, generator))
                if len(pending) == MASK_BATCH_ROWS:
                    yield from self._serialize(pending)
                    pending = []
        yield from self._serialize(pending)

    def _serialize(self, pending) -> Iterator[tuple[bytes, bytes]]:
        """(sort key, example) of (sort key, instance, masking generator) rows: static masks by one
        `mask_batch` call, all rows serialized at once."""
        config = self.config
        keys, created, generators = zip(*pending) if pending else ((), (), ())
        ids, lengths = padded_rows([instance.input_ids for instance in created])
        segment_ids, _ = padded_rows([instance.segment_ids for instance in created])
        inside = np.arange(ids.shape[1]) < lengths[:, None]
        if config.word_segmenter == "none":
            boundary = self.start_table[ids] & inside
        else:
            ids, flagged = split_word_start_flags(ids)
            specials = (self.tokenizer.cls_id, self.tokenizer.sep_id)
            boundary = (flagged | np.isin(ids, specials)) & inside
            boundary = attach_bare_underlines(
                ids, boundary, lengths, self.underline_id, self.options.special_ids
            )
        ngram_counts = np.zeros(config.ngram + 1, dtype=np.int64)
        if config.masking == "static" and created:
            ids, positions, labels, counts = mask_batch(
                ids, boundary, generators, self.options, ngram_counts
            )
        else:
            positions = labels = np.zeros((len(created), 0), dtype=np.int64)
            counts = np.zeros(len(created), dtype=np.int64)
        sentence_labels = [instance.label for instance in created]
        yield from zip(
            keys,
            features.encode_examples(
                ids,
                segment_ids,
                boundary,
                positions,
                labels,
                lengths,
                counts,
                sentence_labels,
                config.max_seq_length,
                config.max_predictions_per_seq,
            ),
        )
        self.inc("instances", len(created))
        self.inc("tokens", int(lengths.sum()))
        self.inc("masked_tokens", int(counts.sum()))
        self.inc("label_1", sum(sentence_labels))
        for n in range(1, config.ngram + 1):
            if ngram_counts[n]:
                self.inc(f"masked_ngrams_{n}", int(ngram_counts[n]))
