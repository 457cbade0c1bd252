"""The stage registry: each stage's name, module, config class, input fields and output marker.

The one place that lists the stages. The `albert` CLI (its subcommands), the Dataflow flex
template (the stages marked `dataflow`), the Prefect tasks and their caching (input fields, the
module whose code is the cache key's code version, the output marker) and the tests all read it.

The registry names modules of every layer as strings and imports one only when asked
(`stage_module`, `config_class`): importing it loads nothing of pipelines/, model/ or flows/
(tests/test_layering.py states the rule and checks it).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


@dataclass(frozen=True)
class Stage:
    """One stage.

    `module` runs it (`run(config, ...)`, and `main(argv)` for `python -m`); `config` is its config
    class, in `module` unless `config_module` names another; `input_fields` are the config fields
    that name its input files (their manifest is part of the cache key); `output_marker` is the
    file (relative to the output directory) that its finished output always contains; `summary`
    is its line in `albert --help` (None: not an `albert` subcommand); `dataflow`: it has a
    Dataflow flex template."""

    module: str
    config: str
    input_fields: tuple[str, ...]
    output_marker: str
    summary: str | None = None
    dataflow: bool = False
    config_module: str | None = None

    @property
    def command(self) -> str:
        """The module `python -m` runs: a stage package's name where `module` is its `stage`."""
        return self.module.removesuffix(".stage")


STAGES: dict[str, Stage] = {
    "segment": Stage(
        "pipelines.segment.stage",
        "SegmentConfig",
        ("input",),
        "stats.json",
        "Beam: raw Wikipedia dumps / books / text -> sentence-segmented documents",
        dataflow=True,
        config_module="pipelines.segment.config",
    ),
    "vocab": Stage(
        "pipelines.vocab.stage",
        "VocabConfig",
        ("input",),
        "spiece.model",
        "Beam: segmented corpus -> SentencePiece vocabulary (ALBERT recipe)",
        dataflow=True,
        config_module="pipelines.vocab.config",
    ),
    "tfrecords": Stage(
        "pipelines.tfrecords.stage",
        "TFRecordsConfig",
        ("input", "spm_model"),
        "metadata.json",
        "Beam: segmented corpus -> masked SOP pretraining TFRecords",
        dataflow=True,
        config_module="pipelines.tfrecords.config",
    ),
    "decontaminate": Stage(
        "pipelines.decontaminate.stage",
        "DecontaminateConfig",
        ("corpus", "eval"),
        "contamination.json",
        "Beam: segmented corpus + evaluation sets -> n-gram overlaps (--remove: clean corpus)",
    ),
    "select": Stage(
        "pipelines.select.stage",
        "DomainSelectConfig",
        ("input", "target_samples", "source_samples", "classifier", "spm_model"),
        "selection.json",
    ),
    "pretrain": Stage(
        "model.pretrain",
        "PretrainConfig",
        ("data", "init"),
        "export/model.keras",
        "Keras: pretrain ALBERT from TFRecords (LAMB, checkpoints, resume)",
    ),
    "finetune": Stage(
        "flows.finetune",
        "FinetuneConfig",
        ("init", "spm_model", "data_dir"),
        "results.json",
        "Keras: fine-tune on GLUE / SQuAD / RACE (further pretraining first, if asked)",
        config_module="model.finetune",
    ),
    "distill": Stage(
        "model.distill",
        "DistillConfig",
        ("teacher", "init", "spm_model", "data_dir"),
        "results.json",
        "Keras: distil a fine-tuned model into a smaller student on its task (soft targets)",
    ),
    "predict": Stage(
        "flows.predict",
        "PredictConfig",
        ("model", "input"),
        "predict.json",
        "Beam: a fine-tuned model's predictions on CSV / TSV / JSONL / text files (RunInference)",
        dataflow=True,
        config_module="pipelines.predict.config",
    ),
    "heldout": Stage(
        "model.evaluation.heldout",
        "HeldOutEvalConfig",
        ("model", "data"),
        "metrics.json",
        config_module="flows.engine.tasks",
    ),
    "replay": Stage(
        "flows.line.replay",
        "ReplayConfig",
        ("data", "domain_shards", "general_shards", "heldout"),
        "mix.json",
    ),
}
"""Stage name (the Prefect task's name) -> Stage."""

OTHER_COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("model.evaluation.evaluate", "score predictions or a model"),
    "run": (
        "flows.pipeline.flow",
        "Prefect: the end-to-end flow segment -> vocab -> tfrecords -> pretrain -> heldout",
    ),
    "ablate": (
        "flows.ablation.flow",
        (
            "Prefect: the paper's ablation tables (objective, sharing, E) over a grid of "
            "pretraining runs"
        ),
    ),
    "deploy": (
        "flows.deploy",
        "Prefect: apply prefect.yaml's deployments (run, domain-adaptive, ablation, model line)",
    ),
    "runs": ("albert.runs", "runs gc RUN_DIR: list outputs runs moved aside (--yes removes them)"),
    "line": (
        "flows.line.cli",
        (
            "line show|check|prune LINE: a model line's versions, its integrity; prune what is "
            "outside current's lineage"
        ),
    ),
}
"""The `albert` subcommands that are not stages: subcommand -> (module with main(argv), summary)."""

COMMANDS: dict[str, tuple[str, str]] = {
    **{name: (s.module, s.summary) for name, s in STAGES.items() if s.summary is not None},
    **OTHER_COMMANDS,
}
"""Every `albert` subcommand in `albert --help` order: name -> (module with main(argv), summary)."""

DATAFLOW_STAGES: tuple[str, ...] = tuple(name for name, s in STAGES.items() if s.dataflow)
"""The Beam stages that run on Dataflow through the flex template."""


def stage_module(name: str) -> ModuleType:
    """The module that runs stage `name` (imported now: stage modules load Beam or TensorFlow)."""
    return importlib.import_module(STAGES[name].module)


def config_class(name: str) -> type:
    """The config class of stage `name`."""
    stage = STAGES[name]
    return getattr(importlib.import_module(stage.config_module or stage.module), stage.config)


def forward_to_stage(package: str, init_file: str):
    """A stage package's `__getattr__`: `pipelines.segment.run` (and every other name of the stage
    module, `PACKAGE.stage`), loaded when first asked for; the package's own modules are imported as
    usual, so importing `PACKAGE.config` loads no Beam."""
    folder = Path(init_file).parent

    def __getattr__(attribute: str):
        if attribute.startswith("_") or (folder / f"{attribute}.py").exists():
            raise AttributeError(f"module {package!r} has no attribute {attribute!r}")
        return getattr(importlib.import_module(f"{package}.stage"), attribute)

    return __getattr__
