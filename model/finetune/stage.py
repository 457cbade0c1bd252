"""The fine-tuning run (`run`): read and encode the task, build the model on the pretrained
backbone, train with `fit`, score the dev set(s), write the results, predictions and model. The
command line, which checks its config before this module (and Keras) is imported, is
`model.finetune.cli`."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict

import keras

from albert.errors import StageError
from albert.fs import join, open_file
from albert.locks import output_lock
from albert.outputs import atomic_output_dir
from albert.tokenization import AlbertTokenizer
from model.checkpoints import store as checkpointing
from model.checkpoints.manager import Checkpoints
from model.finetune import resume
from model.finetune.config import (
    FinetuneConfig,
    Hyperparameters,
    hyperparameters,
    task_of,
    with_epochs,
)
from model.finetune.exports import write_task_exports
from model.finetune.kind import TaskData, TaskKind
from model.finetune.kinds import task_kind
from model.finetune.models import FinetuneModel, load_backbone
from model.finetune.multitask import multitask_kinds, train_multitask
from model.finetune.serving_export import export_serving
from model.finetune.training import fit
from model.runtime import cores, keras_seeds, keras_tensorflow, preemption

logger = logging.getLogger(__name__)

# (config, the task's data, hyperparameters) -> {"init": the further-pretrained model, ...}
FurtherPretrain = Callable[[FinetuneConfig, TaskData, Hyperparameters], dict]


def run(config: FinetuneConfig, further_pretrain: FurtherPretrain | None = None) -> dict:
    """Fine-tune, score the dev set(s), write results, predictions and the model; return the
    results. `further_pretrain` runs `--further-pretrain-steps` (the flows pass it). The output's
    lock is held from the start (one writer per output): a second run, or a disk that refuses its
    first write, fails before the training, not after it. A finished output of the same settings
    is returned as it is; otherwise training resumes from the newest checkpoint of the same
    settings (`model.finetune.resume`). From the first step on, SIGTERM or SIGINT stops the run
    after a checkpoint with `Interrupted` (`model.runtime.preemption`)."""
    backend = keras.config.backend()
    with output_lock(config.output):
        results = resume.finished(config, backend)
        if results is not None:
            logger.info("%s: fine-tuned before with these settings; nothing to do", config.output)
            resume.discard(config.output)
            return summary_of(results, config)
        with preemption.stop_on_signals(preemption.signal_mode(backend, 1)) as stop:
            results = _run(config, further_pretrain, backend, stop)
        resume.discard(config.output)  # the output is committed: its checkpoints are done
        return summary_of(results, config)


def summary_of(results: dict, config: FinetuneConfig) -> dict:
    """What `run` returns of a run's `results.json` (the flows' fine-tunes' results: a model
    line's gate reads `dev` at `primary_metric`)."""
    summary = {
        "task": results["task"],
        "dev": results["dev"],
        "primary_metric": results.get("primary_metric"),
        "best_step": results["best_step"],
        "output": config.output,
    }
    for key in ("dev_sets", "details"):  # MNLI's two dev sets; a user's task's per-class table
        if results.get(key):
            summary[key] = results[key]
    return summary


def _checkpoints(config: FinetuneConfig, phase: str, stop: preemption.StopRequest) -> Checkpoints:
    return Checkpoints(
        resume.checkpoints_dir(config.output, phase),
        config.checkpoint_every,
        config.keep_checkpoints,
        True,
        stop,
    )


def _run(
    config: FinetuneConfig,
    further_pretrain: FurtherPretrain | None,
    backend: str,
    stop: preemption.StopRequest,
) -> dict:
    """`run` while the output's lock is held and the signals are `stop`'s; the results."""
    kind = task_kind(task_of(config))
    spec = kind.spec
    if config.further_pretrain_steps and further_pretrain is None:
        raise StageError(
            "--further-pretrain-steps runs the tfrecords and pretrain stages: use `albert finetune`"
        )
    if config.multitask:
        multitask_kinds(config)  # a bad --multitask is found before any work
    identity = resume.identity(config, backend)
    latest = resume.resumable(config, backend)
    task_state = checkpointing.read_state(latest["task"].path) if latest["task"] else {}
    accelerator = cores.on_accelerator()
    keras_seeds.set_random_seed(config.seed, tensorflow=backend != "jax")
    tokenizer = AlbertTokenizer(config.spm_model)
    hp = hyperparameters(config, spec)
    data = kind.load(config, tokenizer, hp)  # raises if the train or dev file holds no examples
    hp = with_epochs(config, hp, len(data.train["input_ids"]))
    further = None
    if config.further_pretrain_steps:  # done before, when the fine-tuning has a checkpoint
        further = task_state.get("further") or further_pretrain(config, data, hp)
    init = further["init"] if further else config.init
    with (
        _checkpoints(config, "multitask", stop) as joint_checkpoints,
        _checkpoints(config, "task", stop) as checkpoints,
    ):
        with keras_seeds.drawn_from(config.seed):  # not from the threads' shared `random`
            backbone = load_backbone(init, tokenizer, config.preset)
            model = FinetuneModel(
                backbone,
                spec.kind,
                spec.num_labels,
                config.features,
                hp.classifier_dropout,
                name="finetune",
            )
            multitask = task_state.get("multitask")
            if config.multitask and multitask is None:  # builds its model, then trains it
                multitask, joint = train_multitask(
                    backbone,
                    config,
                    tokenizer,
                    hp,
                    joint_checkpoints,
                    identity,
                    latest["multitask"].path if latest["multitask"] else None,
                    accelerator,
                )
                model.head.set_weights(joint.singles[spec.name].head.get_weights())
        evaluation = fit(
            model,
            kind,
            data,
            hp,
            config,
            checkpoints,
            identity,
            latest["task"].path if latest["task"] else None,
            state=lambda: {"multitask": multitask, "further": further},
            accelerator=accelerator,
        )
    results, predictions = scored_results(
        kind,
        config,
        tokenizer,
        hp,
        data,
        evaluation,
        model,
        identity,
        init=init,
        multitask=multitask,
        further_pretraining=further,
    )
    exports = {"tokenizer": tokenizer, "max_seq_length": hp.max_seq_length}
    return commit_output(config.output, kind, data, model, predictions, results, exports=exports)


def scored_results(
    kind: TaskKind,
    config: FinetuneConfig,
    tokenizer: AlbertTokenizer,
    hp: Hyperparameters,
    data: TaskData,
    evaluation,
    model: keras.Model,
    identity: dict,
    **fields,
) -> tuple[dict, object]:
    """(`results.json`'s fields, the dev predictions) of `model`, trained by `fit` (`evaluation`,
    its `Evaluation`), with the stage's own `fields` (fine-tuning's `init`, `multitask`,
    `further_pretraining`; distillation's `teacher`). The scores are the restored weights': the
    best evaluation's, or scored here when no evaluation was a number (a constant STS-B
    prediction's Pearson is NaN) and the last weights stay, or when the best came before a resume;
    with the task's other dev sets (`score_dev_sets`)."""
    metrics, predictions = evaluation.best_scores or kind.score(model, data, hp.batch_size)
    dev_sets = score_dev_sets(kind, config, tokenizer, hp, model, metrics)
    results = {
        "task": kind.spec.name,
        "kind": kind.spec.kind,
        **({"labels": list(kind.spec.labels)} if kind.spec.labels else {}),
        "dev_file": data.dev_path,
        "dev": metrics,
        "primary_metric": kind.spec.primary_metric,
        "best_step": evaluation.best_step,
        "history": evaluation.history,
        "hyperparameters": asdict(hp),
        "counts": data.counts,
        "config": config.model_dump(),
        "identity": identity,
        **details_of(kind, data, predictions),
        **fields,
        **({"dev_sets": dev_sets} if dev_sets else {}),
    }
    return results, predictions


def details_of(kind: TaskKind, data: TaskData, predictions) -> dict:
    """`{"details": ...}`: the task's `Task.details` of the dev predictions (a user's
    classification task's per-class table and confusion matrix), {} for a task without."""
    task = kind.spec
    if task.details is None:
        return {}
    return {"details": task.details(predictions, data.dev["labels"], task.labels)}


def commit_output(
    output: str,
    kind: TaskKind,
    data: TaskData,
    model: keras.Model,
    predictions,
    results: dict,
    files: dict[str, str] | None = None,
    exports: dict | None = None,
) -> dict:
    """Write the output whole (`atomic_output_dir`; the caller holds its lock): the predictions
    file, `model.keras`, the exports (`model.finetune.exports.write_task_exports` with the
    `exports` arguments: the tokenizer, the sequence length), `files` (name -> text),
    `results.json`, which is `results` with the predictions file's path and the exports, and the
    serving export (`model.predict.serving`); return the results."""
    with atomic_output_dir(output, lock=False) as out:
        predictions_path = kind.write_predictions(out, data, predictions)
        with keras_tensorflow.absent_unless_loaded():  # a JAX run's save loads no TensorFlow
            model.save(join(out, "model.keras"))
        if exports:
            results = {**results, "exports": write_task_exports(out, model, kind, **exports)}
        for name, text in (files or {}).items():
            with open_file(join(out, name), "w") as handle:
                handle.write(text)
        results = {**results, "predictions": predictions_path.replace(out, output.rstrip("/"))}
        with open_file(join(out, "results.json"), "w") as handle:
            json.dump(results, handle, indent=2, sort_keys=True, default=str)
        export_serving(out, model)  # export/saved_model: serving on raw strings
    return results


def score_dev_sets(
    kind: TaskKind,
    config: FinetuneConfig,
    tokenizer: AlbertTokenizer,
    hp: Hyperparameters,
    model: keras.Model,
    metrics: dict,
) -> dict[str, dict] | None:
    """`{official name: metrics}` of each of the task's dev sets when it has several (MNLI-m and
    MNLI-mm) and no --dev-file replaces them; `metrics` are the first set's. None otherwise."""
    spec = kind.spec
    if config.dev_file or len(spec.dev_files) < 2:
        return None
    scores = {spec.dev_names[0]: metrics}
    for name, file in zip(spec.dev_names[1:], spec.dev_files[1:]):
        other = config.model_copy(update={"dev_file": join(config.data_dir, file)})
        data = kind.load(other, tokenizer, hp, with_train=False)
        scores[name] = kind.score(model, data, hp.batch_size)[0]
    return scores
