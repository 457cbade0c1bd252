"""The cleaning step's rule registry and settings: every rule, its parameters with their published
defaults and allowed ranges (`RULES`), and `QualitySettings`, the validated choice of target
languages, rules switched off, thresholds set by the user and the personal-data mode. A threshold
is the user's value if set, else the document language's default (words.LANGUAGE_THRESHOLDS; the
language-ID score: langid.THRESHOLDS), else the rule's. Removals name the failing check as
`rule.param` (`Removal`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

PII_MODES = ("redact", "keep", "drop-document")


class Threshold(NamedTuple):
    """One rule parameter: its default and the closed range [low, high] a user may set."""

    default: float
    low: float
    high: float
    description: str


@dataclass(frozen=True)
class Removal:
    """Why a document was removed: the failing check (`rule.param`), its measured value and the
    bound it crossed."""

    rule: str
    value: float
    threshold: float


_RATIO = (0.0, 1.0)
_COUNT = (0.0, 1e9)


def _ratio(default: float, description: str) -> Threshold:
    return Threshold(default, *_RATIO, description)


def _count(default: float, description: str) -> Threshold:
    return Threshold(default, *_COUNT, description)


def _switch(default: float, description: str) -> Threshold:
    """A check switched on (1) or off (0)."""
    return Threshold(default, 0, 1, f"1/0: {description}")


RULES: dict[str, dict[str, Threshold]] = {
    "language": {
        "threshold": _ratio(
            0.5,
            "least language-ID score of a document in a target language (per language: "
            "langid.THRESHOLDS)",
        ),
        "min_paragraph_chars": _count(
            40, "characters a paragraph needs to be judged on its own (shorter: its neighbours')"
        ),
        "paragraph_threshold": _ratio(
            0.9, "least score at which a paragraph in another, non-target language is dropped"
        ),
    },
    "boilerplate": {
        "max_notice_words": _count(
            60, "most words of a line read as a cookie, consent or rights notice"
        ),
        "max_link_words": _count(
            10, 'most words of a line read as a link ("read more") or a consent button'
        ),
        "min_nav_items": _count(3, "least items between separators of a navigation bar"),
        "max_nav_item_words": _count(3, "most words per item of a navigation bar, on average"),
    },
    "c4_lines": {
        "min_words_per_line": _count(3, "least words of a line kept"),
        "max_word_length": Threshold(
            1000, 1, 1e9, "lines holding a longer word (characters) are dropped"
        ),
        "remove_citations": _switch(1, 'cut citation marks ("[1]", "[edit]") out of lines'),
        "filter_no_terminal_punct": _switch(
            0, "drop lines not ending in terminal punctuation (C4: on; verse and plays lose most)"
        ),
        "filter_javascript": _switch(1, 'drop lines naming "javascript"'),
        "filter_policy": _switch(1, 'drop lines holding a policy phrase ("terms of use")'),
    },
    "c4_document": {
        "min_num_sentences": _count(
            3, "least sentences left after line cleaning (C4: 5; a stub article has 3 or 4)"
        ),
        "min_num_sentences_words": _count(
            50,
            "words from which a document needs no least sentences (a paragraph of one or two "
            "long sentences is prose; 1e9: C4's rule on every document)",
        ),
        "max_lorem_ipsum_lines": _count(0, 'most lines holding "lorem ipsum"'),
        "max_curly_bracket_lines_ratio": _ratio(
            0.1, 'most lines holding "{" (C4: none; an article may quote the character)'
        ),
    },
    "gopher_quality": {
        "min_doc_words": _count(50, "least words (not applied to books and their chapters)"),
        "max_doc_words": _count(100_000, "most words (not applied to books and their chapters)"),
        "min_avg_word_length": Threshold(3, 0, 1000, "least mean word length (characters)"),
        "max_avg_word_length": Threshold(10, 0, 1000, "most mean word length (characters)"),
        "max_symbol_word_ratio": Threshold(
            0.1, 0, 1000, 'most "#" per word, and most ellipses ("...", "…") per word'
        ),
        "max_bullet_lines_ratio": _ratio(0.9, "most lines starting with a bullet"),
        "max_ellipsis_lines_ratio": _ratio(0.3, "most lines ending in an ellipsis"),
        "min_alpha_words_ratio": _ratio(0.8, "least words holding an alphabetic character"),
        "min_stop_words": _count(2, "least distinct stop words of the language (if it has a list)"),
    },
    "gopher_repetition": {
        "dup_line_frac": _ratio(0.3, "most lines repeating an earlier line"),
        "dup_para_frac": _ratio(0.3, "most paragraphs repeating an earlier paragraph"),
        "dup_line_char_frac": _ratio(0.2, "most characters in lines repeating an earlier line"),
        "dup_para_char_frac": _ratio(
            0.2, "most characters in paragraphs repeating an earlier paragraph"
        ),
        **{
            f"top_{n}_gram": _ratio(bound, f"most characters in the most frequent {n}-gram")
            for n, bound in ((2, 0.2), (3, 0.18), (4, 0.16))
        },
        "top_2_gram_min_words": _count(
            100, "least words of a document judged by top_2_gram (a paragraph repeats its topic)"
        ),
        **{
            f"dup_{n}_gram": _ratio(bound, f"most characters in repeated {n}-grams")
            for n, bound in ((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10))
        },
    },
    "fineweb": {
        "line_punct_thr": _ratio(0.12, "least lines ending in terminal punctuation"),
        "short_line_thr": _ratio(0.67, "most lines of at most short_line_length characters"),
        "short_line_length": _count(30, "characters of a short line"),
        "char_duplicates_ratio": _ratio(0.01, "most characters in lines repeating an earlier line"),
        "new_line_ratio": Threshold(0.3, 0, 1e9, "most line breaks per word"),
    },
    "pii": {},
    "reference_model": {
        "min_score": Threshold(
            -0.3,
            -100,
            100,
            "least score (reference.ReferenceModel.score) at which a document one of the "
            "checks chain.OVERRIDABLE names would remove is kept",
        ),
        "min_reference_words": _count(
            10_000, "least words of reference text for the model to keep a document (fewer: none)"
        ),
    },
}
"""Every rule and its parameters (`rule.param` names datatrove's, except min_alpha_words_ratio:
datatrove's max_non_alpha_words_ratio, the same bound)."""


def known_languages() -> frozenset[str]:
    """The codes language identification can return."""
    from pipelines.quality.langid import KNOWN_LANGUAGES

    return KNOWN_LANGUAGES


def _check_threshold(name: str, value: float) -> tuple[str, str]:
    rule, dot, param = name.partition(".")
    if rule not in RULES:
        raise ValueError(f"quality threshold {name}: unknown rule {rule!r}")
    if not dot or param not in RULES[rule]:
        known = ", ".join(RULES[rule]) or "none"
        raise ValueError(f"quality threshold {name}: unknown parameter (known: {known})")
    bound = RULES[rule][param]
    if not bound.low <= value <= bound.high:
        raise ValueError(
            f"quality threshold {name}={value:g}: out of range [{bound.low:g}, {bound.high:g}]"
        )
    return rule, param


@dataclass(frozen=True)
class QualitySettings:
    """The validated settings of the cleaning step (hashable and picklable: a DoFn holds it).
    Build it with `from_options`."""

    languages: tuple[str, ...] = ()
    rules_off: frozenset[str] = frozenset()
    thresholds: tuple[tuple[str, float], ...] = ()
    """User-set `rule.param` values, sorted by name."""
    pii: str = "redact"
    repair: bool = True
    _bounds: dict[str, dict[str, float]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    """Every `rule.param` bound per language, resolved at its first use."""

    @classmethod
    def from_options(
        cls,
        languages: Iterable[str],
        language_threshold: float | None,
        rules_off: Iterable[str],
        thresholds: Mapping[str, float],
        pii: str,
        repair: bool,
    ) -> QualitySettings:
        """Settings from the step's options; ValueError (one line naming the bad item) for an
        unknown language code, rule or `rule.param`, a value out of its range, or a pii mode."""
        targets = tuple(dict.fromkeys(code.strip().lower() for code in languages))
        if targets:
            known = known_languages()
            for code in targets:
                if code not in known:
                    raise ValueError(f"language {code!r}: not a language code identification knows")
        off = frozenset(rule.strip() for rule in rules_off)
        for rule in sorted(off):
            if rule not in RULES:
                raise ValueError(f"quality rule {rule!r}: unknown (known: {', '.join(RULES)})")
        if targets and "language" in off:
            raise ValueError("language targets need the language rule (it is switched off)")
        values = {name.strip(): float(value) for name, value in thresholds.items()}
        if language_threshold is not None:
            if "language.threshold" in values:
                raise ValueError("language threshold: set both as language_threshold and as a rule")
            values["language.threshold"] = float(language_threshold)
        for name, value in values.items():
            _check_threshold(name, value)
        if pii not in PII_MODES:
            raise ValueError(f"pii {pii!r}: expected one of {', '.join(PII_MODES)}")
        return cls(targets, off, tuple(sorted(values.items())), pii, bool(repair))

    def enabled(self, rule: str) -> bool:
        """Whether `rule` runs (personal data: also not in mode keep)."""
        if rule not in RULES:
            raise KeyError(rule)
        if rule == "pii" and self.pii == "keep":
            return False
        return rule not in self.rules_off

    def threshold(self, rule: str, param: str, language: str) -> float:
        """The bound of `rule.param` for a document in `language`: the user's value, else the
        language's override, else the default."""
        bounds = self._bounds.get(language)
        if bounds is None:
            bounds = self._bounds[language] = _resolve(self, language)
        return bounds[f"{rule}.{param}"]


def _resolve(settings: QualitySettings, language: str) -> dict[str, float]:
    """Every `rule.param` bound of `settings` for `language`."""
    from pipelines.quality import langid
    from pipelines.quality.words import LANGUAGE_THRESHOLDS

    bounds = {
        f"{rule}.{param}": bound.default
        for rule, params in RULES.items()
        for param, bound in params.items()
    }
    bounds["language.threshold"] = langid.THRESHOLDS.get(language, bounds["language.threshold"])
    bounds.update(LANGUAGE_THRESHOLDS.get(language, {}))
    bounds.update(settings.thresholds)
    return bounds
