"""`albert predict` measured against Hugging Face on the same model, rows and CPU.

    python -m benchmarks.predict [--rows 4000] [--memory-rows 2000,8000] [--batch-size 32] \
        [--max-seq-length 128] [--model FT_OUTPUT] [--workdir DIR]

- The model: `--model` (a fine-tune's output), or `benchmarks.distill`'s TEACHER architecture (E
  128, H 256, 4 shared layers) fine-tuned 50 steps on SST-2 from random weights with the reference
  16k vocabulary (a model's speed does not depend on what it learnt);
- its Hugging Face export: the backbone as `AlbertForSequenceClassification` with our classifier
  head copied in and our tokenizer (`albert.tokenizer_export`);
- the rows: the first `--rows` sentences of SST-2's training set, one a line;
- each side in its own process (its peak RSS its own): ours, `albert predict` in-process
  (FnApiRunner, the fine-tune's truncation, `--batch-size`); Hugging Face's
  `pipeline("text-classification")` on the export (the same batch size, truncation at the same
  length); Beam's `HuggingFacePipelineModelHandler` in `RunInference` (reported unavailable, with
  the reason, where Beam cannot import it: Beam 2.77's handler imports `TFAutoModel`, which
  transformers 5 removed);
- memory: ours' peak RSS at each of `--memory-rows`.

Prints one JSON line: rows/s and peak RSS of each side, the ratios, the share of rows whose label
both give, ours' peak RSS per row count, the CPU and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.distill import TEACHER
from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.shared_data import SHARED

REPO = Path(__file__).resolve().parents[1]
SPM_MODEL = SHARED / "reference" / "sp16k.model"


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: unlike getrusage's ru_maxrss, not carried over
    from the parent that started it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fine_tuned(workdir: Path, max_seq_length: int) -> str:
    """TEACHER fine-tuned 50 steps on SST-2 from random weights (see the module docstring)."""
    import keras  # heavy

    from albert.tokenization import AlbertTokenizer
    from model import finetune
    from model.pretrain import PretrainConfig, build_model

    keras.utils.set_random_seed(0)
    architecture = PretrainConfig(data="-", output="-", preset="albert-nano", architecture=TEACHER)
    init = str(workdir / "init.keras")
    build_model(architecture, AlbertTokenizer(str(SPM_MODEL)).vocab_size).save(init)
    output = workdir / "sst2"
    config = finetune.FinetuneConfig(
        task="sst2",
        init=init,
        spm_model=str(SPM_MODEL),
        data_dir=str(SHARED / "glue" / "SST-2"),
        output=str(output),
        max_seq_length=max_seq_length,
        train_steps=50,
        batch_size=32,
        max_train_examples=2000,
        max_dev_examples=200,
        quiet=True,
    )
    finetune.run(config)
    return str(output)


def hf_export(model_dir: str, directory: Path) -> str:
    """The fine-tune as `AlbertForSequenceClassification` with our tokenizer."""
    import keras  # heavy: the export reads the Keras model
    import torch
    from transformers import AlbertForSequenceClassification

    from benchmarks.helpers.hf_finetune import export_with_tokenizer
    from model.finetune import models  # noqa: F401  (registers FinetuneModel for loading)
    from model.network.pretraining_model import AlbertPretrainingModel
    from model.predict.task_info import task_info

    info = task_info(model_dir)
    tuned = keras.saving.load_model(info.model_file, compile=False)
    pretraining = AlbertPretrainingModel(tuned.backbone.config)
    pretraining.backbone.set_weights(tuned.backbone.get_weights())
    export_with_tokenizer(pretraining, str(directory), info.spm_model)
    labels = dict(enumerate(info.labels))
    model = AlbertForSequenceClassification.from_pretrained(
        str(directory),
        num_labels=len(labels),
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    kernel, bias = tuned.head.get_weights()
    with torch.no_grad():
        model.classifier.weight.copy_(torch.from_numpy(kernel.T))
        model.classifier.bias.copy_(torch.from_numpy(bias))
    model.save_pretrained(str(directory))
    return str(directory)


def side_ours(args) -> dict:
    from flows import predict
    from pipelines.predict.config import PredictConfig

    with tempfile.TemporaryDirectory() as temp:
        config = PredictConfig(
            model=args.model, input=[args.texts], output=f"{temp}/out", batch_size=args.batch_size
        )
        start = time.perf_counter()
        summary = predict.run(config, [])
        seconds = time.perf_counter() - start
        shard = Path(temp, "out", "predictions-00000-of-00001.jsonl")
        labels = [json.loads(line)["prediction"]["label"] for line in shard.open()]
    return {"rows": summary["rows"], "seconds": seconds, "labels": labels}


def texts_of(path: str) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


def side_hf(args) -> dict:
    from transformers import pipeline

    texts = texts_of(args.texts)
    classify = pipeline(
        "text-classification", model=args.hf, tokenizer=args.hf, device=-1, dtype="float32"
    )
    start = time.perf_counter()
    answers = classify(
        texts, batch_size=args.batch_size, truncation=True, max_length=args.max_seq_length
    )
    seconds = time.perf_counter() - start
    return {"rows": len(texts), "seconds": seconds, "labels": [a["label"] for a in answers]}


def side_beam_hf(args) -> dict:
    try:
        from apache_beam.ml.inference.huggingface_inference import (
            HuggingFacePipelineModelHandler,
        )
    except ImportError as error:
        return {"unavailable": f"{type(error).__name__}: {error}"}
    import apache_beam as beam
    from apache_beam.ml.inference.base import RunInference

    texts = texts_of(args.texts)
    handler = HuggingFacePipelineModelHandler(
        task="text-classification",
        model=args.hf,
        load_pipeline_args={"tokenizer": args.hf, "device": -1},
        inference_args={"truncation": True, "max_length": args.max_seq_length},
        max_batch_size=args.batch_size,
    )
    start = time.perf_counter()
    with beam.Pipeline() as pipeline:
        _ = pipeline | beam.Create(texts) | RunInference(handler)
    return {"rows": len(texts), "seconds": time.perf_counter() - start, "labels": []}


SIDES = {"ours": side_ours, "hf": side_hf, "beam_hf": side_beam_hf}


def run_side(name: str, args, texts: str, **extra) -> dict:
    """One side in a fresh process: its result with rows/s and peak RSS."""
    command = [sys.executable, "-m", "benchmarks.predict", "--side", name, "--texts", texts]
    for flag in ("model", "hf", "batch_size", "max_seq_length"):
        value = extra.get(flag, getattr(args, flag))
        if value is not None:
            command += [f"--{flag.replace('_', '-')}", str(value)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"side {name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def write_rows(path: Path, count: int) -> str:
    rows = (SHARED / "glue" / "SST-2" / "train.tsv").read_text(encoding="utf-8").splitlines()[1:]
    path.write_text("".join(row.split("\t")[0] + "\n" for row in rows[:count]), encoding="utf-8")
    return str(path)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--memory-rows", default="2000,8000", help="ours' peak RSS at each")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--model", help="a fine-tune's output (default: TEACHER on SST-2)")
    parser.add_argument("--workdir", help="where the model and rows go (default: a temp dir)")
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--texts", help=argparse.SUPPRESS)
    parser.add_argument("--hf", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.side:
        result = SIDES[args.side](args)
        if "seconds" in result:
            result["rows_per_second"] = result["rows"] / result["seconds"]
        print(json.dumps({**result, "peak_rss_mb": round(peak_rss_mb(), 1)}))
        return
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="predict-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    args.model = args.model or fine_tuned(workdir, args.max_seq_length)
    args.hf = hf_export(args.model, workdir / "hf")
    texts = write_rows(workdir / "rows.txt", args.rows)
    sides = {name: run_side(name, args, texts) for name in SIDES}
    ours, hf = sides["ours"], sides["hf"]
    agree = sum(a == b for a, b in zip(ours.pop("labels"), hf.pop("labels"))) / args.rows
    sides["beam_hf"].pop("labels", None)
    ratios = {
        f"ours_over_{name}": ours["rows_per_second"] / side["rows_per_second"]
        for name, side in sides.items()
        if name != "ours" and "rows_per_second" in side
    }
    memory = {}
    for count in (int(n) for n in args.memory_rows.split(",")):
        rows = write_rows(workdir / f"rows-{count}.txt", count)
        memory[count] = run_side("ours", args, rows)["peak_rss_mb"]
    line = {
        "benchmark": "predict",
        "rows": args.rows,
        "batch_size": args.batch_size,
        "max_seq_length": args.max_seq_length,
        "sides": sides,
        "ratios": ratios,
        "same_label_share": agree,
        "ours_peak_rss_mb_by_rows": memory,
        "cpu": cpu_model(),
        "load": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
