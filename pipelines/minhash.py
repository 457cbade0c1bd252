"""MinHash signatures of documents, their LSH band keys, and the signature file format.

A document's shingles are its word n-grams (`pipelines.word_ngrams`: NFKC, casefolded, punctuation
and whitespace folded), each hashed to 32 bits (CRC-32 of its UTF-8). Permutation i maps a shingle
hash x to ((a_i * x + b_i) mod 2^64) >> 32 (multiply-add-shift hashing: a_i odd, both drawn by a
generator seeded by `albert.hashing.derive_seed(seed, permutations)`: the same on every machine).
A signature is the minimum of each permutation over the document's shingles (uint32, little-endian
on disk); the fraction of equal positions of two signatures estimates the Jaccard similarity of
their shingle sets. A document with fewer words than one shingle has no signature.

Band b (rows r) hashes positions [b*r, (b+1)*r) with the band's index to an 8-byte key: documents
whose signatures agree on one band are candidates, and only candidates are compared.

Signature files (what segment writes beside its shards for later runs to compare against): a
directory holding `near_dup_signatures.json` ({"format": FORMAT, "ngram", "permutations", "seed"})
and `near_dup_signatures-NNNNN-of-NNNNN.minhash` files of fixed-size records, each an 8-byte
document key then `permutations` uint32 little-endian. Read with `read_signatures`, or with numpy:
`np.fromfile(path, signature_dtype(permutations))` (no pickle).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from albert.errors import StageError
from albert.fs import expand_files, open_file
from albert.hashing import derive_seed, stable_hash
from pipelines.word_ngrams import normalised_words, word_ngrams

FORMAT = "albert-minhash-v1"
SIGNATURES = "near_dup_signatures"
HEADER_FILE = f"{SIGNATURES}.json"
SIGNATURE_SUFFIX = ".minhash"
KEY_BYTES = 8
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


def signature_dtype(permutations: int) -> np.dtype:
    """One record of a signature file: the document key, then the signature."""
    return np.dtype([("key", f"S{KEY_BYTES}"), ("signature", "<u4", (permutations,))])


def signature_record(key: bytes, sig: np.ndarray) -> bytes:
    return key + sig.astype("<u4").tobytes()


def header(settings: MinHashSettings) -> str:
    """The text of HEADER_FILE for signatures made with `settings`."""
    return json.dumps({"format": FORMAT, **settings._asdict()}, sort_keys=True) + "\n"


def check_header(directory: str, settings: MinHashSettings) -> None:
    """Refuse a signature directory whose header is missing or made with other settings."""
    path = f"{directory.rstrip('/')}/{HEADER_FILE}"
    try:
        with open_file(path, "r", encoding="utf-8") as handle:
            found = json.load(handle)
    except (OSError, ValueError) as error:
        raise StageError(f"{path}: not a near-duplicate signature header ({error})") from None
    wanted = json.loads(header(settings))
    if found != wanted:
        raise StageError(
            f"{path}: signatures made with {found}, this run compares {wanted}: "
            "use the same near_dup_ngram, near_dup_permutations and seed"
        )


def signature_files(directory: str) -> list[str]:
    """The signature files of a directory (e.g. a segment output), sorted."""
    return sorted(expand_files(directory, (f"{SIGNATURES}-*{SIGNATURE_SUFFIX}",)))


def read_signatures(path: str, permutations: int) -> Iterator[tuple[bytes, np.ndarray]]:
    """(key, signature) of each record of a signature file, streaming; a file whose size is not
    a whole number of records is a StageError naming it."""
    dtype = signature_dtype(permutations)
    with open_file(path, "rb") as handle:
        rest = b""
        while block := handle.read(dtype.itemsize * 4096):
            block = rest + block
            whole = len(block) - len(block) % dtype.itemsize
            rest = block[whole:]
            for record in np.frombuffer(block[:whole], dtype):
                yield bytes(record["key"]).ljust(KEY_BYTES, b"\0"), record["signature"]
    if rest:
        raise StageError(
            f"{path}: not a signature file of {permutations} permutations "
            f"(its last record of {dtype.itemsize} bytes is cut)"
        )
