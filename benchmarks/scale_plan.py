"""Per-core figures behind infra/README.md's scale plan, and the plan they give. Prints one JSON
line.

Measured here (one process, CPU seconds, on ../shared/data: the Wikipedia sample and the books),
reusing the other benchmarks' set-up:
- segment: the per-document work (benchmarks/segment.py `stream_case`): input MB per CPU second, and
  the output/input size ratio of the segmented corpus;
- vocab: SentencePiece training (30k unigram, benchmarks/tfrecords.py `vocabulary`): seconds per
  million sample sentences;
- tfrecords: the per-document work for one dupe pass at seq 512 (read, tokenize, instances, masks,
  serialize): text MB, pieces and instances per CPU second, and serialized bytes per instance.
Then projected for English Wikipedia + BookCorpus (3.3B words) on Dataflow, and the training
compute for albert-base/large at 125k steps x 4096 x 512 from FLOPs (see ASSUMPTIONS: prices,
utilisation). Usage: python -m benchmarks.scale_plan [--workdir DIR]
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ASSUMPTIONS = {
    "price_date": "list prices as of 2025, us-central1, on-demand, USD; check current prices",
    "corpus_words": 3.3e9,
    # enwiki pages-articles, uncompressed XML (~22 GB .bz2): every byte read  # English Wikipedia
    # ~2.5B + BookCorpus ~0.8B (BERT paper)
    "wikipedia_dump_xml_gb": 95,
    "dataflow_vcpu_hour": 0.056,  # Dataflow batch vCPU-hour
    "dataflow_gb_hour": 0.003557,  # Dataflow batch memory GB-hour
    "dataflow_pd_gb_hour": 0.000054,  # standard persistent disk GB-hour
    "dataflow_shuffle_gb": 0.011,  # Dataflow Shuffle, per GB processed
    "gcs_gb_month": 0.020,  # Cloud Storage standard
    "n1_standard_4": {"vcpu": 4, "memory_gb": 15, "disk_gb": 250},
    # Beam/Dataflow overhead over the measured per-document work
    "core_efficiency_on_dataflow": 0.8,
    "sample_sentences": 10_000_000,  # pipelines.vocab default
    "dupe_factor": 40,
    "train_tokens": 125_000 * 4096 * 512,
    # assumed MFU of the XLA-compiled Keras step (not measured here)
    "model_flops_utilisation": 0.35,
    "peak_bf16_tflops_per_chip": {"tpu_v3": 123, "tpu_v4": 275, "a100": 312, "h100": 989},
    "price_per_chip_hour": {"tpu_v3": 2.00, "tpu_v4": 3.22, "a100": 5.03, "h100": 11.06},
    "models": {
        "albert-base": {"layers": 12, "hidden": 768},
        "albert-large": {"layers": 24, "hidden": 1024},
    },
}


def segment_per_core() -> dict:
    import benchmarks.segment as segment_benchmark  # benchmarks/segment.py

    paths = [str(segment_benchmark.WIKI)] + sorted(
        str(p) for p in segment_benchmark.BOOKS.glob("*.txt")
    )
    return segment_benchmark.stream_case(paths)


def vocab_per_core(workdir: Path, corpus: Path) -> dict:
    import benchmarks.tfrecords as tfrecords_benchmark  # benchmarks/tfrecords.py
    from pipelines.vocab.stage import VocabConfig, prepare_sentence  # heavy: Beam

    config = VocabConfig(input=str(corpus), output="unused")
    lines = [
        line
        for f in sorted(corpus.glob("*.txt"))
        for line in f.read_bytes().splitlines(keepends=True)
    ]
    start = time.process_time()
    for line in lines:
        for _ in prepare_sentence(
            line,
            config.seed,
            config.do_lower_case,
            config.keep_accents,
            config.max_sentence_bytes,
            lambda name, n=1: None,
        ):
            pass
    read_mb_per_cpu_s = sum(map(len, lines)) / 1e6 / (time.process_time() - start)
    sentences = sum(1 for line in lines if line.strip())
    start = time.process_time()
    model = tfrecords_benchmark.vocabulary(
        Path(tempfile.mkdtemp(dir=workdir)), corpus
    )  # fresh: always timed
    seconds = time.process_time() - start
    return {
        "model": str(model),
        "sentences": sentences,
        "prepare_mb_per_cpu_s": round(read_mb_per_cpu_s, 2),
        "train_cpu_s": round(seconds, 2),
        "cpu_s_per_million_sentences": round(seconds / (sentences / 1e6), 1),
    }


def tfrecords_per_core(corpus: Path, model: str) -> dict:
    from pipelines.common.segmented_corpus import read_documents  # heavy: Beam
    from pipelines.tfrecords.config import TFRecordsConfig  # heavy: Beam
    from pipelines.tfrecords.instance_writer import DocumentPass, InstanceWriter  # heavy: Beam

    counts: collections.Counter = collections.Counter()
    writer = InstanceWriter(
        TFRecordsConfig(input=str(corpus), spm_model=model, output="unused", dupe_factor=1),
        lambda name, amount=1: counts.update({name: amount}),
    )
    files = sorted(glob.glob(str(corpus / "*.txt")))
    start, count, size = time.process_time(), 0, 0
    for _, example in writer.examples(  # all documents' instances masked together, in batches
        DocumentPass(key, writer.encode(lines), 0)
        for path in files
        for key, lines in read_documents(path)
    ):
        count, size = count + 1, size + len(example)
    seconds = time.process_time() - start
    tokens = counts["document_tokens"]
    text_mb = sum(os.path.getsize(f) for f in files) / 1e6
    return {
        "text_mb": round(text_mb, 2),
        "cpu_s": round(seconds, 2),
        "mb_per_cpu_s": round(text_mb / seconds, 3),
        "pieces_per_cpu_s": round(tokens / seconds),
        "pieces": tokens,
        "instances": count,
        "bytes_per_instance": round(size / count),
        "pieces_per_word": None,
    }


def dataflow_job(cpu_hours: float, shuffle_gb: float, a: dict) -> dict:
    """Cost of a batch job of `cpu_hours` core-hours of work on n1-standard-4 workers."""
    machine = a["n1_standard_4"]
    vcpu_hours = cpu_hours / a["core_efficiency_on_dataflow"]
    worker_hours = vcpu_hours / machine["vcpu"]
    cost = (
        worker_hours
        * (
            machine["vcpu"] * a["dataflow_vcpu_hour"]
            + machine["memory_gb"] * a["dataflow_gb_hour"]
            + machine["disk_gb"] * a["dataflow_pd_gb_hour"]
        )
        + shuffle_gb * a["dataflow_shuffle_gb"]
    )
    return {
        "vcpu_hours": round(vcpu_hours, 1),
        "worker_hours_n1_standard_4": round(worker_hours, 1),
        "wall_minutes_on_100_workers": round(worker_hours / 100 * 60, 1),
        "cost_usd": round(cost, 2),
    }


def training_plan(a: dict) -> dict:
    plan = {}
    for name, shape in a["models"].items():
        layers, hidden, seq = shape["layers"], shape["hidden"], 512
        # forward+backward FLOPs per token: 6 x (matmul parameters of the shared layer, applied L
        # times) + 6 x L x T x H for attention scores (Kaplan et al. 2020); embeddings/heads are
        # negligible.
        flops_per_token = 6 * layers * 12 * hidden**2 + 6 * layers * seq * hidden
        total = flops_per_token * a["train_tokens"]
        rows = {}
        for chip, peak in a["peak_bf16_tflops_per_chip"].items():
            chip_hours = total / (peak * 1e12 * a["model_flops_utilisation"]) / 3600
            rows[chip] = {
                "chip_hours": round(chip_hours),
                "cost_usd": round(chip_hours * a["price_per_chip_hour"][chip]),
                "days_on_8_chips": round(chip_hours / 8 / 24, 1),
                "days_on_32_chips": round(chip_hours / 32 / 24, 1),
            }
        plan[name] = {"train_pflops": round(total / 1e15), "per_chip": rows}
    return plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--workdir", help="cache of the segmented corpus and vocabulary (default: a temp dir)"
    )
    args = parser.parse_args()
    import benchmarks.tfrecords as tfrecords_benchmark  # heavy: Beam

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="scale-plan-"))
    workdir.mkdir(parents=True, exist_ok=True)
    a = ASSUMPTIONS
    segment = segment_per_core()
    corpus = tfrecords_benchmark.segmented_corpus(workdir)
    stats = json.loads((corpus / "stats.json").read_text())
    vocab = vocab_per_core(workdir, corpus)
    records = tfrecords_per_core(corpus, vocab["model"])

    corpus_bytes = sum(os.path.getsize(f) for f in corpus.glob("*.txt"))
    words = sum(len(f.read_text(encoding="utf-8").split()) for f in corpus.glob("*.txt"))
    bytes_per_word = corpus_bytes / words
    records["pieces_per_word"] = round(records["pieces"] / words, 3)
    text_gb = a["corpus_words"] * bytes_per_word / 1e9
    input_gb = (
        text_gb * stats["characters_in"] / max(stats["characters_out"], 1)
    )  # markup and dropped text
    instances_per_pass = records["instances"] / records["text_mb"] * text_gb * 1e3
    pass_gb = instances_per_pass * records["bytes_per_instance"] / 1e9
    pass_cpu_hours = text_gb * 1e3 / records["mb_per_cpu_s"] / 3600
    static = dataflow_job(pass_cpu_hours * a["dupe_factor"], pass_gb * a["dupe_factor"], a)
    dynamic = dataflow_job(pass_cpu_hours, pass_gb, a)
    static["storage_gb"], dynamic["storage_gb"] = round(pass_gb * a["dupe_factor"]), round(pass_gb)
    static["storage_usd_per_month"] = round(static["storage_gb"] * a["gcs_gb_month"], 2)
    dynamic["storage_usd_per_month"] = round(dynamic["storage_gb"] * a["gcs_gb_month"], 2)
    vocab_hours = vocab["cpu_s_per_million_sentences"] * a["sample_sentences"] / 1e6 / 3600
    print(
        json.dumps(
            {
                "measured": {
                    "segment": segment,
                    "segment_out_over_in": round(
                        stats["characters_out"] / stats["characters_in"], 3
                    ),
                    "vocab": vocab,
                    "tfrecords_one_pass": records,
                    "bytes_per_word": round(bytes_per_word, 2),
                },
                "plan": {
                    "corpus_text_gb": round(text_gb, 1),
                    "segment_input_gb_est": round(input_gb, 1),
                    "segment": dataflow_job(
                        input_gb * 1e3 / segment["mb_per_cpu_s"] / 3600, text_gb * 2, a
                    ),
                    "segment_upper_bound_full_dump": dataflow_job(
                        a["wikipedia_dump_xml_gb"] * 1e3 / segment["mb_per_cpu_s"] / 3600,
                        a["wikipedia_dump_xml_gb"],
                        a,
                    ),
                    "vocab": {
                        "sample_read": dataflow_job(
                            text_gb * 1e3 / vocab["prepare_mb_per_cpu_s"] / 3600, 0.0, a
                        ),
                        "trainer_hours_on_one_worker": round(vocab_hours, 2),
                    },
                    "tfrecords_static_dupe40": static,
                    "tfrecords_dynamic": dynamic,
                    "instances_per_pass_millions": round(instances_per_pass / 1e6, 1),
                    "training": training_plan(a),
                },
                "assumptions": a,
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
