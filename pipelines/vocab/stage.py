"""Train ALBERT's SentencePiece vocabulary on a uniform, deterministic sample of a segmented corpus.

Reads `INPUT/*.txt` (one sentence per line, blank lines between documents: the output of
pipelines.segment), draws a hash-based sample of `--sample-sentences` sentences plus a small
held-out slice, trains a unigram SentencePiece model with ALBERT's recipe on one worker, and writes
`OUTPUT/spiece.model`, `OUTPUT/spiece.vocab` and `OUTPUT/vocab_stats.json` (sample size, held-out
unk rate and pieces per word, training time) and `OUTPUT/spiece.json`, the record of the
preprocessing every later stage tokenizes with (`albert.vocabulary_record`; `--language` chooses
it, docs/languages.md). Memory is bounded by the sample size, not the corpus.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict

import apache_beam as beam
from apache_beam.io import fileio as beam_fileio

from albert.errors import StageError
from albert.fs import expand, join, open_file
from albert.stage import stage_main
from albert.tokenization import AlbertTokenizer, preprocess_text
from albert.vocabulary_record import write_record
from pipelines.common.runner import Counter, CountingDoFn, counted, run_stage, sum_counts
from pipelines.vocab import sampling
from pipelines.vocab.config import VocabConfig
from pipelines.vocab.sentencepiece_trainer import train_sentencepiece, vocab_file_text

logger = logging.getLogger(__name__)

COUNTER_NAMESPACE = "vocab"
STATS_FILE = "vocab_stats.json"
ACCENTS_WARNING_SHARE = 0.01
"""Above this share of the corpus's sentences changed by accent stripping, the stage warns."""


def input_pattern(input_path: str) -> str:
    """`DIR/*.txt` for a directory, the glob itself otherwise."""
    if any(c in input_path for c in "*?["):
        return input_path
    return join(input_path, "*.txt")


def corpus_sentence(raw_line: bytes, max_bytes: int) -> tuple[str | None, str]:
    """(the stripped sentence, "sentences"), or (None, why the line is no sentence) for counting."""
    stripped = raw_line.strip()
    if not stripped:
        return None, "blank_lines"
    if len(stripped) > max_bytes:
        return None, "sentences_too_long"
    try:
        sentence = stripped.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None, "invalid_utf8_lines"
    return (sentence, "sentences") if sentence else (None, "blank_lines")


def is_sentence_line(raw_line: bytes, max_bytes: int) -> bool:
    return corpus_sentence(raw_line, max_bytes)[0] is not None


def prepare_sentence(
    raw_line: bytes, seed: int, lower: bool, keep_accents: bool, max_bytes: int, inc: Counter
) -> Iterator[tuple[int, str]]:
    """(sampling key, preprocessed sentence) of a corpus line that holds a sentence.

    Blank lines (document breaks), lines that are not UTF-8 and lines over `max_bytes` are counted,
    and so are the sentences whose letters accent stripping changes (`sentences_accents_stripped`).
    """
    sentence, outcome = corpus_sentence(raw_line, max_bytes)
    inc(outcome, 1)
    if sentence is not None:
        text = preprocess_text(sentence, lower, keep_accents)
        stripped = not keep_accents and not sentence.isascii()
        if stripped and text != preprocess_text(sentence, lower, keep_accents=True):
            inc("sentences_accents_stripped", 1)
        yield sampling.sentence_key(sentence, seed), text


def heldout_metrics(tokenizer: AlbertTokenizer, sentences: Iterable[str]) -> dict:
    """Unk rate (unknown pieces / pieces) and pieces per whitespace word on preprocessed
    sentences."""
    count = pieces = unknown = words = 0
    for sentence in sentences:
        ids = tokenizer.sp.encode(sentence)
        count += 1
        pieces += len(ids)
        unknown += sum(1 for piece_id in ids if piece_id == tokenizer.unk_id)
        words += len(sentence.split())
    return {
        "heldout_sentences": count,
        "heldout_pieces": pieces,
        "unk_rate": unknown / pieces if pieces else None,
        "pieces_per_word": pieces / words if words else None,
    }


def build_vocabulary(
    config: VocabConfig, corpus_sentences: int, chosen: Iterable, output_dir: str
) -> dict:
    """Train on the chosen sentences, write model and vocab to `output_dir`; return their stats."""
    train: list[tuple[int, str]] = []
    heldout: list[tuple[int, str]] = []
    for chunk in chosen:
        for role, key, sentence in chunk:
            (heldout if role == "heldout" else train).append((key, sentence))
    sample = sampling.keep_smallest_keys(train, config.sample_sentences)
    start = time.perf_counter()
    num_threads = config.num_threads or os.cpu_count() or 1
    model = train_sentencepiece(
        (sentence for _, sentence in sample),
        len(sample),
        config.vocab_size,
        config.character_coverage,
        num_threads,
        config.seed,
        config.normalization,
    )
    training_seconds = time.perf_counter() - start
    model_file = join(output_dir, "spiece.model")
    with open_file(model_file, "wb") as handle:
        handle.write(model)
    with open_file(join(output_dir, "spiece.vocab"), "w", encoding="utf-8") as handle:
        handle.write(vocab_file_text(model))
    write_record(model_file, config.preprocessing(), model)
    tokenizer = AlbertTokenizer(model_file)
    heldout.sort()
    stats = {
        "vocab_size": tokenizer.vocab_size,
        "corpus_sentences": corpus_sentences,
        "sample_sentences": len(sample),
        "training_seconds": round(training_seconds, 3),
        "num_threads": num_threads,
        "seed": config.seed,
        "model_sha256": tokenizer.model_sha256,
        "preprocessing": asdict(tokenizer.preprocessing),
        **heldout_metrics(tokenizer, (sentence for _, sentence in heldout)),
    }
    return stats


class _BuildVocabulary(beam.DoFn):
    """Runs `build_vocabulary` on one worker and writes vocab_stats.json, corpus counts included.

    Bad input raises a StageError naming the corpus and what to change (the job fails with it)."""

    def __init__(self, config: VocabConfig, output_dir: str, start_time: float):
        self.config, self.output_dir, self.start_time = config, output_dir, start_time

    def process(self, group, corpus_sentences, corpus_counts):
        _, chosen = group
        try:
            stats = build_vocabulary(self.config, corpus_sentences, chosen, self.output_dir)
        except StageError as error:
            raise StageError(f"{self.config.input}: {error}") from None
        stats["corpus_counts"] = corpus_counts
        stats["wall_seconds"] = round(time.time() - self.start_time, 3)
        with open_file(join(self.output_dir, STATS_FILE), "w", encoding="utf-8") as handle:
            json.dump(stats, handle, indent=2, sort_keys=True)
        yield self.output_dir


def file_lines(readable_file) -> Iterator[bytes]:
    """The lines of a matched corpus file, streamed."""
    with readable_file.open() as handle:
        yield from iter(handle.readline, b"")


def choose_sentences(
    lines: Iterable[bytes], config: VocabConfig, bounds: sampling.SampleBounds, inc: Counter
) -> Iterator[tuple[sampling.Role, int, str]]:
    """(role, key, sentence) of the lines whose key falls in the held-out or training range."""
    for line in lines:
        for key, sentence in prepare_sentence(
            line,
            config.seed,
            config.do_lower_case,
            config.keep_accents,
            config.max_sentence_bytes,
            inc,
        ):
            role = sampling.sample_role(key, bounds)
            if role is not None:
                yield role, key, sentence


class _ChooseFromFile(CountingDoFn):
    """One corpus file -> its chosen sentences, in lists of CHUNK (few, large elements to group)."""

    CHUNK = 10_000

    def __init__(self, config: VocabConfig):
        super().__init__(COUNTER_NAMESPACE)
        self.config = config

    def process(self, readable_file, total):
        bounds = sampling.sample_bounds(
            total, self.config.sample_sentences, self.config.heldout_sentences
        )
        chosen = choose_sentences(file_lines(readable_file), self.config, bounds, self.inc)
        while chunk := list(itertools.islice(chosen, self.CHUNK)):
            yield 0, chunk


def build_pipeline(
    pipeline: beam.Pipeline, config: VocabConfig, output_dir: str, start_time: float
) -> None:
    """Match files; count their sentences; read them again choosing by key; one group -> train,
    evaluate.

    Files are read whole by one DoFn each and only counts and the chosen sentences become Beam
    elements, so memory follows the sample, not the corpus, and per-element overhead stays small.
    The training step writes vocab_stats.json, with the corpus counts summed in the pipeline.
    """
    counts: list = []
    files = (
        pipeline
        | "Match" >> beam_fileio.MatchFiles(input_pattern(config.input))
        | "Open" >> beam_fileio.ReadMatches()
    )
    total = (
        files
        | "CountSentences"
        >> beam.Map(
            lambda f: sum(
                is_sentence_line(line, config.max_sentence_bytes) for line in file_lines(f)
            )
        )
        | "Total" >> beam.CombineGlobally(sum).as_singleton_view()
    )
    chosen = counted(files, "Choose", _ChooseFromFile(config), counts, total)
    always = pipeline | "AlwaysOneGroup" >> beam.Create([(0, [])])
    (
        (chosen, always)
        | "Flatten" >> beam.Flatten()
        | "OneGroup" >> beam.GroupByKey()
        | "Train"
        >> beam.ParDo(
            _BuildVocabulary(config, output_dir, start_time),
            total,
            sum_counts(counts),
        )
    )


def run(config: VocabConfig, beam_args: list[str] | None = None) -> dict:
    """Run the vocabulary job; return the stats it wrote to vocab_stats.json."""
    pattern = input_pattern(config.input)
    if not expand(pattern):
        raise StageError(
            f"no corpus shards match {pattern}: run pipelines.segment first or fix --input"
        )
    start_time = time.time()
    stats = run_stage(
        config.output,
        beam_args,
        lambda pipeline, output_dir: build_pipeline(pipeline, config, output_dir, start_time),
        STATS_FILE,
    )
    if stats["corpus_counts"].get("invalid_utf8_lines"):
        logger.warning(
            "%s: skipped %d lines that are not UTF-8 (segment the corpus with pipelines.segment)",
            config.input,
            stats["corpus_counts"]["invalid_utf8_lines"],
        )
    warn_accents_stripped(config, stats["corpus_counts"])
    logger.info(
        "wrote %s (%d pieces, unk rate %s)", config.output, stats["vocab_size"], stats["unk_rate"]
    )
    return {"output": config.output, **stats}


def warn_accents_stripped(config: VocabConfig, counts: dict[str, int]) -> None:
    """One warning when accent stripping (the English preprocessing) changed more than
    ACCENTS_WARNING_SHARE of the corpus's sentences: the text of another language loses letters
    (dakuten, umlauts, tones, viramas) unless its --language keeps them."""
    changed, sentences = counts.get("sentences_accents_stripped", 0), counts.get("sentences", 0)
    if sentences and changed / sentences > ACCENTS_WARNING_SHARE:
        logger.warning(
            "%s: stripping accents changed %d of %d sentences (%.0f%%), so the vocabulary and "
            "every later stage see them without those letters: pass --language CODE "
            "(docs/languages.md), or --keep-accents",
            config.input,
            changed,
            sentences,
            100 * changed / sentences,
        )


def main(argv=None, prog="python -m pipelines.vocab") -> int:
    return stage_main(VocabConfig, run, argv, prog=prog, description=__doc__, beam=True)
