"""Replay against forgetting: a night's training data is its new sequences mixed with a share of
sequences from earlier in-domain nights and a share of the base's general data.

With new sequences N and shares d (earlier in-domain) and g (general), the night trains on
M = N / (1 - d - g) sequences: round(d·M) drawn without replacement from the earlier nights'
training shards and round(g·M) from the general ones (all of a pool when it holds fewer). The draw,
the deal of the drawn records over the output shards and the order within each shard (a uniformly
random interleaving of its new and replayed records, so any stretch of a shard holds the shares)
come from the seed alone. Records are copied as they are (their static masks included), streamed:
the drawn ones through spool files, never the corpus in memory.

OUTPUT/data-*.tfrecord   the mix, as many shards as the night's own data
OUTPUT/heldout-*.tfrecord  the in-domain held-out set: the earlier nights' held-out shards (none
                         yet: tonight's own), so tonight's data never defines the set it is
                         judged on
OUTPUT/metadata.json     the night's metadata.json with those files and counts (what the trainer
                         checks), and a `replay` block
OUTPUT/mix.json          the counts per source, the shares, the seed (the stage's summary)
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from albert.config import StageConfig
from albert.errors import StageError
from albert.fs import exists, join, open_file, remove
from albert.hashing import derive_seed
from albert.outputs import atomic_output_dir
from albert.tfrecord_framing import tfrecord_frame, tfrecord_records
from model.input.records import named_split, shard_files

MIX_FILE = "mix.json"
METADATA_FILE = "metadata.json"
DOMAIN, GENERAL = "domain", "general"


class ReplayConfig(StageConfig):
    """A night's training mix: its new TFRecords, replayed records from earlier nights and from
    the general data, and the in-domain held-out set so far."""

    data: str = Field(description="tonight's TFRecords directory (pipelines.tfrecords' output)")
    domain_shards: list[str] = Field(
        default_factory=list, description="earlier nights' training shards"
    )
    domain_counts: list[int] = Field(default_factory=list, description="their record counts")
    general_shards: list[str] = Field(
        default_factory=list, description="the base's general training shards"
    )
    general_counts: list[int] = Field(default_factory=list, description="their record counts")
    heldout: list[str] = Field(
        default_factory=list,
        description="the in-domain held-out set: earlier nights' held-out shards (none: tonight's)",
    )
    domain_share: float = Field(0.0, ge=0, lt=1, description="share of earlier in-domain data")
    general_share: float = Field(0.0, ge=0, lt=1, description="share of general data")
    seed: int = Field(12345, description="seeds the draw and the order")
    output: str = Field(description="directory for the mix")

    @model_validator(mode="after")
    def _consistent(self):
        if self.domain_share + self.general_share >= 1:
            raise ValueError("domain_share + general_share must be below 1 (new data needs room)")
        for name in (DOMAIN, GENERAL):
            shards, counts = getattr(self, f"{name}_shards"), getattr(self, f"{name}_counts")
            if len(shards) != len(counts):
                raise ValueError(f"{name}_shards and {name}_counts differ in length")
        return self


def count_records(path: str) -> int:
    """The number of records in one TFRecord file (each checked)."""
    return sum(1 for _ in tfrecord_records(path))


def replay_counts(new: int, shares: Sequence[float], available: Sequence[int]) -> tuple[int, ...]:
    """How many records to draw from each pool: round(share · M) with M = new / (1 - Σ shares),
    at most what the pool holds."""
    total = new / (1.0 - sum(shares))
    return tuple(min(round(s * total), a) for s, a in zip(shares, available))


def draw(available: int, count: int, seed: int) -> np.ndarray:
    """`count` distinct record indices of `available`, sorted, from `seed`."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(available, size=count, replace=False)).astype(np.int64)


def drawn_records(
    shards: Sequence[str], counts: Sequence[int], indices: np.ndarray
) -> Iterator[bytes]:
    """The records at global `indices` (sorted) of the shards read in order (index i is record
    i of their concatenation); only shards holding a drawn record are read."""
    start, position = 0, 0
    for path, count in zip(shards, counts):
        end = start + count
        wanted = []
        while position < len(indices) and indices[position] < end:
            wanted.append(int(indices[position]) - start)
            position += 1
        if wanted:
            pending = iter(wanted)
            target = next(pending)
            for index, record in enumerate(tfrecord_records(path)):
                if index == target:
                    yield record
                    target = next(pending, None)
                    if target is None:
                        break
            if target is not None:
                raise StageError(f"{path}: holds fewer records than the {count} recorded")
        start = end


def stream_order(counts: Sequence[int], seed: int) -> np.ndarray:
    """A uniformly random interleaving of streams with `counts` records: position -> stream."""
    labels = np.repeat(np.arange(len(counts)), counts)
    return np.random.default_rng(seed).permutation(labels)


def interleave(streams: Sequence[Iterable[bytes]], order: Iterable[int]) -> Iterator[bytes]:
    """The records of `streams`, taken in `order` (one stream index per record)."""
    iterators = [iter(s) for s in streams]
    for index in order:
        yield next(iterators[index])


def write_records(path: str, records: Iterable[bytes]) -> int:
    written = 0
    with open_file(path, "wb") as handle:
        for record in records:
            handle.write(tfrecord_frame(record))
            written += 1
    return written


def shard_name(prefix: str, index: int, total: int) -> str:
    return f"{prefix}-{index:05d}-of-{total:05d}.tfrecord"


def night_files(data: str) -> tuple[dict[str, Any], list[str], list[str]]:
    """(metadata, training shards, held-out shards) of a TFRecords stage output: the held-out
    shards are those its metadata.json names (model.input.records.named_split)."""
    metadata_path = join(data, METADATA_FILE)
    if not exists(metadata_path):
        raise StageError(f"{data}: no {METADATA_FILE} (not a TFRecords stage output)")
    with open_file(metadata_path, "r") as handle:
        metadata = json.load(handle)
    return metadata, *named_split(shard_files(data), metadata)


def run(config: ReplayConfig) -> dict[str, Any]:
    """Write the mix to `config.output` (whole or not at all); returns mix.json's contents."""
    metadata, training, heldout = night_files(config.data)
    if not training:
        raise StageError(f"{config.data}: no training shards")
    new_counts = [count_records(path) for path in training]
    pools = {
        DOMAIN: (config.domain_shards, config.domain_counts, config.domain_share),
        GENERAL: (config.general_shards, config.general_counts, config.general_share),
    }
    wanted = replay_counts(
        sum(new_counts), [p[2] for p in pools.values()], [sum(p[1]) for p in pools.values()]
    )
    shards = len(training)
    with atomic_output_dir(config.output) as out:
        spools: dict[str, list[str]] = {}
        dealt: dict[str, list[int]] = {}
        for offset, (name, (paths, counts, _)) in enumerate(pools.items()):
            indices = draw(sum(counts), wanted[offset], derive_seed(config.seed, offset))
            spools[name], dealt[name] = _spool(
                out, name, drawn_records(paths, counts, indices), shards
            )
        for index, path in enumerate(training):
            streams = [
                tfrecord_records(path),
                *(tfrecord_records(s[index]) for s in spools.values()),
            ]
            counts = [new_counts[index], *(d[index] for d in dealt.values())]
            order = stream_order(counts, derive_seed(config.seed, 2, index))
            write_records(join(out, shard_name("data", index, shards)), interleave(streams, order))
        for path in (p for names in spools.values() for p in names):
            remove(path)
        heldout_files = list(config.heldout) or heldout
        heldout_names = [
            shard_name("heldout", i, len(heldout_files)) for i in range(len(heldout_files))
        ]
        heldout_counts = [
            write_records(join(out, name), tfrecord_records(path))
            for name, path in zip(heldout_names, heldout_files)
        ]
        summary = {
            "new": sum(new_counts),
            "replay_domain": sum(dealt[DOMAIN]),
            "replay_general": sum(dealt[GENERAL]),
            "sequences": sum(new_counts) + sum(dealt[DOMAIN]) + sum(dealt[GENERAL]),
            "domain_share": config.domain_share,
            "general_share": config.general_share,
            "available_domain": sum(config.domain_counts),
            "available_general": sum(config.general_counts),
            "new_shards": [posixpath.basename(p) for p in training],
            "new_counts": new_counts,
            "heldout_sequences": sum(heldout_counts),
            "heldout_shards": len(heldout_files),
            "seed": config.seed,
        }
        _write_json(join(out, METADATA_FILE), _mix_metadata(metadata, summary, heldout_names))
        _write_json(join(out, MIX_FILE), summary)
    return summary


def _spool(
    out: str, name: str, records: Iterable[bytes], shards: int
) -> tuple[list[str], list[int]]:
    """Deal `records` round-robin over `shards` spool files in `out`; their paths and counts."""
    paths = [join(out, f".spool-{name}-{i:05d}.tfrecord") for i in range(shards)]
    handles = [open_file(p, "wb") for p in paths]
    counts = [0] * shards
    try:
        for position, record in enumerate(records):
            handles[position % shards].write(tfrecord_frame(record))
            counts[position % shards] += 1
    finally:
        for handle in handles:
            handle.close()
    return paths, counts


def _mix_metadata(
    metadata: dict[str, Any], summary: dict[str, Any], heldout_names: list[str]
) -> dict[str, Any]:
    shards = len(summary["new_counts"])
    counts = {
        **(metadata.get("counts") or {}),
        "instances": summary["sequences"],
        "heldout_instances": summary["heldout_sequences"],
    }
    return {
        **metadata,
        "counts": counts,
        "files": [shard_name("data", i, shards) for i in range(shards)] + heldout_names,
        "heldout": {
            **(metadata.get("heldout") or {}),
            "files": heldout_names,
            "instances": summary["heldout_sequences"],
        },
        "replay": {k: v for k, v in summary.items() if k not in ("new_shards", "new_counts")},
    }


def _write_json(path: str, value: dict[str, Any]) -> None:
    with open_file(path, "w") as handle:
        json.dump(value, handle, indent=2, sort_keys=True)
