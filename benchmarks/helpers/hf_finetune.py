"""What the fine-tuning comparisons (`finetune_parity.py` and `own_task.py`, whole runs;
`finetune_steps.py`, step for step) share: the export both sides start from, the hyperparameters our
CLI resolves, and Hugging Face's `Trainer` set as our fine-tuning is (AdamW with ε 1e-6, weight
decay 0.01, clipping 1.0, float32 on CPU, no saving, logging or evaluation of its own) with either
schedule, fine-tuning `AlbertForSequenceClassification`. A module for scripts, not part of the
package; torch and transformers are imported where used, so a timed process loads only what it
runs."""

from __future__ import annotations

from pathlib import Path

HYPERPARAMETERS = (
    "learning_rate", "batch_size", "warmup_steps", "max_seq_length", "classifier_dropout",
)  # fmt: skip


def export_with_tokenizer(model, directory: str, spm_model: str) -> str:
    """`model` (an `AlbertPretrainingModel`) as a Hugging Face directory with our tokenizer."""
    from albert.tokenization import AlbertTokenizer  # deferred: after the backend is set
    from albert.tokenizer_export import write_hf_tokenizer  # deferred: after the backend is set
    from model.conversion.hf import export_huggingface  # heavy: Keras

    export_huggingface(model, directory)
    tokenizer = AlbertTokenizer(spm_model)
    write_hf_tokenizer(tokenizer, directory, model.config.max_position_embeddings)
    return directory


def export_checkpoint(checkpoint: Path, preset: str, target: Path, spm_model: str) -> Path:
    """A `model.pretrain` checkpoint of `preset` as a Hugging Face directory with our tokenizer
    (`export_with_tokenizer`), written once at `target`."""
    from model.checkpoints.store import load_checkpoint  # heavy: Keras (backend set first)
    from model.pretrain import PretrainConfig, build_model  # heavy: Keras (backend set first)

    if not target.exists():
        model = build_model(PretrainConfig(data="-", output="-", preset=preset), 16000)
        load_checkpoint(str(checkpoint), model)
        export_with_tokenizer(model, str(target), spm_model)
    return target


def resolved_hyperparameters(config) -> dict:
    """The learning rate, batch size, warmup, sequence length and head dropout our CLI resolves
    for `config` (a `FinetuneConfig`: the task's defaults with the flags given)."""
    from model.finetune.config import hyperparameters, task_of  # no Keras: the config only

    hp = hyperparameters(config, task_of(config))
    return {name: getattr(hp, name) for name in HYPERPARAMETERS}


def trainer_arguments(**settings):
    """`TrainingArguments` with the settings both comparisons share, and `settings` (output_dir,
    steps, rate, batch, warmup, seed, ...)."""
    from transformers import TrainingArguments  # optional: the Hugging Face side

    return TrainingArguments(
        weight_decay=0.01,
        adam_epsilon=1e-6,
        max_grad_norm=1.0,
        lr_scheduler_type="linear",
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        eval_strategy="no",
        log_level="error",
        disable_tqdm=True,
        dataloader_num_workers=0,  # the rows are tensors already: no worker processes to start
        dataloader_pin_memory=False,  # CPU only
        **settings,
    )


def reference_fraction(step: int, warmup_steps: int, total_steps: int) -> float:
    """`model.optimization.optimizers.WarmupPolynomialDecay` (power 1, end 0) at `step`, over its
    peak."""
    if step < warmup_steps:
        return step / warmup_steps
    return 1.0 - min(step, total_steps) / total_steps


def trainer_class(schedule: str, warmup_steps: int, total_steps: int):
    """transformers' `Trainer`, with our `reference` schedule (a `LambdaLR` of
    `reference_fraction`) instead of its `linear` when `schedule` is "reference"."""
    from transformers import Trainer  # optional: the Hugging Face side

    if schedule != "reference":
        return Trainer
    import torch  # optional: the Hugging Face side

    class ReferenceSchedule(Trainer):
        def create_scheduler(self, num_training_steps, optimizer=None):
            self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
                optimizer or self.optimizer,
                lambda step: reference_fraction(step, warmup_steps, total_steps),
            )
            return self.lr_scheduler

    return ReferenceSchedule


def trainer_predictions(init: str, train: tuple[list, list], dev: list, problem_type: str,
                        num_labels: int, hp: dict, steps: int, seed: int, schedule: str,
                        output_dir: str):  # fmt: skip
    """The dev rows' logits after `transformers.Trainer` fine-tunes
    `AlbertForSequenceClassification` from the export `init` for `steps` steps with `hp`
    (`resolved_hyperparameters`).

    `train` is (texts, labels), a text a tuple of one or two strings, a label a class index, a
    multi-hot row (problem_type "multi_label_classification": sigmoid and BCE) or a score
    ("regression"); `dev` the dev texts. Every row is tokenized once by the export's
    tokenizer.json (AutoTokenizer, padded to the sequence length as ours, its longest-first
    truncation = our head truncation) and served by a torch Dataset; the seed is set before the
    head is drawn (as run_glue.py does), so it covers the head as ours does. Weight decay:
    Trainer's `get_decay_parameter_names` leaves out every `nn.LayerNorm` and every name matching
    "bias", "layernorm" or "_norm"; on ALBERT that is `embeddings.LayerNorm`, each layer's
    `attention.LayerNorm` and `full_layer_layer_norm`, and all biases, the same set our
    `DEFAULT_EXCLUDE` leaves out. Checked on every run (a RuntimeError otherwise)."""
    import torch  # optional: the Hugging Face side
    from transformers import (  # optional: the Hugging Face side
        AlbertForSequenceClassification,
        AutoTokenizer,
        PrinterCallback,
        set_seed,
    )

    from model.optimization.weight_decay import is_excluded  # no Keras: this process is timed

    tokenizer = AutoTokenizer.from_pretrained(init)
    label_type = torch.long if problem_type == "single_label_classification" else torch.float32

    class Rows(torch.utils.data.Dataset):
        def __init__(self, texts: list[tuple], labels: list | None = None):
            self.encoded = tokenizer(
                *zip(*texts), truncation=True, max_length=hp["max_seq_length"],
                padding="max_length", return_tensors="pt",
            )  # fmt: skip
            self.labels = None if labels is None else torch.tensor(labels, dtype=label_type)

        def __len__(self) -> int:
            return len(self.encoded["input_ids"])

        def __getitem__(self, index: int) -> dict:
            row = {name: values[index] for name, values in self.encoded.items()}
            return row if self.labels is None else {**row, "labels": self.labels[index]}

    rows = Rows(*train)
    set_seed(seed)  # before the head is drawn, as transformers' run_glue.py does
    model = AlbertForSequenceClassification.from_pretrained(
        init, num_labels=num_labels, problem_type=problem_type,
        classifier_dropout_prob=hp["classifier_dropout"], dtype=torch.float32,
    )  # fmt: skip
    arguments = trainer_arguments(
        output_dir=output_dir, max_steps=steps, learning_rate=hp["learning_rate"],
        per_device_train_batch_size=hp["batch_size"], per_device_eval_batch_size=64,
        warmup_steps=min(hp["warmup_steps"], steps), seed=seed, logging_strategy="no",
    )  # fmt: skip
    trainer = trainer_class(schedule, arguments.warmup_steps, steps)(
        model=model, args=arguments, train_dataset=rows
    )
    trainer.remove_callback(PrinterCallback)  # stdout carries the benchmark's JSON lines only
    decayed = set(trainer.get_decay_parameter_names(model))
    expected = {name for name, _ in model.named_parameters() if not is_excluded(name)}
    if decayed != expected:
        raise RuntimeError(f"Trainer's weight decay differs from ours: {decayed ^ expected}")
    trainer.train()
    return trainer.predict(Rows(dev)).predictions
