"""`model.pretrain`'s settings (PretrainConfig) and the Keras dtype policy of each precision."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from albert.config import JsonDict, StageConfig
from model.input.packing import DEFAULT_INSTANCES
from model.pretrain.time_budget import parse_duration
from model.runtime.distribute import HEARTBEAT_TIMEOUT_SECONDS

PRECISION_POLICIES = {
    "float32": "float32",
    "bfloat16": "mixed_bfloat16",
    "float16": "mixed_float16",
}


class PretrainConfig(StageConfig):
    """`model.pretrain` settings; defaults are the paper's (batch 4096, lr 0.00176, 125k steps)."""

    data: str = Field(
        ...,
        description="directory of TFRecord shards with metadata.json (local or gs://), or a glob",
    )
    output: str = Field(
        ..., description="run directory: checkpoints/, metrics.jsonl, tensorboard/, export/"
    )
    preset: str = Field(
        "albert-base",
        description="model preset (model.network.config), e.g. albert-tiny, albert-base",
    )
    architecture: JsonDict = Field(
        default_factory=dict,
        description='AlbertConfig fields over the preset, e.g. {"sharing": "ffn", '
        '"embedding_size": 64}',
    )
    vocab_size: int | None = Field(
        None, gt=0, description="vocabulary size; default from the data's metadata.json"
    )
    spm_model: str | None = Field(
        None, description="SentencePiece model; its hash must match the data's"
    )
    steps: int = Field(125_000, gt=0, description="training steps (optimizer updates)")
    time_budget: str | None = Field(
        None,
        description="train for this much wall-clock time instead of --steps (e.g. 2h, 45m, 90s): "
        "warmup, then decay to 0 at the budget, where the run stops",
    )
    batch_size: int = Field(4096, gt=0, description="global batch size (sequences per update)")
    learning_rate: float = Field(0.00176, gt=0, description="peak learning rate")
    warmup_steps: int = Field(3125, ge=0, description="linear warmup steps")
    decay_power: float = Field(
        1.0, gt=0, description="polynomial decay power (1 = linear) to 0 at --steps"
    )
    optimizer: Literal["lamb", "adamw"] = Field("lamb", description="the paper's LAMB, or AdamW")
    weight_decay: float = Field(0.01, ge=0, description="weight decay (not on LayerNorm or bias)")
    clipnorm: float = Field(1.0, ge=0, description="global-norm gradient clipping (0 = off)")
    gradient_accumulation: int = Field(
        1, gt=0, description="micro-batches per update (batch-size / this each)"
    )
    precision: Literal["float32", "bfloat16", "float16"] = Field(
        "float32", description="float16 uses loss scaling"
    )
    jit_compile: bool | None = Field(
        None,
        description="XLA-compile the training step (default: on with a GPU/TPU, off on CPU, where "
        "it pays off only at batch 32+)",
    )
    init: str | None = Field(
        None, description="weights only: a checkpoint dir, .keras, HF dir or TF1 checkpoint"
    )
    masking: Literal["auto", "static", "dynamic"] = Field(
        "auto", description="auto = as metadata.json says"
    )
    check_data: bool = Field(
        True, description="scan every shard first: TFRecord framing, CRCs, ids < vocab_size"
    )
    seed: int = Field(12345, description="seeds initialisation, shuffling and dynamic masking")
    shuffle_buffer: int = Field(
        10_000, gt=0, description="records in each window of the window shuffle"
    )
    input: Literal["auto", "tf.data", "grain"] = Field(
        "auto",
        description="training input: auto = Grain on the JAX backend (no TensorFlow), tf.data on "
        "TensorFlow; "
        "both give the same batches",
    )
    input_workers: int | None = Field(
        None,
        ge=0,
        description="processes (Grain) or threads (tf.data) that decode and mask the batches; "
        "0 = a thread of the training process; default: with an accelerator, on Grain as many as "
        "the measured step needs (none while one thread keeps up; model.runtime.cores), on "
        "tf.data every core; 0 on CPU. The batches are the same for any number",
    )
    packing: Literal["auto", "on", "off"] = Field(
        "auto",
        description="on: batches of rows that each pack up to --packing-instances training "
        "instances one after another (model.input.packing: attention, positions, token types, "
        "[CLS] and masked-LM positions per instance, the same losses and gradients as unpacked; "
        "one compiled shape, no length buckets); auto = on with a GPU/TPU unless --length-buckets "
        "asks for buckets, off on CPU; a resumed run keeps its own",
    )
    packing_instances: int | None = Field(
        None,
        ge=1,
        description="--packing on: the most instances in one row (K); default "
        f"{DEFAULT_INSTANCES} (model.input.packing), a resumed run's own",
    )
    length_buckets: int | None = Field(
        None,
        ge=0,
        description="k > 0: batches of records of one of k length bins, cut to the bin's longest "
        "length (less padding, one compilation of the step per bin; Grain input); 0 = every batch "
        "at the data's max_seq_length; default: on a GPU/TPU with padded data, k from the padding "
        "measured on the first records (model.input.length_buckets), else 0; a resumed run keeps "
        "its own",
    )
    objective: Literal["mlm", "rtd"] = Field(
        "mlm",
        description="mlm = masked-LM; rtd = ELECTRA's replaced-token detection: a generator "
        "ALBERT proposes the masked tokens, this model (the discriminator) tells every token's "
        "origin (model.network.electra); the sentence objective is the data's either way",
    )
    generator_hidden_fraction: float = Field(
        0.25,
        gt=0,
        description="--objective rtd: the generator's hidden size as a fraction of the "
        "discriminator's (at most 1; heads and feed-forward size scale with it)",
    )
    rtd_weight: float = Field(
        50.0, gt=0, description="--objective rtd: lambda, the replaced-token loss's weight"
    )
    log_every: int = Field(100, gt=0, description="steps between training-metric records")
    eval_every: int = Field(
        1000, ge=0, description="steps between held-out evaluations (0 = only at the end)"
    )
    eval_batches: int = Field(20, gt=0, description="held-out batches per evaluation")
    eval_batch_size: int | None = Field(
        None, gt=0, description="held-out batch size (default: batch-size, ≤ 256)"
    )
    checkpoint_every: int = Field(1000, gt=0, description="steps between checkpoints")
    keep_checkpoints: int = Field(3, gt=0, description="checkpoints kept (the newest)")
    resume: bool = Field(
        True, description="continue from the newest checkpoint in OUTPUT/checkpoints"
    )
    tpu: str | None = Field(None, description="TPU name or 'local' (TensorFlow backend)")
    coordinator: str | None = Field(
        None,
        description="JAX on several hosts: process 0's HOST:PORT, with --num-processes "
        "and --process-id (none of the three where TF_CONFIG or JAX's cluster "
        "detection describes the job: Vertex AI, SLURM, Open MPI, Cloud TPU)",
    )
    num_processes: int | None = Field(
        None, gt=0, description="JAX on several hosts: the number of processes"
    )
    process_id: int | None = Field(
        None, ge=0, description="JAX on several hosts: this process's index (0 writes)"
    )
    heartbeat_timeout: int = Field(
        HEARTBEAT_TIMEOUT_SECONDS,
        gt=0,
        description="JAX on several hosts: seconds after which a silent process counts as dead "
        "and the others stop, naming it",
    )
    export: bool = Field(
        True,
        description="export OUTPUT/export/model.keras, export/hf and export/keras_hub at the end",
    )
    data_license: str | None = Field(
        None, description="licence of the training text, for the model card"
    )
    progress: bool = Field(True, description="show a progress bar with steps/s and ETA")

    @field_validator("time_budget")
    @classmethod
    def _parse_time_budget(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    def ignored_settings(self) -> list[str]:
        """The flags given that this run ignores: the RTD settings of an mlm run (the flows give
        one `--pretrain` to the mlm and rtd cells of an ablation alike, so they are not refused);
        `model.pretrain.run` names them in a warning."""
        if self.objective == "rtd":
            return []
        given = {"generator_hidden_fraction", "rtd_weight"} & self.model_fields_set
        return ["--" + name.replace("_", "-") for name in sorted(given)]

    @field_validator("generator_hidden_fraction")
    @classmethod
    def _generator_not_larger(cls, value: float) -> float:
        if value > 1:
            raise ValueError(
                f"{value} makes the generator larger than the discriminator; ELECTRA's works "
                "best at 1/4 to 1/2 (at most 1)"
            )
        return value

    @model_validator(mode="after")
    def _steps_or_budget(self):
        if self.time_budget is not None and "steps" in self.model_fields_set:
            raise ValueError("give --steps or --time-budget, not both")
        return self

    @model_validator(mode="after")
    def _packing_or_buckets(self):
        """--packing on with --length-buckets, refused before any work (packed rows have one
        shape; `model.pretrain.loop.with_length_buckets` refuses a resumed run's packing with
        them)."""
        if self.packing == "on" and self.length_buckets:
            raise ValueError(
                f"--packing on with --length-buckets {self.length_buckets}: packed rows have one "
                "shape; give one of them"
            )
        return self

    @property
    def budget_seconds(self) -> float | None:
        """--time-budget in seconds (None: the run trains for --steps)."""
        return parse_duration(self.time_budget) if self.time_budget is not None else None
