"""Hugging Face's side of benchmarks/finetune_steps.py: `Trainer` step by step from the shared
export and head, its loss, logits, gradient norm and rate recorded at every step. torch and
transformers are imported where used."""

from __future__ import annotations

import numpy as np

from benchmarks.helpers.hf_finetune import trainer_arguments, trainer_class
from model.tasks import get_task  # no Keras


def trainer_steps(setup, data, order: np.ndarray, head: list[np.ndarray], schedule: str,
                  steps: int, workdir: str):  # fmt: skip
    """One record per step of `Trainer` (loss and logits from the model's forward, gradient norm
    and rate from its logs), how its tokenization compares with our encoding, and the dev rows'
    logits after the steps (`Trainer.predict`; None without `dev_examples`); `setup` is
    finetune_steps.Setup."""
    import torch  # optional: the Hugging Face side
    from transformers import (  # optional: the Hugging Face side
        AlbertForSequenceClassification,
        AutoTokenizer,
        PrinterCallback,
        TrainerCallback,
    )

    spec = get_task(setup.task)
    regression = spec.kind == "regression"
    tokenizer = AutoTokenizer.from_pretrained(setup.init)
    columns = list(zip(*[[t for t in texts if t is not None] for texts in data.train_texts]))
    encoded = tokenizer(
        *columns, truncation=True, max_length=setup.max_seq_length, padding="max_length",
        return_tensors="np",
    )  # fmt: skip
    differ = {
        ours: int((encoded[theirs] != data.train[ours]).any(axis=1).sum())
        for ours, theirs in (
            ("input_ids", "input_ids"),
            ("segment_ids", "token_type_ids"),
            ("input_mask", "attention_mask"),
        )
    }
    labels = data.train["labels"].astype(np.float32 if regression else np.int64)

    class Ordered(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return len(order)

        def __getitem__(self, position: int) -> dict:
            row = int(order[position])
            return {
                **{name: torch.from_numpy(values[row]) for name, values in encoded.items()},
                "labels": torch.tensor(labels[row]),
            }

    model = AlbertForSequenceClassification.from_pretrained(
        setup.init, num_labels=spec.num_labels, classifier_dropout_prob=0.0,
        dtype=torch.float32,
    )  # fmt: skip
    with torch.no_grad():
        model.classifier.weight.copy_(torch.from_numpy(head[0].T))
        model.classifier.bias.copy_(torch.from_numpy(head[1]))
    forwards = []

    def record_forward(module, args, output):
        if module.training:  # the training steps' forwards, not `predict`'s
            forwards.append((float(output.loss.detach()), output.logits.detach().numpy().copy()))

    model.register_forward_hook(record_forward)
    logged = []

    class Record(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "grad_norm" in logs:
                logged.append(dict(logs))

        def on_step_end(self, args, state, control, **kwargs):
            control.should_training_stop = state.global_step >= steps  # of a longer schedule

    arguments = trainer_arguments(
        output_dir=workdir, max_steps=setup.total_steps, learning_rate=setup.learning_rate,
        per_device_train_batch_size=setup.batch_size, warmup_steps=setup.warmup_steps,
        train_sampling_strategy="sequential", seed=setup.seed, logging_strategy="steps",
        logging_steps=1,
    )  # fmt: skip
    trainer = trainer_class(schedule, setup.warmup_steps, setup.total_steps)(
        model=model, args=arguments, train_dataset=Ordered(), callbacks=[Record()]
    )
    trainer.remove_callback(PrinterCallback)  # stdout carries this script's JSON lines only
    trainer.train()
    dev = None
    if setup.dev_examples:
        texts = [[t for t in (e.text_a, e.text_b) if t is not None] for e in data.dev_examples]
        rows = tokenizer(
            *zip(*texts), truncation=True, max_length=setup.max_seq_length,
            padding="max_length", return_tensors="pt",
        )  # fmt: skip
        dev = trainer.predict([dict(zip(rows, values)) for values in zip(*rows.values())])
        dev = dev.predictions
    records = [
        {"loss": loss, "logits": logits, "grad_norm": log["grad_norm"],
         "learning_rate": log["learning_rate"]}
        for (loss, logits), log in zip(forwards, logged)
    ]  # fmt: skip
    return records, differ, dev
