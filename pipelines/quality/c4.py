"""C4's document rules (Raffel et al. 2020, as datatrove's C4QualityFilter applies them), judged
on the lines line cleaning kept (C4's line rules are boilerplate.clean_lines'): a page holding
"lorem ipsum" is removed, and so is one left with too few sentences (C4: 5, here 3: a Wikipedia
stub of four sentences is an article) or with curly brackets in more than a tenth of its lines (C4:
in any line, which removes an article quoting the character, such as ASCII).

The least sentences judge documents of fewer than `min_num_sentences_words` words only (50,
Gopher's least words): C4 judged whole pages, where few sentences mean that its line rules left
little text; a document that is one paragraph (CC-100's, SQuAD's) is often one or two long
sentences of 50 to 150 words, and prose. The count is not the cause: `sentences` finds as many as
BlingFire's splitter or more (an abbreviation's full stop ends one here)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipelines.quality.settings import QualitySettings, Removal

RULE = "c4_document"
# A sentence end followed by more text in the same line: each adds a sentence to the line's first.
_SENTENCE_BREAK = re.compile(r"[.!?。！？…]+[\"'”’»)\]]*\s+(?=\S)")


def sentences(line: str) -> int:
    """Sentences of one line: its sentence ends followed by more text, plus one (a line is at
    least one sentence, as C4's sentence splitter counts it)."""
    return 1 + len(_SENTENCE_BREAK.findall(line))


def count_sentences(lines: Sequence[str], enough: float) -> int:
    """Sentences of `lines`, counted only until `enough` are found."""
    found = 0
    for line in lines:
        found += sentences(line)
        if found >= enough:
            break
    return found


def document(
    lines: Sequence[str], words: Sequence[str], settings: QualitySettings, language: str
) -> Removal | None:
    """The first failing C4 document check of a document's kept lines and their words, or
    None."""

    def bound(param: str) -> float:
        return settings.threshold(RULE, param, language)

    lorem = sum(1 for line in lines if "lorem ipsum" in line.lower())
    if lorem > (most := bound("max_lorem_ipsum_lines")):
        return Removal(f"{RULE}.max_lorem_ipsum_lines", lorem, most)
    curly = sum(1 for line in lines if "{" in line) / len(lines)
    if curly > (most := bound("max_curly_bracket_lines_ratio")):
        return Removal(f"{RULE}.max_curly_bracket_lines_ratio", curly, most)
    least = bound("min_num_sentences")
    if (
        len(lines) < least
        and len(words) < bound("min_num_sentences_words")
        and (found := count_sentences(lines, least)) < least
    ):
        return Removal(f"{RULE}.min_num_sentences", found, least)
    return None
