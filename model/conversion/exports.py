"""The exports at the end of pretraining: a Hugging Face directory (weights, fast tokenizer, model
card) and a keras-hub preset, next to `model.keras`.

    export/hf/         config.json, model.safetensors, spiece.model, tokenizer.json,
                       tokenizer_config.json, special_tokens_map.json, README.md (the model card)
    export/keras_hub/  a keras-hub preset (backbone, tokenizer, classifier preprocessor)

A model an export cannot represent (attention-only or FFN-only sharing; for keras-hub also a
non-tanh GELU), or an export whose library is not installed (safetensors and tokenizers for Hugging
Face, keras-hub too for keras-hub: an install from the GPU kit's wheelhouse may lack them), skips
that export with one warning line naming the reason; `model.keras` always stands.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from albert.fs import join, open_file
from albert.tokenization import AlbertTokenizer
from albert.vocabulary_record import REFERENCE, Preprocessing
from model.checkpoints.weights import ConversionError
from model.network.config import AlbertConfig, parameter_counts

logger = logging.getLogger(__name__)

RUN_FIELDS = (
    "preset",
    "steps",
    "time_budget",
    "batch_size",
    "learning_rate",
    "warmup_steps",
    "decay_power",
    "optimizer",
    "weight_decay",
    "clipnorm",
    "gradient_accumulation",
    "precision",
    "seed",
    "masking",
    "eval_batches",
)
COUNT_FIELDS = ("documents", "sentences", "tokens", "instances")


GENERATORS = " (the generator's)"
"""The mark of an RTD run's masked-LM figures in the card: the generator's, not the model's."""


def _yaml_value(value: Any) -> str:
    return json.dumps(value)  # JSON scalars and lists are YAML


def model_card(
    model_config: AlbertConfig,
    run: dict[str, Any],
    data: dict[str, Any],
    heldout: dict[str, float],
    preprocessing: Preprocessing = REFERENCE,
    data_license: str | None = None,
) -> str:
    """A Hugging Face model card (README.md with YAML metadata) for a pretrained model.

    `run`: the pretraining settings (`PretrainConfig` fields, see RUN_FIELDS, plus `data`);
    `data`: the TFRecords' metadata.json (counts, options, files); `heldout`: the final held-out
    metrics of `model.pretrain`; `preprocessing`: the vocabulary's record (its language, case,
    accents and normalization), stated as it is."""
    counts = data.get("counts", {})
    options = data.get("options", {})
    parameters = parameter_counts(model_config)
    language = {"language": [preprocessing.language]} if preprocessing.language else {}
    rtd = run.get("objective") == "rtd"  # the discriminator: its masked-LM figures the generator's
    own = {k: v for k, v in heldout.items() if not (rtd and k.startswith("masked_lm"))}
    metadata = {
        **language,
        "library_name": "transformers",
        "pipeline_tag": "feature-extraction" if rtd else "fill-mask",
        "tags": [
            "albert",
            "pretraining",
            "replaced-token-detection" if rtd else "masked-lm",
            "sentence-order-prediction",
            "keras",
        ],
        "license": "apache-2.0",
    }
    heads = (
        "the weights (the sentence-order head included)"
        if rtd
        else "the `AlbertForPreTraining` weights (masked-LM and sentence-order heads included)"
    )
    yaml = "\n".join(f"{key}: {_yaml_value(value)}" for key, value in metadata.items())
    training = {name: run[name] for name in RUN_FIELDS if name in run}
    preset = run.get("preset", "custom")
    intro = (
        "An ALBERT model pretrained from raw text with this project's pipeline: Beam stages "
        "`pipelines.segment` -> `pipelines.vocab` -> `pipelines.tfrecords`, then "
        f"`model.pretrain` (Keras 3). The export holds {heads}, the SentencePiece vocabulary "
        "and a fast tokenizer that reproduces the tokenization the model was trained with."
    )
    if rtd:
        intro += (
            " It is the discriminator of an ELECTRA-style run (`--objective rtd`): it has no "
            "masked-LM head (the run's was never trained) and the held-out masked-LM metrics are "
            "the generator's (export/generator/model.keras); load it as `AlbertModel` or fine-tune "
            "it."
        )
    length = (
        f"--time-budget {run['time_budget']}"
        if run.get("time_budget")
        else f"--steps {run.get('steps')}"
    )
    command = (
        f"python -m model.pretrain --data {run.get('data')} --preset {preset} "
        f"{length} --batch-size {run.get('batch_size')}{' --objective rtd' if rtd else ''}"
    )
    records = (
        f"- TFRecords: `{run.get('data')}`, {len(data.get('files', []))} files, "
        f"max_seq_length {data.get('max_seq_length')}, masking {data.get('masking')}, "
        f"sentence-pair task {data.get('objective', 'sop')}"
    )
    licence = data_license or "not recorded by the pipeline; state it before publishing this model"
    reference = (
        " as google-research/albert does"
        if preprocessing.lowercase and preprocessing.strip_accents
        else ""
    )
    vocabulary = (
        f"SentencePiece unigram, {model_config.vocab_size:,} pieces (`spiece.model`), "
        f"language {preprocessing.language or 'not recorded'}: text "
        f"{preprocessing.describe()}{reference} (the record `spiece.json`). `tokenizer.json` is "
        "the same tokenizer for `AutoTokenizer.from_pretrained`; see the project's "
        "docs/vocab.md for the rare inputs where it differs."
    )
    size = (
        f"{parameters['pretraining']:,} parameters with the heads "
        f"({parameters['backbone']:,} in the backbone)."
    )
    metrics_note = (
        "Measured by `model.pretrain` at the last step on held-out TFRecords (documents "
        "the model never trained on)."
    )
    dataset = _yaml_value(options.get("input") or run.get("data"))
    architecture = "AlbertModel" if rtd else "AlbertForPreTraining"
    task = (
        "held-out replaced tokens and sentence order"
        if rtd
        else "held-out masked LM and sentence order"
    )
    lines = [
        "---",
        yaml,
        "model-index:",
        f"- name: {_yaml_value('albert-' + str(preset))}",
        "  results:",
        f"  - task: {{type: {metadata['pipeline_tag']}, name: {task}}}",
        f"    dataset: {{type: text, name: {dataset}}}",
        "    metrics:",
        *[
            f"    - {{type: {name}, value: {float(value):.6g}, name: held-out {name}}}"
            for name, value in sorted(own.items())
        ],
        "---",
        "",
        f"# ALBERT ({preset}) pretrained with albert-pretraining",
        "",
        intro,
        "",
        "## How it was produced",
        "",
        "```bash",
        command,
        "```",
        "",
        "| setting | value |",
        "|---|---|",
        *[f"| {name} | {value} |" for name, value in training.items()],
        "",
        "## Training data",
        "",
        records,
        f"- Segmented corpus: `{options.get('input')}`",
        *[f"- {name}: {counts[name]:,}" for name in COUNT_FIELDS if name in counts],
        f"- Licence of the training text: {licence}",
        "",
        "## Vocabulary",
        "",
        vocabulary,
        "",
        "## Architecture",
        "",
        size,
        "",
        "| parameter | value |",
        "|---|---|",
        *[f"| {name} | {value} |" for name, value in model_config.model_dump().items()],
        "",
        "## Held-out metrics",
        "",
        metrics_note,
        "",
        "| metric | value |",
        "|---|---|",
        *[
            f"| {name}{'' if name in own else GENERATORS} | {float(value):.4f} |"
            for name, value in sorted(heldout.items())
        ],
        "",
        "## Use",
        "",
        "```python",
        f"from transformers import {architecture}, AutoTokenizer",
        "tokenizer = AutoTokenizer.from_pretrained(path)",
        f"model = {architecture}.from_pretrained(path)",
        "```",
        "",
    ]
    return "\n".join(lines)


def write_exports(
    model,
    export_dir: str,
    run: dict[str, Any],
    data: dict[str, Any],
    heldout: dict[str, float],
    spm_model: str | None,
    data_license: str | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """Write `export_dir/hf` and `export_dir/keras_hub` (see the module doc); return the names
    written ({"huggingface": "hf", "keras_hub": "keras_hub"} when both are) and the reason of each
    export skipped.

    `export_dir` is the (temporary) directory `model.pretrain` commits atomically.
    """
    tokenizer = AlbertTokenizer(spm_model) if spm_model else None
    preprocessing = tokenizer.preprocessing if tokenizer else data_preprocessing(data)
    written, skipped = {}, {}

    def huggingface() -> None:
        # optional libraries (safetensors, tokenizers): skipped without them
        from albert.tokenizer_export import write_hf_tokenizer
        from model.conversion.hf import export_huggingface

        hf_dir = join(export_dir, "hf")
        export_huggingface(model, hf_dir, masked_lm=run.get("objective") != "rtd")
        if tokenizer:
            write_hf_tokenizer(
                tokenizer, hf_dir, model_max_length=model.config.max_position_embeddings
            )
        with open_file(join(hf_dir, "README.md"), "w") as handle:
            handle.write(model_card(model.config, run, data, heldout, preprocessing, data_license))

    def keras_hub() -> None:
        # optional libraries (keras-hub, safetensors, tokenizers): skipped without them
        from model.conversion.keras_hub import export_keras_hub

        export_keras_hub(model, join(export_dir, "keras_hub"), spm_model)

    for kind, name, write in (
        ("huggingface", "hf", huggingface),
        ("keras_hub", "keras_hub", keras_hub),
    ):
        reason = skip_reason(write)
        if reason is None:
            written[kind] = name
        else:
            logger.warning("%s export skipped: %s", EXPORT_LABELS[kind], reason)
            skipped[kind] = reason
    return written, skipped


def data_preprocessing(data: dict[str, Any]) -> Preprocessing:
    """The vocabulary's preprocessing as the TFRecords' metadata.json states it (its
    `preprocessing`; data older than it: `do_lower_case`, accents stripped)."""
    if isinstance(data.get("preprocessing"), dict):
        return Preprocessing(**data["preprocessing"])
    return Preprocessing(lowercase=data.get("do_lower_case", True))


EXPORT_LABELS = {"huggingface": "Hugging Face", "keras_hub": "keras-hub"}
OUR_PACKAGES = ("albert", "pipelines", "model")  # the layers this module may import


def skip_reason(write: Callable[[], None]) -> str | None:
    """Run one export; None when it was written, else why it was skipped: the model is one it cannot
    represent (ConversionError), or a library it needs is not installed. A module of ours missing is
    a bug, raised."""
    try:
        write()
    except ConversionError as error:
        return str(error)
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] in OUR_PACKAGES:
            raise
        return f"it needs the module {error.name}, which is not installed here"
    return None
