"""pipelines.tfrecords.instance_writer without Beam, on real text and the reference's sp16k
vocabulary: the static masks of a document are `mask_instance`'s with the per-instance generators,
record by record, and every count is exact."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from conftest import shared_path

from albert import masking
from albert.hashing import stable_hash
from albert.pretraining_example import decode_example, encode_example
from pipelines.tfrecords import instance_writer, instances
from pipelines.tfrecords.config import TFRecordsConfig

pytestmark = [pytest.mark.shared_data, pytest.mark.backend_free]

SEED = 12345


def documents() -> list[list[str]]:
    """The 4 books of the reference's corpus4.txt, then 60 short documents of 1 to 12 of their
    lines (documents of no, one or a few instances), as lists of lines."""
    text = shared_path("reference", "corpus4.txt").read_text(encoding="utf-8")
    books = [block.strip("\n").splitlines(keepends=True) for block in text.split("\n\n")]
    books = [book for book in books if book]
    starts = np.cumsum(np.arange(1, 61) % 12 + 1)
    return books + [books[1][start : start + start % 12 + 1] for start in starts.tolist()]


def make_writer(**options) -> tuple[instance_writer.InstanceWriter, Counter]:
    counts: Counter = Counter()

    def inc(name: str, amount: int = 1) -> None:
        counts[name] += amount

    config = TFRecordsConfig(
        input="unused",
        spm_model=str(shared_path("reference", "sp16k.model")),
        output="unused",
        max_seq_length=options.pop("max_seq_length", 128),
        max_predictions_per_seq=20,
        seed=SEED,
        **options,
    )
    return instance_writer.InstanceWriter(config, inc), counts


def expected_examples(writer, doc_key, sentences, dupe, random_document=None):
    """(sort key, example, ngram counts) as `mask_instance` masks each instance on its own with the
    generator `masking_rng(seed, doc_hash, dupe, index)`."""
    config, doc_hash = writer.config, stable_hash(doc_key)
    created = instances.create_instances(
        sentences,
        instance_writer.document_rng(SEED, doc_hash, dupe),
        max_seq_length=config.max_seq_length,
        short_seq_prob=config.short_seq_prob,
        objective=config.objective,
        random_document=random_document,
    )
    ngram_counts = np.zeros(config.ngram + 1, np.int64)
    examples = []
    for index, instance in enumerate(created):
        boundary = writer.start_table[instance.input_ids]
        rng = instance_writer.masking_rng(SEED, doc_hash, dupe, index)
        masked = masking.mask_instance(
            instance.input_ids, boundary, rng, writer.options, ngram_counts
        )
        example = encode_example(
            masked.masked_ids,
            instance.segment_ids,
            boundary,
            masked.positions,
            masked.labels,
            instance.label,
            config.max_seq_length,
            config.max_predictions_per_seq,
        )
        examples.append((instance_writer.instance_sort_key(SEED, doc_key, dupe, index), example))
    return examples, ngram_counts


@pytest.mark.parametrize("max_seq_length", [128, 512])
def test_static_masks_are_mask_instance_with_the_per_instance_generators(
    max_seq_length, monkeypatch
):
    """All passes in one call: batches of MASK_BATCH_ROWS rows (128 here, a quarter of the
    product's, for a quarter of the work) run across documents and split the book."""
    monkeypatch.setattr(instance_writer, "MASK_BATCH_ROWS", 128)
    writer, counts = make_writer(max_seq_length=max_seq_length)
    docs = documents()
    passes = [
        instance_writer.DocumentPass(b"corpus4.txt:%d" % number, writer.encode(lines), dupe)
        for number, lines in enumerate([docs[1], *docs[4:]])  # the second book, the 60 cut from it
        for dupe in range(2)
    ]
    got = list(writer.examples(passes))
    expected, expected_ngrams = [], np.zeros(writer.config.ngram + 1, np.int64)
    for doc_key, sentences, dupe, _ in passes:
        examples, ngrams = expected_examples(writer, doc_key, sentences, dupe)
        expected += examples
        expected_ngrams += ngrams
    assert len(got) == len(expected) > 2 * instance_writer.MASK_BATCH_ROWS
    for (got_key, got_example), (key, example) in zip(got, expected):
        assert got_key == key
        assert got_example == example, decode_example(got_example)
    assert counts["instances"] == len(got)
    for n in range(1, writer.config.ngram + 1):
        assert counts[f"masked_ngrams_{n}"] == expected_ngrams[n] > 0


def test_the_bytes_do_not_depend_on_how_passes_are_grouped():
    writer, _ = make_writer()
    passes = [
        instance_writer.DocumentPass(b"d:%d" % number, writer.encode(lines), 0)
        for number, lines in enumerate(documents()[4:])
    ]
    one_by_one = [example for p in passes for example in writer.examples([p])]
    assert list(writer.examples(passes)) == one_by_one
    assert sorted(writer.examples(passes[::-1])) == sorted(one_by_one)


def test_nsp_static_masks_are_mask_instance_with_the_per_instance_generators():
    writer, _ = make_writer(objective="nsp")
    docs = [writer.encode(lines) for lines in documents()[2:10]]

    def random_document(rng):
        return docs[int(rng.integers(len(docs)))]

    for number, sentences in enumerate(docs):
        doc_key = b"corpus4.txt:%d" % number
        got = list(
            writer.examples([instance_writer.DocumentPass(doc_key, sentences, 0, random_document)])
        )
        assert got == expected_examples(writer, doc_key, sentences, 0, random_document)[0]


def test_counts_are_those_of_the_written_examples():
    writer, counts = make_writer()
    passes = (
        instance_writer.DocumentPass(b"d:%d" % number, writer.encode(lines), 0)
        for number, lines in enumerate(documents())
    )
    decoded = [decode_example(example) for _, example in writer.examples(passes)]
    assert counts["instances"] == len(decoded)
    assert counts["tokens"] == sum(int(e["input_mask"].sum()) for e in decoded)
    assert counts["masked_tokens"] == sum(int(e["masked_lm_weights"].sum()) for e in decoded)
    assert counts["label_1"] == sum(int(e["next_sentence_labels"][0]) for e in decoded)


def test_dynamic_masking_draws_only_from_the_document_generator():
    writer, counts = make_writer(masking="dynamic")
    sentences = writer.encode(documents()[0])
    created = list(
        instances.create_instances(
            sentences,
            instance_writer.document_rng(SEED, stable_hash(b"d"), 0),
            max_seq_length=128,
            short_seq_prob=writer.config.short_seq_prob,
        )
    )
    got = [
        decode_example(example)
        for _, example in writer.examples([instance_writer.DocumentPass(b"d", sentences, 0)])
    ]
    assert len(got) == len(created) > 1 and counts["masked_tokens"] == 0
    for example, instance in zip(got, created):
        length = len(instance.input_ids)
        np.testing.assert_array_equal(example["input_ids"][:length], instance.input_ids)
        assert not example["masked_lm_weights"].any()
