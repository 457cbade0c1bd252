"""Listing lines: the commands, configuration lines and program output that a manual quotes between
its sentences (`$ gs -q -dNOPAUSE …`, `UUID=709c… / ext4 errors=remount-ro 0 1`,
`-rw-r--r-- 2 root root 0 2008-09-15 bar`). Their tokens are options, paths, numbers and names,
words of no language, so a language identifier or the reference model that reads them judges the
listing, not the document's prose: the cleaning step judges such a document's language and its
likeness to the reference on its other lines, its prose (`prose_lines`).

A line is a listing line (`is_listing`) where it starts with a shell prompt (`$ `, `# `, `% `) or
where fewer than half of its tokens (whitespace-separated) are words: letters, with single hyphens
between them, once the punctuation around them is set aside (`Dateisystem-Konfiguration`, `(PDF)`
and `«type»` are words; `/dev/loop0`, `-dBATCH`, `-rw-r--r--`, `0m0.035s` and `UUID=…` are not)."""

from __future__ import annotations

import re
from collections.abc import Sequence

PROMPTS = ("$ ", "# ", "% ")
_AROUND = "\"'“”„‘’«»‹›()[]<>,.;:!?"
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")


def _is_word(token: str) -> bool:
    """Whether a token is a word: letters, single hyphens between them, punctuation around."""
    return _WORD.fullmatch(token.strip(_AROUND)) is not None


def is_listing(line: str) -> bool:
    """Whether a line is a command, configuration or output line (module docstring)."""
    if line.lstrip().startswith(PROMPTS):
        return True
    tokens = line.split()
    return 2 * sum(map(_is_word, tokens)) < len(tokens)


def prose_lines(lines: Sequence[str]) -> tuple[str, ...]:
    """The lines of a document that are not listing lines, in order."""
    return tuple(line for line in lines if not is_listing(line))
