"""Word segmenters of the languages written without spaces between words, by name: jieba 0.42.1
(Chinese), TinySegmenter 0.4 (Japanese), PyThaiNLP 5.4.0's dictionary segmenter `newmm` (Thai).

`SEGMENTERS[name]()` gives the function text -> words (in order, whitespace runs among them for
jieba), each library loaded at its first use and once per process. The cleaning step's word counts
(`pipelines.quality.words`) and whole-word masking (`pipelines.tfrecords.word_starts`) use them."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable


@functools.cache
def _chinese() -> Callable[[str], list[str]]:
    import jieba  # lazy: loads its dictionary (a second), only where Chinese text is met

    logging.getLogger("jieba").setLevel(logging.WARNING)  # no "Building prefix dict" on stderr
    jieba.initialize()
    return jieba.lcut


@functools.cache
def _japanese() -> Callable[[str], list[str]]:
    import tinysegmenter

    return tinysegmenter.TinySegmenter().tokenize


@functools.cache
def _thai() -> Callable[[str], list[str]]:
    from pythainlp.tokenize import word_tokenize

    return functools.partial(word_tokenize, engine="newmm", keep_whitespace=False)


SEGMENTERS: dict[str, Callable[[], Callable[[str], list[str]]]] = {
    "jieba": _chinese,
    "tinysegmenter": _japanese,
    "newmm": _thai,
}
"""Each segmenter's loader, by name."""
