"""What the demo model gains downstream: fine-tune a finished run's model and a randomly initialised
twin (same preset, budget and seed) on GLUE tasks from ../shared/data, for several seeds.

    python -m benchmarks.demo_downstream [--run-dir runs/enwiki-sample] [--tasks sst2,mrpc] [--seeds
    1,2]
        [--train-steps 300] [--learning-rate 0.001] [--max-seq-length 128]

The same comparison `albert run --downstream TASK=DIR` makes for one seed. Prints ONE JSON line:
{task: {metric, pretrained: [per seed], random: [per seed], gain: mean pretrained - random}}, plus
the budget and the seconds taken."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from model.tasks import get_task

SHARED = REPO.parent / "shared" / "data"
TASK_DIRS = {"sst2": "SST-2", "mrpc": "MRPC", "cola": "CoLA", "stsb": "STS-B"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="runs/enwiki-sample")
    parser.add_argument("--tasks", default="sst2,mrpc")
    parser.add_argument("--seeds", default="1,2")
    parser.add_argument("--train-steps", type=int, default=300)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--preset", default="albert-tiny")
    args = parser.parse_args()

    from model import finetune  # heavy: TensorFlow/Keras

    run_dir = Path(args.run_dir)
    model, spm_model = (
        run_dir / "pretrain" / "export" / "model.keras",
        run_dir / "vocab" / "spiece.model",
    )
    if not model.is_file() or not (SHARED / "glue").is_dir():
        print(
            json.dumps(
                {"skipped": f"needs a finished run ({model}; `make run`) and {SHARED / 'glue'}"}
            )
        )
        return
    start = time.perf_counter()
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for task in args.tasks.split(","):
            metric = get_task(task).primary_metric
            scores: dict[str, list[float]] = {"pretrained": [], "random": []}
            for seed in (int(s) for s in args.seeds.split(",")):
                for name, init in (("pretrained", str(model)), ("random", "random")):
                    config = finetune.FinetuneConfig(
                        task=task,
                        init=init,
                        preset=args.preset,
                        spm_model=str(spm_model),
                        data_dir=str(SHARED / "glue" / TASK_DIRS[task]),
                        output=f"{scratch}/{task}-{name}-{seed}",
                        train_steps=args.train_steps,
                        learning_rate=args.learning_rate,
                        max_seq_length=args.max_seq_length,
                        seed=seed,
                    )
                    scores[name].append(round(finetune.run(config)["dev"][metric], 4))
            gain = sum(scores["pretrained"]) / len(scores["pretrained"]) - sum(
                scores["random"]
            ) / len(scores["random"])
            results[task] = {"metric": metric, **scores, "gain": round(gain, 4)}
    print(
        json.dumps(
            {
                "run_dir": str(run_dir),
                "train_steps": args.train_steps,
                "learning_rate": args.learning_rate,
                "max_seq_length": args.max_seq_length,
                "seconds": round(time.perf_counter() - start, 1),
                **results,
            }
        )
    )


if __name__ == "__main__":
    main()
