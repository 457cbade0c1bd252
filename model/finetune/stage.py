"""The fine-tuning run (`run`): read and encode the task, build the model on the pretrained
backbone, train with `fit`, score the dev set(s), write the results, predictions and model. The
command line, which checks its config before this module (and Keras) is imported, is
`model.finetune.cli`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict

import keras

from albert.errors import StageError
from albert.fs import join, open_file
from albert.locks import output_lock
from albert.outputs import atomic_output_dir
from albert.tokenization import AlbertTokenizer
from model import keras_seeds, keras_tensorflow
from model.finetune.config import FinetuneConfig, Hyperparameters, hyperparameters
from model.finetune.kind import TaskData, TaskKind
from model.finetune.kinds import task_kind
from model.finetune.models import FinetuneModel, load_backbone
from model.finetune.multitask import multitask_kinds, train_multitask
from model.finetune.training import fit

# (config, the task's data, hyperparameters) -> {"init": the further-pretrained model, ...}
FurtherPretrain = Callable[[FinetuneConfig, TaskData, Hyperparameters], dict]


def run(config: FinetuneConfig, further_pretrain: FurtherPretrain | None = None) -> dict:
    """Fine-tune, score the dev set(s), write results, predictions and the model; return the
    results. `further_pretrain` runs `--further-pretrain-steps` (the flows pass it). The output's
    lock is held from the start (one writer per output): a second run, or a disk that refuses its
    first write, fails before the training, not after it."""
    with output_lock(config.output):
        return _run(config, further_pretrain)


def _run(config: FinetuneConfig, further_pretrain: FurtherPretrain | None) -> dict:
    """`run` while the output's lock is held."""
    kind = task_kind(config.task)
    spec = kind.spec
    if config.further_pretrain_steps and further_pretrain is None:
        raise StageError(
            "--further-pretrain-steps runs the tfrecords and pretrain stages: use `albert finetune`"
        )
    if config.multitask:
        multitask_kinds(config)  # a bad --multitask is found before any work
    keras_seeds.set_random_seed(config.seed, tensorflow=keras.config.backend() != "jax")
    tokenizer = AlbertTokenizer(config.spm_model)
    hp = hyperparameters(config, spec)
    data = kind.load(config, tokenizer, hp)  # raises if the train or dev file holds no examples
    further = further_pretrain(config, data, hp) if config.further_pretrain_steps else None
    init = further["init"] if further else config.init
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
        multitask = None
        if config.multitask:  # builds its model, then trains it
            multitask, joint = train_multitask(backbone, config, tokenizer, hp)
            model.head.set_weights(joint.singles[spec.name].head.get_weights())
    evaluation = fit(model, kind, data, hp, config)
    # The restored weights' scores; scored here when no evaluation was a number (a constant STS-B
    # prediction's Pearson is NaN) and the last weights stay.
    metrics, predictions = evaluation.best_scores or kind.score(model, data, hp.batch_size)
    dev_sets = score_dev_sets(kind, config, tokenizer, hp, model, metrics)
    with atomic_output_dir(config.output, lock=False) as out:  # `run` holds the lock
        predictions_path = kind.write_predictions(out, data, predictions)
        with keras_tensorflow.absent_unless_loaded():  # a JAX run's save loads no TensorFlow
            model.save(join(out, "model.keras"))
        results = {
            "task": spec.name,
            "init": init,
            "dev_file": data.dev_path,
            "dev": metrics,
            "primary_metric": spec.primary_metric,
            "best_step": evaluation.best_step,
            "history": evaluation.history,
            "hyperparameters": asdict(hp),
            "counts": data.counts,
            "multitask": multitask,
            "further_pretraining": further,
            "config": config.model_dump(),
            "predictions": predictions_path.replace(out, config.output.rstrip("/")),
            **({"dev_sets": dev_sets} if dev_sets else {}),
        }
        with open_file(join(out, "results.json"), "w") as handle:
            json.dump(results, handle, indent=2, sort_keys=True, default=str)
    summary = {
        "task": spec.name,
        "dev": metrics,
        "best_step": evaluation.best_step,
        "output": config.output,
    }
    return {**summary, "dev_sets": dev_sets} if dev_sets else summary


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
