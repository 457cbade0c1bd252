"""What the fine-tuning comparisons (`finetune_parity.py`, whole runs; `finetune_steps.py`, step for
step) share: the export both sides start from, and Hugging Face's `Trainer` set as our fine-tuning
is (AdamW with ε 1e-6, weight decay 0.01, clipping 1.0, float32 on CPU, no saving, logging or
evaluation of its own) with either schedule. A module for scripts, not part of the package; torch
and transformers are imported where used, so a timed process loads only what it runs."""

from __future__ import annotations


def export_with_tokenizer(model, directory: str, spm_model: str) -> str:
    """`model` (an `AlbertPretrainingModel`) as a Hugging Face directory with our tokenizer."""
    from albert.tokenization import AlbertTokenizer  # deferred: after the backend is set
    from albert.tokenizer_export import write_hf_tokenizer  # deferred: after the backend is set
    from model.conversion.hf import export_huggingface  # heavy: Keras

    export_huggingface(model, directory)
    tokenizer = AlbertTokenizer(spm_model)
    write_hf_tokenizer(tokenizer, directory, model.config.max_position_embeddings)
    return directory


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
