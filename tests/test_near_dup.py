"""Near-duplicate removal's pure parts, without Beam: signatures, bands, the check, the clusters."""

from __future__ import annotations

import random

import numpy as np
import pytest

from albert.errors import StageError
from pipelines import minhash
from pipelines.near_dup_clusters import (
    CURRENT,
    REFERENCE,
    Member,
    Pair,
    accepted_pairs,
    node,
    removals,
)
from pipelines.near_dup_config import NearDupConfig
from pipelines.word_ngrams import normalised_words, word_ngrams

pytestmark = pytest.mark.backend_free

TEXT = " ".join(
    f"word{index % 97} sits beside word{(index * 7) % 89} and word{(index * 13) % 83}."
    for index in range(400)
)
PARAMETERS = minhash.permutation_parameters(128, 44)


def sig(text: str) -> np.ndarray:
    return minhash.signature(minhash.shingle_hashes(text, 5), PARAMETERS)


def edited(text: str, fraction: float, seed: int = 0) -> str:
    generator = random.Random(seed)
    return " ".join(w if generator.random() > fraction else "zzz" for w in text.split())


def test_signatures_are_deterministic_and_fold_case_punctuation_and_whitespace():
    assert np.array_equal(sig(TEXT), sig(TEXT.upper().replace(".", " ;  ")))
    again = minhash.permutation_parameters(128, 44)
    assert all(np.array_equal(x, y) for x, y in zip(again, PARAMETERS, strict=True))
    assert sig(TEXT).dtype == np.dtype("<u4") and sig(TEXT).shape == (128,)
    other = minhash.permutation_parameters(128, 45)
    assert not np.array_equal(minhash.signature(minhash.shingle_hashes(TEXT, 5), other), sig(TEXT))


def test_the_estimate_follows_the_exact_jaccard_of_the_shingles():
    shingles = set(word_ngrams(normalised_words(TEXT), 5))
    for fraction in (0.01, 0.03, 0.08):
        copy = edited(TEXT, fraction)
        exact = minhash.jaccard(shingles, set(word_ngrams(normalised_words(copy), 5)))
        assert abs(minhash.similarity(sig(TEXT), sig(copy)) - exact) < 0.15


def test_documents_shorter_than_one_shingle_or_empty_have_no_signature():
    assert minhash.signature(minhash.shingle_hashes("", 5), PARAMETERS) is None
    assert minhash.signature(minhash.shingle_hashes("four words only here", 5), PARAMETERS) is None
    assert minhash.signature(minhash.shingle_hashes("five words are here now", 5), PARAMETERS).shape


def test_band_keys_name_the_band_and_agree_where_its_rows_agree():
    first, second = sig(TEXT), sig(TEXT).copy()
    second[0] += 1  # band 0 differs, the others agree
    keys, other = minhash.band_keys(first, 16, 8), minhash.band_keys(second, 16, 8)
    assert len(set(keys)) == 16 and all(len(key) == 8 for key in keys)
    assert keys[0] != other[0] and keys[1:] == other[1:]


def member(tag: bytes, key: int, signature: np.ndarray) -> Member:
    return Member(node(tag, key.to_bytes(8, "big")), signature, f"doc {key}")


def test_a_bucket_accepts_only_pairs_at_the_threshold_a_collision_alone_removes_nothing():
    base = sig(TEXT)
    near, far = base.copy(), base.copy()
    near[:10] += 1  # 118 of 128 agree: 0.92
    far[:64] += 1  # 64 of 128 agree: 0.5, though they share a band
    pairs = list(
        accepted_pairs([member(CURRENT, k, s) for k, s in enumerate((base, near, far))], 0.8)
    )
    assert [(p.first[1:], p.second[1:], p.similarity) for p in pairs] == [
        ((0).to_bytes(8, "big"), (1).to_bytes(8, "big"), 118 / 128)
    ]


def test_references_are_compared_with_but_never_with_each_other():
    base = sig(TEXT)
    members = [member(REFERENCE, 5, base), member(REFERENCE, 9, base), member(CURRENT, 1, base)]
    pairs = list(accepted_pairs(members, 0.8))
    assert [(p.first[0:1], p.second) for p in pairs] == [
        (REFERENCE, members[2].node),
        (REFERENCE, members[2].node),
    ]


def pair(first: int, second: int, similarity: float = 0.9, tag: bytes = CURRENT) -> Pair:
    a, b = node(tag, first.to_bytes(8, "big")), node(CURRENT, second.to_bytes(8, "big"))
    return Pair(a, b, similarity, f"doc {first}", f"doc {second}")


def test_clusters_keep_their_smallest_key_whatever_the_order_of_the_pairs():
    pairs = [pair(3, 7), pair(7, 9, 0.85), pair(1, 4), pair(1, 4), pair(12, 20)]
    removed, clusters = removals(pairs)
    assert clusters == 3
    assert [
        (int.from_bytes(r.node[1:], "big"), int.from_bytes(r.kept[1:], "big")) for r in removed
    ] == [
        (4, 1),
        (7, 3),
        (9, 3),
        (20, 12),
    ]
    nine = removed[2]
    assert int.from_bytes(nine.duplicate_of[1:], "big") == 7 and nine.similarity == 0.85
    for seed in range(5):
        shuffled = pairs[:]
        random.Random(seed).shuffle(shuffled)
        assert removals(shuffled) == (removed, clusters)


def test_a_cluster_with_a_reference_keeps_none_of_this_corpus():
    removed, clusters = removals([pair(50, 2, tag=REFERENCE), pair(2, 3)])
    assert clusters == 1
    assert [int.from_bytes(r.node[1:], "big") for r in removed] == [2, 3]
    assert all(r.kept == node(REFERENCE, (50).to_bytes(8, "big")) for r in removed)


def test_signature_files_round_trip_without_pickle_and_cut_files_are_refused(tmp_path):
    records = [(bytes([i]) * 8, sig(TEXT) + i) for i in range(3)] + [(b"\0" * 8, sig(TEXT))]
    path = tmp_path / "part-00000-of-00001.minhash"
    path.write_bytes(b"".join(minhash.signature_record(k, s) for k, s in records))
    back = list(minhash.read_signatures(str(path), 128))
    assert [k for k, _ in back] == [k for k, _ in records]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(back, records, strict=True))
    assert np.fromfile(path, minhash.signature_dtype(128)).shape == (4,)
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(StageError, match=rf"{path}: not a signature file of 128 permutations"):
        list(minhash.read_signatures(str(path), 128))


def test_a_reference_made_with_other_settings_is_refused(tmp_path):
    settings = minhash.MinHashSettings(5, 128, 44)
    (tmp_path / minhash.HEADER_FILE).write_text(minhash.header(settings))
    minhash.check_header(str(tmp_path), settings)
    with pytest.raises(StageError, match="signatures made with"):
        minhash.check_header(str(tmp_path), minhash.MinHashSettings(3, 128, 44))
    with pytest.raises(StageError, match="not a near-duplicate signature header"):
        minhash.check_header(str(tmp_path / "missing"), settings)


def test_bands_times_rows_must_fit_the_permutations_and_references_need_near_dedup():
    with pytest.raises(ValueError, match="exceeds near_dup_permutations"):
        NearDupConfig(near_dup_permutations=64, near_dup_bands=16, near_dup_rows=8)
    with pytest.raises(ValueError, match="near_dup_reference needs near_dedup"):
        NearDupConfig(near_dedup=False, near_dup_reference=["earlier/segment"])
