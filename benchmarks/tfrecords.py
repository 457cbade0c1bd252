"""Benchmark of pipelines.tfrecords: throughput per core and peak memory at 1x and 4x corpus.

    python -m benchmarks.tfrecords [--workdir DIR]
    python -m benchmarks.tfrecords --spread [--workdir DIR]

Builds (once, cached in --workdir) the segmented books + Wikipedia corpus from ../shared/data with
pipelines.segment and a 30k SentencePiece vocabulary with ALBERT's special ids, then runs
`python -m pipelines.tfrecords --dupe-factor 1 --max-seq-length 512` on the corpus and on 4 copies
of it, each in a fresh process. Prints ONE JSON line:
- `*_cpu_s`, `*_wall_s`, `*_peak_rss_mb`: CPU seconds (user + system), wall seconds and peak RSS of
  the run (helpers/process_tree: its process tree sampled every 0.2 s);
- `mb_per_cpu_s_1x`: text MB per CPU second, start-up included; `marginal_mb_per_cpu_s`: the extra
  3x corpus over the extra CPU seconds (steady state, start-up excluded); the same in pieces as
  `tokens_*`;
- `core_*`: the per-document work alone (read, tokenize, instances, masks, serialize; no Beam), in a
  fresh process: its throughput on the 4x corpus and its peak RSS at 1x and 4x (the streaming part's
  memory);
- the stage's peak RSS grows with the output on the in-process FnApiRunner, whose GroupByKey (the
  global shuffle of instances into shards) holds everything in memory; distributed runners shuffle
  out of core.
- `speedup_vs_reference`: marginal MB/s per core over the reference's 0.35 MB/s per core per dupe
  pass.
CPU seconds are the honest measure on a shared machine; wall times are noisy there.

`--spread` checks instead that tokenizing and masking are not capped at one worker per input file:
the same corpus as ONE file and as the segment stage's 4 shards, each run with
`--direct_num_workers 2 --direct_running_mode multi_processing`, the process tree polled for each
SDK worker's CPU seconds. Prints ONE JSON line: per layout the workers' CPU seconds, the busiest
worker's share of them (0.5 = even; 1.0 = one worker did everything), wall and tree CPU seconds, and
whether the one-file run's shards are byte-identical to a one-worker run's.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import sentencepiece as spm

REPO = Path(__file__).resolve().parents[1]
from benchmarks.helpers.process_tree import measure
from benchmarks.helpers.shared_data import BOOKS_AND_WIKIPEDIA
from benchmarks.helpers.tfrecords_command import tfrecords_command
from pipelines.common.segmented_corpus import read_documents
from pipelines.segment import stage as segment
from pipelines.tfrecords.config import TFRecordsConfig
from pipelines.tfrecords.instance_writer import DocumentPass, InstanceWriter
from pipelines.vocab.sentencepiece_trainer import trainer_kwargs

SHARED = Path(os.environ.get("ALBERT_SHARED_DATA", REPO.parent / "shared" / "data"))
REFERENCE_MB_PER_S = 0.35


def segmented_corpus(workdir: Path) -> Path:
    output = workdir / "seg"
    if not output.exists():
        segment.run(
            segment.SegmentConfig(
                input=BOOKS_AND_WIKIPEDIA,
                output=str(output),
                num_shards=4,
                fallback_encoding="latin-1",
            )
        )
    return output


def vocabulary(workdir: Path, corpus: Path) -> Path:
    model = workdir / "sp30k.model"
    if not model.exists():
        spm.SentencePieceTrainer.train(
            **trainer_kwargs(
                30000,
                input=sorted(str(p) for p in corpus.glob("*.txt")),
                model_prefix=str(workdir / "sp30k"),
                user_defined_symbols=[],
                hard_vocab_limit=False,
                input_sentence_size=1_000_000,
                shuffle_input_sentence=True,
            )
        )
    return model


def replicated(corpus: Path, copies: int, output: Path) -> Path:
    if not output.exists():
        output.mkdir()
        for copy in range(copies):
            for path in corpus.glob("*.txt"):
                shutil.copyfile(path, output / f"copy{copy}-{path.name}")
    return output


def measure_run(corpus: Path, model: Path, output: Path) -> dict:
    """The stage on one CPU (FnApiRunner, one worker), with its metadata."""
    run = measure(tfrecords_command(corpus, model, output), REPO)
    run["metadata"] = json.loads((output / "metadata.json").read_text())
    return run


def measure_workers(command: list[str]) -> dict:
    """Run `command`, polling its process tree: wall seconds, each Beam SDK worker's CPU seconds."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL)
    root, seen = psutil.Process(process.pid), {}
    while process.poll() is None:
        for proc in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                seen[proc.pid] = (proc.name(), " ".join(proc.cmdline()), times.user + times.system)
        time.sleep(0.2)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed")
    workers = sorted(
        (
            cpu
            for name, line, cpu in seen.values()
            if name.startswith("python") and "sdk_worker_main" in line
        ),
        reverse=True,
    )
    return {
        "wall_s": round(time.perf_counter() - start, 1),
        "tree_cpu_s": round(sum(c for *_, c in seen.values()), 1),
        "worker_cpu_s": [round(c, 1) for c in workers],
        "busiest_worker_share": round(workers[0] / sum(workers), 3) if workers else None,
    }


def files_digest(directory: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(directory.glob("*.tfrecord")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def spread_check(workdir: Path, corpus: Path, model: Path) -> dict:
    """The stage on 2 SDK worker processes, the corpus as one file and as 4: how the work is
    shared."""
    one_file = workdir / "one-file"
    if not one_file.exists():
        one_file.mkdir()
        with open(one_file / "corpus.txt", "wb") as out:
            out.writelines(path.read_bytes() for path in sorted(corpus.glob("*.txt")))
    two_workers = ["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"]
    figures: dict = {}
    for layout, path in (("one_file", one_file), ("four_files", corpus)):
        output = workdir / f"spread-{layout}"
        shutil.rmtree(output, ignore_errors=True)
        figures[layout] = measure_workers(tfrecords_command(path, model, output, *two_workers))
        figures[layout]["input_files"] = len(list(path.glob("*.txt")))
        figures[layout]["digest"] = files_digest(output)
    reference = workdir / "spread-one-worker"
    shutil.rmtree(reference, ignore_errors=True)
    measure(tfrecords_command(one_file, model, reference), REPO)
    figures["four_files"].pop("digest")
    same = figures["one_file"].pop("digest") == files_digest(reference)
    return {
        "benchmark": "tfrecords-spread",
        "cpus": os.cpu_count(),
        "load_1min": round(os.getloadavg()[0], 1),
        "corpus_mb": round((one_file / "corpus.txt").stat().st_size / 1e6, 2),
        **figures,
        "one_file_byte_identical_to_one_worker": same,
    }


def core_throughput(corpus: Path, model: Path) -> tuple[float, float]:
    """MB and tokens per CPU second of the per-document work alone, in this process."""
    counts: collections.Counter = collections.Counter()
    writer = InstanceWriter(
        TFRecordsConfig(input=str(corpus), spm_model=str(model), output="unused", dupe_factor=1),
        lambda name, amount=1: counts.update({name: amount}),
    )
    files = sorted(glob.glob(str(corpus / "*.txt")))
    start = time.process_time()
    for _ in writer.examples(  # all documents' instances masked MASK_BATCH_ROWS at a time
        DocumentPass(key, writer.encode(lines), 0)
        for path in files
        for key, lines in read_documents(path)
    ):
        pass
    seconds = time.process_time() - start
    mb = sum(os.path.getsize(f) for f in files) / 1e6
    return mb / seconds, counts["document_tokens"] / seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--workdir", help="where to cache the corpus and vocabulary (default: a temp dir)"
    )
    parser.add_argument(
        "--spread",
        action="store_true",
        help="2 workers on the corpus as one file and as 4: is the work spread? (see above)",
    )
    parser.add_argument(
        "--core", nargs=3, metavar=("CORPUS", "MODEL", "FIGURES"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.core:  # child process: the per-document work alone, for its CPU time and peak RSS
        corpus, model, figures = map(Path, args.core)
        figures.write_text(json.dumps(core_throughput(corpus, model)))
        return
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-tfrecords-"))
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = segmented_corpus(workdir)
    model = vocabulary(workdir, corpus)
    if args.spread:
        print(json.dumps(spread_check(workdir, corpus, model)))
        return
    corpus4 = replicated(corpus, 4, workdir / "seg4")
    runs = {}
    for name, path in (("1x", corpus), ("4x", corpus4)):
        output = workdir / f"out{name}"
        shutil.rmtree(output, ignore_errors=True)
        runs[name] = measure_run(path, model, output)
    megabytes = {
        name: sum(p.stat().st_size for p in path.glob("*.txt")) / 1e6
        for name, path in (("1x", corpus), ("4x", corpus4))
    }
    tokens = {name: run["metadata"]["counts"]["document_tokens"] for name, run in runs.items()}
    extra_cpu = runs["4x"]["cpu_s"] - runs["1x"]["cpu_s"]
    marginal_mb = (megabytes["4x"] - megabytes["1x"]) / extra_cpu
    core = {
        name: measure(
            [sys.executable, "-m", "benchmarks.tfrecords", "--core", str(path), str(model)]
            + [str(workdir / f"core-{name}.json")],
            REPO,
        )
        for name, path in (("1x", corpus), ("4x", corpus4))
    }
    core_mb, core_tokens = json.loads((workdir / "core-4x.json").read_text())
    meta = runs["1x"]["metadata"]
    figures = {
        "benchmark": "tfrecords",
        "corpus_mb_1x": round(megabytes["1x"], 2),
        "tokens_1x": tokens["1x"],
        "instances_1x": meta["counts"]["instances"],
        "vocab_size": 30000,
        **{
            f"{key}_{name}": round(run[key], 2)
            for name, run in runs.items()
            for key in ("cpu_s", "wall_s", "peak_rss_mb")
        },
        "mb_per_cpu_s_1x": round(megabytes["1x"] / runs["1x"]["cpu_s"], 2),
        "tokens_per_cpu_s_1x": round(tokens["1x"] / runs["1x"]["cpu_s"]),
        "marginal_mb_per_cpu_s": round(marginal_mb, 2),
        "marginal_tokens_per_cpu_s": round((tokens["4x"] - tokens["1x"]) / extra_cpu),
        "core_mb_per_cpu_s": round(core_mb, 2),
        "core_tokens_per_cpu_s": round(core_tokens),
        "core_peak_rss_mb_1x": core["1x"]["peak_rss_mb"],
        "core_peak_rss_mb_4x": core["4x"]["peak_rss_mb"],
        "speedup_vs_reference": round(marginal_mb / REFERENCE_MB_PER_S, 1),
        "sop_label_balance": round(meta["sop_label_balance"], 4),
        "mean_predictions_per_instance": round(meta["mean_predictions_per_instance"], 2),
        "mean_tokens_per_instance": round(meta["mean_tokens_per_instance"], 1),
        "masked_ngram_histogram": [round(x, 4) for x in meta["masked_ngram_histogram"]],
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
