"""The run's `--downstream` steps: per task, fine-tuning of the pretrained model and of a randomly
initialised twin, with `--distill` a distilled student of the first, with `--predict` the first's
predictions on the files; each step a record of its task, its role and its config, and their
results for the report, paired by those records."""

from __future__ import annotations

from dataclasses import dataclass

from albert.config import StageConfig, build_config
from albert.fs import join
from flows.engine import tasks
from flows.pipeline.config import PretrainPipelineConfig

ROLE_STAGES = {
    "pretrained": "finetune",
    "random": "finetune",
    "distilled": "distill",
    "predicted": "predict",
}
"""A downstream step's role -> the registered stage that runs it."""


@dataclass(frozen=True)
class DownstreamStep:
    """One `--downstream` step: `task` is the TASK of `TASK=DIR`, `role` one of ROLE_STAGES
    (its key in the report's row), `config` the stage's validated config."""

    task: str
    role: str
    config: StageConfig

    @property
    def stage_task(self):
        """The flows' Prefect task that runs the step (`finetune`, `distill` or `predict`)."""
        return getattr(tasks, ROLE_STAGES[self.role])


def downstream_steps(config: PretrainPipelineConfig) -> dict[str, DownstreamStep]:
    """Per `--downstream TASK=DIR`, by step name (its run directory RUN_DIR/NAME and its Prefect
    task's name), in running order: fine-tuning of the pretrained model (finetune-TASK) and of a
    randomly initialised twin (finetune-TASK-random; same preset, budget and seed), then with
    --distill distill-TASK, with --predict predict-TASK."""
    from model.finetune import FinetuneConfig, parse_task_dir  # heavy: loads TensorFlow

    steps: dict[str, DownstreamStep] = {}
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
        for name, role, init in (
            (f"finetune-{task}", "pretrained", config.trained_model()),
            (f"finetune-{task}-random", "random", "random"),
        ):
            values = {**common, "init": init, "output": config.stage_dir(name)}
            steps[name] = DownstreamStep(task, role, build_config(FinetuneConfig, values))
        if config.distill:
            steps[f"distill-{task}"] = DownstreamStep(
                task, "distilled", distill_config(config, common, task)
            )
        if config.predict:
            steps[f"predict-{task}"] = DownstreamStep(
                task, "predicted", predict_config(config, task)
            )
    return steps


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


def downstream_results(
    steps: dict[str, DownstreamStep], outcomes: dict[str, tasks.StageOutcome]
) -> list[dict]:
    """[{task, metric, pretrained, random, steps, …, distilled?, predicted?}] per downstream task,
    for the report: each step's outcome goes to its task's row under its role."""
    from model.finetune.config import task_of  # a user's task reads its training file

    by_task: dict[str, dict[str, str]] = {}  # task -> role -> step name
    for name, step in steps.items():
        by_task.setdefault(step.task, {})[step.role] = name
    results = []
    for task, names in by_task.items():
        pretrained, random = names["pretrained"], names["random"]
        finetune = steps[pretrained].config
        extras = {
            role: outcomes[names[role]].result
            for role in ("distilled", "predicted")
            if names.get(role) in outcomes
        }
        results.append(
            {
                "task": task,
                "metric": task_of(finetune).primary_metric,
                "pretrained": outcomes[pretrained].result.get("dev", {}),
                "random": outcomes[random].result.get("dev", {}),
                "pretrained_details": outcomes[pretrained].result.get("details"),
                "random_details": outcomes[random].result.get("details"),
                "steps": finetune.train_steps,
                "pretrained_output": pretrained,
                "random_output": random,
                **extras,
            }
        )
    return results
