"""The settings of segment's cleaning step (fields of SegmentConfig): language identification,
quality rules, text repair and personal-data redaction, checked when the config is built, so a bad
language code, rule name or threshold is one line and exit 2 before any work. The audit file it
writes beside segment's shards is named here too."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from albert.config import CommaList, StageConfig

AUDIT_FILE = "quality_removed.jsonl"
"""One JSON record per removed document, by key: its source, rule, measured value and bound."""
EXAMPLES_PER_RULE = 3
"""Removed documents per rule whose text stats.json and the report quote (the first by key)."""
EXCERPT_CHARS = 300
"""Characters of a removed document kept in its audit record."""
EXAMPLE_CHARS = 200
"""Characters of an example's text in stats.json and the report."""


def _threshold_items(value: Any) -> Any:
    """A YAML mapping {rule.param: value} as the flag's `rule.param=value` items."""
    if isinstance(value, dict):
        return [f"{name}={setting}" for name, setting in value.items()]
    return value


class QualityConfig(StageConfig):
    """The settings of segment's cleaning step (fields of SegmentConfig)."""

    quality: bool = Field(
        True,
        description=(
            "clean documents before de-duplication: language identification, text repair, "
            "quality rules and personal-data redaction (each switchable below)"
        ),
    )
    language: Annotated[list[str], CommaList] = Field(
        [],
        description=(
            "keep only documents in these languages (ISO 639-1 codes, e.g. en or de,fr); "
            "none: every language is kept and counted"
        ),
    )
    language_threshold: float | None = Field(
        None,
        ge=0,
        le=1,
        description="least language-ID score kept for a target language; none: each language's own",
    )
    quality_rules_off: Annotated[list[str], CommaList] = Field(
        [],
        description=(
            "rules switched off: language, boilerplate, c4_lines, c4_document, gopher_quality, "
            "gopher_repetition, fineweb, reference_model (docs/segment.md)"
        ),
    )
    quality_thresholds: Annotated[list[str], BeforeValidator(_threshold_items), CommaList] = Field(
        [],
        description="rule thresholds as rule.param=value, e.g. gopher_quality.min_doc_words=30",
    )
    pii: Literal["redact", "keep", "drop-document"] = Field(
        "redact",
        description=(
            "personal data (e-mail addresses, phone numbers, public IP addresses, card numbers): "
            "replace by placeholders, keep, or drop the documents holding any"
        ),
    )
    repair_text: bool = Field(
        True, description="repair mojibake and control characters (ftfy) before the rules"
    )
    reference_text: Annotated[list[str], CommaList] = Field(
        [],
        description=(
            "files of the team's good text (UTF-8, a paragraph a line) the reference model learns; "
            "none: the documents every check kept (their cleaned lines) (docs/segment.md)"
        ),
    )
    quality_dry_run: bool = Field(
        False,
        description=(
            "judge and audit every document (quality_removed.jsonl, stats.json) but remove "
            "nothing: every document goes on as it came"
        ),
    )

    @model_validator(mode="after")
    def _settings_valid(self):
        if self.quality:
            self.quality_settings()
        elif self.language:
            raise ValueError("language needs quality (it is switched off)")
        elif self.reference_text or self.quality_dry_run:
            raise ValueError("reference_text and quality_dry_run need quality (it is switched off)")
        return self

    def quality_settings(self):
        """The cleaning step's `QualitySettings`; ValueError (one line) for a bad setting."""
        from pipelines.quality.settings import QualitySettings

        return QualitySettings.from_options(
            languages=list(self.language),
            language_threshold=self.language_threshold,
            rules_off=list(self.quality_rules_off),
            thresholds=parse_thresholds(self.quality_thresholds),
            pii=self.pii,
            repair=self.repair_text,
        )


def parse_thresholds(items: list[str]) -> dict[str, float]:
    """{rule.param: value} of `rule.param=value` items; ValueError naming a malformed one."""
    thresholds: dict[str, float] = {}
    for item in items:
        name, equals, text = item.partition("=")
        if not equals or not name.strip():
            raise ValueError(f"quality threshold {item!r}: expected rule.param=value")
        try:
            thresholds[name.strip()] = float(text)
        except ValueError:
            raise ValueError(f"quality threshold {item!r}: {text!r} is not a number") from None
    return thresholds
