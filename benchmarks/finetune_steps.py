"""Fine-tuning step for step against Hugging Face's `Trainer`: one export, one classifier head, one
list of example indices, dropout off, the same schedule; the loss, the logits and the gradient norm
compared at every step.

    python -m benchmarks.finetune_steps --init EXPORT [--task sst2] [--steps 50] \
        [--schedules reference after_warmup] [--learning-rate 5e-4 --warmup-steps 30 \
        --total-steps 300] [--dev-examples 500] [--no-diagnostics]

EXPORT is a Hugging Face directory with our tokenizer (`benchmarks/finetune_parity.py` writes one
as WORKDIR/export-hf; default: albert-nano, untrained, built here with `--seed`). Removed on both
sides: every source of randomness that is not shared.
- Dropout: hidden and attention as the export (albert presets: 0), the classifier's 0.
- Weights: the backbone from the export; our head is initialised (seed `--seed`) and copied into
  `AlbertForSequenceClassification.classifier`.
- Batches: the first `--examples` training rows, read and encoded by our stage
  (`TaskKind.load`), tokenized again by `AutoTokenizer` on Hugging Face's side (the encodings are
  compared); one permutation of them (`--order-seed`) is the order of both sides: ours in
  `train_on_batch`, Trainer's with `train_sampling_strategy="sequential"` over the rows so ordered.
- Schedule, both ways (`model.finetune.optimizer`'s two): `reference` (our default: linear decay
  over all `--total-steps`, warmup replacing the first) and `after_warmup` (Trainer's `linear`:
  decay over the steps after warmup), each given to both sides (Trainer gets `reference` as a
  `LambdaLR`); `--steps` of a `--total-steps` schedule.
- Our side is `model.finetune`'s own pieces: `load_backbone`, `FinetuneModel`, `make_optimizer`
  (`LayerwiseAdamW`: AdamW, weight decay 0.01 off `DEFAULT_EXCLUDE`, clipping 1.0), the task's loss,
  the compiled train step `fit` runs. Trainer's: its own AdamW, clipping and loop.

Prints one JSON line per step and schedule (loss, the largest logit difference, both gradient
norms and learning rates) and a last line per schedule with the first step where the loss, logits
or gradient norm part by more than `--tolerance`.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

from benchmarks.helpers.hf_finetune import export_with_tokenizer
from benchmarks.helpers.hf_steps import trainer_steps
from benchmarks.helpers.machine import cpu_model
from model.tasks import get_task  # no Keras

SHARED = REPO.parent / "shared" / "data"
SPM_MODEL = SHARED / "reference" / "sp16k.model"
GLUE_TASKS = ("cola", "mrpc", "sst2", "stsb")


@dataclass(frozen=True)
class Setup:
    """What both sides share."""

    init: str  # a Hugging Face directory with our tokenizer
    task: str = "sst2"
    data_dir: str = str(SHARED / "glue" / "SST-2")
    spm_model: str = str(SPM_MODEL)
    examples: int = 2000  # the first training rows
    batch_size: int = 32
    max_seq_length: int = 128
    learning_rate: float = 5e-4
    warmup_steps: int = 30
    total_steps: int = 300  # the schedule's length
    seed: int = 1  # our head's initialisation
    order_seed: int = 0
    dev_examples: int = 0  # the first dev rows, scored by both sides after the steps (0: none)


def task_data(setup: Setup):
    """The task's first `examples` training rows as our stage reads and encodes them."""
    from albert.tokenization import AlbertTokenizer  # heavy: after the backend is chosen
    from model.finetune import FinetuneConfig, hyperparameters  # heavy: Keras
    from model.finetune.kinds import task_kind  # heavy: Keras

    config = FinetuneConfig(
        task=setup.task, init=setup.init, spm_model=setup.spm_model, data_dir=setup.data_dir,
        output="unused", max_seq_length=setup.max_seq_length, max_train_examples=setup.examples,
        max_dev_examples=setup.dev_examples or 1, input_workers=0,
    )  # fmt: skip
    kind = task_kind(setup.task)
    tokenizer = AlbertTokenizer(setup.spm_model)
    return kind.load(config, tokenizer, hyperparameters(config, kind.spec)), tokenizer


def example_order(count: int, steps: int, batch_size: int, seed: int) -> np.ndarray:
    """`steps * batch_size` indices below `count`: permutations of them, one after another."""
    rng = np.random.default_rng(seed)
    epochs = -(-steps * batch_size // count)
    return np.concatenate([rng.permutation(count) for _ in range(epochs)])[: steps * batch_size]


def gradient_norm(model, loss, x, y) -> float:
    """The global norm of the loss's gradient over the trainable weights (dense on TF)."""
    import keras  # heavy: the backend is loaded

    if keras.config.backend() == "tensorflow":
        import tensorflow as tf  # the TensorFlow backend is loaded already

        with tf.GradientTape() as tape:
            value = loss(y, model(x, training=True))
        grads = tape.gradient(value, model.trainable_variables)
        return float(tf.linalg.global_norm([tf.convert_to_tensor(g) for g in grads]))
    import jax  # the JAX backend is loaded already

    trainable = [v.value for v in model.trainable_variables]
    frozen = [v.value for v in model.non_trainable_variables]

    def value(weights):
        logits, _ = model.stateless_call(weights, frozen, x, training=True)
        return loss(y, logits)

    grads = jax.grad(value)(trainable)
    return float(np.sqrt(sum(float(jax.numpy.sum(g * g)) for g in grads)))


def our_steps(setup: Setup, data, tokenizer, order: np.ndarray, schedule: str, steps: int,
              diagnostics: bool = True):  # fmt: skip
    """(our head's initial weights, one record per step: loss, logits and gradient norm (with
    `diagnostics`), rate; the dev rows' logits after the steps, None without `dev_examples`)."""
    import keras  # heavy: the backend is loaded

    from model.finetune import Hyperparameters  # heavy: Keras
    from model.finetune.kind import inputs_of  # heavy: Keras
    from model.finetune.kinds import task_kind  # heavy: Keras
    from model.finetune.models import FinetuneModel, load_backbone  # heavy: Keras
    from model.finetune.optimizer import make_optimizer  # heavy: Keras
    from model.finetune.training import compile_for_fit  # heavy: Keras

    kind = task_kind(setup.task)
    keras.utils.set_random_seed(setup.seed)
    backbone = load_backbone(setup.init, tokenizer, "albert-tiny")
    spec = kind.spec
    model = FinetuneModel(backbone, spec.kind, spec.num_labels, "pooled", 0.0, name="finetune")
    head = [np.asarray(w) for w in model.head.get_weights()]
    hp = Hyperparameters(
        setup.learning_rate, setup.batch_size, 0.0, setup.total_steps, setup.warmup_steps,
        setup.max_seq_length,
    )  # fmt: skip
    optimizer = make_optimizer(model, hp, 0.01, 1.0, setup.total_steps, schedule)
    loss = kind.loss()
    compile_for_fit(model, optimizer, loss)
    inputs, labels = inputs_of(data.train), data.train["labels"]
    records = []
    for step in range(steps):
        rows = order[step * setup.batch_size : (step + 1) * setup.batch_size]
        x, y = {name: values[rows] for name, values in inputs.items()}, labels[rows]
        record = {"learning_rate": float(optimizer.learning_rate)}
        if diagnostics:
            record["logits"] = keras.ops.convert_to_numpy(model(x, training=True))
            record["grad_norm"] = gradient_norm(model, loss, x, y)
        model.reset_metrics()  # the step's loss, not the running mean
        record["loss"] = float(model.train_on_batch(x, y, return_dict=True)["loss"])
        records.append(record)
    dev = None
    if setup.dev_examples:
        dev = model.predict(inputs_of(data.dev), batch_size=64, verbose=0)
    return head, records, dev


def compare(ours: list[dict], theirs: list[dict], tolerance: float) -> tuple[list[dict], dict]:
    """Per step: both losses, |Δloss|, the largest |Δlogit|, both gradient norms and rates; and the
    first step (from 1) where each of loss, logits, gradient norm parts by more than `tolerance`
    (absolute; the gradient norm relative), None where it never does."""
    rows = []
    for step, (a, b) in enumerate(zip(ours, theirs), start=1):
        row = {
            "step": step,
            "loss": round(a["loss"], 7),
            "hf_loss": round(b["loss"], 7),
            "loss_diff": abs(a["loss"] - b["loss"]),
        }
        if "logits" in a:
            row["logits_diff"] = float(np.abs(a["logits"] - b["logits"]).max())
            row["grad_norm"] = round(a["grad_norm"], 6)
            row["hf_grad_norm"] = round(b["grad_norm"], 6)
            row["grad_norm_diff"] = abs(a["grad_norm"] - b["grad_norm"]) / max(
                b["grad_norm"], 1e-12
            )
        row["learning_rate"], row["hf_learning_rate"] = a["learning_rate"], b["learning_rate"]
        rows.append(row)
    first = {
        name: next((r["step"] for r in rows if r.get(f"{name}_diff", 0) > tolerance), None)
        for name in ("loss", "logits", "grad_norm")
    }
    return rows, first


def dev_comparison(ours: np.ndarray, theirs: np.ndarray, labels: np.ndarray) -> dict:
    """Both sides' dev logits: the largest difference, how often the predicted classes agree, and
    each side's accuracy (classification)."""
    result = {"examples": len(labels), "max_logits_diff": float(np.abs(ours - theirs).max())}
    if ours.shape[-1] > 1:
        a, b = ours.argmax(-1), theirs.argmax(-1)
        result |= {"same_class": float(np.mean(a == b)), "accuracy": float(np.mean(a == labels))}
        result["hf_accuracy"] = float(np.mean(b == labels))
    return result


def nano_export(
    directory: str, seed: int, architecture: dict | None = None, spm_model: str = str(SPM_MODEL)
) -> str:
    """albert-nano (with `architecture`'s fields), untrained (seed `seed`), exported with our
    tokenizer (`spm_model`) for Hugging Face."""
    from albert.tokenization import AlbertTokenizer  # heavy: after the backend is chosen
    from model.pretrain import PretrainConfig, build_model  # heavy: Keras

    config = PretrainConfig(
        data="-", output="-", preset="albert-nano", seed=seed, architecture=architecture or {}
    )
    model = build_model(config, AlbertTokenizer(spm_model).vocab_size)
    return export_with_tokenizer(model, directory, spm_model)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", help="a Hugging Face export with our tokenizer (default: nano)")
    parser.add_argument("--task", default="sst2", choices=GLUE_TASKS)
    parser.add_argument("--steps", type=int, default=50, help="steps compared")
    parser.add_argument(
        "--schedules", nargs="+", default=["reference", "after_warmup"],
        choices=["reference", "after_warmup"],
    )  # fmt: skip
    parser.add_argument("--examples", type=int, default=2000, help="first training rows used")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--warmup-steps", type=int, default=30)
    parser.add_argument("--total-steps", type=int, default=300, help="the schedule's length")
    parser.add_argument("--seed", type=int, default=1, help="our head's initialisation")
    parser.add_argument("--order-seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--dev-examples", type=int, default=0, help="scored after the steps")
    parser.add_argument(
        "--diagnostics", action=argparse.BooleanOptionalAction, default=True,
        help="our logits and gradient norm at every step (a second forward and backward)",
    )  # fmt: skip
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # torch's threads on a shared CPU
    import keras  # heavy: the backend, after the environment is set

    workdir = tempfile.mkdtemp(prefix="finetune-steps-")
    init = args.init or nano_export(os.path.join(workdir, "nano"), args.seed)
    setup = Setup(
        init=init, task=args.task, data_dir=str(SHARED / "glue" / get_task(args.task).directory),
        examples=args.examples, batch_size=args.batch_size, max_seq_length=args.max_seq_length,
        learning_rate=args.learning_rate, warmup_steps=args.warmup_steps,
        total_steps=args.total_steps, seed=args.seed, order_seed=args.order_seed,
        dev_examples=args.dev_examples,
    )  # fmt: skip
    data, tokenizer = task_data(setup)
    count = len(data.train["labels"])
    order = example_order(count, args.steps, args.batch_size, args.order_seed)
    header = {"cpu": cpu_model(), "load": os.getloadavg()[0], "backend": keras.config.backend()}
    print(json.dumps({**header, "args": vars(args), "examples": count}), flush=True)
    for schedule in args.schedules:
        head, ours, our_dev = our_steps(
            setup, data, tokenizer, order, schedule, args.steps, args.diagnostics
        )
        theirs, differ, their_dev = trainer_steps(
            setup, data, order, head, schedule, args.steps, os.path.join(workdir, schedule)
        )
        rows, first = compare(ours, theirs, args.tolerance)
        for row in rows:
            print(json.dumps({"schedule": schedule, **row}), flush=True)
        worst = {
            f"max_{name}_diff": max(r.get(f"{name}_diff", 0.0) for r in rows)
            for name in ("loss", "logits", "grad_norm")
        }
        summary = {"schedule": schedule, "first_step_over_tolerance": first, **worst}
        if our_dev is not None:
            summary["dev"] = dev_comparison(our_dev, their_dev, data.dev["labels"])
        print(json.dumps({**summary, "rows_encoded_differently": differ}), flush=True)


if __name__ == "__main__":
    main()
