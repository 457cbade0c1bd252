"""Masking speed side by side on the reference's real s128 instances (shared/data/reference): the
reference's `create_masked_lm_predictions` (google-research/albert, one instance at a time over
lists of pieces), ours per record (`albert.masking.mask_tokens`) and ours per batch
(`albert.batch_masking.mask_batch`), each with a generator per record. Records masked per CPU
second, best of `--repeat`. One JSON line, with the CPU model and load.

    python -m benchmarks.studies.masker --reference DIR [--batch 32] [--repeat 3]

`DIR`: a checkout of google-research/albert.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import random
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

from albert import batch_masking, masking
from albert.pretraining_example import decode_example
from albert.tfrecord_framing import tfrecord_records
from albert.tokenization import AlbertTokenizer
from benchmarks.helpers.machine import cpu_model

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "reference"


def real_instances() -> tuple[np.ndarray, np.ndarray]:
    """input_ids (masked positions restored) and token_boundary of the reference's instances."""
    ids, boundary = [], []
    for record in tfrecord_records(str(SHARED / "ref_seq128.tfrecord")):
        example = decode_example(record)
        count = int(example["masked_lm_weights"].sum())
        example["input_ids"][example["masked_lm_positions"][:count]] = example["masked_lm_ids"][
            :count
        ]
        ids.append(example["input_ids"])
        boundary.append(example["token_boundary"].astype(bool))
    return np.stack(ids), np.stack(boundary)


def reference_masker(checkout: Path, work: Path):
    """The reference's create_pretraining_data module, imported from a copy as `albert.*`."""
    package = work / "albert"
    package.mkdir()
    for name in ("__init__.py", "create_pretraining_data.py", "tokenization.py"):
        shutil.copy(checkout / name, package / name)
    sys.modules.setdefault("tensorflow_hub", types.ModuleType("tensorflow_hub"))  # unused here
    for name in [n for n in sys.modules if n == "albert" or n.startswith("albert.")]:
        del sys.modules[name]  # ours stay bound here; `albert` is now the reference's package
    spec = importlib.util.spec_from_file_location(
        "albert", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    sys.modules["albert"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules["albert"])
    module = importlib.import_module("albert.create_pretraining_data")
    module.FLAGS(["masker"])
    return module


def cpu_seconds(function) -> float:
    start = time.process_time()
    function()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ids, boundary = real_instances()
    tokenizer = AlbertTokenizer(str(SHARED / "sp16k.model"))
    vocab = tokenizer.sp.id_to_piece(list(range(tokenizer.vocab_size)))
    pieces = [[vocab[i] for i in row[row != 0]] for row in ids]
    count = len(ids) - len(ids) % args.batch
    options = masking.albert_options(tokenizer.vocab_size, 20, 0.15, 3, True)

    def ours_per_record():
        for i in range(count):
            masking.mask_tokens(
                ids[i], boundary[i], np.random.default_rng([1, 0, i]), vocab_size=len(vocab)
            )

    def ours_per_batch():
        for first in range(0, count, args.batch):
            rows = slice(first, first + args.batch)
            generators = [
                np.random.default_rng([1, 0, i]) for i in range(first, first + args.batch)
            ]
            batch_masking.mask_batch(ids[rows], boundary[rows], generators, options)

    with tempfile.TemporaryDirectory() as work:
        reference = reference_masker(args.reference, Path(work))

        def reference_per_record():
            for i in range(count):
                reference.create_masked_lm_predictions(pieces[i], 0.15, 20, vocab, random.Random(i))

        timings = {
            name: min(cpu_seconds(function) for _ in range(args.repeat))
            for name, function in (
                ("reference", reference_per_record),
                ("ours_per_record", ours_per_record),
                ("ours_per_batch", ours_per_batch),
            )
        }
    rates = {f"{name}_records_per_cpu_s": round(count / s, 1) for name, s in timings.items()}
    print(
        json.dumps(
            {
                "benchmark": "masker",
                "cpu": cpu_model(),
                "cpus": os.cpu_count(),
                "load": os.getloadavg()[0],
                "records": count,
                "batch": args.batch,
                **rates,
                "per_batch_over_reference": round(
                    timings["reference"] / timings["ours_per_batch"], 2
                ),
                "per_batch_over_per_record": round(
                    timings["ours_per_record"] / timings["ours_per_batch"], 2
                ),
            }
        )
    )


if __name__ == "__main__":
    main()
