"""A split's examples encoded in `workers` processes (`--input-workers`), the same arrays and counts
as in this process, for any number of workers.

The examples are cut into contiguous chunks of at least `MIN_CHUNK` examples, one per worker at
most (a single chunk is encoded in this process: one worker would only add its start). A worker is
a fresh interpreter (no fork of a process running JAX or TensorFlow threads, no import of the
caller's main module, nothing pickled), in the caller's working directory:

    PYTHONPATH=CODE_ROOT python -P -m model.tasks.parallel_encoding SETTINGS START STOP OUTPUT TOTAL

SETTINGS is `SplitSettings` as JSON. The worker reads the split itself (reading is cheap next to
tokenizing), rebuilds the tokenizer from its file, encodes examples [START, STOP) and writes the
arrays as `.npy` files (loaded without pickle) and its counts as JSON under OUTPUT; this process
concatenates the chunks in order."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

from albert.errors import StageError
from albert.tokenization import AlbertTokenizer
from model.tasks.splits import SplitSettings, cut_keys, encode, encoded_examples, read_examples

MIN_CHUNK = 500  # examples; fewer are encoded faster than a worker process starts
# The directory holding this `model` package: a worker imports this code, not another checkout's
# (`-P`: nor a `model` package in the working directory, which stays the caller's for its paths).
CODE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def chunk_bounds(keys: list, parts: int, min_size: int) -> list[tuple[int, int]]:
    """[start, stop) of at most `parts` contiguous chunks of about equal size and at least
    `min_size` items (the last may be shorter), covering `keys` in order; each cut is moved forward
    to the next change of key."""
    count = min(parts, max(1, len(keys) // min_size))
    bounds, start = [], 0
    for part in range(1, count + 1):
        stop = max(start, math.ceil(len(keys) * part / count))
        while 0 < stop < len(keys) and keys[stop] == keys[stop - 1]:
            stop += 1
        if stop > start:
            bounds.append((start, stop))
        start = stop
    return bounds


def encode_split(
    settings: SplitSettings, tokenizer: AlbertTokenizer, examples: list, workers: int
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """(arrays, counts) of `splits.encode` on `examples` (the split's `encoded_examples`), in
    `workers` processes (0: in this one)."""
    bounds = chunk_bounds(cut_keys(settings, examples), workers, MIN_CHUNK)
    if len(bounds) < 2:
        counts: dict[str, int] = {}
        return encode(settings, tokenizer, examples, counts), counts
    with tempfile.TemporaryDirectory() as directory:
        outputs = [os.path.join(directory, str(index)) for index in range(len(bounds))]
        processes = [
            start_worker(settings, start, stop, output, len(examples))
            for (start, stop), output in zip(bounds, outputs)
        ]
        codes = [process.wait() for process in processes]
        for (start, stop), output, code in zip(bounds, outputs, codes):
            if code:
                with open(f"{output}.err") as handle:
                    last = (handle.read().strip().splitlines() or [f"exit status {code}"])[-1]
                raise StageError(
                    f"{settings.path}: encoding examples [{start}, {stop}) failed: {last}"
                )
        return gather(outputs)


def start_worker(
    settings: SplitSettings, start: int, stop: int, output: str, total: int
) -> subprocess.Popen:
    """The worker process encoding examples [start, stop) into `output` (its stderr in
    `output`.err)."""
    path = os.pathsep.join(filter(None, [CODE_ROOT, os.environ.get("PYTHONPATH")]))
    command = [sys.executable, "-P", "-m", __name__, settings.to_json(), str(start), str(stop)]
    with open(f"{output}.err", "w") as errors:
        return subprocess.Popen(
            [*command, output, str(total)], stderr=errors, env={**os.environ, "PYTHONPATH": path}
        )


def encode_chunk(settings_json: str, start: int, stop: int, output: str, total: int) -> None:
    """Worker: encode examples [start, stop) of the split into the directory `output`
    (`NAME.npy` per array, `counts.json`); `total` is how many examples the parent read."""
    settings = SplitSettings.from_json(settings_json)
    examples = encoded_examples(settings, read_examples(settings))
    if len(examples) != total:
        raise StageError(f"{settings.path}: changed while it was encoded ({total} examples before)")
    counts: dict[str, int] = {}
    arrays = encode(settings, AlbertTokenizer(settings.spm_model), examples[start:stop], counts)
    os.makedirs(output)
    for name, array in arrays.items():
        np.save(os.path.join(output, f"{name}.npy"), array, allow_pickle=False)
    with open(os.path.join(output, "counts.json"), "w") as handle:
        json.dump(counts, handle)


def gather(outputs: list[str]) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The chunks' arrays concatenated in order (chunks without rows left out) and their counts
    summed."""
    names = sorted(n.removesuffix(".npy") for n in os.listdir(outputs[0]) if n.endswith(".npy"))
    arrays = {}
    for name in names:
        parts = [np.load(os.path.join(out, f"{name}.npy"), allow_pickle=False) for out in outputs]
        arrays[name] = np.concatenate([part for part in parts if len(part)] or parts[:1])
    counts: dict[str, int] = {}
    for output in outputs:
        with open(os.path.join(output, "counts.json")) as handle:
            for key, value in json.load(handle).items():
                counts[key] = counts.get(key, 0) + value
    return arrays, counts


if __name__ == "__main__":
    encode_chunk(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
