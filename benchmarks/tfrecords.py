"""Benchmark of pipelines.tfrecords: throughput per core and peak memory at 1x and 4x corpus.

    python benchmarks/tfrecords.py [--workdir DIR]

Builds (once, cached in --workdir) the segmented books + Wikipedia corpus from ../shared/data with
pipelines.segment and a 30k SentencePiece vocabulary with ALBERT's special ids, then runs
`python -m pipelines.tfrecords --dupe-factor 1 --max-seq-length 512` on the corpus and on 4 copies of it,
each in a fresh process. Prints ONE JSON line:
- `*_cpu_s`, `*_wall_s`, `*_peak_rss_mb`: CPU seconds (user + system), wall seconds and peak RSS of the run;
- `mb_per_cpu_s_1x`: text MB per CPU second, start-up included; `marginal_mb_per_cpu_s`: the extra 3x
  corpus over the extra CPU seconds (steady state, start-up excluded); the same in pieces as `tokens_*`;
- `core_*`: the per-document work alone (read, tokenize, instances, masks, serialize; no Beam), in a fresh
  process: its throughput on the 4x corpus and its peak RSS at 1x and 4x (the streaming part's memory);
- the stage's peak RSS grows with the output on the in-process FnApiRunner, whose GroupByKey (the global
  shuffle of instances into shards) holds everything in memory; distributed runners shuffle out of core.
- `speedup_vs_reference`: marginal MB/s per core over the reference's 0.35 MB/s per core per dupe pass.
CPU seconds are the honest measure on a shared machine; wall times are noisy there.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("ALBERT_SHARED_DATA", REPO.parent / "shared" / "data"))
REFERENCE_MB_PER_S = 0.35


def segmented_corpus(workdir: Path) -> Path:
    from pipelines import segment

    output = workdir / "seg"
    if not output.exists():
        segment.run(
            segment.SegmentConfig(
                input=[
                    str(SHARED / "books" / "*.txt"),
                    str(
                        SHARED
                        / "wikipedia"
                        / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
                    ),
                ],
                output=str(output),
                num_shards=4,
                fallback_encoding="latin-1",
            )
        )
    return output


def vocabulary(workdir: Path, corpus: Path) -> Path:
    import sentencepiece as spm

    model = workdir / "sp30k.model"
    if not model.exists():
        spm.SentencePieceTrainer.train(
            input=sorted(str(p) for p in corpus.glob("*.txt")),
            model_prefix=str(workdir / "sp30k"),
            vocab_size=30000,
            hard_vocab_limit=False,
            model_type="unigram",
            pad_id=0,
            unk_id=1,
            bos_id=-1,
            eos_id=-1,
            control_symbols=["[CLS]", "[SEP]", "[MASK]"],
            input_sentence_size=1_000_000,
            shuffle_input_sentence=True,
            minloglevel=2,
        )
    return model


def replicated(corpus: Path, copies: int, output: Path) -> Path:
    if not output.exists():
        output.mkdir()
        for copy in range(copies):
            for path in corpus.glob("*.txt"):
                shutil.copyfile(path, output / f"copy{copy}-{path.name}")
    return output


def measure(command: list[str]) -> dict:
    """Run `command` in a fresh process: its CPU seconds, wall seconds, peak RSS and stdout."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE)
    stdout = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed")
    return {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_s": wall,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "stdout": stdout,
    }


def measure_run(corpus: Path, model: Path, output: Path) -> dict:
    """The stage on one CPU (FnApiRunner, one worker), with its metadata."""
    run = measure(
        [
            sys.executable,
            "-m",
            "pipelines.tfrecords",
            "--input",
            str(corpus),
            "--spm-model",
            str(model),
            "--output",
            str(output),
            "--dupe-factor",
            "1",
            "--max-seq-length",
            "512",
            "--num-shards",
            "16",
        ]
    )
    run["metadata"] = json.loads((output / "metadata.json").read_text())
    return run


def core_throughput(corpus: Path, model: Path) -> tuple[float, float]:
    """MB and tokens per CPU second of the per-document work alone, in this process."""
    from pipelines.tfrecords import InstanceWriter, TFRecordsConfig, read_documents

    writer = InstanceWriter(
        TFRecordsConfig(input=str(corpus), spm_model=str(model), output="unused", dupe_factor=1)
    )
    files = sorted(glob.glob(str(corpus / "*.txt")))
    start, tokens = time.process_time(), 0
    for path in files:
        for key, lines in read_documents(path):
            sentences = writer.encode(lines)
            tokens += sum(len(s) for s in sentences)
            for _ in writer.examples(key, sentences, 0):
                pass
    seconds = time.process_time() - start
    return sum(os.path.getsize(f) for f in files) / 1e6 / seconds, tokens / seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--workdir", help="where to cache the corpus and vocabulary (default: a temp dir)"
    )
    parser.add_argument("--core", nargs=2, metavar=("CORPUS", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.core:  # child process: the per-document work alone, for its CPU time and peak RSS
        print(json.dumps(core_throughput(Path(args.core[0]), Path(args.core[1]))))
        return
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-tfrecords-"))
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = segmented_corpus(workdir)
    model = vocabulary(workdir, corpus)
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
        name: measure([sys.executable, __file__, "--core", str(path), str(model)])
        for name, path in (("1x", corpus), ("4x", corpus4))
    }
    core_mb, core_tokens = json.loads(core["4x"]["stdout"])
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
        "core_peak_rss_mb_1x": round(core["1x"]["peak_rss_mb"], 1),
        "core_peak_rss_mb_4x": round(core["4x"]["peak_rss_mb"], 1),
        "speedup_vs_reference": round(marginal_mb / REFERENCE_MB_PER_S, 1),
        "sop_label_balance": round(meta["sop_label_balance"], 4),
        "mean_predictions_per_instance": round(meta["mean_predictions_per_instance"], 2),
        "mean_tokens_per_instance": round(meta["mean_tokens_per_instance"], 1),
        "masked_ngram_histogram": [round(x, 4) for x in meta["masked_ngram_histogram"]],
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
