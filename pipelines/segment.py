"""Turn Wikipedia dumps, books, plain text and JSONL into sentence-segmented documents.

Output: `OUTPUT/part-NNNNN-of-NNNNN.txt` in the BERT/ALBERT pretraining input format (one sentence per
line, a blank line after each document) and `OUTPUT/stats.json` (documents, sentences and characters
in and out, a count per skip reason, the bad files). The same input gives byte-identical files
whatever the runner or number of workers.

Pipeline: match files -> read each file streaming (one DoFn per file) -> reshuffle pages/documents ->
wikitext/book/text to normalised paragraphs -> drop exact-duplicate documents (smallest key kept) ->
drop repeated paragraphs (first occurrence by key kept) -> split sentences -> drop short documents ->
deterministic shards.
"""

from __future__ import annotations

import codecs
import json
import posixpath
import re
import sys
import zlib
from collections.abc import Iterable
from typing import Literal

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from pydantic import Field, field_validator

from albert import fileio
from albert.config import StageConfig
from albert.stage import StageError, stage_main
from pipelines import input_formats, text_cleaning
from pipelines.runner import beam_counter, counter_totals, pipeline_options
from pipelines.shards import WriteShards, stable_hash

NAMESPACE = "segment"
BAD_FILES = "bad_files"
SKIP_REASONS = (
    "bad_file", "bad_record", "namespace", "redirect", "disambiguation", "empty",
    "duplicate_document", "too_short",
)
_READ_ERRORS = (input_formats.BadInput, OSError, EOFError, zlib.error)


class SegmentConfig(StageConfig):
    """Inputs, format, error policy and cleaning bounds of the segmentation stage."""

    input: list[str] = Field(
        min_length=1, description="input file, directory or glob pattern, local or gs:// (repeat the flag)"
    )
    output: str = Field(description="output directory for the *.txt shards and stats.json")
    format: input_formats.Format = Field(
        "auto", description="input format; auto picks per file by extension and content"
    )
    on_error: Literal["fail", "skip"] = Field(
        "fail", description="bad input file: fail the job naming it, or skip it and report it in stats.json"
    )
    num_shards: int = Field(8, gt=0, description="number of output .txt shards")
    unicode_form: text_cleaning.UnicodeForm = Field("NFKC", description="Unicode normalisation form")
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
        matched = [path for path in fileio.expand_files(pattern, ("*",)) if not _is_directory(path)]
        if not matched:
            raise StageError(f"{pattern}: no file matches this input pattern")
        paths.update(matched)
    return sorted(paths)


def _is_directory(url: str) -> bool:
    fs, path = fileio.filesystem(url)
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
        skipped = ", ".join(f"{reason} {count}" for reason, count in stats["skipped"].items() if count)
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


class ReadFiles(beam.DoFn):
    """path -> (key, format, text) per raw document; bad files fail the job or go to BAD_FILES."""

    def __init__(self, config: SegmentConfig):
        self.format, self.on_error = config.format, config.on_error
        self.fallback_encoding, self.jsonl_field = config.fallback_encoding, config.jsonl_field

    def setup(self):
        self.inc = beam_counter(NAMESPACE)

    def process(self, path: str):
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
                for document in input_formats.read_documents(
                    path, raw, self.format, fallback_encoding=self.fallback_encoding,
                    jsonl_field=self.jsonl_field, on_error=self.on_error, inc=self.inc,
                ):
                    yield document_key(path, document.doc_id), document.format, document.text
            self.inc("files_read", 1)
        except _READ_ERRORS as error:
            reason = input_formats.describe_error(error, path)
            if self.on_error == "fail":
                raise StageError(f"{path}: {reason}") from None
            self.inc("skipped_bad_file", 1)
            yield beam.pvalue.TaggedOutput(BAD_FILES, {"file": path, "reason": reason})


class CleanDocuments(beam.DoFn):
    """(key, format, text) -> (key, normalised paragraphs); documents left empty are counted."""

    def __init__(self, form: text_cleaning.UnicodeForm):
        self.form = form

    def setup(self):
        self.inc = beam_counter(NAMESPACE)

    def process(self, element):
        key, fmt, text = element
        paragraphs = clean_paragraphs(fmt, text, self.form)
        if not paragraphs:
            self.inc("skipped_empty", 1)
            return
        yield key, paragraphs


class SmallestWithCount(beam.CombineFn):
    """(smallest element, number of elements): keeps the duplicate with the smallest key."""

    def create_accumulator(self):
        return None, 0

    def add_input(self, accumulator, element):
        best, count = accumulator
        return (element if best is None or element < best else best), count + 1

    def merge_accumulators(self, accumulators):
        best, total = None, 0
        for candidate, count in accumulators:
            total += count
            if candidate is not None and (best is None or candidate < best):
                best = candidate
        return best, total

    def extract_output(self, accumulator):
        return accumulator


class KeepFirstDocument(beam.DoFn):
    def setup(self):
        self.inc = beam_counter(NAMESPACE)

    def process(self, element):
        _, (document, count) = element
        if count > 1:
            self.inc("skipped_duplicate_document", count - 1)
        yield document


class DropRepeatedParagraphs(beam.DoFn):
    """(key, {doc: [paragraphs], drop: [indices]}) -> (key, paragraphs without the repeats)."""

    def setup(self):
        self.inc = beam_counter(NAMESPACE)

    def process(self, element):
        key, grouped = element
        for paragraphs in grouped["doc"]:
            drop = set(grouped["drop"])
            if drop:
                self.inc("paragraphs_duplicate", len(drop))
                paragraphs = tuple(p for i, p in enumerate(paragraphs) if i not in drop)
            if not paragraphs:
                self.inc("skipped_empty", 1)
                continue
            yield key, paragraphs


class SegmentDocuments(beam.DoFn):
    """(key, paragraphs) -> (key, document block bytes); short documents are counted and dropped."""

    def __init__(self, max_sentence_chars: int, min_document_chars: int):
        self.max_sentence_chars, self.min_document_chars = max_sentence_chars, min_document_chars

    def setup(self):
        self.inc = beam_counter(NAMESPACE)
        self.splitter = text_cleaning.SentenceSplitter(self.max_sentence_chars)

    def process(self, element):
        key, paragraphs = element
        sentences = [s for paragraph in paragraphs for s in self.splitter.split(paragraph, self.inc)]
        characters = sum(len(sentence) for sentence in sentences)
        self.inc("sentences_in", len(sentences))
        if characters < self.min_document_chars or not sentences:
            self.inc("skipped_too_short", 1)
            return
        self.inc("documents_out", 1)
        self.inc("sentences_out", len(sentences))
        self.inc("characters_out", characters)
        yield key, text_cleaning.document_block(sentences).encode("utf-8")


def _repeated_paragraphs(documents, min_chars: int):
    """(doc key, paragraph index) of every repeat of a paragraph after its first occurrence by key."""

    def references(element):
        key, paragraphs = element
        for index, paragraph in enumerate(paragraphs):
            if len(paragraph) >= min_chars:
                yield text_cleaning.paragraph_hash(paragraph), (key, index)

    return (
        documents
        | "ParagraphRefs" >> beam.FlatMap(references)
        | "GroupParagraphs" >> beam.GroupByKey()
        | "AllButFirst" >> beam.FlatMap(lambda kv: sorted(kv[1])[1:])
    )


def _write_json(items: list, path: str) -> None:
    with FileSystems.create(path) as handle:
        handle.write(json.dumps(sorted(items, key=lambda item: item["file"])).encode("utf-8"))


def build_pipeline(pipeline: beam.Pipeline, paths: list[str], config: SegmentConfig, output_dir: str):
    """Add the segmentation transforms to `pipeline`, writing shards into `output_dir`."""
    read = (
        pipeline
        | "Files" >> beam.Create(paths)
        | "SpreadFiles" >> beam.Reshuffle()
        | "Read" >> beam.ParDo(ReadFiles(config)).with_outputs(BAD_FILES, main="documents")
    )
    _ = (
        read[BAD_FILES]
        | "BadFileList" >> beam.combiners.ToList()
        | "WriteBadFiles" >> beam.Map(_write_json, fileio.join(output_dir, "_bad_files.json"))
    )
    documents = (
        read.documents
        | "SpreadDocuments" >> beam.Reshuffle()
        | "Clean" >> beam.ParDo(CleanDocuments(config.unicode_form))
    )
    unique = (
        documents
        | "ByContent" >> beam.Map(lambda kv: (text_cleaning.content_hash(kv[1]), kv))
        | "SmallestKey" >> beam.CombinePerKey(SmallestWithCount())
        | "KeepFirst" >> beam.ParDo(KeepFirstDocument())
    )
    repeats = _repeated_paragraphs(unique, config.min_dedup_paragraph_chars)
    _ = (
        {"doc": unique, "drop": repeats}
        | "JoinRepeats" >> beam.CoGroupByKey()
        | "DropRepeats" >> beam.ParDo(DropRepeatedParagraphs())
        | "Segment" >> beam.ParDo(SegmentDocuments(config.max_sentence_chars, config.min_document_chars))
        | "Write" >> WriteShards(fileio.join(output_dir, "part"), config.num_shards, ".txt")
    )


def stage_error_message(error: BaseException) -> str:
    """The `path: reason` a DoFn raised, recovered from the runner's wrapped exception."""
    if isinstance(error, StageError):
        return re.sub(r"\s*\[while running '[^']*'\]$", "", str(error))
    found = re.findall(r"StageError: (.+?)(?: \[while running '[^']*'\])?$", str(error), re.MULTILINE)
    if found:
        return found[-1].strip()
    first_line = (str(error).strip().splitlines() or [""])[0]
    return f"pipeline failed: {type(error).__name__}: {first_line}"


def summarize(counters: dict[str, int], bad_files: list[dict], paths: list[str], shards: list[str]) -> dict:
    """stats.json: figures from the Beam counters, a count per skip reason, the bad files."""
    figures = (
        "documents_in", "documents_out", "sentences_in", "sentences_out", "characters_in",
        "characters_out", "bytes_in", "paragraphs_duplicate", "sentences_cut",
        "lines_fallback_encoding", "lines_cut", "documents_cut", "files_read",
    )
    stats: dict = {"input_files": len(paths)}
    stats.update({name: counters.get(name, 0) for name in figures})
    stats["formats"] = {
        name.removeprefix("files_"): value
        for name, value in counters.items()
        if name in ("files_wikipedia", "files_books", "files_text", "files_jsonl")
    }
    stats["skipped"] = {reason: counters.get(f"skipped_{reason}", 0) for reason in SKIP_REASONS}
    stats["bad_files"] = bad_files
    stats["shards"] = shards
    return stats


def run(config: SegmentConfig, beam_args: list[str] | None = None) -> dict:
    """Segment the inputs into `config.output`; returns the stats also written to stats.json.

    Raises StageError naming the file and reason for bad input (on_error='fail') or a pattern that
    matches nothing; the output directory is then left absent.
    """
    paths = match_inputs(config.input)
    options = pipeline_options(beam_args)
    with fileio.atomic_output_dir(config.output) as output_dir:
        pipeline = beam.Pipeline(options=options)
        build_pipeline(pipeline, paths, config, output_dir)
        try:
            result = pipeline.run()
            result.wait_until_finish()
        except Exception as error:  # the runner wraps what a DoFn raised, or re-raises it with a suffix
            raise StageError(stage_error_message(error)) from error
        counters = counter_totals(result, NAMESPACE)
        bad_files_path = fileio.join(output_dir, "_bad_files.json")
        with fileio.open_file(bad_files_path, "rb") as handle:
            bad_files = json.loads(handle.read())
        fileio.remove(bad_files_path)
        shards = sorted(
            posixpath.basename(m.path)
            for m in FileSystems.match([fileio.join(output_dir, "part-*.txt")])[0].metadata_list
        )
        stats = summarize(counters, bad_files, paths, shards)
        check_not_empty(stats)
        with fileio.open_file(fileio.join(output_dir, "stats.json"), "w", encoding="utf-8") as handle:
            handle.write(json.dumps(stats, indent=2, sort_keys=True) + "\n")
    return stats


def main(argv=None, prog="python -m pipelines.segment") -> int:
    return stage_main(SegmentConfig, run, argv, prog=prog, description=__doc__, beam=True)


if __name__ == "__main__":
    sys.exit(main())
