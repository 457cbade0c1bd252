"""Near-duplicate removal measured: recall and precision against exact Jaccard, datatrove side by
side, and what it costs the segment stage.

Two corpora, as JSONL: the shared Wikipedia sample's articles and the books cut into chunks, some
followed by a planted near-copy (a verse dropped, 1-4% of the words changed, case and punctuation
changed, a notice added, a verse dropped and words changed). `tuning` (the defaults were first
chosen on it): ~2,000-word chunks, every third copied; `held-out`: ~750-word chunks, every ninth,
edits drawn with another seed. The truth: the exact Jaccard of every pair's word 5-gram sets. One
JSON line per figure: `corpus`; `ours` per check and bands x rows (CPU s/MB of our pure functions
in one process, best of 3; recall of redundant copies; removed documents without a partner
>= 0.5): `exact` is segment's check (every candidate by the exact Jaccard of its shingle sets),
`estimate` the one before it (the signatures' agreement); `datatrove` 0.10.1 (Signature, Buckets,
Cluster, Filter with LocalPipelineExecutor) at its defaults (14 x 8) on the same JSONL, the
agreement of the removed sets (our keep rule applied to its clusters), each disagreement's exact
Jaccard; `goal` (one line per side on each corpus: recall >= 0.99, no removal without a partner
>= 0.5, CPU s per MB); `segment`: segment.run in a fresh process, near-dedup off and on, the
Wikipedia sample (the demo corpus) and the books; `memory`: 600 documents 1x and 4x (each followed
by 3 near-copies edited anew), peak RSS (VmHWM)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks.helpers.datatrove_minhash import compare, datatrove
from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.near_dup_corpus import BOOKS, NAME, WIKI, keys, planted_corpus, write_jsonl
from benchmarks.helpers.near_dup_truth import scores, truth_pairs
from benchmarks.helpers.segment_process import segment_process
from pipelines.dedup import minhash
from pipelines.dedup.clusters import (
    CURRENT,
    Member,
    Pair,
    accepted,
    candidate_pairs,
    node,
    removals,
)

SETTINGS = [(14, 5), (14, 8), (20, 5)]  # bands x rows; the first is segment's default
REPEATS = 3  # runs of each of our checks, the least CPU time kept (the machine is shared)
BEFORE = (14, 8)  # the bands and rows of the estimate check, datatrove's defaults
CORPORA = {
    "tuning": {"chunk_words": 2000, "every": 3, "seed": 44},
    "held-out": {"chunk_words": 750, "every": 9, "seed": 45},
}


def emit(figure: str, **values) -> None:
    print(json.dumps({"figure": figure, **values}), flush=True)


def ours(
    documents: list[str], bands: int, rows: int, exact: bool = True
) -> tuple[set[int], dict[int, int], float]:
    """(removed, cluster of each document in one, CPU seconds): segment's pure functions, its
    check (`exact`: every candidate by the exact Jaccard of the shingle sets) or the one before it
    (the signatures' agreement, among a bucket's representatives)."""
    start = time.process_time()
    parameters = minhash.permutation_parameters(bands * rows, 44)
    buckets: dict[bytes, list[Member]] = defaultdict(list)
    names = [node(CURRENT, key) for key in keys(len(documents))]
    shingles = {}
    for name, text in zip(names, documents, strict=True):
        hashes = minhash.shingle_hashes(text, 5)
        sig = minhash.signature(hashes, parameters)
        if sig is not None:
            shingles[name] = minhash.shingle_set(hashes)
            for band in minhash.band_keys(sig, bands, rows):
                buckets[band].append(Member(name, sig))
    grouped = [sorted(members) for _, members in sorted(buckets.items())]
    if exact:
        candidates = sorted({p for members in grouped for p in candidate_pairs(members, 0.8)})
        checked = ((a, b, accepted(shingles[a], shingles[b], 0.8)) for a, b in candidates)
        pairs = (Pair(a, b, j, "", "") for a, b, j in checked if j is not None)
    else:
        pairs = (p for members in grouped for p in estimate_pairs(members, 0.8))
    removed_list, _ = removals(pairs)
    seconds = time.process_time() - start
    number = {name: i for i, name in enumerate(names)}
    cluster = {number[r.node]: number[r.kept] for r in removed_list}
    cluster.update({kept: kept for kept in cluster.values()})
    return {number[r.node] for r in removed_list}, cluster, seconds


def estimate_pairs(members: list[Member], threshold: float):
    """The check before the exact one: a bucket's member paired with each representative whose
    signature agrees on `threshold` of its positions (the representatives: those that matched
    none before them)."""
    nodes: list[bytes] = []
    signatures: list[np.ndarray] = []
    for member in members:
        matched = False
        if signatures:
            agree = minhash.similarities(np.stack(signatures), member.signature)
            for index in np.flatnonzero(agree >= threshold):
                matched = True
                yield Pair(nodes[index], member.node, float(agree[index]), "", "")
        if not matched:
            nodes.append(member.node)
            signatures.append(member.signature)


def segment_run(inputs: list[str], near: bool, out: Path) -> dict:
    """segment.run in a fresh process: wall and CPU seconds, peak RSS, documents removed."""
    config = {"input": inputs, "output": str(out), "near_dedup": near}
    config["fallback_encoding"] = "latin-1"  # the books
    figures = segment_process(config)
    names = ("wall_s", "cpu_s", "peak_rss_mb", "near_duplicates", "documents_out")
    return {k: figures[k] for k in names}


def goal(corpus: str, side: str, figures: dict) -> None:
    """One side's figures against the goal: recall >= 0.99, no removal without a partner >= 0.5."""
    recall, lone = figures["recall"], figures["removed_without_partner_0_5"]
    emit(
        "goal",
        corpus=corpus,
        side=side,
        recall=recall,
        removed_without_partner_0_5=len(lone),
        cpu_s_per_mb=figures["cpu_s_per_mb"],
        meets=recall is not None and recall >= 0.99 and not lone,
    )


def quality(work: Path) -> None:
    for corpus, settings in CORPORA.items():
        documents, planted = planted_corpus(**settings)
        truth = truth_pairs(documents)
        (work / corpus).mkdir()
        path = work / corpus / NAME
        megabytes = write_jsonl(documents, path)
        redundant = scores(set(), truth, len(documents))["redundant_copies"]
        emit(
            "corpus",
            corpus=corpus,
            **settings,
            documents=len(documents),
            mb=round(megabytes, 2),
            planted=planted,
            pairs_0_8=sum(j >= 0.8 for j in truth.values()),
            redundant_copies=redundant,
        )
        results, sides = {}, {}
        for check, bands, rows in [("estimate", *BEFORE)] + [("exact", *s) for s in SETTINGS]:
            runs = [ours(documents, bands, rows, exact=check == "exact") for _ in range(REPEATS)]
            removed, results[check, bands, rows], _ = runs[0]
            seconds = min(run[2] for run in runs)  # the same sets each time: the best CPU time
            figures = {
                "cpu_s": round(seconds, 2),
                "cpu_s_per_mb": round(seconds / megabytes, 3),
                **scores(removed, truth, len(documents)),
            }
            emit("ours", corpus=corpus, check=check, bands=bands, rows=rows, **figures)
            sides.setdefault("before" if check == "estimate" else "ours", figures)
        theirs, seconds = datatrove(path, work / corpus / "datatrove", *BEFORE)
        their_removed = {d for d, k in theirs.items() if d != k}
        sides["datatrove"] = {
            "cpu_s": round(seconds, 2),
            "cpu_s_per_mb": round(seconds / megabytes, 3),
            **scores(their_removed, truth, len(documents)),
        }
        emit(
            "datatrove",
            corpus=corpus,
            version="0.10.1",
            bands=BEFORE[0],
            rows=BEFORE[1],
            **sides["datatrove"],
            **compare(results[("exact", *SETTINGS[0])], theirs, truth),
        )
        for side, figures in sides.items():
            goal(corpus, side, figures)


def cost(work: Path, repeats: int = 2) -> None:
    for name, inputs in (("wikipedia (the demo corpus)", [str(WIKI)]), ("books", [str(BOOKS)])):
        for near in (False, True):
            runs = [
                segment_run(inputs, near, work / f"{name[:5]}-{near}-{r}") for r in range(repeats)
            ]
            best = {k: min(run[k] for run in runs) for k in ("wall_s", "cpu_s", "peak_rss_mb")}
            emit("segment", corpus=name, near_dedup=near, repeats=repeats, **runs[0] | best)
    for copies in (0, 3):
        corpus, _ = planted_corpus(copies, every=1, limit=600)
        path = work / f"scale{copies}.jsonl"
        megabytes = round(write_jsonl(corpus, path), 2)
        emit(
            "memory",
            scale=f"{copies + 1}x",
            mb=megabytes,
            **segment_run([str(path)], True, work / f"scale{copies}"),
        )


def main() -> None:
    """Run: python -m benchmarks.near_dedup [--part quality|cost]"""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all", "quality", "cost"), default="all")
    part = parser.parse_args().part
    if part != "cost" and importlib.util.find_spec("datatrove") is None:  # the `bench` extra
        parser.exit(2, "benchmarks.near_dedup: datatrove is missing: `make bench` installs it\n")
    emit("machine", cpu=cpu_model(), cores=os.cpu_count(), load=os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        if part in ("all", "quality"):
            quality(Path(tmp))
        if part in ("all", "cost"):
            cost(Path(tmp))
    emit("load_after", load=os.getloadavg())


if __name__ == "__main__":
    main()
