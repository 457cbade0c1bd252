"""MinHash signatures of documents, their LSH band keys, the exact check, and the signature files.

A document's shingles are its word n-grams (`pipelines.common.word_ngrams`: NFKC, casefolded,
punctuation and whitespace folded), each hashed to 32 bits (CRC-32 of its UTF-8); its shingle set is
those hashes, distinct and sorted (uint32). Permutation i maps a shingle hash x to
((a_i * x + b_i) mod 2^64) >> 32 (multiply-add-shift hashing: a_i odd, both drawn by a generator
seeded by `albert.hashing.derive_seed(seed, permutations)`: the same on every machine). A signature
is the minimum of each permutation over the document's shingles (uint32, little-endian on disk); the
fraction of equal positions of two signatures estimates the Jaccard similarity of their shingle
sets, and `shingle_jaccard` computes it exactly from the sets. A document with fewer words than one
shingle has neither.

Band b (rows r) hashes positions [b*r, (b+1)*r) with the band's index to an 8-byte key: documents
whose signatures agree on one band are candidates, and only candidates are compared.

Signature files (what segment writes beside its shards for later runs to compare against): a
directory holding `near_dup_signatures.json` ({"format": FORMAT, "ngram", "permutations", "seed"})
and `near_dup_signatures-NNNNN-of-NNNNN.minhash` files of records, each an 8-byte document key, the
number n of its shingles (uint32), `permutations` uint32 (the signature), then its n shingle hashes
(uint32, sorted), all little-endian. Read with `read_signatures` (no pickle), which refuses a path
that is not a regular file and reads no more than the file's size. The earlier format
(`albert-minhash-v1`, signatures without shingle sets) is refused by `check_header` in one line.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from albert.errors import StageError
from albert.fs import expand_files, filesystem, open_file
from albert.hashing import derive_seed, stable_hash
from pipelines.common.word_ngrams import normalised_words, word_ngrams

FORMAT = "albert-minhash-v2"
EARLIER_FORMATS = ("albert-minhash-v1",)  # signatures only: no shingle sets to check pairs by
SIGNATURES = "near_dup_signatures"
HEADER_FILE = f"{SIGNATURES}.json"
SIGNATURE_SUFFIX = ".minhash"
KEY_BYTES = 8
_RECORD_HEAD = struct.Struct(f"<{KEY_BYTES}sI")  # a record's key and its number of shingles
_SHIFT = np.uint64(32)
_CHUNK = 1024  # shingles per step: the (chunk, permutations) matrix stays in cache (1 MiB at 128)


class MinHashSettings(NamedTuple):
    """What makes two signatures comparable: shingle length, permutations and their seed."""

    ngram: int
    permutations: int
    seed: int


def permutation_parameters(permutations: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) of the permutations: uint64, a odd; the same for the same arguments everywhere."""
    generator = np.random.Generator(np.random.PCG64(derive_seed(seed, permutations)))
    a = generator.integers(0, 1 << 63, size=permutations, dtype=np.uint64) * np.uint64(2) + 1
    b = generator.integers(0, 1 << 63, size=permutations, dtype=np.uint64) * np.uint64(2)
    return a, b


def shingle_hashes(text: str, ngram: int) -> np.ndarray:
    """The distinct 32-bit hashes of the word n-grams of `text` (uint64, in no particular order;
    empty when the text has fewer than `ngram` words)."""
    shingles = {zlib.crc32(s.encode("utf-8")) for s in word_ngrams(normalised_words(text), ngram)}
    return np.fromiter(shingles, dtype=np.uint64, count=len(shingles))


def signature(hashes: np.ndarray, parameters: tuple[np.ndarray, np.ndarray]) -> np.ndarray | None:
    """The MinHash signature (uint32, one per permutation) of shingle hashes; None for none."""
    if not len(hashes):
        return None
    a, b = parameters
    minimum = np.full(len(a), np.iinfo(np.uint64).max, dtype=np.uint64)
    with np.errstate(over="ignore"):  # the products wrap modulo 2^64 by design
        for start in range(0, len(hashes), _CHUNK):
            values = (hashes[start : start + _CHUNK, None] * a + b) >> _SHIFT
            np.minimum(minimum, values.min(axis=0), out=minimum)
    return minimum.astype("<u4")


def band_keys(sig: np.ndarray, bands: int, rows: int) -> list[bytes]:
    """One 8-byte key per band: the stable hash of the band's index and its `rows` values."""
    data = sig.astype("<u4").tobytes()
    width = 4 * rows
    return [
        stable_hash(band.to_bytes(2, "big") + data[band * width : (band + 1) * width]).to_bytes(
            8, "big"
        )
        for band in range(bands)
    ]


def shingle_set(hashes: np.ndarray) -> np.ndarray:
    """`shingle_hashes` as a document's shingle set: distinct, sorted, uint32 little-endian."""
    return np.sort(hashes.astype("<u4"))


def shingle_jaccard(first: np.ndarray, second: np.ndarray) -> float:
    """The exact Jaccard similarity of two shingle sets (`shingle_set`s; two empty ones: 0)."""
    if len(first) > len(second):
        first, second = second, first
    if not len(first):
        return 0.0
    found = np.searchsorted(second, first)
    found[found == len(second)] = 0
    shared = int(np.count_nonzero(second[found] == first))
    return shared / (len(first) + len(second) - shared)


def similarity(first: np.ndarray, second: np.ndarray) -> float:
    """The estimated Jaccard similarity: the fraction of positions where the signatures agree."""
    return float(np.count_nonzero(first == second)) / len(first)


def similarities(candidates: np.ndarray, sig: np.ndarray) -> np.ndarray:
    """`similarity` of `sig` with each row of `candidates` (shape (rows, permutations))."""
    return np.count_nonzero(candidates == sig, axis=1) / candidates.shape[1]


def jaccard(first: set, second: set) -> float:
    """The exact Jaccard similarity of two sets (two empty sets: 0)."""
    union = len(first | second)
    return len(first & second) / union if union else 0.0


def signature_record(key: bytes, sig: np.ndarray, shingles: np.ndarray) -> bytes:
    """One record of a signature file: the key, the number of shingles, signature, shingle set."""
    return (
        _RECORD_HEAD.pack(key, len(shingles))
        + sig.astype("<u4").tobytes()
        + shingles.astype("<u4").tobytes()
    )


def header(settings: MinHashSettings) -> str:
    """The text of HEADER_FILE for signatures made with `settings`."""
    return json.dumps({"format": FORMAT, **settings._asdict()}, sort_keys=True) + "\n"


def check_header(directory: str, settings: MinHashSettings) -> None:
    """Refuse a signature directory whose header is missing, of an earlier format or made with
    other settings, in one line naming it."""
    path = f"{directory.rstrip('/')}/{HEADER_FILE}"
    try:
        with open_file(path, "r", encoding="utf-8") as handle:
            found = json.load(handle)
    except (OSError, ValueError) as error:
        raise StageError(f"{path}: not a near-duplicate signature header ({error})") from None
    wanted = json.loads(header(settings))
    if isinstance(found, dict) and found.get("format") in EARLIER_FORMATS:
        raise StageError(
            f"{path}: signatures of format {found['format']} hold no shingle sets, which this "
            f"run checks candidates by ({FORMAT}): run segment on that corpus again"
        )
    if found != wanted:
        raise StageError(
            f"{path}: signatures made with {found}, this run compares {wanted}: "
            "use the same near_dup_ngram, near_dup_permutations and seed"
        )


def signature_files(directory: str) -> list[str]:
    """The signature files of a directory (e.g. a segment output), sorted."""
    return sorted(expand_files(directory, (f"{SIGNATURES}-*{SIGNATURE_SUFFIX}",)))


def regular_file_size(path: str) -> int:
    """The size of `path`; a StageError naming it where it is not a regular file (a directory, a
    device such as /dev/zero, a pipe), which a signature file never is."""
    fs, inner = filesystem(path)
    try:
        info = fs.info(inner)
    except OSError as error:
        raise StageError(f"{path}: not a readable signature file ({error})") from None
    if info.get("type") != "file" or info.get("size") is None:
        raise StageError(f"{path}: not a regular file ({info.get('type')}): not a signature file")
    return int(info["size"])


def read_signatures(path: str, permutations: int) -> Iterator[tuple[bytes, np.ndarray, np.ndarray]]:
    """(key, signature, shingle set) of each record of a signature file, streaming. Reads no more
    than the file's size; a path that is not a regular file, a record without a shingle or one cut
    short is a StageError naming the file."""
    size = regular_file_size(path)
    fixed = _RECORD_HEAD.size + 4 * permutations
    done = 0
    with open_file(path, "rb") as handle:
        while done < size:
            start = handle.read(min(fixed, size - done))
            if len(start) < fixed:
                break
            key, count = _RECORD_HEAD.unpack_from(start)
            if not count or 4 * count > size - done - fixed:
                break
            shingles = handle.read(4 * count)
            if len(shingles) < 4 * count:
                break
            done += fixed + 4 * count
            yield (
                key,
                np.frombuffer(start, "<u4", permutations, _RECORD_HEAD.size),
                np.frombuffer(shingles, "<u4"),
            )
        else:
            return
    raise StageError(
        f"{path}: not a {FORMAT} signature file of {permutations} permutations "
        f"(the record at byte {done} is cut or holds no shingle)"
    )
