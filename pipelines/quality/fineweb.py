"""FineWeb's document rules (Penedo et al. 2024, bounds as datatrove's FineWebQualityFilter): too
few lines ending in terminal punctuation, too many short lines, too many characters in repeated
lines, too many line breaks per word (a list). A document's lines are its paragraphs."""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.quality.gopher import duplicates
from pipelines.quality.settings import QualitySettings, Removal
from pipelines.quality.words import TERMINAL_PUNCTUATION

RULE = "fineweb"


def check(
    lines: Sequence[str], words: Sequence[str], settings: QualitySettings, language: str
) -> Removal | None:
    """The first failing FineWeb check of a document's lines and words, or None."""

    def bound(param: str) -> float:
        return settings.threshold(RULE, param, language)

    ended = sum(1 for line in lines if line.endswith(TERMINAL_PUNCTUATION)) / len(lines)
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
