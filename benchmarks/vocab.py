"""Benchmark pipelines.vocab on the shared books + Wikipedia; prints one JSON line of figures.

- time, peak RSS, held-out unk rate and pieces per word of 8k and 30k vocabularies (one job process
  each);
- the Beam job's overhead over SentencePiece's trainer called directly on the same sample (the
  sample is rebuilt with the job's pure functions, written to a file, and trained on with the same
  options), in wall time and in CPU time (the job process's, less its interpreter start and
  imports); each is the best of --repeats runs, alternating job and direct, since the machine is
  shared;
- peak RSS at 1x and 4x the corpus (4 copies of every shard) with a sample smaller than the corpus.

Usage: python -m benchmarks.vocab [--corpus SEGMENTED_DIR] [--threads N]
Without --corpus the shared books and Wikipedia sample are segmented with pipelines.segment first.
Timings on a shared machine are noisy."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sentencepiece as spm

ROOT = Path(__file__).resolve().parents[1]

from albert.fs import expand, remove
from benchmarks.helpers.shared_data import BOOKS_AND_WIKIPEDIA
from pipelines.vocab import sampling
from pipelines.vocab import stage as vocab
from pipelines.vocab.sentencepiece_trainer import trainer_kwargs

SHARED = ROOT.parent / "shared" / "data"


def segment_shared_corpus(output: Path) -> float:
    from pipelines.segment import stage as segment  # heavy: Beam

    start = time.perf_counter()
    segment.run(
        segment.SegmentConfig(
            input=BOOKS_AND_WIKIPEDIA,
            output=str(output),
            fallback_encoding="latin-1",
        )
    )
    return time.perf_counter() - start


def run_job(corpus: Path, output: Path, *flags: str) -> dict:
    """Run the job in a fresh process; its stats plus process wall time, CPU time and peak RSS."""
    command = [
        sys.executable,
        "-m",
        "pipelines.vocab",
        "--input",
        str(corpus),
        "--output",
        str(output),
        *flags,
    ]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    stdout = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed with status {status}")
    stats = json.loads(stdout)
    stats["process_seconds"] = round(time.perf_counter() - start, 2)
    stats["peak_rss_mb"] = round(usage.ru_maxrss / 1024, 1)
    stats["cpu_seconds"] = usage.ru_utime + usage.ru_stime
    return stats


def import_cpu_seconds() -> float:
    """CPU time of starting Python and importing the job (subtracted from the job's CPU time)."""
    process = subprocess.Popen([sys.executable, "-c", "import pipelines.vocab.stage"], cwd=ROOT)
    _, _, usage = os.wait4(process.pid, 0)
    return usage.ru_utime + usage.ru_stime


def job_sample(corpus: Path, config: vocab.VocabConfig) -> list[str]:
    """The training sample the job draws, rebuilt with its pure functions."""
    keyed = []
    for path in expand(vocab.input_pattern(str(corpus))):
        with open(path, "rb") as handle:
            for line in handle:
                keyed.extend(
                    vocab.prepare_sentence(
                        line.rstrip(b"\n"),
                        config.seed,
                        config.do_lower_case,
                        config.keep_accents,
                        config.max_sentence_bytes,
                        lambda name, n: None,
                    )
                )
    bounds = sampling.sample_bounds(len(keyed), config.sample_sentences, config.heldout_sentences)
    train = [(key, s) for key, s in keyed if sampling.sample_role(key, bounds) == "train"]
    return [s for _, s in sampling.keep_smallest_keys(train, config.sample_sentences)]


def direct_training(
    sample_file: Path, vocab_size: int, threads: int, prefix: Path
) -> tuple[float, float]:
    """Wall and CPU seconds of SentencePiece's trainer on the sample file, with the job's
    options."""
    start, cpu_start = time.perf_counter(), time.process_time()
    spm.SentencePieceTrainer.train(
        **trainer_kwargs(
            vocab_size,
            input=str(sample_file),
            model_prefix=str(prefix),
            character_coverage=0.99995,
            input_sentence_size=0,
            shuffle_input_sentence=False,
            num_threads=threads,
        )
    )
    return time.perf_counter() - start, time.process_time() - cpu_start


def same_pieces(model_a: Path, model_b: Path) -> bool:
    a = spm.SentencePieceProcessor(model_file=str(model_a))
    b = spm.SentencePieceProcessor(model_file=str(model_b))
    return [a.id_to_piece(i) for i in range(a.get_piece_size())] == [
        b.id_to_piece(i) for i in range(b.get_piece_size())
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--corpus", help="a segmented corpus directory (default: segment the shared data)"
    )
    parser.add_argument(
        "--threads", type=int, default=os.cpu_count(), help="SentencePiece trainer threads"
    )
    parser.add_argument(
        "--scale-sample", type=int, default=20_000, help="sample size of the 1x/4x runs"
    )
    parser.add_argument(
        "--repeats", type=int, default=2, help="runs of job and direct trainer per size"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vocab-bench-"))
    result: dict = {"benchmark": "vocab", "threads": args.threads, "cpus": os.cpu_count()}
    if args.corpus:
        corpus = Path(args.corpus)
    else:
        corpus = work / "corpus"
        result["segment_seconds"] = round(segment_shared_corpus(corpus), 2)
    threads = ["--num-threads", str(args.threads)]

    imports_cpu = min(import_cpu_seconds() for _ in range(args.repeats))
    result["import_cpu_seconds"] = round(imports_cpu, 2)
    for size in (8000, 30000):
        config = vocab.VocabConfig(input=str(corpus), output="unused", vocab_size=size)
        sample_file = work / f"sample{size}.txt"
        sample_file.write_text(
            "".join(s + "\n" for s in job_sample(corpus, config)), encoding="utf-8"
        )
        jobs, directs = [], []
        for repeat in range(args.repeats):
            jobs.append(
                run_job(corpus, work / f"vocab{size}-{repeat}", "--vocab-size", str(size), *threads)
            )
            directs.append(direct_training(sample_file, size, args.threads, work / f"direct{size}"))
        stats = jobs[0]
        job_wall = min(job["wall_seconds"] for job in jobs)
        job_cpu = min(job["cpu_seconds"] for job in jobs) - imports_cpu
        direct_wall, direct_cpu = min(wall for wall, _ in directs), min(cpu for _, cpu in directs)
        result[f"vocab_{size // 1000}k"] = {
            "job_seconds": [job["wall_seconds"] for job in jobs],
            "job_process_seconds": [job["process_seconds"] for job in jobs],
            "job_training_seconds": [job["training_seconds"] for job in jobs],
            "direct_training_seconds": [round(wall, 2) for wall, _ in directs],
            "overhead_wall_pct": round(100 * (job_wall - direct_wall) / job_wall, 1),
            "job_cpu_seconds": round(job_cpu, 2),
            "direct_cpu_seconds": round(direct_cpu, 2),
            "overhead_cpu_pct": round(100 * (job_cpu - direct_cpu) / job_cpu, 1),
            "same_pieces_as_direct": same_pieces(
                work / f"vocab{size}-0" / "spiece.model", work / f"direct{size}.model"
            ),
            "same_model_every_run": len({job["model_sha256"] for job in jobs}) == 1,
            "peak_rss_mb": max(job["peak_rss_mb"] for job in jobs),
            "corpus_sentences": stats["corpus_sentences"],
            "sample_sentences": stats["sample_sentences"],
            "heldout_sentences": stats["heldout_sentences"],
            "unk_rate": stats["unk_rate"],
            "pieces_per_word": round(stats["pieces_per_word"], 4),
        }

    scaled = work / "corpus4x"
    scaled.mkdir()
    for copy in range(4):
        for shard in sorted(corpus.glob("*.txt")):
            (scaled / f"copy{copy}-{shard.name}").symlink_to(shard.resolve())
    for name, directory in (("1x", corpus), ("4x", scaled)):
        stats = run_job(
            directory,
            work / f"scale{name}",
            "--vocab-size",
            "8000",
            "--sample-sentences",
            str(args.scale_sample),
            *threads,
        )
        result[f"scale_{name}"] = {
            "corpus_sentences": stats["corpus_sentences"],
            "sample_sentences": stats["sample_sentences"],
            "peak_rss_mb": stats["peak_rss_mb"],
            "job_seconds": stats["wall_seconds"],
            "job_cpu_seconds": round(stats["cpu_seconds"] - imports_cpu, 2),
        }
    remove(str(work))
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
