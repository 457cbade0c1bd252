"""Near-duplicate removal's pure parts, without a pipeline: signatures, bands, candidates, the exact
check, the joins' reduces, the clusters and the signature files."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from albert.errors import StageError
from pipelines.common.word_ngrams import normalised_words, word_ngrams
from pipelines.dedup import keys as near_dup_keys
from pipelines.dedup import minhash
from pipelines.dedup import pairs as near_dup_pairs
from pipelines.dedup.clusters import (
    CURRENT,
    REFERENCE,
    Member,
    Pair,
    accepted,
    candidate_pairs,
    node,
    removals,
)
from pipelines.dedup.near_config import NearDupConfig, reference_files

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
    return Member(node(tag, key.to_bytes(8, "big")), signature)


def shingle_set(text: str) -> np.ndarray:
    return minhash.shingle_set(minhash.shingle_hashes(text, 5))


def test_the_exact_jaccard_of_the_shingle_sets_is_that_of_the_shingles():
    shingles = set(word_ngrams(normalised_words(TEXT), 5))
    for fraction in (0.0, 0.02, 0.3):
        copy = edited(TEXT, fraction, seed=3)
        exact = minhash.jaccard(shingles, set(word_ngrams(normalised_words(copy), 5)))
        assert minhash.shingle_jaccard(shingle_set(TEXT), shingle_set(copy)) == exact
    assert minhash.shingle_jaccard(shingle_set(TEXT), np.empty(0, "<u4")) == 0.0


def test_every_band_collision_is_a_candidate_and_only_the_exact_jaccard_accepts_it():
    base = sig(TEXT)
    near, far = base.copy(), base.copy()
    near[:10] += 1  # estimated 0.92: not a representative, paired with the base
    far[:64] += 1  # estimated 0.5, though they share a band: still a candidate
    members = [member(CURRENT, k, s) for k, s in enumerate((base, near, far))]
    assert list(candidate_pairs(members, 0.8)) == [
        (members[0].node, members[1].node),
        (members[0].node, members[2].node),
    ]
    copy = edited(TEXT, 0.02, seed=0)  # a pair the estimate would refuse
    exact = minhash.shingle_jaccard(shingle_set(TEXT), shingle_set(copy))
    assert 0.8 <= exact < 0.85 and minhash.similarity(sig(TEXT), sig(copy)) < 0.8
    assert accepted(shingle_set(TEXT), shingle_set(copy), 0.8) == exact
    assert accepted(shingle_set(TEXT), shingle_set(edited(TEXT, 0.1)), 0.8) is None


def test_references_are_candidates_of_current_documents_but_never_of_each_other():
    base = sig(TEXT)
    members = [member(REFERENCE, 5, base), member(REFERENCE, 9, base), member(CURRENT, 1, base)]
    assert list(candidate_pairs(members, 0.8)) == [
        (members[0].node, members[2].node),
        (members[1].node, members[2].node),
    ]


def test_a_candidate_from_several_bands_is_checked_once_by_the_exact_jaccard():
    """The joins' reduces on what the spill merges (sorted): the first document's shingle set
    goes to the second's node, where the pair is accepted or not."""
    first, second, third = (node(CURRENT, bytes([k]) * 8) for k in (1, 2, 3))
    texts = {first: TEXT, second: edited(TEXT, 0.02, seed=5), third: edited(TEXT, 0.3)}
    records = {
        name: near_dup_keys.encode_shingles(text[:10], shingle_set(text))
        for name, text in texts.items()
    }
    candidates = [(near_dup_keys.join_key(first, other), b"") for other in (second, third)] * 3
    merged = sorted(candidates + [(near_dup_keys.join_key(n), r) for n, r in records.items()])
    counts: dict[str, int] = {}

    def inc(name: str, amount: int) -> None:
        counts[name] = counts.get(name, 0) + amount

    sent = list(near_dup_pairs.send_first(iter(merged), inc))
    assert [key for key, _ in sent] == [second + first, third + first]
    own = [(near_dup_keys.join_key(n), records[n]) for n in (second, third)]
    pairs = list(near_dup_pairs.check_pairs(iter(sorted(sent + own)), inc, 0.8))
    exact = minhash.shingle_jaccard(shingle_set(texts[first]), shingle_set(texts[second]))
    assert pairs == [
        (
            near_dup_keys.pair_key(first, second),
            json.dumps([exact, TEXT[:10], texts[second][:10]]).encode("utf-8"),
        )
    ]
    assert counts == {"near_duplicate_candidates": 2, "near_duplicate_pairs_accepted": 1}


def test_the_default_bands_make_a_pair_at_the_threshold_a_candidate_at_995_in_1000():
    config = NearDupConfig()
    rows, bands = config.near_dup_rows, config.near_dup_bands

    def candidate(s: float) -> float:
        return 1 - (1 - s**rows) ** bands

    assert candidate(config.near_dup_threshold) >= 0.995
    assert candidate(0.3) < 0.05  # every candidate is checked exactly: few far below


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


def write_signatures(path, records) -> None:
    path.write_bytes(b"".join(minhash.signature_record(*record) for record in records))


def test_signature_files_round_trip_without_pickle_and_cut_files_are_refused(tmp_path):
    shingles = shingle_set(TEXT)
    records = [(bytes([i]) * 8, sig(TEXT) + i, shingles[i:]) for i in range(3)]
    records.append((b"\0" * 8, sig(TEXT), shingles[:1]))
    path = tmp_path / "part-00000-of-00001.minhash"
    write_signatures(path, records)
    back = list(minhash.read_signatures(str(path), 128))
    assert [k for k, _, _ in back] == [k for k, _, _ in records]
    for read, written in zip(back, records, strict=True):
        assert all(np.array_equal(a, b) for a, b in zip(read[1:], written[1:], strict=True))
    whole = path.read_bytes()
    path.write_bytes(whole[:-3])
    with pytest.raises(StageError, match=rf"{path}: not a albert-minhash-v2 signature file of 128"):
        list(minhash.read_signatures(str(path), 128))
    write_signatures(path, [(b"k" * 8, sig(TEXT), shingles[:0])])  # no shingle: never written
    with pytest.raises(StageError, match="is cut or holds no shingle"):
        list(minhash.read_signatures(str(path), 128))


def test_a_signature_file_that_is_no_regular_file_is_refused_before_any_read(tmp_path):
    """A `.minhash` linked to /dev/zero would read (and spill) zeros until killed."""
    settings = NearDupConfig().minhash_settings()
    (tmp_path / minhash.HEADER_FILE).write_text(minhash.header(settings))
    path = tmp_path / f"{minhash.SIGNATURES}-00000-of-00001{minhash.SIGNATURE_SUFFIX}"
    path.symlink_to("/dev/zero")
    config = NearDupConfig(near_dup_reference=[str(tmp_path)])
    with pytest.raises(StageError, match=rf"^{path}: not a regular file \(other\)"):
        reference_files(config)
    with pytest.raises(StageError, match="not a regular file"):
        next(minhash.read_signatures(str(path), settings.permutations))


def test_a_reference_made_with_other_settings_or_an_earlier_format_is_refused(tmp_path):
    settings = minhash.MinHashSettings(5, 128, 44)
    (tmp_path / minhash.HEADER_FILE).write_text(minhash.header(settings))
    minhash.check_header(str(tmp_path), settings)
    with pytest.raises(StageError, match="signatures made with"):
        minhash.check_header(str(tmp_path), minhash.MinHashSettings(3, 128, 44))
    with pytest.raises(StageError, match="not a near-duplicate signature header"):
        minhash.check_header(str(tmp_path / "missing"), settings)
    earlier = {"format": "albert-minhash-v1", **settings._asdict()}
    (tmp_path / minhash.HEADER_FILE).write_text(json.dumps(earlier))
    with pytest.raises(StageError, match="albert-minhash-v1 hold no shingle sets") as refused:
        minhash.check_header(str(tmp_path), settings)
    assert "\n" not in str(refused.value)


def test_bands_times_rows_must_fit_the_permutations_and_references_need_near_dedup():
    with pytest.raises(ValueError, match="exceeds near_dup_permutations"):
        NearDupConfig(near_dup_permutations=64, near_dup_bands=16, near_dup_rows=8)
    with pytest.raises(ValueError, match="near_dup_reference needs near_dedup"):
        NearDupConfig(near_dedup=False, near_dup_reference=["earlier/segment"])
