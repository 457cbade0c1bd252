"""The mojibake of the quality mix (benchmarks/helpers/quality_mix.py): UTF-8 text decoded with a
single-byte encoding, as a page served with the wrong charset shows it."""

from __future__ import annotations

import random


def mojibake(text: str, g: random.Random) -> tuple[str, str]:
    """(text as UTF-8 read as cp1252 or Latin-1, the encoding); cp1252 falls back to Latin-1
    where a byte has no cp1252 character."""
    data = text.encode("utf-8")
    if g.random() < 0.5:
        try:
            return data.decode("cp1252"), "cp1252"
        except UnicodeDecodeError:
            pass
    return data.decode("latin-1"), "latin-1"
