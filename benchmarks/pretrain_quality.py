"""Pretraining quality check: albert-tiny on the shared books + Wikipedia for about 20 CPU minutes.

    python -m benchmarks.pretrain_quality [--workdir DIR] [--steps 9000] [--batch-size 32] ...

Segments ../shared/data's books and Wikipedia sample with pipelines.segment, writes static-masking
TFRecords (seq 128, `--dupe-factor 20`: every pass re-chunks the documents and re-draws the swaps,
so the run sees no SOP pair twice) with the reference's sp16k vocabulary, and trains `python -m
model.pretrain --preset albert-tiny --jit-compile` in a fresh process. The held-out split of that
data is whole documents the training never reads (`--heldout-fraction` of them, by a stable hash of
their text); the trained model is also scored on another corpus altogether: the 48 articles of SQuAD
dev v1.1 (Wikipedia), put through the same two stages with every document held out. Prints ONE JSON
line:
- `heldout_curve`: {step: [masked-LM accuracy, SOP accuracy]} on the held-out documents;
- `heldout`, `train`, `unseen_documents`: the final metrics on the held-out documents, the last
  training batches, and the SQuAD articles;
- `train_seconds`, `sequences_per_second`: wall time of the training process and its throughput.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from benchmarks.tfrecords import SHARED, segmented_corpus

SPM_MODEL = SHARED / "reference" / "sp16k.model"


def unseen_corpus(workdir: Path) -> Path:
    """SQuAD dev's articles segmented: one JSONL document per article, its paragraphs in order."""
    from pipelines.segment import stage as segment  # heavy: Beam

    output = workdir / "unseen-seg"
    if not output.exists():
        squad = json.loads((SHARED / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
        articles = workdir / "squad-dev-articles.jsonl"
        with articles.open("w", encoding="utf-8") as out:
            for article in squad["data"]:
                text = "\n\n".join(paragraph["context"] for paragraph in article["paragraphs"])
                out.write(json.dumps({"text": text}) + "\n")
        segment.run(segment.SegmentConfig(input=[str(articles)], output=str(output), num_shards=1))
    return output


def tfrecords(
    corpus: Path, output: Path, dupe_factor: int, num_shards: int, heldout_fraction: float
) -> Path:
    from pipelines.tfrecords import stage  # heavy: Beam

    if not output.exists():
        stage.run(
            stage.TFRecordsConfig(
                input=str(corpus),
                spm_model=str(SPM_MODEL),
                output=str(output),
                max_seq_length=128,
                dupe_factor=dupe_factor,
                num_shards=num_shards,
                masking="static",
                heldout_fraction=heldout_fraction,
                heldout_min_documents=8,
            )
        )
    return output


def rounded(metrics: dict) -> dict:
    return {name: round(value, 4) for name, value in metrics.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/albert-pretrain-quality")
    parser.add_argument("--steps", type=int, default=9000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.004)
    parser.add_argument("--warmup-steps", type=int, default=600)
    parser.add_argument("--dupe-factor", type=int, default=20)
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--heldout-fraction", type=float, default=0.1)
    args = parser.parse_args()

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    data = tfrecords(
        segmented_corpus(workdir),
        workdir / f"tfrecords-dupe{args.dupe_factor}-heldout{args.heldout_fraction}",
        args.dupe_factor,
        8,
        args.heldout_fraction,
    )
    unseen = tfrecords(unseen_corpus(workdir), workdir / "unseen-tfrecords-all-heldout", 2, 1, 1.0)

    run = workdir / f"run-{args.steps}x{args.batch_size}-lr{args.learning_rate}"
    shutil.rmtree(run, ignore_errors=True)
    command = [
        sys.executable, "-m", "model.pretrain", "--data", str(data), "--output", str(run),
        "--preset", "albert-tiny", "--spm-model", str(SPM_MODEL), "--jit-compile",
        "--steps", str(args.steps), "--batch-size", str(args.batch_size),
        "--learning-rate", str(args.learning_rate), "--warmup-steps", str(args.warmup_steps),
        "--eval-every", str(args.eval_every), "--eval-batches", "32", "--eval-batch-size", "64",
        "--checkpoint-every", str(args.steps), "--log-every", "100", "--no-progress",
    ]  # fmt: skip
    start = time.perf_counter()
    result = json.loads(
        subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.PIPE).stdout
    )
    train_seconds = time.perf_counter() - start

    from model.evaluation.heldout import evaluate_pretraining  # heavy: TensorFlow/Keras

    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    curve = {
        r["step"]: [round(r["masked_lm_accuracy"], 4), round(r["sop_accuracy"], 4)]
        for r in records
        if r["split"] == "heldout"
    }
    unseen_metrics = evaluate_pretraining(result["export"]["keras"], str(unseen), batch_size=64)
    print(
        json.dumps(
            {
                "steps": args.steps,
                "batch_size": args.batch_size,
                "train_seconds": round(train_seconds, 1),
                "sequences_per_second": round(result["sequences_per_second"], 1),
                "heldout_curve": curve,
                "heldout": rounded(result["heldout"]),
                "train": rounded(result["train"]),
                "unseen_documents": rounded(unseen_metrics),
            }
        )
    )


if __name__ == "__main__":
    main()
