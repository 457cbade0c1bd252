"""Multi-task fine-tuning (Sun et al. 2019, section 5.4): the shared backbone is trained on the main
task and every `--multitask TASK=DIR` (GLUE's or a user's) at once, before the main task is
fine-tuned alone."""

from __future__ import annotations

import numpy as np

from albert.errors import StageError
from albert.tokenization import AlbertTokenizer
from model.checkpoints.manager import Checkpoints
from model.finetune.batches import mixture_batches
from model.finetune.config import FinetuneConfig, Hyperparameters, parse_task_dir, task_of
from model.finetune.glue import GlueKind
from model.finetune.kind import inputs_of
from model.finetune.kinds import task_kind
from model.finetune.models import MultiTaskModel
from model.finetune.multi_label import MultiLabelKind
from model.finetune.optimizer import make_optimizer
from model.finetune.progress import Progress
from model.finetune.training import (
    DivergenceGuard,
    Phase,
    TrainingLoop,
    compile_for_fit,
    train_steps,
)
from model.network.backbone import AlbertBackbone

OWN_TASK_FIELDS = (
    "text_column",
    "label_column",
    "header",
    "kind",
    "label_separator",
    "encoding",
    "dev_fraction",
)


def multitask_kinds(config: FinetuneConfig) -> dict[str, tuple[GlueKind, FinetuneConfig]]:
    """`{task: (kind, its config)}` of the main task and every `--multitask TASK=DIR` (a
    registered task, or a user's in DIR's `task.yaml`); all must be classification or regression
    tasks. The main task reads its --data-dir (a user's: its own files)."""
    main = {"multitask": []}
    if not config.text_column:
        main.update(train_file=None, dev_file=None)
    configs = [config.model_copy(update=main)]
    for item in config.multitask:
        name, directory = parse_task_dir(item, "--multitask")
        values = {
            key: value
            for key, value in config.model_dump().items()
            if key not in (*OWN_TASK_FIELDS, "train_file", "dev_file")
        }
        values.update(task=name, data_dir=directory, multitask=[])
        configs.append(type(config)(**values))
    entries = {}
    for task_config in configs:
        kind = task_kind(task_of(task_config))
        if not isinstance(kind, GlueKind) or isinstance(kind, MultiLabelKind):
            raise StageError(
                "--multitask: only classification and regression tasks can be trained jointly, "
                f"not {kind.spec.name}"
            )
        entries[kind.spec.name] = (kind, task_config)
    return entries


def train_multitask(
    backbone: AlbertBackbone,
    config: FinetuneConfig,
    tokenizer: AlbertTokenizer,
    hp: Hyperparameters,
    checkpoints: Checkpoints,
    identity: dict,
    resume_from: str | None = None,
    accelerator: bool = False,
) -> tuple[dict, MultiTaskModel]:
    """Train the shared backbone on all tasks at once (batches mix tasks in proportion to their
    sizes; each example's loss counts only for its own task's head), with checkpoints as
    single-task training (`model.finetune.training`), from `resume_from` when given. Returns dev
    metrics per task and the joint model."""
    kinds, datas = {}, {}
    for name, (kind, task_config) in multitask_kinds(config).items():
        kinds[name], datas[name] = kind, kind.load(task_config, tokenizer, hp)
    model = MultiTaskModel(
        backbone,
        {n: k.spec.num_labels for n, k in kinds.items()},
        config.features,
        hp.classifier_dropout,
        name="multitask",
    )
    parts = []
    for name, data in datas.items():
        count = len(data.train["input_ids"])
        labels = {
            n: data.train["labels"] if n == name else np.zeros(count, d.train["labels"].dtype)
            for n, d in datas.items()
        }
        weights = {n: np.full(count, float(n == name), dtype=np.float32) for n in datas}
        parts.append((inputs_of(data.train), labels, weights))
    steps = config.multitask_steps or hp.train_steps
    compile_for_fit(
        model,
        make_optimizer(model, hp, config.weight_decay, config.layer_decay, steps, config.schedule),
        {n: k.loss() for n, k in kinds.items()},
    )
    phase = Phase(model, checkpoints, identity, config.output, hp.learning_rate)
    start, sums, done = 0, None, False
    if resume_from is not None:
        saved, groups = phase.resume(resume_from)
        start, done = saved["step"], saved["done"]
        sums = [groups["loss"][key] for key in sorted(groups.get("loss", {}))]
    progress = Progress(
        "multitask",
        steps,
        start,
        max_seq_length=hp.max_seq_length,
        accelerator=accelerator,
        quiet=config.quiet,
    )
    loop = TrainingLoop(steps, start, steps, progress, checkpoints, phase.save, sums)
    phase.state = lambda: {"step": loop.step}
    if not done:
        progress.began()
        train_steps(
            model,
            lambda skip: mixture_batches(parts, hp.batch_size, config.seed, trim=True, skip=skip),
            loop,
            [DivergenceGuard(phase, loop)],
            config.verbose_fit,
        )
        phase.save(loop.step, done=True)
        checkpoints.wait()
    metrics = {
        name: kinds[name].score(model.singles[name], datas[name], hp.batch_size)[0]
        for name in datas
    }
    return {"steps": steps, "tasks": sorted(datas), "dev_after_multitask": metrics}, model
