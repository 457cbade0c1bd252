"""Turn Wikipedia dumps, books, plain text and JSONL into sentence-segmented documents.

Output: `OUTPUT/part-NNNNN-of-NNNNN.txt` in the BERT/ALBERT pretraining input format (one sentence
per line, a blank line after each document) and `OUTPUT/stats.json` (documents, sentences and
characters in and out, a count per skip reason, the bad files, a sentence-length histogram and
warnings), computed and written by the pipeline itself. The same input gives byte-identical files
whatever the runner or number of workers.

Pipeline: match files -> read each file streaming (one DoFn per file) -> spread documents over the
workers -> wikitext/book/text to paragraphs, each repaired (ftfy) and normalised -> cleaning
(pipelines.quality: language identification, line and document quality rules, a reference model
of the run's good text judging what a format or repetition rule would remove, personal data
replaced; the removed and those the model kept audited in quality_removed.jsonl) -> drop
exact-duplicate documents (smallest key kept) -> drop near-duplicate documents
(pipelines.dedup.near; one per cluster kept, audited in near_duplicates.jsonl, signatures of the
kept in near_dup_signatures*) -> drop repeated paragraphs (first occurrence by key kept) -> split
sentences -> drop short documents and those with no word -> deterministic shards.
Spreading and the de-duplications group through sorted spill files (pipelines.common.spill), so
memory stays bounded on the in-process runner too.
"""

from __future__ import annotations

import logging
import posixpath
import zlib

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from albert.errors import StageError
from albert.fs import join
from albert.hashing import stable_hash
from albert.stage import stage_main
from pipelines.common import spill, text_cleaning
from pipelines.common.runner import COUNTS, CountingDoFn, WriteSummary, counted, run_stage
from pipelines.common.shards import WriteShards
from pipelines.dedup import near as near_dedup
from pipelines.dedup.exact import DropDuplicateDocuments, DropRepeatedParagraphs
from pipelines.quality import transform as quality_transform
from pipelines.quality.repair import repair_text
from pipelines.segment import input_formats, input_streams
from pipelines.segment.config import SegmentConfig, match_inputs
from pipelines.segment.stats import STATS_FILE, check_not_empty, sentence_length_counts, write_stats

logger = logging.getLogger(__name__)

NAMESPACE = "segment"
BAD_FILES = "bad_files"
DOCUMENT_KEY_BYTES = 8
_READ_ERRORS = (input_streams.BadInput, OSError, EOFError, zlib.error)


def document_key(path: str, doc_id: str) -> bytes:
    """Stable 8-byte key of a document: its file's base name and its id within the file."""
    name = posixpath.basename(path.rstrip("/"))
    return stable_hash(f"{name}\x00{doc_id}".encode()).to_bytes(DOCUMENT_KEY_BYTES, "big")


def document_source(path: str, doc_id: str) -> str:
    """`name#id` of a document: its file's base name and its id within the file (the audit's)."""
    return f"{posixpath.basename(path.rstrip('/'))}#{doc_id}"


def clean_paragraphs(fmt: str, text: str, form: text_cleaning.UnicodeForm) -> tuple[str, ...]:
    """Normalised, non-empty paragraphs of one raw document."""
    return document_paragraphs(fmt, text, form, repair=False)[0]


def document_paragraphs(
    fmt: str, text: str, form: text_cleaning.UnicodeForm, repair: bool
) -> tuple[tuple[str, ...], bool]:
    """(normalised, non-empty paragraphs of one raw document, each raw paragraph repaired by
    ftfy first where `repair`; whether the repair changed any)."""
    raw = input_formats.raw_paragraphs(input_formats.RawDocument(fmt, "", text))
    repaired = [repair_text(paragraph) for paragraph in raw] if repair else raw
    normalised = (text_cleaning.normalize_text(paragraph, form) for paragraph in repaired)
    return tuple(paragraph for paragraph in normalised if paragraph), repaired != raw


def has_word(text: str) -> bool:
    """Whether `text` holds a word: a letter or a digit in any script (punctuation is none)."""
    return any(character.isalnum() for character in text)


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
                    key = document_key(path, document.doc_id)
                    yield (
                        key,
                        document.format,
                        document_source(path, document.doc_id),
                        document.text,
                    )
            self.inc("files_read", 1)
        except _READ_ERRORS as error:
            reason = input_streams.describe_error(error, path)
            if self.on_error == "fail":
                raise StageError(f"{path}: {reason}") from None
            self.inc("skipped_bad_file", 1)
            yield beam.pvalue.TaggedOutput(BAD_FILES, {"file": path, "reason": reason})


class CleanDocuments(CountingDoFn):
    """(key, format, source, text) -> (key, format, source, normalised paragraphs), each raw
    paragraph repaired before its normalisation where `repair` (a document changed is counted as
    quality_repaired); documents left empty are counted."""

    def __init__(self, form: text_cleaning.UnicodeForm, repair: bool):
        super().__init__(NAMESPACE)
        self.form, self.repair = form, repair

    def process(self, element):
        key, fmt, source, text = element
        paragraphs, repaired = document_paragraphs(fmt, text, self.form, self.repair)
        if repaired:
            self.inc("quality_repaired", 1)
        if not paragraphs:
            self.inc("skipped_empty", 1)
            return
        yield key, fmt, source, paragraphs


class SegmentDocuments(CountingDoFn):
    """(key, paragraphs) -> (key, document block bytes); short documents (under
    `min_document_chars` in `text_cleaning.latin_equivalent_length`) are counted and dropped."""

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
        if not sentences or (
            characters < self.min_document_chars
            and sum(map(text_cleaning.latin_equivalent_length, sentences)) < self.min_document_chars
        ):
            self.inc("skipped_too_short", 1)
            return
        if not any(has_word(sentence) for sentence in sentences):
            self.inc("skipped_no_words", 1)
            return
        self.inc("documents_out", 1)
        self.inc("sentences_out", len(sentences))
        self.inc("characters_out", characters)
        for bucket, count in sentence_length_counts(sentences).items():
            self.inc(bucket, count)
        yield key, text_cleaning.document_block(sentences).encode("utf-8")


def raw_document_pair(element) -> tuple[bytes, bytes]:
    """(key, format, source, text) -> (key, format NUL source NUL text), for spreading documents
    over workers."""
    key, fmt, source, text = element
    return key, b"\x00".join(
        (
            fmt.encode(),
            source.encode("utf-8", "surrogatepass"),
            text.encode("utf-8", "surrogatepass"),
        )
    )


def raw_documents(pairs, inc):
    """The inverse of raw_document_pair, for a partition's sorted pairs."""
    for key, payload in pairs:
        fmt, source, text = payload.split(b"\x00", 2)
        yield (
            key,
            fmt.decode(),
            source.decode("utf-8", "surrogatepass"),
            text.decode("utf-8", "surrogatepass"),
        )


def build_pipeline(
    pipeline: beam.Pipeline,
    paths: list[str],
    config: SegmentConfig,
    output_dir: str,
    reference_paths: list[str] | None = None,
):
    """Add the segmentation transforms to `pipeline`, writing shards and stats.json into
    `output_dir`; the cleaning step's reference model learns the files `reference_paths` (None:
    `config.reference_text` matched)."""
    if reference_paths is None:
        reference_paths = match_inputs(config.reference_text) if config.reference_text else []
    counts: list = []
    run_dirs = [
        join(output_dir, f"_{name}-runs")
        for name in ("spread", "documents", "paragraphs", "repeats", "buckets", "pairs", "removals")
    ]
    read = (
        pipeline
        | "Files" >> beam.Create(paths)  # path; spread over the workers by Create's reshuffle
        | "Read" >> beam.ParDo(ReadFiles(config)).with_outputs(BAD_FILES, COUNTS, main="documents")
    )
    counts.append(read[COUNTS])
    spread = (
        read.documents  # key, format, text
        | "RawPairs" >> beam.Map(raw_document_pair)  # key, format NUL text
        | "SpreadDocuments"
        >> spill.MergeSorted(
            run_dirs[0],
            raw_documents,
            group_bytes=DOCUMENT_KEY_BYTES,
            counts=counts,
            namespace=NAMESPACE,
        )  # key, format, text
    )
    documents = counted(
        spread,
        "Clean",
        CleanDocuments(config.unicode_form, config.quality and config.repair_text),
        counts,
    )  # key, format, source, paragraphs
    documents, quality_outputs = quality_transform.apply(
        documents, config, output_dir, counts, NAMESPACE, reference_paths
    )  # key, paragraphs; the stats writer's cleaning arguments
    unique = documents | "DropDuplicateDocuments" >> DropDuplicateDocuments(
        run_dirs[1:2], counts, NAMESPACE
    )  # key, paragraphs
    unique, near_duplicates = near_dedup.apply(
        unique, config, run_dirs[4:], output_dir, config.num_shards, counts, NAMESPACE
    )  # key, paragraphs; the stats writer's near-duplicate arguments
    kept = unique | "DropRepeatedParagraphs" >> DropRepeatedParagraphs(
        config.min_dedup_paragraph_chars, run_dirs[2:4], counts, NAMESPACE
    )  # key, paragraphs
    segmented = counted(
        kept,
        "Segment",
        SegmentDocuments(config.max_sentence_chars, config.min_document_chars),
        counts,
    )  # key, document block (UTF-8)
    shards = segmented | "Write" >> WriteShards(
        join(output_dir, "part"), config.num_shards, ".txt"
    )  # shard path
    _ = pipeline | "WriteStats" >> WriteSummary(
        write_stats,
        counts,
        bad_files=beam.pvalue.AsList(read[BAD_FILES]),  # {"file", "reason"}
        shards=beam.pvalue.AsList(shards),
        **near_duplicates,
        **quality_outputs,
        paths=paths,
        output_dir=output_dir,
        run_dirs=run_dirs,
    )


def run(config: SegmentConfig, beam_args: list[str] | None = None) -> dict:
    """Segment the inputs into `config.output`; returns the stats the pipeline wrote to stats.json.

    Raises StageError naming the file and reason for bad input (on_error='fail') or a pattern that
    matches nothing; the output directory is then left absent.
    """
    paths = match_inputs(config.input)
    references = match_inputs(config.reference_text) if config.reference_text else []
    stats = run_stage(
        config.output,
        beam_args,
        lambda pipeline, output_dir: build_pipeline(
            pipeline, paths, config, output_dir, references
        ),
        STATS_FILE,
        check=check_not_empty,
    )
    for warning in stats["warnings"]:
        logger.warning("%s: %s", config.output, warning)
    return stats


def main(argv=None, prog="python -m pipelines.segment") -> int:
    return stage_main(SegmentConfig, run, argv, prog=prog, description=__doc__, beam=True)
