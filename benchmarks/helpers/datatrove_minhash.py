"""Datatrove 0.10.1's MinHash beside ours in benchmarks/near_dedup.py: its four steps (Signature,
Buckets, Cluster, Filter with LocalPipelineExecutor) on a planted corpus's JSONL, its clusters read
back with our keep rule (the document with the least key kept, so removed sets compare), and the
agreement of its removed set with ours. Datatrove is imported where it runs (the `bench` extra)."""

from __future__ import annotations

import resource
from collections import defaultdict
from pathlib import Path

from benchmarks.helpers.near_dup_corpus import keys


def datatrove(corpus: Path, work: Path, bands: int, rows: int) -> tuple[dict[int, int], float]:
    """(cluster of each document in one, CPU seconds of the four steps, children included)."""
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    config = MinhashConfig(n_grams=5, num_buckets=bands, hashes_per_bucket=rows)
    reader = JsonlReader(str(corpus.parent), glob_pattern=corpus.name, id_key="id")
    steps = [
        [reader, MinhashDedupSignature(output_folder=str(work / "sigs"), config=config)],
        [MinhashDedupBuckets(str(work / "sigs"), str(work / "buckets"), config=config)],
        [
            MinhashDedupCluster(
                str(work / "buckets"), str(work / "ids"), config, save_cluster_id=True
            )
        ],
        [reader, MinhashDedupFilter(str(work / "ids")), JsonlWriter(str(work / "out"))],
    ]
    start = cpu_seconds()
    for index, pipeline in enumerate(steps):
        tasks = bands if index == 1 else 1
        LocalPipelineExecutor(
            pipeline, tasks=tasks, workers=1, logging_dir=str(work / f"logs{index}")
        ).run()
    seconds = cpu_seconds() - start
    data = (work / "ids" / "000000.clusters").read_bytes() if (work / "ids").exists() else b""
    values = [int.from_bytes(data[i : i + 4], "little") for i in range(0, len(data), 4)]
    members: dict[int, list[int]] = defaultdict(list)
    for doc, cluster_id in zip(values[::2], values[1::2], strict=True):
        members[cluster_id].append(doc)
    order = keys(max(values[::2], default=0) + 1)
    cluster = {}
    for group in members.values():
        kept = min(group, key=lambda d: order[d])  # our keep rule, so removed sets compare
        cluster.update({doc: kept for doc in group})
    return cluster, seconds


def cpu_seconds() -> float:
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


def compare(ours_cluster: dict, theirs: dict, truth: dict) -> dict:
    """Agreement of the removed sets (same keep rule) and each disagreement's best exact Jaccard."""
    ours_removed = {d for d, k in ours_cluster.items() if d != k}
    their_removed = {d for d, k in theirs.items() if d != k}
    disagreements = []
    for doc in sorted(ours_removed ^ their_removed):
        partner = ours_cluster.get(doc, theirs.get(doc))
        pair = (min(doc, partner), max(doc, partner))
        disagreements.append(
            {
                "doc": doc,
                "removed_by": "ours" if doc in ours_removed else "datatrove",
                "kept": partner,
                "exact_jaccard": round(truth.get(pair, 0.0), 4),
            }
        )
    union = ours_removed | their_removed
    return {
        "removed_agreement": round(len(ours_removed & their_removed) / len(union), 4)
        if union
        else 1.0,
        "disagreements": disagreements,
    }
