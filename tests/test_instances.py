"""pipelines.tfrecords.instances: documents -> [CLS] A [SEP] B [SEP] pairs for SOP and NSP."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.tfrecords import instances

pytestmark = pytest.mark.backend_free

CLS, SEP = 2, 3


def document(rng: np.random.Generator, num_sentences: int, start: int = 10):
    """Sentences of consecutive ids, so any piece of the document is identified by its ids."""
    lengths = rng.integers(1, 40, num_sentences)
    bounds = np.concatenate(([0], np.cumsum(lengths))) + start
    return [np.arange(bounds[i], bounds[i + 1], dtype=np.int64) for i in range(num_sentences)]


def split(instance: instances.Instance):
    ids = instance.input_ids
    seps = np.flatnonzero(ids == SEP)
    return ids[1 : seps[0]], ids[seps[0] + 1 : seps[1]]


def is_run(tokens: np.ndarray) -> bool:
    return len(tokens) > 0 and bool(np.all(np.diff(tokens) == 1))


def test_truncate_pair_trims_longer_side():
    rng = np.random.default_rng(0)
    a, b = np.arange(100), np.arange(100, 130)
    ta, tb = instances.truncate_pair(a, b, 50, rng)
    assert len(ta) + len(tb) == 50 and len(tb) == 25 and len(ta) == 25
    assert is_run(ta) and is_run(tb)
    assert ta[0] > 0 and ta[-1] < 99, "trimmed from both ends at random"
    same = instances.truncate_pair(a, b, 500, rng)
    assert same[0] is a and same[1] is b


def test_assemble_layout():
    instance = instances.assemble(np.array([7, 8]), np.array([9]), 1, CLS, SEP)
    assert instance.input_ids.tolist() == [CLS, 7, 8, SEP, 9, SEP]
    assert instance.segment_ids.tolist() == [0, 0, 0, 0, 1, 1]
    assert instance.label == 1


def test_sop_instances_keep_document_order_or_swap():
    rng = np.random.default_rng(1)
    labels = []
    for doc_index in range(300):
        doc = document(rng, int(rng.integers(1, 30)), start=10 + doc_index * 10_000)
        for instance in instances.create_instances(doc, rng, max_seq_length=64, short_seq_prob=0.1):
            a, b = split(instance)
            assert len(instance.input_ids) <= 64 and len(a) >= 1 and len(b) >= 1
            assert is_run(a) and is_run(b), "each segment is contiguous text of the same document"
            assert (a[0] // 10_000) == (b[0] // 10_000) == doc_index, "SOP never mixes documents"
            first, second = (a, b) if instance.label == 0 else (b, a)
            assert first[-1] < second[0], "label 0 = original order, 1 = swapped"
            labels.append(instance.label)
    assert np.mean(labels) == pytest.approx(0.5, abs=0.03)


def test_sop_covers_the_document_once():
    rng = np.random.default_rng(2)
    doc = document(rng, 50)
    total = sum(len(s) for s in doc)
    created = list(instances.create_instances(doc, rng, max_seq_length=10_000, short_seq_prob=0))
    assert len(created) == 1 and len(created[0].input_ids) == total + 3


def test_single_sentence_chunks_are_split_inside_the_sentence():
    rng = np.random.default_rng(3)
    doc = [np.arange(100, 400)]
    created = list(instances.create_instances(doc, rng, max_seq_length=128, short_seq_prob=0))
    assert len(created) == 1
    a, b = split(created[0])
    assert len(a) + len(b) == 125 and is_run(a) and is_run(b)

    counts = {}
    created = list(
        instances.create_instances(
            [np.array([42])],
            rng,
            max_seq_length=128,
            short_seq_prob=0,
            inc=lambda name, amount=1: counts.__setitem__(name, counts.get(name, 0) + amount),
        )
    )
    assert created == [] and counts == {"skipped_single_piece_chunks": 1}


def test_short_seq_prob_gives_shorter_targets():
    rng = np.random.default_rng(4)
    targets = [instances.target_length(rng, 509, 0.1) for _ in range(5000)]
    short = [t for t in targets if t < 509]
    assert len(short) / len(targets) == pytest.approx(0.1, abs=0.015)
    assert min(short) >= 2


def test_nsp_takes_random_b_from_another_document():
    rng = np.random.default_rng(5)
    other = document(rng, 20, start=1_000_000)
    labels = []
    for _ in range(200):
        doc = document(rng, int(rng.integers(2, 20)))
        created = instances.create_instances(
            doc,
            rng,
            max_seq_length=64,
            short_seq_prob=0.1,
            objective="nsp",
            random_document=lambda r: other,
        )
        for instance in created:
            a, b = split(instance)
            assert a[0] < 1_000_000
            assert (b[0] >= 1_000_000) == bool(instance.label)
            labels.append(instance.label)
    # one-sentence chunks always take a random B, as the reference
    assert 0.5 <= np.mean(labels) <= 0.65
    with pytest.raises(ValueError):
        list(
            instances.create_instances(
                doc, rng, max_seq_length=64, short_seq_prob=0, objective="nsp"
            )
        )


def test_pack_document_round_trip():
    rng = np.random.default_rng(6)
    doc = document(rng, 7)
    unpacked = instances.unpack_document(instances.pack_document(doc))
    assert [s.tolist() for s in unpacked] == [s.tolist() for s in doc]
    assert instances.unpack_document(instances.pack_document([])) == []
