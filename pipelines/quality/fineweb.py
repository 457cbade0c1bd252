"""FineWeb's document rules (Penedo et al. 2024, bounds as datatrove's FineWebQualityFilter): too
few lines ending in terminal punctuation (here a line of several sentences counts as one too, and
so does a line ending in a comma, semicolon or colon that another line follows: a sentence spread
over paragraphs, as in the preamble of a declaration or in verse: `ends_sentence`), too many short
lines, too many characters in repeated lines, too many line breaks per word (a list). A
document's lines are its paragraphs."""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.quality.c4 import sentences
from pipelines.quality.gopher import duplicates
from pipelines.quality.settings import QualitySettings, Removal
from pipelines.quality.words import TERMINAL_PUNCTUATION

RULE = "fineweb"
PROSE_SENTENCES = 3
"""Sentences from which a line counts as ending in terminal punctuation whatever its last
character: a paragraph of prose or verse whose final full stop a transcription lost."""


CONTINUING_PUNCTUATION = (",", ";", ":", "、", "，", "；", "：", "،", "؛")
"""A line's last character where its sentence goes on in the next line: the comma, semicolon and
colon, and those of CJK (the ideographic comma, full-width forms) and Arabic script."""


def ends_sentence(line: str, followed: bool = False) -> bool:
    """Whether a line ends in terminal punctuation, ends in CONTINUING_PUNCTUATION and is
    `followed` by another line of the document, or is a paragraph of PROSE_SENTENCES or more."""
    return (
        line.endswith(TERMINAL_PUNCTUATION)
        or (followed and line.endswith(CONTINUING_PUNCTUATION))
        or sentences(line) >= PROSE_SENTENCES
    )


def check(
    lines: Sequence[str], words: Sequence[str], settings: QualitySettings, language: str
) -> Removal | None:
    """The first failing FineWeb check of a document's lines and words, or None."""

    def bound(param: str) -> float:
        return settings.threshold(RULE, param, language)

    last = len(lines) - 1
    ended = sum(1 for i, line in enumerate(lines) if ends_sentence(line, i < last)) / len(lines)
    if ended < (least := bound("line_punct_thr")):
        return Removal(f"{RULE}.line_punct_thr", ended, least)
    short = bound("short_line_length")
    shorts = sum(1 for line in lines if len(line) <= short) / len(lines)
    if shorts > (most := bound("short_line_thr")):
        return Removal(f"{RULE}.short_line_thr", shorts, most)
    repeated = duplicates(lines)[1] / sum(map(len, lines))
    if repeated > (most := bound("char_duplicates_ratio")):
        return Removal(f"{RULE}.char_duplicates_ratio", repeated, most)
    breaks = (len(lines) - 1) / max(len(words), 1)
    if breaks > (most := bound("new_line_ratio")):
        return Removal(f"{RULE}.new_line_ratio", breaks, most)
    return None
