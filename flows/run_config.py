"""What the flows share (the pipeline, domain-adaptive, ablation and model-line flows): the run
parameters and the stage configs derived from them. Running a plan is `flows.run_plan`'s, what a
run says when it ends `flows.run_summary`'s, its baseline `flows.piece_baseline`'s and a
several-host run's other processes `flows.secondary_process`'s.

`RunConfig` holds the parameters of a run that trains on TFRecords it writes itself (run directory,
instance shape, model and training budget, per-stage overrides); `pretrain_pipeline` and
`domain_adaptive` subclass it with their own inputs and defaults.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from albert.config import CommaList, JsonDict, StageConfig, build_config
from albert.fs import join
from flows.engine.result_storage import result_storage_for
from model.evaluation.heldout_stage import HeldOutEvalConfig
from model.pretrain import PretrainConfig
from pipelines.segment.config import SegmentConfig
from pipelines.tfrecords.config import TFRecordsConfig


class RunConfig(StageConfig):
    """Parameters shared by the flows; per-stage dicts set any other field of a stage's config."""

    run_dir: str = Field(description="run directory (local or gs://); one subdirectory per stage")
    results: str | None = Field(
        None,
        description="where Prefect persists task results and cache records (default: "
        "RUN_DIR/.prefect)",
    )
    preset: str = Field("albert-tiny", description="model preset (model.network.config.get_preset)")
    max_seq_length: int = Field(
        128,
        gt=8,
        description="tokens per pretraining instance (masked-LM predictions: "
        "the reference's 20 per 128 tokens, unless --tfrecords sets max_predictions_per_seq)",
    )
    num_shards: int = Field(8, gt=1, description="TFRecord training shards")
    dupe_factor: int = Field(2, gt=0, description="times each document is masked differently")
    heldout_fraction: float = Field(
        0.1,
        ge=0,
        lt=1,
        description="fraction of documents held out whole for evaluation (stable hash of the text)",
    )
    heldout_min_documents: int = Field(8, ge=0, description="hold out at least this many documents")
    seed: int = Field(12345, description="seed of every random choice in the run")
    steps: int = Field(300, gt=0, description="pretraining steps")
    time_budget: str | None = Field(
        None,
        description="pretrain for this much wall-clock time instead of --steps (e.g. 2h, 45m): "
        "the learning rate decays to 0 at the budget (model.pretrain --time-budget)",
    )
    batch_size: int = Field(32, gt=0, description="pretraining batch size")
    learning_rate: float | None = Field(
        None, gt=0, description="peak learning rate (default: the stage's)"
    )
    eval_batches: int | None = Field(
        50, gt=0, description="held-out batches to score (none: all of them)"
    )
    input_workers: int | None = Field(
        None,
        ge=0,
        description="--input-workers of pretrain and of the --downstream fine-tunes (default: the "
        "stages')",
    )
    reference_text: Annotated[list[str], CommaList] = Field(
        [], description="segment's --reference-text: files of good text cleaning's model learns"
    )
    segment: JsonDict = Field(
        default_factory=dict, description="other SegmentConfig fields (YAML or JSON)"
    )
    tfrecords: JsonDict = Field(
        default_factory=dict, description="other TFRecordsConfig fields (YAML or JSON)"
    )
    pretrain: JsonDict = Field(
        default_factory=dict, description="other PretrainConfig fields (YAML or JSON)"
    )
    coordinator: str | None = Field(None, description="pretrain on several JAX hosts: HOST:PORT")
    num_processes: int | None = Field(None, gt=0, description="pretrain's JAX process count")
    process_id: int | None = Field(
        None,
        ge=0,
        description="pretrain's JAX process index; a process other than 0 waits for "
        "process 0's TFRecords, then only joins the pretrain stage (process 0 runs the flow)",
    )
    data_wait_seconds: float = Field(
        86400, gt=0, description="process > 0: how long to wait for process 0's finished TFRecords"
    )

    @model_validator(mode="after")
    def _steps_or_budget(self):
        if self.time_budget is not None and "steps" in self.model_fields_set:
            raise ValueError("give --steps or --time-budget, not both")
        return self

    def stage_dir(self, stage: str) -> str:
        return join(self.run_dir, stage)

    def result_storage(self) -> Any:
        return result_storage_for(self.results or join(self.run_dir, ".prefect"))

    def segment_config(self, inputs: list[str]) -> StageConfig:
        given = {"input": inputs, "output": self.stage_dir("segment")}
        given["reference_text"] = self.reference_text
        return build_config(SegmentConfig, {**given, **self.segment})

    def tfrecords_config(self, corpus: str, spm_model: str) -> StageConfig:
        """The tfrecords stage's config. Its `max_seq_length` counts as set by the user (the stage
        warns when it cuts much text) only when the user set it here or in --tfrecords, not when
        it is this flow's default."""
        config = build_config(
            TFRecordsConfig,
            {
                "input": corpus,
                "spm_model": spm_model,
                "output": self.stage_dir("tfrecords"),
                "max_seq_length": self.max_seq_length,
                "max_predictions_per_seq": max_predictions(self.max_seq_length),
                "dupe_factor": self.dupe_factor,
                "seed": self.seed,
                "num_shards": self.num_shards,
                "heldout_fraction": self.heldout_fraction,
                "heldout_min_documents": self.heldout_min_documents,
                **self.tfrecords,
            },
        )
        if "max_seq_length" not in self.model_fields_set | self.tfrecords.keys():
            config.model_fields_set.discard("max_seq_length")
        return config

    def pretrain_config(self, spm_model: str, **values: Any) -> StageConfig:
        """PretrainConfig on this run's TFRecords, the budget's schedule, `values` and the
        overrides."""
        defaults: dict[str, Any] = {
            "data": self.stage_dir("tfrecords"),
            "preset": self.preset,
            "output": self.stage_dir("pretrain"),
            "spm_model": spm_model,
            "steps": self.steps,
            "batch_size": self.batch_size,
            "seed": self.seed,
            "warmup_steps": self.steps // 10,
            "log_every": max(1, self.steps // 50),
            "eval_every": 0,
            "eval_batches": self.eval_batches or 20,
            "coordinator": self.coordinator,
            "num_processes": self.num_processes,
            "process_id": self.process_id,
        }
        if self.learning_rate is not None:
            defaults["learning_rate"] = self.learning_rate
        if self.input_workers is not None:
            defaults["input_workers"] = self.input_workers
        if self.time_budget is not None:  # the budget replaces the steps; the warmup stays
            del defaults["steps"]
            defaults["time_budget"] = self.time_budget
        return build_config(PretrainConfig, {**defaults, **values, **self.pretrain})

    def trained_model(self) -> str:
        return join(self.stage_dir("pretrain"), "export", "model.keras")

    def held_out_eval_config(self, model: str, name: str) -> StageConfig:
        """Held-out metrics of `model` on this run's TFRecords, written to RUN_DIR/`name`."""
        return build_config(
            HeldOutEvalConfig,
            {
                "model": model,
                "data": self.stage_dir("tfrecords"),
                "output": self.stage_dir(name),
                "batch_size": self.batch_size,
                "max_batches": self.eval_batches,
            },
        )


def max_predictions(max_seq_length: int) -> int:
    """Masked-LM predictions per instance at the reference's rate: 20 per 128 tokens (10 at 64,
    80 at 512)."""
    return max(1, round(max_seq_length * 20 / 128))
