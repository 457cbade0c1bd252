"""The run's `--downstream` fine-tunes: their configs (the pretrained model's and a randomly
initialised twin's, with `--distill` a distilled student of the first, with `--predict` the first's
predictions on the files), their results for the report, and the evaluation sets the decontamination
stage checks: `--eval`'s and, by default, the dev sets the fine-tunes are scored on, so that no
model is fine-tuned and scored on a set whose overlap with its pretraining corpus went
unreported."""

from __future__ import annotations

from typing import TYPE_CHECKING

from albert.config import StageConfig, build_config
from albert.fs import join
from albert.task_yaml import read_task_yaml
from flows.engine import tasks
from model.tasks import get_task

if TYPE_CHECKING:
    from flows.pipeline.flow import PretrainPipelineConfig


def downstream_sets(downstream: list[str], finetune: dict) -> list[str]:
    """The files each `TASK=DIR` fine-tune is scored on: a registered task's (`finetune`'s
    dev_file, else its dev files in DIR: GLUE `dev*.tsv`, SQuAD `dev-v1.1.json`, RACE `dev/`), or
    a user's task's DIR, whose `task.yaml` names its dev file and text columns (decontamination
    reads them there). A malformed item or an unknown task is said by the fine-tunes' own
    configs."""
    paths = []
    for item in downstream:
        task, _, directory = item.partition("=")
        try:
            spec = get_task(task)
        except KeyError:
            paths += [directory] if read_task_yaml(directory) else []
            continue
        dev = finetune.get("dev_file")
        paths += [dev] if dev else [join(directory, name) for name in spec.dev_files]
    return paths


def evaluation_sets(eval_paths: list[str], downstream: list[str], finetune: dict) -> list[str]:
    """`--eval`'s paths, then the downstream dev sets not among them, each once."""
    return list(dict.fromkeys([*eval_paths, *downstream_sets(downstream, finetune)]))


def downstream_configs(config: PretrainPipelineConfig) -> dict[str, StageConfig]:
    """Per `--downstream TASK=DIR`: fine-tuning of the pretrained model and of a randomly
    initialised twin (same preset, budget and seed), written to RUN_DIR/finetune-TASK and
    finetune-TASK-random."""
    from model.finetune import FinetuneConfig, parse_task_dir  # heavy: loads TensorFlow

    configs: dict[str, StageConfig] = {}
    for item in config.downstream:
        task, data_dir = parse_task_dir(item, "--downstream")
        common = {
            "task": task,
            "data_dir": data_dir,
            "spm_model": join(config.stage_dir("vocab"), "spiece.model"),
            "preset": config.preset,
            "seed": config.seed,
            "input_workers": config.input_workers,
            **config.finetune,
        }
        for name, init in (
            (f"finetune-{task}", config.trained_model()),
            (f"finetune-{task}-random", "random"),
        ):
            configs[name] = build_config(
                FinetuneConfig, {**common, "init": init, "output": config.stage_dir(name)}
            )
        if config.distill:
            configs[f"distill-{task}"] = distill_config(config, common, task)
        if config.predict:
            configs[f"predict-{task}"] = predict_config(config, task)
    return configs


def predict_config(config: PretrainPipelineConfig, task: str) -> StageConfig:
    """`--predict`'s step after `finetune-TASK`: that fine-tune labels the files into
    RUN_DIR/predict-TASK."""
    from pipelines.predict.config import PredictConfig  # the config only: no Beam

    values = {"model": config.stage_dir(f"finetune-{task}"), "input": config.predict}
    return build_config(PredictConfig, {**values, "output": config.stage_dir(f"predict-{task}")})


def distill_config(config: PretrainPipelineConfig, common: dict, task: str) -> StageConfig:
    """`--distill`'s step after `finetune-TASK`: that fine-tune is the teacher, RUN_DIR/distill-TASK
    the distilled student."""
    from model.distill import DistillConfig  # the config only: no Keras

    values = {**common, **config.distill, "teacher": config.stage_dir(f"finetune-{task}")}
    values.pop("init", None)  # the student is --distill's `student`
    return build_config(DistillConfig, {**values, "output": config.stage_dir(f"distill-{task}")})


def downstream_task(name: str):
    """The flows' task of the downstream step `name`: distil (`distill-TASK`), predict
    (`predict-TASK`) or fine-tune."""
    if name.startswith("predict-"):
        return tasks.predict
    return tasks.distill if name.startswith("distill-") else tasks.finetune


def downstream_results(
    configs: dict[str, StageConfig], outcomes: dict[str, tasks.StageOutcome]
) -> list[dict]:
    """[{task, metric, pretrained, random, steps, …}] from the fine-tuning outcomes, for the
    report."""
    from model.finetune.config import task_of  # a user's task reads its training file

    results = []
    for name, stage_config in configs.items():
        if name.endswith("-random") or name.startswith(("distill-", "predict-")):
            continue
        random_name = f"{name}-random"
        metric = task_of(stage_config).primary_metric
        distilled = outcomes.get(name.replace("finetune-", "distill-", 1))
        predicted = outcomes.get(name.replace("finetune-", "predict-", 1))
        results.append(
            {
                "task": stage_config.task,
                "metric": metric,
                "pretrained": outcomes[name].result.get("dev", {}),
                "random": outcomes[random_name].result.get("dev", {}),
                "pretrained_details": outcomes[name].result.get("details"),
                "random_details": outcomes[random_name].result.get("details"),
                "steps": stage_config.train_steps,
                "pretrained_output": name,
                "random_output": random_name,
                **({"distilled": distilled.result} if distilled else {}),
                **({"predicted": predicted.result} if predicted else {}),
            }
        )
    return results
