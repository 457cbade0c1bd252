"""The distillation run (`run`): check the teacher against the task and the student's vocabulary,
read and encode the task (as `albert finetune` does), write the teacher's outputs once to the
cache, train the student on soft targets and labels with fine-tuning's `fit` (its evaluations,
early stopping, checkpoints and exact resume), score it, measure teacher and student side by side,
and write the output as `albert finetune` does, with `distillation.md`. The command line, which
checks its config before this module (and Keras) is imported, is `model.distill.cli`."""

from __future__ import annotations

import logging

import keras

from albert.fs import file_digest
from albert.locks import output_lock
from albert.tokenization import AlbertTokenizer
from model.checkpoints.manager import Checkpoints
from model.distill.batches import distill_batches
from model.distill.checks import teacher_results
from model.distill.config import DistillConfig
from model.distill.losses import make_distiller
from model.distill.report import side_by_side
from model.distill.serving import serving_costs
from model.distill.teacher import compare_sizes, load_teacher, teacher_outputs
from model.finetune import resume
from model.finetune.config import hyperparameters, task_of, with_epochs
from model.finetune.kind import inputs_of
from model.finetune.kinds import task_kind
from model.finetune.models import FinetuneModel, load_backbone
from model.finetune.stage import commit_output, scored_results, summary_of
from model.finetune.training import fit
from model.runtime import cores, keras_seeds, preemption

logger = logging.getLogger(__name__)

SERVING_BATCH_SIZES = (1, 32)
"""The batch sizes the report measures inference at."""


def identity(config: DistillConfig, backend: str) -> dict:
    """What makes two distillations the same training: fine-tuning's identity (every setting,
    the teacher's path among them) and the digest of the teacher's weights."""
    teacher = file_digest(f"{config.teacher.rstrip('/')}/model.keras")
    return {**resume.identity(config, backend), "teacher_digest": teacher}


def run(config: DistillConfig) -> dict:
    """Distil, score, write the output; return its summary. As `model.finetune.stage.run`: the
    output's lock is held from the start, a finished output of the same settings is the answer,
    a run resumes from its newest checkpoint of the same settings, and SIGTERM or SIGINT stops it
    after a checkpoint with `Interrupted`. Bad input (the teacher's task or vocabulary) is a
    StageError before any work."""
    backend = keras.config.backend()
    tokenizer = AlbertTokenizer(config.spm_model)
    teacher_facts = teacher_results(config)
    with output_lock(config.output):
        wanted = identity(config, backend)
        results = resume.finished(config, backend, wanted)
        if results is not None:
            logger.info("%s: distilled before with these settings; nothing to do", config.output)
            resume.discard(config.output)
            return summary(results, config)
        with preemption.stop_on_signals(preemption.signal_mode(backend, 1)) as stop:
            results = _run(config, tokenizer, teacher_facts, wanted, backend, stop)
        resume.discard(config.output)
        return summary(results, config)


def summary(results: dict, config: DistillConfig) -> dict:
    """What `run` returns: fine-tuning's summary and the side-by-side figures."""
    return {**summary_of(results, config), "distillation": results["distillation"]}


def _run(config, tokenizer, teacher_facts, wanted, backend, stop) -> dict:
    """`run` while the output's lock is held and the signals are `stop`'s; the results."""
    kind = task_kind(task_of(config))
    spec = kind.spec
    latest = resume.resumable(config, backend, wanted)["task"]
    accelerator = cores.on_accelerator()
    keras_seeds.set_random_seed(config.seed, tensorflow=backend != "jax")
    hp = hyperparameters(config, spec)
    data = kind.load(config, tokenizer, hp)
    hp = with_epochs(config, hp, len(data.train["input_ids"]))
    teacher = load_teacher(config, tokenizer.vocab_size)
    checkpoints = Checkpoints(
        resume.checkpoints_dir(config.output, "task"),
        config.checkpoint_every,
        config.keep_checkpoints,
        True,
        stop,
    )
    with checkpoints:
        with keras_seeds.drawn_from(config.seed):
            backbone = load_backbone(config.init, tokenizer, config.preset)
            student = FinetuneModel(
                backbone,
                spec.kind,
                spec.num_labels,
                config.features,
                hp.classifier_dropout,
                name="finetune",
            )
            distiller = make_distiller(
                student,
                kind,
                config.temperature,
                config.alpha,
                teacher,
                config.hidden_weight,
                config.attention_weight,
            )
        compare_sizes(config, teacher, student)
        outputs = teacher_outputs(config, teacher, data)  # once the student is known to be good
        evaluation = fit(
            distiller,
            kind,
            data,
            hp,
            config,
            checkpoints,
            wanted,
            latest.path if latest else None,
            accelerator=accelerator,
            batches=lambda skip: distill_batches(
                data, outputs, hp.batch_size, config.seed, skip=skip
            ),
        )
    results, predictions = scored_results(
        kind,
        config,
        tokenizer,
        hp,
        data,
        evaluation,
        student,
        wanted,
        init=config.init,
        teacher=config.teacher,
    )
    sample = inputs_of(data.dev)
    costs = {
        name: serving_costs(
            model, sample, hp.max_seq_length, SERVING_BATCH_SIZES, config.serving_iterations
        )
        for name, model in (("teacher", teacher), ("student", student))
    }
    costs["teacher"]["dev"], costs["student"]["dev"] = teacher_facts["dev"], results["dev"]
    results["distillation"] = {
        "temperature": config.temperature,
        "alpha": config.alpha,
        "hidden_weight": config.hidden_weight,
        "attention_weight": config.attention_weight,
        "teacher_outputs": outputs.path,
        **costs,
    }
    table = side_by_side(costs["teacher"], costs["student"], spec.primary_metric)
    files = {"distillation.md": f"# Distillation: {spec.name}\n\n{table}"}
    exports = {"tokenizer": tokenizer, "max_seq_length": hp.max_seq_length}
    return commit_output(config.output, kind, data, student, predictions, results, files, exports)
