"""What every fine-tune writes for other tools beside `model.keras`: `OUTPUT/export/hf`, a Hugging
Face `AlbertForSequenceClassification` with its tokenizer, for the kinds that have a
`TaskKind.problem_type` (classification and regression; `transformers.pipeline(
"text-classification")` loads it). An export the model cannot take (another classifier input than
the pooled output, attention-only or FFN-only sharing) or whose library is missing is skipped with
one warning line naming the reason (`model.conversion.exports.skip_reason`)."""

from __future__ import annotations

import logging

from albert.fs import join
from albert.tokenization import AlbertTokenizer
from model.conversion.exports import skip_reason
from model.finetune.kind import TaskKind

logger = logging.getLogger(__name__)

HF_EXPORT = "export/hf"


def write_task_exports(
    directory: str, model, kind: TaskKind, tokenizer: AlbertTokenizer, max_seq_length: int
) -> dict[str, str]:
    """Write the exports of the fine-tuned `model` under `directory` (the output being
    committed); return `{"huggingface": "export/hf"}` for each written and `{"huggingface":
    "skipped: REASON"}` for each skipped (none for a kind without an export)."""
    if kind.problem_type is None:
        return {}

    def huggingface() -> None:
        from albert.tokenizer_export import write_hf_tokenizer
        from model.conversion.hf import export_huggingface_classifier

        path = join(directory, HF_EXPORT)
        export_huggingface_classifier(model, kind.spec.labels, kind.problem_type, path)
        write_hf_tokenizer(tokenizer, path, model_max_length=max_seq_length)

    reason = skip_reason(huggingface)
    if reason is None:
        return {"huggingface": HF_EXPORT}
    logger.warning("Hugging Face export skipped: %s", reason)
    return {"huggingface": f"skipped: {reason}"}
