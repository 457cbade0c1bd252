"""The stage registry: each stage's name, module, config class, input fields and output marker.

The one place that lists the stages. The `albert` CLI (its subcommands, albert.cli), the Dataflow
flex template (the stages marked `dataflow`), the Prefect tasks and their caching (input fields,
the module whose code is the cache key's code version, the output marker) and the tests all read
it.

A stage's module is the stage's own, in pipelines/ or model/; the flows wrap stages (a flows
module that joins two layers, as `albert finetune`'s further pretraining and `albert predict`'s
pipeline with its model do, is the command albert.cli runs, never a stage's module). The registry
names those modules as strings and imports one only when asked (`stage_module`, `config_class`):
importing it loads nothing of pipelines/ or model/ (tests/test_layering.py states the rules and
checks them).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


@dataclass(frozen=True)
class Stage:
    """One stage.

    `module` is the stage's own module in pipelines/ or model/: it runs the stage (`run(config,
    ...)`, and `main(argv)` for `python -m`; the predict stage's is its Beam pipeline, which
    `albert predict`, flows.predict, hands a model) and its code is the cache key's code
    version; `config` is its config class, in `module` unless `config_module` names another;
    `input_fields` are the config fields that name its input files (their manifest is part of
    the cache key); `output_marker` is the file (relative to the output directory) that its
    finished output always contains; `summary` is its line in `albert --help` (None: not an
    `albert` subcommand); `dataflow`: it has a Dataflow flex template."""

    module: str
    config: str
    input_fields: tuple[str, ...]
    output_marker: str
    summary: str | None = None
    dataflow: bool = False
    config_module: str | None = None


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
        "model.finetune",
        "FinetuneConfig",
        ("init", "spm_model", "data_dir"),
        "results.json",
        "Keras: fine-tune on GLUE / SQuAD / RACE (further pretraining first, if asked)",
    ),
    "distill": Stage(
        "model.distill",
        "DistillConfig",
        ("teacher", "init", "spm_model", "data_dir"),
        "results.json",
        "Keras: distil a fine-tuned model into a smaller student on its task (soft targets)",
    ),
    "predict": Stage(
        "pipelines.predict.stage",
        "PredictConfig",
        ("model", "input"),
        "predict.json",
        "Beam: a fine-tuned model's predictions on CSV / TSV / JSONL / text files (RunInference)",
        dataflow=True,
        config_module="pipelines.predict.config",
    ),
    "heldout": Stage(
        "model.evaluation.heldout_stage",
        "HeldOutEvalConfig",
        ("model", "data"),
        "metrics.json",
    ),
    "replay": Stage(
        "model.input.replay",
        "ReplayConfig",
        ("data", "domain_shards", "general_shards", "heldout"),
        "mix.json",
    ),
}
"""Stage name (the Prefect task's name) -> Stage."""

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
