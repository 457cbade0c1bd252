"""Turn Wikipedia dumps, books, plain text and JSONL into sentence-segmented documents.

Output: `OUTPUT/part-NNNNN-of-NNNNN.txt` in the BERT/ALBERT pretraining input format (one sentence per
line, a blank line after each document) and `OUTPUT/stats.json` (documents, sentences and characters
in and out, a count per skip reason, the bad files, a sentence-length histogram and warnings),
computed and written by the pipeline itself. The same input gives byte-identical files whatever the
runner or number of workers.

Pipeline: match files -> read each file streaming (one DoFn per file) -> spread documents over the
workers -> wikitext/book/text to normalised paragraphs -> drop exact-duplicate documents (smallest
key kept) -> drop repeated paragraphs (first occurrence by key kept) -> split sentences -> drop short
documents -> deterministic shards. Spreading and both de-duplications group through sorted spill
files (pipelines.spill), so memory stays bounded on the in-process runner too.
"""

from __future__ import annotations

import bisect
import codecs
import itertools
import json
import logging
import posixpath
import sys
import zlib
from collections.abc import Iterable
from typing import Literal

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from pydantic import Field, field_validator

from albert.config import StageConfig
from albert.errors import StageError
from albert.fs import expand_files, filesystem, join, open_file
from albert.hashing import stable_hash
from albert.outputs import atomic_output_dir
from albert.stage import stage_main
from pipelines import input_formats, spill, text_cleaning
from pipelines.runner import (
    COUNTS,
    CountingDoFn,
    counted,
    pipeline_options,
    run_pipeline,
    sum_counts,
)
from pipelines.shards import WriteShards

logger = logging.getLogger(__name__)

NAMESPACE = "segment"
BAD_FILES = "bad_files"
STATS_FILE = "stats.json"
SKIP_REASONS = (
    "bad_file",
    "bad_record",
    "namespace",
    "redirect",
    "disambiguation",
    "empty",
    "duplicate_document",
    "too_short",
)
_READ_ERRORS = (input_formats.BadInput, OSError, EOFError, zlib.error)


class SegmentConfig(StageConfig):
    """Inputs, format, error policy and cleaning bounds of the segmentation stage."""

    input: list[str] = Field(
        min_length=1,
        description="input file, directory or glob pattern, local or gs:// (repeat the flag)",
    )
    output: str = Field(description="output directory for the *.txt shards and stats.json")
    format: input_formats.Format = Field(
        "auto", description="input format; auto picks per file by extension and content"
    )
    on_error: Literal["fail", "skip"] = Field(
        "fail",
        description="bad input file: fail the job naming it, or skip it and report it in stats.json",
    )
    num_shards: int = Field(8, gt=0, description="number of output .txt shards")
    unicode_form: text_cleaning.UnicodeForm = Field(
        "NFKC", description="Unicode normalisation form"
    )
    min_document_chars: int = Field(
        200, ge=0, description="documents with fewer characters of sentences are dropped"
    )
    max_sentence_chars: int = Field(
        2000, ge=20, description="longer sentences are cut at a space before this bound"
    )
    min_dedup_paragraph_chars: int = Field(
        40, ge=1, description="paragraphs at least this long are removed when repeated (first kept)"
    )
    fallback_encoding: str | None = Field(
        None, description="decode non-UTF-8 lines of text files with this encoding (e.g. latin-1)"
    )
    jsonl_field: str = Field("text", description="the JSONL field holding a document's text")

    @field_validator("fallback_encoding")
    @classmethod
    def _known_encoding(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                codecs.lookup(value)
            except LookupError:
                raise ValueError(f"unknown encoding {value!r}") from None
        return value


def match_inputs(patterns: Iterable[str]) -> list[str]:
    """Every file the patterns name (a directory: the files in it), sorted.

    A pattern matching no file is an error in any mode; sub-directories are not descended into.
    """
    paths: set[str] = set()
    for pattern in patterns:
        matched = [path for path in expand_files(pattern, ("*",)) if not _is_directory(path)]
        if not matched:
            raise StageError(f"{pattern}: no file matches this input pattern")
        paths.update(matched)
    return sorted(paths)


def _is_directory(url: str) -> bool:
    fs, path = filesystem(url)
    return fs.isdir(path)


def check_not_empty(stats: dict) -> None:
    """Refuse a corpus with nothing in it: every input file skipped, or no document left."""
    if stats["files_read"] == 0 and stats["bad_files"]:
        first = stats["bad_files"][0]
        raise StageError(
            f"every input file was skipped as bad ({len(stats['bad_files'])} of {stats['input_files']}), "
            f"e.g. {first['file']}: {first['reason']}"
        )
    if stats["documents_out"] == 0:
        skipped = ", ".join(
            f"{reason} {count}" for reason, count in stats["skipped"].items() if count
        )
        raise StageError(
            f"no document left: {stats['documents_in']} read from {stats['files_read']} file(s), "
            f"all skipped ({skipped or 'nothing readable'})"
        )


def document_key(path: str, doc_id: str) -> bytes:
    """Stable 8-byte key of a document: its file's base name and its id within the file."""
    name = posixpath.basename(path.rstrip("/"))
    return stable_hash(f"{name}\x00{doc_id}".encode()).to_bytes(8, "big")


def clean_paragraphs(fmt: str, text: str, form: text_cleaning.UnicodeForm) -> tuple[str, ...]:
    """Normalised, non-empty paragraphs of one raw document."""
    raw = input_formats.raw_paragraphs(input_formats.RawDocument(fmt, "", text))
    return tuple(p for p in (text_cleaning.normalize_text(p, form) for p in raw) if p)


class ReadFiles(CountingDoFn):
    """path -> (key, format, text) per raw document; bad files fail the job or go to BAD_FILES."""

    def __init__(self, config: SegmentConfig):
        super().__init__(NAMESPACE)
        self.format, self.on_error = config.format, config.on_error
        self.fallback_encoding, self.jsonl_field = config.fallback_encoding, config.jsonl_field

    def process(self, path: str):
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
                for document in input_formats.read_documents(
                    path,
                    raw,
                    self.format,
                    fallback_encoding=self.fallback_encoding,
                    jsonl_field=self.jsonl_field,
                    on_error=self.on_error,
                    inc=self.inc,
                ):
                    yield document_key(path, document.doc_id), document.format, document.text
            self.inc("files_read", 1)
        except _READ_ERRORS as error:
            reason = input_formats.describe_error(error, path)
            if self.on_error == "fail":
                raise StageError(f"{path}: {reason}") from None
            self.inc("skipped_bad_file", 1)
            yield beam.pvalue.TaggedOutput(BAD_FILES, {"file": path, "reason": reason})


class CleanDocuments(CountingDoFn):
    """(key, format, text) -> (key, normalised paragraphs); documents left empty are counted."""

    def __init__(self, form: text_cleaning.UnicodeForm):
        super().__init__(NAMESPACE)
        self.form = form

    def process(self, element):
        key, fmt, text = element
        paragraphs = clean_paragraphs(fmt, text, self.form)
        if not paragraphs:
            self.inc("skipped_empty", 1)
            return
        yield key, paragraphs


class SegmentDocuments(CountingDoFn):
    """(key, paragraphs) -> (key, document block bytes); short documents are counted and dropped."""

    def __init__(self, max_sentence_chars: int, min_document_chars: int):
        super().__init__(NAMESPACE)
        self.max_sentence_chars, self.min_document_chars = max_sentence_chars, min_document_chars

    def setup(self):
        self.splitter = text_cleaning.SentenceSplitter(self.max_sentence_chars)

    def process(self, element):
        key, paragraphs = element
        sentences = [
            s for paragraph in paragraphs for s in self.splitter.split(paragraph, self.inc)
        ]
        characters = sum(len(sentence) for sentence in sentences)
        self.inc("sentences_in", len(sentences))
        if characters < self.min_document_chars or not sentences:
            self.inc("skipped_too_short", 1)
            return
        self.inc("documents_out", 1)
        self.inc("sentences_out", len(sentences))
        self.inc("characters_out", characters)
        for bucket, count in sentence_length_counts(sentences).items():
            self.inc(bucket, count)
        yield key, text_cleaning.document_block(sentences).encode("utf-8")


# De-duplication through sorted spill files (pipelines.spill): every key below starts with a fixed-size
# group (content hash, paragraph hash or document key), so a reduce sees each group's records in order.
_KEY_BYTES = 8


def _encode_paragraphs(paragraphs: tuple[str, ...]) -> bytes:
    return "\n".join(paragraphs).encode("utf-8")  # normalised paragraphs hold no line break


def _decode_paragraphs(data: bytes) -> tuple[str, ...]:
    return tuple(data.decode("utf-8").split("\n"))


def raw_document_pair(element) -> tuple[bytes, bytes]:
    """(key, format, text) -> (key, format NUL text), for spreading documents over workers."""
    key, fmt, text = element
    return key, fmt.encode() + b"\x00" + text.encode("utf-8", "surrogatepass")


def raw_documents(pairs, inc):
    """The inverse of raw_document_pair, for a partition's sorted pairs."""
    for key, payload in pairs:
        fmt, _, text = payload.partition(b"\x00")
        yield key, fmt.decode(), text.decode("utf-8", "surrogatepass")


def content_pair(element) -> tuple[bytes, bytes]:
    """(key, paragraphs) -> (content hash + key, paragraphs): duplicates meet, smallest key first."""
    key, paragraphs = element
    return text_cleaning.content_hash(paragraphs).to_bytes(
        _KEY_BYTES, "big"
    ) + key, _encode_paragraphs(paragraphs)


def first_of_each_content(pairs, inc):
    """(key, paragraphs) of the smallest key of each content; the other copies are counted."""
    for _, group in itertools.groupby(pairs, key=lambda pair: pair[0][:_KEY_BYTES]):
        copies = 0
        for sort_key, payload in group:
            if not copies:
                yield sort_key[_KEY_BYTES:], _decode_paragraphs(payload)
            copies += 1
        if copies > 1:
            inc("skipped_duplicate_document", copies - 1)


def paragraph_refs(element, min_chars: int):
    """(paragraph hash + key + index, b"") of every paragraph of a document long enough to de-duplicate."""
    key, paragraphs = element
    for index, paragraph in enumerate(paragraphs):
        if len(paragraph) >= min_chars:
            yield (
                text_cleaning.paragraph_hash(paragraph).to_bytes(_KEY_BYTES, "big")
                + key
                + index.to_bytes(4, "big"),
                b"",
            )


def repeated_paragraphs(pairs, inc):
    """(key + 0 + index, b"") of every repeat of a paragraph after its first occurrence by (key, index)."""
    for _, group in itertools.groupby(pairs, key=lambda pair: pair[0][:_KEY_BYTES]):
        for position, (sort_key, _) in enumerate(group):
            if position:
                yield (
                    sort_key[_KEY_BYTES : 2 * _KEY_BYTES] + b"\x00" + sort_key[2 * _KEY_BYTES :],
                    b"",
                )


def document_pair(element) -> tuple[bytes, bytes]:
    """(key, paragraphs) -> (key + 1, paragraphs): sorts after the key's repeats (key + 0 + index)."""
    key, paragraphs = element
    return key + b"\x01", _encode_paragraphs(paragraphs)


def drop_repeated_paragraphs(pairs, inc):
    """(key, paragraphs without the repeats) per document; documents left empty are counted."""
    for key, group in itertools.groupby(pairs, key=lambda pair: pair[0][:_KEY_BYTES]):
        drop: set[int] = set()
        for sort_key, payload in group:
            if sort_key[_KEY_BYTES] == 0:
                drop.add(int.from_bytes(sort_key[_KEY_BYTES + 1 :], "big"))
                continue
            paragraphs = _decode_paragraphs(payload)
            if drop:
                inc("paragraphs_duplicate", len(drop))
                paragraphs = tuple(p for i, p in enumerate(paragraphs) if i not in drop)
            if not paragraphs:
                inc("skipped_empty", 1)
                continue
            yield key, paragraphs


SENTENCE_LENGTH_BUCKETS = (0, 25, 50, 100, 150, 200, 300, 500, 1000, 2000)
LONG_MEDIAN_CHARS = 300
"""A median sentence at least this long means sentences were not split (typical prose: 60-200)."""


def sentence_length_counts(sentences: Iterable[str]) -> dict[str, int]:
    """Counts per length bucket, named `sentence_chars_<bucket's lower bound>`."""
    counts: dict[str, int] = {}
    for sentence in sentences:
        low = SENTENCE_LENGTH_BUCKETS[
            bisect.bisect_right(SENTENCE_LENGTH_BUCKETS, len(sentence)) - 1
        ]
        counts[f"sentence_chars_{low}"] = counts.get(f"sentence_chars_{low}", 0) + 1
    return counts


def sentence_length_histogram(counters: dict[str, int]) -> dict[str, int]:
    """Output sentences per length bucket, keyed by the bucket's lower bound in characters (a bucket
    runs to the next bound; the last has none)."""
    return {str(low): counters.get(f"sentence_chars_{low}", 0) for low in SENTENCE_LENGTH_BUCKETS}


def sentence_length_warnings(histogram: dict[str, int]) -> list[str]:
    """A warning when the median output sentence is implausibly long (sentence splitting failed)."""
    total = sum(histogram.values())
    seen = 0
    for index, low in enumerate(SENTENCE_LENGTH_BUCKETS):
        seen += histogram.get(str(low), 0)
        if total and 2 * seen >= total:
            if low < LONG_MEDIAN_CHARS:
                return []
            high = (
                SENTENCE_LENGTH_BUCKETS[index + 1] - 1
                if index + 1 < len(SENTENCE_LENGTH_BUCKETS)
                else "more"
            )
            return [
                (
                    f"the median sentence is {low}-{high} characters long (typical prose: "
                    "60-200): sentences were probably not split; check the input format and the text"
                )
            ]
    return []


def summarize(
    counters: dict[str, int], bad_files: list[dict], paths: list[str], shards: list[str]
) -> dict:
    """stats.json: figures from the counts, a count per skip reason, the bad files, sentence lengths."""
    figures = (
        "documents_in",
        "documents_out",
        "sentences_in",
        "sentences_out",
        "characters_in",
        "characters_out",
        "bytes_in",
        "paragraphs_duplicate",
        "sentences_cut",
        "lines_fallback_encoding",
        "lines_cut",
        "documents_cut",
        "files_read",
    )
    stats: dict = {"input_files": len(paths)}
    stats.update({name: counters.get(name, 0) for name in figures})
    stats["formats"] = {
        name.removeprefix("files_"): value
        for name, value in counters.items()
        if name in ("files_wikipedia", "files_books", "files_chapters", "files_text", "files_jsonl")
    }
    stats["skipped"] = {reason: counters.get(f"skipped_{reason}", 0) for reason in SKIP_REASONS}
    stats["bad_files"] = sorted(bad_files, key=lambda item: item["file"])
    stats["shards"] = sorted(posixpath.basename(path) for path in shards)
    stats["sentence_length_histogram"] = sentence_length_histogram(counters)
    stats["warnings"] = sentence_length_warnings(stats["sentence_length_histogram"])
    return stats


def write_stats(
    _,
    counters: dict,
    bad_files: list[dict],
    shards: list[str],
    paths: list[str],
    output_dir: str,
    run_dirs: list[str],
) -> None:
    """Write stats.json from the pipeline's data, once everything else is written."""
    spill.remove_run_dirs(run_dirs)
    stats = summarize(counters, bad_files, paths, shards)
    with FileSystems.create(join(output_dir, STATS_FILE)) as handle:
        handle.write((json.dumps(stats, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def build_pipeline(
    pipeline: beam.Pipeline, paths: list[str], config: SegmentConfig, output_dir: str
):
    """Add the segmentation transforms to `pipeline`, writing shards and stats.json into `output_dir`."""
    counts: list = []
    run_dirs = [
        join(output_dir, f"_{name}-runs")
        for name in ("spread", "documents", "paragraphs", "repeats")
    ]
    spread_runs, document_runs, paragraph_runs, repeat_runs = run_dirs

    def merge_sorted(run_dir, reduce, group_bytes=_KEY_BYTES):
        return spill.MergeSorted(
            run_dir, reduce, group_bytes=group_bytes, counts=counts, namespace=NAMESPACE
        )

    read = (
        pipeline
        | "Files" >> beam.Create(paths)
        | "SpreadFiles" >> beam.Reshuffle()
        | "Read" >> beam.ParDo(ReadFiles(config)).with_outputs(BAD_FILES, COUNTS, main="documents")
    )
    counts.append(read[COUNTS])
    documents = counted(
        read.documents
        | "RawPairs" >> beam.Map(raw_document_pair)
        | "SpreadDocuments" >> merge_sorted(spread_runs, raw_documents),
        "Clean",
        CleanDocuments(config.unicode_form),
        counts,
    )
    unique = (
        documents
        | "ByContent" >> beam.Map(content_pair)
        | "KeepFirstDocument" >> merge_sorted(document_runs, first_of_each_content)
    )
    repeats = (
        unique
        | "ParagraphRefs" >> beam.FlatMap(paragraph_refs, config.min_dedup_paragraph_chars)
        | "FindRepeats" >> merge_sorted(paragraph_runs, repeated_paragraphs)
    )
    kept = (
        repeats,
        unique | "DocumentPairs" >> beam.Map(document_pair),
    ) | "DropRepeats" >> merge_sorted(repeat_runs, drop_repeated_paragraphs)
    segmented = counted(
        kept,
        "Segment",
        SegmentDocuments(config.max_sentence_chars, config.min_document_chars),
        counts,
    )
    shards = segmented | "Write" >> WriteShards(join(output_dir, "part"), config.num_shards, ".txt")
    _ = (
        pipeline
        | "StatsTrigger" >> beam.Create([None])
        | "WriteStats"
        >> beam.Map(
            write_stats,
            counters=beam.pvalue.AsSingleton(sum_counts(counts)),
            bad_files=beam.pvalue.AsList(read[BAD_FILES]),
            shards=beam.pvalue.AsList(shards),
            paths=paths,
            output_dir=output_dir,
            run_dirs=run_dirs,
        )
    )


def run(config: SegmentConfig, beam_args: list[str] | None = None) -> dict:
    """Segment the inputs into `config.output`; returns the stats the pipeline wrote to stats.json.

    Raises StageError naming the file and reason for bad input (on_error='fail') or a pattern that
    matches nothing; the output directory is then left absent.
    """
    paths = match_inputs(config.input)
    options = pipeline_options(beam_args)
    with atomic_output_dir(config.output) as output_dir:
        pipeline = beam.Pipeline(options=options)
        build_pipeline(pipeline, paths, config, output_dir)
        run_pipeline(pipeline)
        with open_file(join(output_dir, STATS_FILE), "r", encoding="utf-8") as handle:
            stats = json.load(handle)
        check_not_empty(stats)
    for warning in stats["warnings"]:
        logger.warning("%s: %s", config.output, warning)
    return stats


def main(argv=None, prog="python -m pipelines.segment") -> int:
    return stage_main(SegmentConfig, run, argv, prog=prog, description=__doc__, beam=True)


if __name__ == "__main__":
    # Run the importable module's main: DoFns are then pickled as pipelines.segment.X, which worker
    # processes can import, not as __main__.X, which they cannot.
    from pipelines.segment import main as importable_main

    sys.exit(importable_main())
