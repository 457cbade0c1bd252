"""`albert predict` measured against Hugging Face on the same model, rows and CPU.

    python -m benchmarks.predict [--rows 4000] [--memory-rows 2000,8000] [--memory-model nano] \
        [--batch-size 32] [--max-seq-length 128] [--model FT_OUTPUT] [--workdir DIR]

- The model: `--model` (a fine-tune's output), or `ARCHITECTURE` (E 128, H 256, 4 shared layers,
  4 heads, F 1024) fine-tuned 50 steps on SST-2 from random weights with the reference
  16k vocabulary (a model's speed does not depend on what it learnt);
- its Hugging Face export: the backbone as `AlbertForSequenceClassification` with our classifier
  head copied in and our tokenizer (`albert.tokenizer_export`);
- the rows: the first `--rows` sentences of SST-2's training set, one a line;
- each side in its own process (its peak RSS its own): ours, `albert predict` in-process
  (FnApiRunner, the fine-tune's truncation, `--batch-size`); Hugging Face's
  `pipeline("text-classification")` on the export (the same batch size, truncation at the same
  length); Beam's `HuggingFacePipelineModelHandler` in `RunInference` (in-process FnApiRunner,
  the pipeline's batch size and truncation the same, batches of exactly `--batch-size` rows; Beam
  2.77's module imports transformers' TensorFlow-only `TFAutoModel`, which transformers 5 removed
  and which the pipeline handler never uses: `helpers.predict_peers` gives transformers a
  placeholder class of that name before the import);
- memory: ours' peak RSS (and rows/s) at each of `--memory-rows` (`--rows 0`: the sweep alone), on
  the same model and SST-2's sentences, or with `--memory-model nano` on `NANO` (albert-nano at
  length 32, fine-tuned 10 steps on 48 SST-2 rows from random weights, the reference vocabulary)
  over generated short sentences written a line at a time (`write_generated_rows`): a 1M-row file
  at a rate 2 cores reach.

Prints one JSON line: rows/s and peak RSS of each side, the ratios, the share of rows whose label
each peer gives as ours does, ours' peak RSS and rows/s per row count, the CPU and its load.
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

from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.predict_peers import hf_export, side_beam_hf, side_hf
from benchmarks.helpers.shared_data import SHARED

REPO = Path(__file__).resolve().parents[1]
SPM_MODEL = SHARED / "reference" / "sp16k.model"
ARCHITECTURE = {
    "embedding_size": 128,
    "hidden_size": 256,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "intermediate_size": 1024,
}
"""The default model's (albert-nano's other fields)."""
NANO = {"preset": "albert-nano", "max_seq_length": 32, "train_steps": 10, "batch_size": 16}
"""`--memory-model nano`'s fine-tune (from random weights, on `NANO_ROWS` rows)."""
NANO_ROWS = 48


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: unlike getrusage's ru_maxrss, not carried over
    from the parent that started it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def sst2_fine_tune(output: Path, **settings) -> str:
    """`albert finetune --task sst2` into `output` with the reference vocabulary and `settings`
    (quiet): the fine-tune's output."""
    from model import finetune  # heavy

    config = finetune.FinetuneConfig(
        task="sst2",
        spm_model=str(SPM_MODEL),
        data_dir=str(SHARED / "glue" / "SST-2"),
        output=str(output),
        quiet=True,
        **settings,
    )
    finetune.run(config)
    return str(output)


def fine_tuned(workdir: Path, max_seq_length: int) -> str:
    """`ARCHITECTURE` fine-tuned 50 steps on SST-2 from random weights (the module docstring)."""
    import keras  # heavy

    from albert.tokenization import AlbertTokenizer
    from model.pretrain import PretrainConfig, build_model

    keras.utils.set_random_seed(0)
    architecture = PretrainConfig(
        data="-", output="-", preset="albert-nano", architecture=ARCHITECTURE
    )
    init = str(workdir / "init.keras")
    build_model(architecture, AlbertTokenizer(str(SPM_MODEL)).vocab_size).save(init)
    return sst2_fine_tune(
        workdir / "sst2",
        init=init,
        max_seq_length=max_seq_length,
        train_steps=50,
        batch_size=32,
        max_train_examples=2000,
        max_dev_examples=200,
    )


def nano_fine_tuned(workdir: Path) -> str:
    """`NANO`: `--memory-model nano`'s model (the module docstring)."""
    import keras  # heavy

    keras.utils.set_random_seed(0)
    return sst2_fine_tune(
        workdir / "nano",
        init="random",
        max_train_examples=NANO_ROWS,
        max_dev_examples=NANO_ROWS,
        **NANO,
    )


def side_ours(args, keep_labels: bool = True) -> dict:
    """`albert predict` on the rows; their labels with `keep_labels` (the memory sweep keeps none:
    a million of them would weigh on the peak it measures)."""
    from flows import predict
    from pipelines.predict.config import PredictConfig

    with tempfile.TemporaryDirectory() as temp:
        config = PredictConfig(
            model=args.model, input=[args.texts], output=f"{temp}/out", batch_size=args.batch_size
        )
        start = time.perf_counter()
        summary = predict.run(config, [])
        result = {"rows": summary["rows"], "seconds": time.perf_counter() - start}
        if keep_labels:
            shard = Path(temp, "out", "predictions-00000-of-00001.jsonl")
            result["labels"] = [json.loads(line)["prediction"]["label"] for line in shard.open()]
    return result


def side_ours_memory(args) -> dict:
    return side_ours(args, keep_labels=False)


SIDES = {"ours": side_ours, "hf": side_hf, "beam_hf": side_beam_hf}
"""The sides compared for speed (each in its own process)."""
SIDE_RUNS = {**SIDES, "ours_memory": side_ours_memory}


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
    """The first `count` sentences of SST-2's training set, one a line."""
    rows = (SHARED / "glue" / "SST-2" / "train.tsv").read_text(encoding="utf-8").splitlines()[1:]
    path.write_text("".join(row.split("\t")[0] + "\n" for row in rows[:count]), encoding="utf-8")
    return str(path)


SUBJECTS = ("the film", "this story", "the cast", "its ending", "the score", "every scene")
VERDICTS = (
    "is a quiet delight",
    "drags on and on",
    "feels fresh",
    "never quite works",
    "falls flat",
)


def generated_sentence(index: int) -> str:
    """Generated row `index`: a subject, a verdict and the index (every text differs)."""
    subject = SUBJECTS[index % len(SUBJECTS)]
    return f"{subject} {VERDICTS[index // len(SUBJECTS) % len(VERDICTS)]} in part {index}"


def write_generated_rows(path: Path, count: int) -> str:
    """`count` generated sentences, one a line, written a line at a time (never all in memory)."""
    with path.open("w", encoding="utf-8") as handle:
        for index in range(count):
            handle.write(generated_sentence(index) + "\n")
    return str(path)


def agreement(ours: list[str], theirs: list[str]) -> float:
    """The share of rows given the same label."""
    return sum(a == b for a, b in zip(ours, theirs, strict=True)) / len(ours)


def speed(args, workdir: Path) -> dict:
    """Each side of `SIDES` on the first `--rows` SST-2 sentences: rows/s, peak RSS, the ratios
    and the share of rows each peer labels as ours does."""
    args.hf = hf_export(args.model, workdir / "hf")
    texts = write_rows(workdir / "rows.txt", args.rows)
    sides = {name: run_side(name, args, texts) for name in SIDES}
    ours = sides["ours"].pop("labels")
    peers = [name for name in SIDES if name != "ours"]
    return {
        "sides": sides,
        "ratios": {
            f"ours_over_{name}": sides["ours"]["rows_per_second"] / sides[name]["rows_per_second"]
            for name in peers
        },
        "same_label_share": {name: agreement(ours, sides[name].pop("labels")) for name in peers},
    }


def memory_sweep(args, workdir: Path) -> dict:
    """Ours' peak RSS and rows/s at each of `--memory-rows` (the module docstring)."""
    if args.memory_model == "nano":
        model, write = nano_fine_tuned(workdir), write_generated_rows
    else:
        model, write = args.model, write_rows
    sweep = {}
    for count in (int(n) for n in args.memory_rows.split(",") if n):
        rows = write(workdir / f"rows-{count}.txt", count)
        side = run_side("ours_memory", args, rows, model=model)
        Path(rows).unlink()
        sweep[count] = {key: round(side[key], 1) for key in ("peak_rss_mb", "rows_per_second")}
    return sweep


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4000, help="the speed rows (0: none)")
    parser.add_argument("--memory-rows", default="2000,8000", help="ours' peak RSS at each")
    parser.add_argument(
        "--memory-model",
        choices=("speed", "nano"),
        default="speed",
        help="the memory sweep's model and rows: the speed model on SST-2's sentences, or NANO on "
        "generated ones",
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--model", help="a fine-tune's output (default: ARCHITECTURE on SST-2)")
    parser.add_argument("--workdir", help="where the model and rows go (default: a temp dir)")
    parser.add_argument("--side", choices=SIDE_RUNS, help=argparse.SUPPRESS)
    parser.add_argument("--texts", help=argparse.SUPPRESS)
    parser.add_argument("--hf", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.side:
        result = SIDE_RUNS[args.side](args)
        if "seconds" in result:
            result["rows_per_second"] = result["rows"] / result["seconds"]
        print(json.dumps({**result, "peak_rss_mb": round(peak_rss_mb(), 1)}))
        return
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="predict-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.rows or args.memory_model == "speed":
        args.model = args.model or fine_tuned(workdir, args.max_seq_length)
    line = {
        "benchmark": "predict",
        "rows": args.rows,
        "batch_size": args.batch_size,
        "max_seq_length": args.max_seq_length,
        **(speed(args, workdir) if args.rows else {}),
        "memory_model": args.memory_model,
        "ours_by_rows": memory_sweep(args, workdir),
        "cpu": cpu_model(),
        "load": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
