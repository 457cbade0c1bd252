"""One document through the cleaning step, in order: language identification of the whole text
(with target languages: a document in another language is removed as language.not_target, one in
a target language scored under its threshold is marked language.low_score, each with its score and
the bound of the language found, and paragraphs confidently in another, non-target language are
dropped), line cleaning (boilerplate.clean_lines: nothing left removes the document), the document
rules (Gopher repetition, Gopher quality, C4, FineWeb: the first failing check removes it) and
personal data (redacted, kept, or a document holding any removed). A document quoting listings
(commands, configuration, program output: listing.is_listing) is identified on its prose lines
where the whole text is not confidently a target language and they are. Words are split once per
document and shared by the rules. Counts go through `inc`: quality_removed_<rule.param> per
removal, quality_lines_<rule> per line rule, language_<code> per document, pii_<kind> per redaction.

The document checks of OVERRIDABLE are facts about web pages that real prose of other kinds fails
(formulaic scripture and law repeat n-grams, manuals quote code and repeat lines, a section has
fewer than 50 words): a document whose first failing check is one of them, and that fails no other
check, is a candidate (`Cleaned.overridable`) that the reference model judges (`reconsider`):
kept where it scores as like the reference, counted as quality_kept_reference_<rule.param>. So is
a document in a target language scored under its threshold (LOW_SCORE: all-caps licence clauses,
short sections of commands) that fails no other check but OVERRIDABLE's. A document identified as
another language, line cleaning, the checks not listed (repeated lines and paragraphs,
lorem ipsum, stop words, mean word length, ellipses, line breaks, the most frequent 2-gram) and
personal data stay absolute, and so does mojibake repair, which comes before."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pipelines.quality import boilerplate, c4, fineweb, gopher, listing, pii, words
from pipelines.quality.reference import ReferenceModel
from pipelines.quality.settings import QualitySettings, Removal

__all__ = [
    "LONG_FORM_FORMATS",
    "OVERRIDABLE",
    "Cleaned",
    "Removal",
    "clean_document",
    "confident",
    "foreign_paragraphs",
    "reconsider",
]

Identify = Callable[[str], tuple[str, float]]
Inc = Callable[[str, int], None]
UNKNOWN = "unknown"
LONG_FORM_FORMATS = frozenset({"books"})
"""Input formats whose documents are books or their chapters (input_formats' "books" and
"chapters" files both give "books" documents), long or short as their authors chose: Gopher's
word-count bounds are a web page's, not applied to them."""
REFERENCE = "reference_model"
LOW_SCORE = "language.low_score"
"""A document whose language is a target but scores under its threshold: a candidate for the
reference model where no absolute check fails (a document identified as another language is
removed, whatever the model says)."""
OVERRIDABLE: dict[str, float] = {
    **{f"gopher_repetition.top_{n}_gram": 1.0 for n in (3, 4)},
    **{f"gopher_repetition.dup_{n}_gram": 1.0 for n in range(5, 11)},
    "gopher_quality.min_doc_words": 0.0,
    "gopher_quality.max_symbol_word_ratio": 1000.0,
    "gopher_quality.max_bullet_lines_ratio": 1.0,
    "gopher_quality.min_alpha_words_ratio": 0.0,
    "c4_document.max_curly_bracket_lines_ratio": 1.0,
    "c4_document.min_num_sentences": 0.0,
    "fineweb.line_punct_thr": 0.0,
    "fineweb.short_line_thr": 1.0,
    "fineweb.char_duplicates_ratio": 1.0,
}
"""The document checks (`rule.param`) the reference model may override, each with the bound that
switches it off (the other checks are judged with these bounds: `absolute_removal`)."""


@dataclass(frozen=True)
class Cleaned:
    """A document after the cleaning step: its paragraphs (cleaned and redacted; the input's, if
    removed), language and score, why it was removed (None: kept), lines removed per line rule,
    personal data found per kind."""

    paragraphs: tuple[str, ...]
    language: str
    language_score: float
    removal: Removal | None = None
    lines_removed: dict[str, int] = field(default_factory=dict)
    pii: dict[str, int] = field(default_factory=dict)
    overridable: bool = False
    """`removal` is an OVERRIDABLE check's or LOW_SCORE and no other check fails: `paragraphs` are
    the document as kept if the reference model keeps it (`reconsider`)."""
    reference: tuple[float, float] | None = None
    """(the reference model's score, its bound) of a candidate it judged."""
    kept_by_reference: bool = False
    """The reference model kept this document, which `removal` would remove."""

    @property
    def removed(self) -> bool:
        """Whether the document is removed: by a check, and not kept by the reference model."""
        return self.removal is not None and not self.kept_by_reference


def foreign_paragraphs(
    paragraphs: Sequence[str], settings: QualitySettings, identify: Identify
) -> list[bool]:
    """Which paragraphs are in another language than the targets: those of at least
    `language.min_paragraph_chars` characters identified as a non-target language with at least
    `language.paragraph_threshold`; a shorter one follows its nearest judged neighbours (foreign
    only if every one it has is), and with none the document (not foreign)."""
    judged: list[bool | None] = []
    for paragraph in paragraphs:
        if len(paragraph) < settings.threshold("language", "min_paragraph_chars", UNKNOWN):
            judged.append(None)
            continue
        code, score = identify(paragraph)
        judged.append(
            code not in settings.languages
            and code != UNKNOWN
            and score >= settings.threshold("language", "paragraph_threshold", code)
        )
    before = _nearest(judged)
    after = _nearest(judged[::-1])[::-1]
    return [
        verdict
        if verdict is not None
        else (b is not None or a is not None) and b is not False and a is not False
        for verdict, b, a in zip(judged, before, after, strict=True)
    ]


def _nearest(judged: list[bool | None]) -> list[bool | None]:
    """The last verdict at or before each position (None: none yet)."""
    last: bool | None = None
    nearest = []
    for verdict in judged:
        if verdict is not None:
            last = verdict
        nearest.append(last)
    return nearest


def _prose_language(
    paragraphs: tuple[str, ...],
    code: str,
    score: float,
    settings: QualitySettings,
    identify: Identify,
) -> tuple[str, float]:
    """The language of a document with listing lines (listing.is_listing) and prose lines: its
    prose lines' where those are in a target language that the whole document is not, or scores
    higher; else (`code`, `score`), the whole document's."""
    if code in settings.languages and score >= settings.threshold("language", "threshold", code):
        return code, score
    prose = listing.prose_lines(paragraphs)
    if not prose or len(prose) == len(paragraphs):
        return code, score
    prose_code, prose_score = identify(" ".join(prose))
    if prose_code in settings.languages and (code != prose_code or prose_score > score):
        return prose_code, prose_score
    return code, score


def _language(
    paragraphs: tuple[str, ...], settings: QualitySettings, identify: Identify, inc: Inc
) -> tuple[str, float, tuple[str, ...], Removal | None]:
    """(language, score, paragraphs left, removal) of the language rule: a document in a target
    language scoring under its threshold gets the removal LOW_SCORE and, where the reference model
    is on (it may override it), its paragraphs in another language dropped like any other's."""
    if not settings.enabled("language"):
        return UNKNOWN, 0.0, paragraphs, None
    code, score = identify(" ".join(paragraphs))
    inc(f"language_{code}", 1)
    if not settings.languages:
        return code, score, paragraphs, None
    code, score = _prose_language(paragraphs, code, score, settings, identify)
    least = settings.threshold("language", "threshold", code)
    if code not in settings.languages:
        return code, score, paragraphs, Removal("language.not_target", score, least)
    low = Removal(LOW_SCORE, score, least) if score < least else None
    if low and not settings.enabled(REFERENCE):
        return code, score, paragraphs, low
    foreign = foreign_paragraphs(paragraphs, settings, identify)
    if not any(foreign):
        return code, score, paragraphs, low
    if all(foreign):
        return code, score, paragraphs, Removal("language.not_target", score, least)
    inc("quality_lines_language", sum(foreign))
    kept = tuple(p for p, other in zip(paragraphs, foreign, strict=True) if not other)
    return code, score, kept, low


def document_removal(
    lines: tuple[str, ...], settings: QualitySettings, language: str, *, long_form: bool = False
) -> Removal | None:
    """The first failing check of the document rules that are on (Gopher repetition, Gopher
    quality, C4, FineWeb) on a document's cleaned lines, or None."""
    split = words.split_words("\n".join(lines), language)
    checks = (
        ("gopher_repetition", lambda: gopher.repetition(lines, split, settings, language)),
        (
            "gopher_quality",
            lambda: gopher.quality(
                lines, split, words.stop_words(language), settings, language, long_form=long_form
            ),
        ),
        ("c4_document", lambda: c4.document(lines, split, settings, language)),
        ("fineweb", lambda: fineweb.check(lines, split, settings, language)),
    )
    for rule, check in checks:
        if settings.enabled(rule) and (removal := check()):
            return removal
    return None


@functools.lru_cache(maxsize=16)
def _relaxed(settings: QualitySettings) -> QualitySettings:
    """`settings` with the OVERRIDABLE checks switched off."""
    values = {**dict(settings.thresholds), **OVERRIDABLE}
    return dataclasses.replace(settings, thresholds=tuple(sorted(values.items())))


def absolute_removal(
    lines: tuple[str, ...], settings: QualitySettings, language: str, *, long_form: bool = False
) -> tuple[Removal | None, bool]:
    """(the first failing document check, whether the reference model may override it: it is
    OVERRIDABLE, no other check fails and the model is on); the first failing other check, if
    any, is the removal."""
    removal = document_removal(lines, settings, language, long_form=long_form)
    if removal is None or removal.rule not in OVERRIDABLE or not settings.enabled(REFERENCE):
        return removal, False
    other = document_removal(lines, _relaxed(settings), language, long_form=long_form)
    return (other, False) if other else (removal, True)


def confident(cleaned: Cleaned) -> bool:
    """Whether a document was kept with no check failing (its cleaned lines: the default
    reference; line cleaning's removals are normal in manuals, whose code lines go)."""
    return cleaned.removal is None


def reconsider(cleaned: Cleaned, model: ReferenceModel, settings: QualitySettings) -> Cleaned:
    """A candidate (`cleaned.overridable`) judged by the reference model on its prose lines
    (all of its lines where every one is a listing line: listing.prose_lines), with its score and
    bound: kept (`kept_by_reference`) where the score reaches reference_model.min_score and the
    model has reference_model.min_reference_words words, else removed."""
    bound = settings.threshold(REFERENCE, "min_score", cleaned.language)
    score = round(model.score(listing.prose_lines(cleaned.paragraphs) or cleaned.paragraphs), 6)
    enough = model.total >= settings.threshold(REFERENCE, "min_reference_words", cleaned.language)
    kept = enough and score >= bound
    return dataclasses.replace(cleaned, reference=(score, bound), kept_by_reference=kept)


def _redact(lines: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, int]]:
    """The lines with personal data replaced, and how many of each kind were found."""
    redacted, found = [], {}
    for line in lines:
        text, counts = pii.redact(line)
        redacted.append(text)
        for kind, count in counts.items():
            found[kind] = found.get(kind, 0) + count
    return tuple(redacted), found


def clean_document(
    paragraphs: tuple[str, ...],
    settings: QualitySettings,
    identify: Identify,
    inc: Inc,
    *,
    documents_format: str = "text",
) -> Cleaned:
    """One document's paragraphs (non-empty, normalised) through the cleaning step (order in the
    module's docstring); `identify` is langid.identify (injected). A document of a
    LONG_FORM_FORMATS `documents_format` (its RawDocument's) is judged without Gopher's word-count
    bounds. A candidate for the reference model (`overridable`) is neither counted nor removed
    here: `reconsider` judges it."""
    language, score, lines, removal = _language(paragraphs, settings, identify, inc)

    def removed(why: Removal, lines_removed: dict[str, int] | None = None, found=None) -> Cleaned:
        inc(f"quality_removed_{why.rule}", 1)
        return Cleaned(paragraphs, language, score, why, lines_removed or {}, found or {})

    low_score = removal if removal and removal.rule == LOW_SCORE else None
    if removal and not (low_score and settings.enabled(REFERENCE)):
        return removed(removal)
    lines_removed = (
        {"language": len(paragraphs) - len(lines)} if len(lines) < len(paragraphs) else {}
    )
    kept, cleaned = boilerplate.clean_lines(lines, language, settings, inc)
    for rule, count in cleaned.items():
        inc(f"quality_lines_{rule}", count)
        lines_removed[rule] = count
    if not kept:
        return removed(Removal("boilerplate.all_lines", 0, 1), lines_removed)
    long_form = documents_format in LONG_FORM_FORMATS
    removal, overridable = absolute_removal(tuple(kept), settings, language, long_form=long_form)
    if removal and not overridable:
        return removed(removal, lines_removed)
    if low_score:
        removal, overridable = low_score, True
    found: dict[str, int] = {}
    if settings.enabled("pii"):
        redacted, found = _redact(tuple(kept))
        for kind, count in found.items():
            inc(f"pii_{kind}", count)
        if settings.pii == "drop-document" and found:
            return removed(
                Removal("pii.drop_document", sum(found.values()), 0), lines_removed, found
            )
        if settings.pii == "redact":
            kept = redacted
    return Cleaned(tuple(kept), language, score, removal, lines_removed, found, overridable)
