"""Corpus-scale rehearsal: segment -> vocab -> tfrecords at ~0.25 GB and ~1 GB on the local runner.

    python -m benchmarks.scale [--sizes 0.25,1] [--workers 2] [--workdir DIR] [--reference DIR]

Corpora of distinct documents from the real shared text (../shared/data): the 13 Gutenberg books and
the Wikipedia dump sample are cleaned and split into sentences by the segment stage's own pure
functions (about 150k distinct real sentences); then each document of a corpus is re-assembled from
a seeded sample of them: 3-8 paragraphs of 2-6 sentences drawn uniformly (numpy PCG64 seeded by
(size, file)). With ~10^25 possible paragraphs, no two paragraphs or documents coincide, so
de-duplication keeps every document and the later stages see the whole size. Files are plain text
(`--format text`: a paragraph a line, a blank line between documents), 16 per corpus.

Each stage runs as users run it, `python -m pipelines.X ... --direct_running_mode=multi_processing
--direct_num_workers=N`, in a fresh process: wall seconds, CPU seconds of the whole process tree
(the driver and its reaped workers), MB and tokens per CPU second (= per core; MB of the stage's
input, tokens = SentencePiece pieces of the corpus, from metadata.json), and the peak RSS of the
whole process tree (the sum over the driver and its workers, sampled every 0.2 s). vocab trains on a
fixed 200k-sentence sample (its memory follows the sample, by design); tfrecords writes one static
dupe pass at 512 tokens. `rss_ratio`: each stage's peak RSS at the largest size over the smallest
(goal: <= 1.2).

`--reference DIR` (a checkout of google-research/albert) also runs its create_pretraining_data.py
side by side with `pipelines.tfrecords` on one worker, on the same samples (the first 3 MB and 9 MB
of the smallest corpus's segmented shards, same vocabulary, dupe 1, 512 tokens): MB per CPU second
of each, their marginal rate (start-up left out) and the ratios. The reference imports
tensorflow_hub only for TF-Hub vocabularies; where that is not installed a blank stand-in module is
put on its path. Its copy decodes the bytes pieces of its digit-comma rule (`PY3_DIGIT_COMMA_FIX`),
without which it stops on a vocabulary with a piece such as "87,". Prints ONE JSON line (progress
on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from apache_beam.io.filesystems import FileSystems

from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.process_tree import measure
from benchmarks.helpers.tfrecords_command import tfrecords_command

REPO = Path(__file__).resolve().parents[1]
from pipelines.common import text_cleaning
from pipelines.segment import input_formats
from pipelines.segment import stage as segment

SHARED = Path(os.environ.get("ALBERT_SHARED_DATA", REPO.parent / "shared" / "data"))
WIKI = SHARED / "wikipedia" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
FILES_PER_CORPUS = 16
SAMPLE_MB = 3
# The reference's digit-comma rule re-encodes a piece such as "87," from bytes; SentencePiece 0.2
# then returns bytes pieces, on which is_start_piece fails under Python 3: decoded (as in Python 2).
PY3_DIGIT_COMMA_FIX = (
    "new_pieces.extend(cur_pieces)",
    "new_pieces.extend(printable_text(p) for p in cur_pieces)",
)


def sentence_pool(workdir: Path) -> list[str]:
    """Distinct real sentences of the shared books and Wikipedia sample, by the segment stage's
    functions."""
    cached = workdir / "sentences.txt"
    if not cached.exists():
        splitter = text_cleaning.SentenceSplitter()
        sentences: set[str] = set()
        for path in [*sorted(str(p) for p in (SHARED / "books").glob("*.txt")), str(WIKI)]:
            with FileSystems.open(path, compression_type="uncompressed") as raw:
                for document in input_formats.read_documents(
                    path, raw, "auto", fallback_encoding="latin-1", inc=lambda name, amount=1: None
                ):
                    for paragraph in segment.clean_paragraphs(
                        document.format, document.text, "NFKC"
                    ):
                        sentences.update(
                            s for s in splitter.split(paragraph) if 20 <= len(s) <= 600
                        )
        cached.write_text("\n".join(sorted(sentences)) + "\n", encoding="utf-8")
    return cached.read_text(encoding="utf-8").splitlines()


def build_corpus(directory: Path, gigabytes: float, pool: list[str]) -> Path:
    """FILES_PER_CORPUS text files of distinct documents re-assembled from seeded samples of
    `pool`."""
    if (directory / "_done").exists():
        return directory
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    per_file = gigabytes * 1e9 / FILES_PER_CORPUS
    encoded = [sentence.encode("utf-8") for sentence in pool]
    for index in range(FILES_PER_CORPUS):
        rng = np.random.Generator(np.random.PCG64([int(gigabytes * 1000), index]))
        written = 0
        with open(directory / f"docs-{index:03d}.txt", "wb") as handle:
            while written < per_file:
                lines = []
                for _ in range(int(rng.integers(3, 9))):
                    picks = rng.integers(len(encoded), size=int(rng.integers(2, 7)))
                    lines.append(b" ".join(encoded[i] for i in picks))
                block = b"\n".join(lines) + b"\n\n"
                handle.write(block)
                written += len(block)
    (directory / "_done").touch()
    return directory


def megabytes(directory: Path, pattern: str) -> float:
    return sum(p.stat().st_size for p in directory.glob(pattern)) / 1e6


def run_stages(workdir: Path, corpus: Path, name: str, workers: int) -> dict:
    beam = ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"]
    python = [sys.executable, "-m"]
    seg, voc, tfr = workdir / f"seg-{name}", workdir / f"vocab-{name}", workdir / f"tfr-{name}"
    for directory in (seg, voc, tfr):
        shutil.rmtree(directory, ignore_errors=True)
    stages = {}
    commands = {
        "segment": [
            *python,
            "pipelines.segment",
            "--input",
            str(corpus / "*.txt"),
            "--format",
            "text",
            "--output",
            str(seg),
            "--num-shards",
            "16",
            *beam,
        ],
        "vocab": [
            *python,
            "pipelines.vocab",
            "--input",
            str(seg),
            "--output",
            str(voc),
            "--vocab-size",
            "8000",
            "--sample-sentences",
            "200000",
            "--num-threads",
            str(workers),
            *beam,
        ],
        "tfrecords": tfrecords_command(seg, voc / "spiece.model", tfr, *beam),
    }
    inputs = {"segment": megabytes(corpus, "*.txt")}
    for stage, command in commands.items():
        print(f"scale {name}: {stage} ...", file=sys.stderr, flush=True)
        stages[stage] = measure(command, REPO)
        if stage == "segment":
            inputs["vocab"] = inputs["tfrecords"] = megabytes(seg, "*.txt")
        print(f"scale {name}: {stage} {stages[stage]}", file=sys.stderr, flush=True)
    metadata = json.loads((tfr / "metadata.json").read_text())
    stats = json.loads((seg / "stats.json").read_text())
    tokens = metadata["counts"]["document_tokens"]
    for stage, figures in stages.items():
        figures["input_mb"] = round(inputs[stage], 1)
        figures["mb_per_cpu_s"] = round(inputs[stage] / figures["cpu_s"], 3)
        figures["tokens_per_cpu_s"] = round(tokens / figures["cpu_s"])
    return {
        "corpus_mb": round(inputs["segment"], 1),
        "documents_in": stats["documents_in"],
        "documents_out": stats["documents_out"],
        "skipped_duplicate_document": stats["skipped"]["duplicate_document"],
        "paragraphs_duplicate": stats["paragraphs_duplicate"],
        "tokens": tokens,
        "instances": metadata["counts"]["instances"],
        **stages,
    }


def segmented_sample(workdir: Path, name: str, megabytes_wanted: float) -> Path:
    """The first documents of a segmented corpus, about `megabytes_wanted` MB, in one file."""
    sample = workdir / f"sample-{megabytes_wanted:g}mb"
    shutil.rmtree(sample, ignore_errors=True)
    sample.mkdir()
    remaining = int(megabytes_wanted * 1e6)
    with open(sample / "sample.txt", "wb") as out:
        for shard in sorted((workdir / f"seg-{name}").glob("*.txt")):
            for block in shard.read_bytes().split(b"\n\n"):
                if remaining > 0 and block.strip():
                    out.write(block.strip(b"\n") + b"\n\n")
                    remaining -= len(block) + 2
    return sample


def reference_side_by_side(workdir: Path, reference: Path, name: str) -> dict:
    """create_pretraining_data.py and pipelines.tfrecords (1 worker) on the same segmented samples.

    Each runs on SAMPLE_MB and 3 x SAMPLE_MB; `marginal_mb_per_cpu_s` (the extra MB over the extra
    CPU seconds) leaves out both tools' start-up (TensorFlow or Beam imports)."""
    model = workdir / f"vocab-{name}" / "spiece.model"
    package = workdir / "reference-path"
    shutil.rmtree(package, ignore_errors=True)
    (package / "albert").mkdir(parents=True)
    for file in ("__init__.py", "create_pretraining_data.py", "tokenization.py"):
        shutil.copy(reference / file, package / "albert" / file)
    tokenization = package / "albert" / "tokenization.py"  # the copy, never the checkout
    tokenization.write_text(tokenization.read_text().replace(*PY3_DIGIT_COMMA_FIX))
    try:
        import tensorflow_hub  # noqa: F401  # optional: only whether it is installed matters
    except ImportError:
        (package / "tensorflow_hub.py").write_text(
            '"""Blank stand-in: unused with --spm_model_file."""\n'
        )
    env = {**os.environ, "PYTHONPATH": str(package), "TF_CPP_MIN_LOG_LEVEL": "2"}
    runs: dict[str, dict] = {"reference": {}, "ours_one_worker": {}}
    for size in (SAMPLE_MB, 3 * SAMPLE_MB):
        sample = segmented_sample(workdir, name, size)
        print(f"scale: reference side by side on {size} MB ...", file=sys.stderr, flush=True)
        runs["reference"][size] = measure(
            [
                sys.executable,
                "-m",
                "albert.create_pretraining_data",
                f"--input_file={sample / 'sample.txt'}",
                f"--output_file={workdir / 'reference.tfrecord'}",
                f"--spm_model_file={model}",
                "--vocab_file=unused",
                "--max_seq_length=512",
                "--max_predictions_per_seq=20",
                "--masked_lm_prob=0.15",
                "--dupe_factor=1",
                "--do_lower_case=true",
                "--random_seed=12345",
            ],
            workdir,
            env,
        )
        output = workdir / "ours-sample"
        shutil.rmtree(output, ignore_errors=True)
        runs["ours_one_worker"][size] = measure(
            [
                sys.executable,
                "-m",
                "pipelines.tfrecords",
                "--input",
                str(sample),
                "--spm-model",
                str(model),
                "--output",
                str(output),
                "--dupe-factor",
                "1",
                "--max-seq-length",
                "512",
                "--num-shards",
                "4",
            ],
            REPO,
        )
        for tool in runs.values():
            tool[size]["sample_mb"] = round(megabytes(sample, "*.txt"), 2)
    figures: dict = {}
    for tool, by_size in runs.items():
        small, large = by_size[SAMPLE_MB], by_size[3 * SAMPLE_MB]
        figures[tool] = {
            "runs": list(by_size.values()),
            "mb_per_cpu_s": round(large["sample_mb"] / large["cpu_s"], 3),
            "marginal_mb_per_cpu_s": round(
                (large["sample_mb"] - small["sample_mb"]) / (large["cpu_s"] - small["cpu_s"]), 3
            ),
        }
    figures["ratio_per_core"] = round(
        figures["ours_one_worker"]["mb_per_cpu_s"] / figures["reference"]["mb_per_cpu_s"], 1
    )
    figures["marginal_ratio_per_core"] = round(
        figures["ours_one_worker"]["marginal_mb_per_cpu_s"]
        / figures["reference"]["marginal_mb_per_cpu_s"],
        1,
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="0.25,1", help="corpus sizes in GB, comma-separated")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--workdir", help="where corpora and outputs go (default: a temporary directory)"
    )
    parser.add_argument(
        "--reference", type=Path, help="a google-research/albert checkout, for the side by side"
    )
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)
    pool = sentence_pool(workdir)
    sizes = [float(size) for size in args.sizes.split(",")]
    results = {}
    for size in sizes:
        name = f"{size:g}gb"
        corpus = build_corpus(workdir / f"corpus-{name}", size, pool)
        results[name] = run_stages(workdir, corpus, name, args.workers)
        print(json.dumps({name: results[name]}), file=sys.stderr, flush=True)
    small, large = f"{min(sizes):g}gb", f"{max(sizes):g}gb"
    figures = {
        "benchmark": "scale",
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "workers": args.workers,
        "sentence_pool": len(pool),
        "sizes": results,
        "rss_ratio": {
            stage: round(
                results[large][stage]["peak_rss_mb"] / results[small][stage]["peak_rss_mb"], 2
            )
            for stage in ("segment", "vocab", "tfrecords")
        },
        "mb_per_cpu_s_ratio": {
            stage: round(
                results[large][stage]["mb_per_cpu_s"] / results[small][stage]["mb_per_cpu_s"], 2
            )
            for stage in ("segment", "vocab", "tfrecords")
        },
    }
    if args.reference:
        figures["tfrecords_vs_reference"] = reference_side_by_side(workdir, args.reference, small)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
