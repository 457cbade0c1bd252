"""What every fine-tune writes for other tools beside `model.keras`: `OUTPUT/export/hf`, the Hugging
Face model of its kind (`TaskKind.hf_architecture`) with its tokenizer: classification,
multi-label and regression `AlbertForSequenceClassification` (`transformers.pipeline(
"text-classification")` loads it), SQuAD `AlbertForQuestionAnswering`, RACE
`AlbertForMultipleChoice`; and for a sequence classifier `OUTPUT/export/keras_hub`, a keras-hub
`AlbertTextClassifier` preset (`keras_hub.models.TextClassifier.from_preset` loads it). An export
the model cannot take (another classifier input than the pooled output, attention-only or
FFN-only sharing, for keras-hub a non-tanh GELU) or whose library is missing is skipped with one
warning line naming the reason (`model.conversion.exports.skip_reason`)."""

from __future__ import annotations

import logging

from albert.fs import join
from albert.tokenization import AlbertTokenizer
from model.conversion.exports import EXPORT_LABELS, skip_reason
from model.finetune.kind import TaskKind

logger = logging.getLogger(__name__)

HF_EXPORT = "export/hf"
KERAS_HUB_EXPORT = "export/keras_hub"


def write_task_exports(
    directory: str, model, kind: TaskKind, tokenizer: AlbertTokenizer, max_seq_length: int
) -> dict[str, str]:
    """Write the exports of the fine-tuned `model` under `directory` (the output being
    committed); return `{"huggingface": "export/hf", "keras_hub": "export/keras_hub"}` for each
    written, `"skipped: REASON"` for each skipped (none for a kind without an export)."""
    if kind.hf_architecture is None:
        return {}

    def huggingface() -> None:
        from albert.tokenizer_export import write_hf_tokenizer
        from model.conversion.hf import export_huggingface_task

        path = join(directory, HF_EXPORT)
        export_huggingface_task(
            model, kind.hf_architecture, path, kind.spec.labels, kind.problem_type
        )
        write_hf_tokenizer(tokenizer, path, model_max_length=max_seq_length)

    def keras_hub() -> None:
        from model.conversion.keras_hub import export_keras_hub_classifier

        hf_dir, path = join(directory, HF_EXPORT), join(directory, KERAS_HUB_EXPORT)
        export_keras_hub_classifier(model, hf_dir, path, tokenizer, max_seq_length)

    exports = [("huggingface", HF_EXPORT, huggingface)]
    if kind.problem_type is not None:  # a sequence classifier
        exports.append(("keras_hub", KERAS_HUB_EXPORT, keras_hub))
    written = {}
    for name, path, write in exports:
        reason = skip_reason(write)
        if reason is not None:
            logger.warning("%s export skipped: %s", EXPORT_LABELS[name], reason)
            written[name] = f"skipped: {reason}"
            if name == "huggingface":  # keras-hub's is converted from it
                break
        else:
            written[name] = path
    return written
