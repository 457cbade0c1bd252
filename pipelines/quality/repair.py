"""Text repair with ftfy, conservatively: mojibake (UTF-8 read as Latin-1, Windows-1252, -1251 and
the other codecs ftfy knows: "CafÃ©" -> "Café", "â€™" -> "’", "РџСЂРёРІРµС‚" -> "Привет"), C1
controls that stand for Windows-1252 punctuation, lone surrogates, terminal escapes and control
characters (C0 controls other than tab, line feed, form feed and carriage return; DEL; U+FEFF,
U+206A-U+206F, U+FFF9-U+FFFC). Correct text comes out as it went in.

Off, because segment's NFKC and SentencePiece normalise, or because the change is not a repair:
Unicode normalisation, ligatures, full-width characters, curly quotes. Off as well: line breaks
(a paragraph has none, and turning U+2028 into "\n" would split it) and HTML entities: in plain text
"&amp;" may be meant (code, text about HTML), and ftfy's "auto" decodes entities only in texts
without "<", so the same entity would fare differently from one paragraph to the next; decoding
them belongs to the reader of an HTML or wikitext source.

ASCII text without control characters, most English text, cannot change under these settings and
skips ftfy: the paragraphs of the English books go at about 350 MB per CPU-second (30-60 through
ftfy); clean German or French text at 3-4, Russian, Japanese, Chinese at 9-11, mojibake at 1.3-8.
"""

from __future__ import annotations

import re

import ftfy

CONFIG = ftfy.TextFixerConfig(
    unescape_html=False,
    fix_latin_ligatures=False,
    fix_character_width=False,
    uncurl_quotes=False,
    fix_line_breaks=False,
    normalization=None,
    explain=False,
)

# The ASCII characters that CONFIG changes: the controls that ftfy removes (ESC among them).
_ASCII_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def repair_text(text: str) -> str:
    """`text` with mojibake and control characters repaired under `CONFIG`."""
    if text.isascii() and _ASCII_CONTROLS.search(text) is None:
        return text
    return ftfy.fix_text(text, CONFIG)
