"""Line cleaning before a document is judged: boilerplate lines and C4's line rules, each family
switchable by its rule name; the prose around the removed lines is kept.

`boilerplate` removes the page furniture of web text, in English, German, French, Spanish,
Italian, Portuguese and Dutch: cookie and consent notices, rights and copyright lines, "enable
JavaScript" notices, skip links, breadcrumbs, call-to-action links ("read more", "share this",
"subscribe"), account links ("sign in", "register"), policy links ("terms of use", "privacy
policy") and navigation bars. A phrase alone is not enough: notices are matched only in lines of
at most `max_notice_words` words and only in their own wording ("we use cookies", not "bake the
cookies"; "All rights reserved" unquoted, not a sentence quoting it); links only at the start of
lines of at most `max_link_words` words, policy links anywhere in such a line that is not a
sentence (no terminal punctuation); the buttons and headings of consent banners ("Accept all",
"Manage preferences", "Your privacy choices") only as whole lines of that length. Consent
notices are the standard texts of the consent-management platforms (the IAB TCF banner,
Cookiebot, OneTrust, CookieYes, Complianz, iubenda, Usercentrics) in the site's voice ("we and
our partners", "your consent"): an article on consent law, of users and their consent, stays. A
navigation bar is at least `min_nav_items` items between separators (| » › · • → > " / " ::) of
at most `max_nav_item_words` words on average, or a line of TITLE_NAV_WORDS or more capitalised
words without punctuation (a sentence, German too, holds lower-case words).

`c4_lines` applies C4's line rules as datatrove's C4QualityFilter does, in its order: a line with
a word longer than `max_word_length` characters goes; citation marks ("[1]", "[edit]", "[citation
needed]") are cut out (`remove_citations`); a line not ending in terminal punctuation goes
(`filter_no_terminal_punct`), as does one of fewer than `min_words_per_line` words, one naming
JavaScript (`filter_javascript`) and one holding a policy phrase (`filter_policy`). Words are
whitespace tokens (C4's), a segmenter's words for Chinese, Japanese and Thai. The 0/1 parameters
switch a check. The terminal-punctuation check is off by default: it removes 70 to 78 % of the
characters of Shakespeare's plays, 12 % of Milton's and 3 % of Wikipedia's (lines ending in ":",
")" or "--"). C4's document rules ("lorem ipsum", a curly bracket) belong to `c4_document`.

A line goes to the first rule and check that matches: boilerplate first, then c4_lines.
`clean_lines` counts the lines each check removes (CHECK_COUNTER) and returns each rule's total,
which its caller counts (the chain: as quality_lines_<rule>).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Protocol

from pipelines.quality.notices import (
    CONSENT_LABEL,
    LINK,
    NOTICE_WORD,
    NOTICES,
    POLICY_LINK,
    TEASER_END,
)
from pipelines.quality.words import (
    SEGMENTED_LANGUAGES,
    TERMINAL_PUNCTUATION,
    WORD_SEPARATORS,
    split_words,
)


class Settings(Protocol):
    """What line cleaning reads of the quality settings."""

    def enabled(self, rule: str) -> bool: ...

    def threshold(self, rule: str, param: str, language: str) -> float: ...


BOILERPLATE_PARAMS = ("max_notice_words", "max_link_words", "min_nav_items", "max_nav_item_words")
C4_PARAMS = (
    "min_words_per_line",
    "max_word_length",
    "remove_citations",
    "filter_no_terminal_punct",
    "filter_javascript",
    "filter_policy",
)
CHECK_COUNTER = "quality_linecheck_{rule}_{check}"
"""Lines removed per check (the chain counts each rule's total as quality_lines_<rule>)."""


_SEPARATORS = ("|", "»", "›", "·", "•", "→", ">", "::", " / ")
_NAV_SEPARATOR = re.compile(r"\s*(?:\||»|›|·|•|→|>|::|\s/(?=\s))\s*")
_CAPITALISED = re.compile(r"[^\W\d_](?:[\w'’.&-]*[^\W_])?")
TITLE_NAV_WORDS = 6
"""The fewest words of a navigation bar written as capitalised words without separators."""


def _separated_items(line: str, min_items: float, max_item_words: float) -> bool:
    """At least `min_items` items between separators, of `max_item_words` words on average."""
    if not any(separator in line for separator in _SEPARATORS):
        return False
    items = [item for item in _NAV_SEPARATOR.split(line) if item]
    words = sum(item.count(" ") + 1 for item in items)
    return len(items) >= min_items and words <= max_item_words * len(items)


def _capitalised_words(line: str) -> bool:
    """TITLE_NAV_WORDS words or more, each capitalised, none ending in punctuation."""
    words = line.split()
    return len(words) >= TITLE_NAV_WORDS and all(
        word == "&" or (word[0].isupper() and _CAPITALISED.fullmatch(word)) for word in words
    )


def boilerplate_check(line: str, limits: dict[str, float]) -> str | None:
    """The boilerplate check that `line` fails (its name), or None: it is not boilerplate."""
    words = line.count(" ") + 1
    if words <= limits["max_link_words"]:
        if link := LINK.match(line):
            return link.lastgroup
        if POLICY_LINK.search(line) and (
            POLICY_LINK.match(line) or not line.endswith(TERMINAL_PUNCTUATION)
        ):  # a link's text, not a sentence naming the law ("Die Datenschutz-Grundverordnung ...")
            return "policy"
        if CONSENT_LABEL.match(line):
            return "cookie"
    if words <= limits["max_notice_words"]:
        if NOTICE_WORD.search(line.lower()):
            for check, pattern in NOTICES:
                if pattern.search(line):
                    return check
        if _capitalised_words(line):
            return "navigation"
    if TEASER_END.search(line, max(0, len(line) - 40)):
        return "call_to_action"
    if _separated_items(line, limits["min_nav_items"], limits["max_nav_item_words"]):
        return "navigation"
    return None


_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
_POLICY_PHRASES = (
    "terms of use",
    "privacy policy",
    "cookie policy",
    "uses cookies",
    "use of cookies",
    "use cookies",
)


def c4_check(line: str, language: str, limits: dict[str, float]) -> tuple[str, str | None]:
    """The line after citation removal and the C4 check it fails (its name), or None."""
    if language in SEGMENTED_LANGUAGES:
        words = split_words(line, language)
        too_long = bool(words) and max(map(len, words)) > limits["max_word_length"]
        count = len(words)
    else:  # whitespace is collapsed: the spaces (and Amharic's ፡) count the words
        spaced = line.translate(WORD_SEPARATORS)
        too_long = len(line) > limits["max_word_length"] and (
            max(map(len, spaced.split())) > limits["max_word_length"]
        )
        count = spaced.count(" ") + 1
    if too_long:
        return line, "too_long_word"
    if limits["remove_citations"] and "[" in line:
        line = " ".join(_CITATION.sub("", line).split())
    if limits["filter_no_terminal_punct"] and (
        not line.endswith(TERMINAL_PUNCTUATION) or line.endswith("...")
    ):
        return line, "no_terminal_punct"
    if count < limits["min_words_per_line"]:
        return line, "too_few_words"
    lower = line.lower()
    if limits["filter_javascript"] and "javascript" in lower:
        return line, "javascript"
    if limits["filter_policy"] and any(phrase in lower for phrase in _POLICY_PHRASES):
        return line, "policy"
    return line, None


def _limits(settings: Settings, rule: str, params: Iterable[str], language: str) -> dict:
    return {param: settings.threshold(rule, param, language) for param in params}


def clean_lines(
    lines: Iterable[str], language: str, settings: Settings, inc: Callable[[str, int], None]
) -> tuple[tuple[str, ...], dict[str, int]]:
    """The lines kept, in order, and the lines removed per rule (rules that removed none left
    out). Counts each check's removals through `inc` as CHECK_COUNTER; the per-rule totals are
    the caller's to count."""
    boilerplate = settings.enabled("boilerplate")
    c4 = settings.enabled("c4_lines")
    if boilerplate:
        boilerplate_limits = _limits(settings, "boilerplate", BOILERPLATE_PARAMS, language)
    if c4:
        c4_limits = _limits(settings, "c4_lines", C4_PARAMS, language)
    kept: list[str] = []
    removed: Counter[tuple[str, str]] = Counter()
    for line in lines:
        if boilerplate and (check := boilerplate_check(line, boilerplate_limits)):
            removed["boilerplate", check] += 1
            continue
        if c4:
            line, check = c4_check(line, language, c4_limits)
            if check:
                removed["c4_lines", check] += 1
                continue
        kept.append(line)
    per_rule: Counter[str] = Counter()
    for (rule, check), count in sorted(removed.items()):
        inc(CHECK_COUNTER.format(rule=rule, check=check), count)
        per_rule[rule] += count
    return tuple(kept), dict(per_rule)
