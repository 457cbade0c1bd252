"""Pretraining TFRecords from a segmented corpus: SOP/NSP pairs with whole-word n-gram masking.

Reads the segmented corpus format (one sentence per line, a blank line between documents) and writes
`OUTPUT/data-0000i-of-0000N.tfrecord` in google-research/albert's format plus `OUTPUT/metadata.json`.
Deterministic: every random choice is seeded from (seed, document key, dupe index), so the output is
byte-identical for any runner and worker count; instances are shuffled across shards by a hash.

Held-out documents: whole documents, chosen by a stable hash of their text (independent of the seed,
so every run on the same corpus holds out the same documents), go to `OUTPUT/heldout-*.tfrecord` and
never into the training shards. A document is held out when its hash is below a cutoff: the
`heldout_fraction` quantile of the hash space, raised if needed so that at least
`heldout_min_documents` documents are held out (while at least one is left for training).
`heldout-documents-*.txt` lists them (hash, key), and metadata.json's `heldout` block names the files.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from typing import Literal

import apache_beam as beam
import numpy as np
from pydantic import Field, model_validator

from albert import masking
from albert import pretraining_example as features
from albert.config import StageConfig
from albert.errors import StageError
from albert.fs import exists, expand_files, join, open_file
from albert.hashing import stable_hash
from albert.outputs import atomic_output_dir
from albert.stage import stage_main
from albert.tokenization import AlbertTokenizer
from pipelines import instances, spill
from pipelines.runner import CountingDoFn, counted, pipeline_options, run_pipeline, sum_counts
from pipelines.shards import WriteShards

logger = logging.getLogger(__name__)

NAMESPACE = "tfrecords"
FORMAT = "albert-pretraining-tfrecord-v1"
METADATA_FILE = "metadata.json"


class TFRecordsConfig(StageConfig):
    input: str = Field(
        description="segmented corpus: a directory of *.txt[.gz|.bz2] shards, a file or a glob"
    )
    spm_model: str = Field(
        description="SentencePiece model (ALBERT special ids: <pad> <unk> [CLS] [SEP] [MASK])"
    )
    output: str = Field(description="output directory for *.tfrecord shards and metadata.json")
    max_seq_length: int = Field(
        512, ge=5, description="tokens per instance incl. [CLS] and two [SEP]"
    )
    max_predictions_per_seq: int = Field(20, ge=1, description="most masked positions per instance")
    masked_lm_prob: float = Field(0.15, ge=0, le=1, description="fraction of tokens to mask")
    ngram: int = Field(3, ge=1, description="longest masked n-gram, in whole words")
    favor_shorter_ngram: bool = Field(
        True, description="draw n with p ~ 1/n (else p ~ 1/(ngram+1-n))"
    )
    dupe_factor: int = Field(
        40, ge=1, description="passes over the corpus with different masks (static only)"
    )
    short_seq_prob: float = Field(
        0.1, ge=0, le=1, description="probability of a shorter random target length"
    )
    seed: int = Field(12345, ge=0, description="seed of every random choice")
    objective: Literal["sop", "nsp"] = Field(
        "sop", description="sentence-order (ALBERT) or next-sentence (BERT)"
    )
    masking: Literal["static", "dynamic"] = Field(
        "static",
        description="static: masks written, dupe_factor passes; dynamic: one pass, masked at training",
    )
    do_lower_case: bool = Field(
        True, description="lowercase before tokenizing (must match the vocabulary)"
    )
    num_shards: int = Field(
        64,
        ge=1,
        description="output shards (written by merging sorted runs from disk, memory stays flat)",
    )
    nsp_bucket_documents: int = Field(
        256,
        ge=2,
        description="NSP only: documents per bucket that random B segments are drawn from",
    )
    heldout_fraction: float = Field(
        0.05,
        ge=0,
        le=1,
        description="fraction of documents held out whole (by a stable hash of their text); 1 = all",
    )
    heldout_min_documents: int = Field(
        2, ge=0, description="hold out at least this many documents (the hash-smallest ones)"
    )

    @model_validator(mode="after")
    def _predictions_fit_the_sequence(self) -> TFRecordsConfig:
        room = self.max_seq_length - SPECIAL_TOKENS
        if self.max_predictions_per_seq > room:
            raise ValueError(
                f"max_predictions_per_seq={self.max_predictions_per_seq} is more than a sequence can hold: "
                f"max_seq_length={self.max_seq_length} leaves {room} maskable tokens after [CLS] and two [SEP]"
            )
        return self


HASH_SPACE = 1 << 63
HELDOUT_PREFIX = "heldout"
HELDOUT_LIST_PREFIX = "heldout-documents"


def document_hash(lines: list[str]) -> int:
    """The stable 63-bit hash of a document's text (its segmented lines, UTF-8); 63 bits so that
    Beam encodes it as a signed 64-bit integer."""
    return text_hash("".join(lines).encode("utf-8"))


def text_hash(text: bytes) -> int:
    """`document_hash` of a document whose lines, joined, are `text` (UTF-8)."""
    return stable_hash(b"document:" + text) >> 1


def heldout_cutoff(smallest: list[int], count: int, fraction: float, min_documents: int) -> int:
    """The hash below which a document is held out, from the corpus's `min_documents` smallest
    document hashes (sorted or not) and its document count: the `fraction` quantile of the hash
    space, raised to take in the `min_documents` smallest hashes while one document stays in training."""
    cutoff = HASH_SPACE if fraction >= 1 else int(fraction * HASH_SPACE)
    needed = min(min_documents, count - 1)
    if needed > 0:
        cutoff = max(cutoff, sorted(smallest)[needed - 1] + 1)
    return cutoff


SPECIAL_TOKENS = 3
"""[CLS] A [SEP] B [SEP]: the tokens of an instance that are not text."""

TRUNCATION_NOTE_FRACTION = 0.10


def truncation(config: TFRecordsConfig, counts: dict[str, int]) -> dict | None:
    """How much of the corpus's text the instances leave out (text beyond `max_seq_length` is cut):
    metadata.json's `truncation` block, `{max_seq_length, passes, corpus_tokens, dropped_tokens,
    dropped_fraction}` (corpus tokens counted once per pass); None for NSP (no exact count)."""
    passes = config.dupe_factor if config.masking == "static" else 1
    corpus = counts.get("document_tokens", 0) * passes
    kept = counts.get("tokens", 0) - SPECIAL_TOKENS * counts.get("instances", 0)
    if not corpus or config.objective != "sop":
        return None
    dropped = max(0, corpus - kept)
    return {
        "max_seq_length": config.max_seq_length,
        "passes": passes,
        "corpus_tokens": corpus,
        "dropped_tokens": dropped,
        "dropped_fraction": dropped / corpus,
    }


def truncation_note(config: TFRecordsConfig, cut: dict | None) -> tuple[int, str] | None:
    """(log level, message) when the instances leave out 10% or more of the corpus's text: a warning
    when --max-seq-length is the user's choice (a field they set), information when it is a
    default (the run report shows the figure either way); None below 10%."""
    if not cut or cut["dropped_fraction"] < TRUNCATION_NOTE_FRACTION:
        return None
    chosen = "max_seq_length" in config.model_fields_set
    length = config.max_seq_length
    return logging.WARNING if chosen else logging.INFO, (
        f"{config.input}: --max-seq-length {length} dropped {cut['dropped_fraction']:.0%} of the "
        f"corpus's tokens ({cut['dropped_tokens']:,} of {cut['corpus_tokens']:,} over "
        f"{cut['passes']} pass(es)): text beyond {length - SPECIAL_TOKENS} pieces per instance is "
        "truncated; raise --max-seq-length"
    )


def few_documents_note(documents: int, heldout: int, min_documents: int) -> str | None:
    """One line when the corpus has fewer documents than `min_documents` (--heldout-min-documents):
    the counts and what the held-out split then measures; None otherwise."""
    if documents >= min_documents:
        return None
    scored = "that document" if heldout == 1 else "those documents"
    meaning = (
        "nothing is held out, so there are no held-out figures"
        if not heldout
        else f"held-out figures score {scored} only, not a sample of the corpus"
    )
    return (
        f"the corpus yields {documents} document{'s' if documents != 1 else ''}, fewer than "
        f"--heldout-min-documents {min_documents}: {heldout} held out whole, "
        f"{documents - heldout} trained on; {meaning} (split it into more documents: "
        "docs/segment.md)"
    )


def document_rng(seed: int, doc_hash: int, dupe: int) -> np.random.Generator:
    """The generator of every random choice for one document in one dupe pass."""
    return np.random.Generator(np.random.PCG64([seed, doc_hash, dupe]))


def instance_sort_key(seed: int, doc_key: bytes, dupe: int, index: int) -> bytes:
    """A stable pseudo-random key: shuffles instances globally across and within shards."""
    return (
        stable_hash(b"%d\x00%s\x00%d\x00%d" % (seed, doc_key, dupe, index)).to_bytes(8, "big")
        + doc_key
    )


def read_documents(path: str) -> Iterator[tuple[bytes, list[str]]]:
    """(key, lines) per document of a segmented file; the key is '<file name>:<document index>'."""
    name = os.path.basename(path)
    lines: list[str] = []
    index = 0
    try:
        with open_file(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    lines.append(line)
                elif lines:
                    yield f"{name}:{index}".encode(), lines
                    lines, index = [], index + 1
    except UnicodeDecodeError as error:
        raise StageError(f"{path}: not UTF-8 text ({error.reason} in document {index})") from None
    if lines:
        yield f"{name}:{index}".encode(), lines


class InstanceWriter:
    """Pure per-document work: tokenize, build instances, mask, serialize (no Beam here; thread-safe)."""

    def __init__(self, config: TFRecordsConfig, inc=lambda name, amount=1: None):
        self.config, self.inc = config, inc
        self.tokenizer = AlbertTokenizer(config.spm_model, do_lower_case=config.do_lower_case)
        vocab = self.tokenizer.sp.id_to_piece(list(range(self.tokenizer.vocab_size)))
        self.start_table = masking.start_piece_table(vocab)
        self.start_table[[self.tokenizer.cls_id, self.tokenizer.sep_id]] = True
        self.options = masking.MaskingOptions.for_vocabulary(
            self.tokenizer.vocab_size,
            self.tokenizer.is_control,
            masked_lm_prob=config.masked_lm_prob,
            max_predictions_per_seq=config.max_predictions_per_seq,
            ngram=config.ngram,
            favor_shorter_ngram=config.favor_shorter_ngram,
            mask_id=self.tokenizer.mask_id,
        )

    @property
    def dupes(self) -> int:
        return self.config.dupe_factor if self.config.masking == "static" else 1

    def encode(self, lines: list[str]) -> list[np.ndarray]:
        sentences = instances.encode_sentences(self.tokenizer, lines)
        self.inc("documents")
        self.inc("sentences", len(sentences))
        self.inc("document_tokens", sum(len(s) for s in sentences))
        return sentences

    def examples(
        self, doc_key: bytes, document, dupe: int, random_document=None
    ) -> Iterator[tuple[bytes, bytes]]:
        """(sort key, serialized example) of every instance of one document in one dupe pass."""
        config = self.config
        rng = document_rng(config.seed, stable_hash(doc_key), dupe)
        created = instances.create_instances(
            document,
            rng,
            max_seq_length=config.max_seq_length,
            short_seq_prob=config.short_seq_prob,
            objective=config.objective,
            random_document=random_document,
            cls_id=self.tokenizer.cls_id,
            sep_id=self.tokenizer.sep_id,
            inc=self.inc,
        )
        ngram_counts = np.zeros(config.ngram + 1, dtype=np.int64)
        num_instances = num_tokens = num_masked = num_label_1 = 0
        for index, instance in enumerate(created):
            boundary = self.start_table[instance.input_ids]
            if config.masking == "static":
                masked_ids, positions, labels = masking.mask_instance(
                    instance.input_ids, boundary, rng, self.options, ngram_counts
                )
            else:
                masked_ids, positions, labels = instance.input_ids, (), ()
            example = features.encode_example(
                masked_ids,
                instance.segment_ids,
                boundary,
                positions,
                labels,
                instance.label,
                config.max_seq_length,
                config.max_predictions_per_seq,
            )
            num_instances += 1
            num_tokens += len(instance.input_ids)
            num_masked += len(positions)
            num_label_1 += instance.label
            yield instance_sort_key(config.seed, doc_key, dupe, index), example
        self.inc("instances", num_instances)
        self.inc("tokens", num_tokens)
        self.inc("masked_tokens", num_masked)
        self.inc("label_1", num_label_1)
        for n in range(1, config.ngram + 1):
            if ngram_counts[n]:
                self.inc(f"masked_ngrams_{n}", int(ngram_counts[n]))


class _WriterDoFn(CountingDoFn):
    """A DoFn with an InstanceWriter (tokenizer, tables) made once per DoFn instance, counting into it."""

    def __init__(self, config: TFRecordsConfig):
        super().__init__(NAMESPACE)
        self.config = config

    def setup(self):
        self.writer = InstanceWriter(self.config, self.inc)


class ReadDocuments(beam.DoFn):
    """path -> (key, text) of each document, its lines joined (the spread's payload)."""

    def process(self, path: str):
        for key, lines in read_documents(path):
            yield key, "".join(lines).encode("utf-8")


def spread_documents(pairs, inc, cutoff: int) -> Iterator[tuple[int, bytes, list[str], bool]]:
    """(document hash, key, lines, held out?) of a partition's documents, after the spread over
    workers; a document is held out when its hash is below `cutoff`."""
    for key, text in pairs:
        doc_hash = text_hash(text)
        yield doc_hash, key, text.decode("utf-8").splitlines(keepends=True), doc_hash < cutoff


def pair_hash(pair: tuple[bytes, bytes]) -> int:
    return text_hash(pair[1])


def held_out_or_not(document: tuple[int, bytes, list[str], bool], partitions: int) -> int:
    """beam.Partition: 1 for a held-out document, 0 for a training one."""
    return int(document[3])


def without_split_flag(
    document: tuple[int, bytes, list[str], bool],
) -> tuple[int, bytes, list[str]]:
    return document[:3]


def heldout_list_line(document: tuple[int, bytes, list[str]]) -> tuple[bytes, bytes]:
    """(sort key, line) of the held-out documents' list: '<hash as 16 hex digits>\t<document key>'."""
    doc_hash, doc_key, _ = document
    line = b"%016x\t%s\n" % (doc_hash, doc_key)
    return line, line


class SopExamples(_WriterDoFn):
    """(hash, key, lines) -> (sort key, example) for every dupe pass; documents with no tokens are
    counted."""

    def process(self, element):
        _, doc_key, lines = element
        sentences = self.writer.encode(lines)
        if not sentences:
            self.writer.inc("empty_documents")
        for dupe in range(self.writer.dupes if sentences else 0):
            yield from self.writer.examples(doc_key, sentences, dupe)


class EncodeDocuments(_WriterDoFn):
    """(hash, key, lines) -> (key, packed sentence ids); documents with no tokens are dropped and counted."""

    def process(self, element):
        _, doc_key, lines = element
        sentences = self.writer.encode(lines)
        if sentences:
            yield doc_key, instances.pack_document(sentences)
        else:
            self.writer.inc("empty_documents")


class NspExamples(_WriterDoFn):
    """One bucket of documents of one dupe pass; random B segments come from the bucket's others."""

    def process(self, element):
        (dupe, _), members = element
        members = sorted(members)
        documents = [instances.unpack_document(packed) for _, packed in members]
        if len(members) == 1:
            self.writer.inc("nsp_same_document_b")
        for index, (doc_key, _) in enumerate(members):
            others = [doc for j, doc in enumerate(documents) if j != index] or documents

            def random_document(rng, others=others):
                return others[int(rng.integers(len(others)))]

            yield from self.writer.examples(doc_key, documents[index], dupe, random_document)


def nsp_buckets(document: tuple[bytes, bytes], count: int, config: TFRecordsConfig):
    """Key a document by (dupe, bucket) for every dupe pass; buckets hold ~nsp_bucket_documents docs."""
    doc_key, packed = document
    num_buckets = max(1, count // config.nsp_bucket_documents)
    for dupe in range(config.dupe_factor if config.masking == "static" else 1):
        bucket = stable_hash(b"%d\x00%d\x00%s" % (config.seed, dupe, doc_key)) % num_buckets
        yield (dupe, bucket), (doc_key, packed)


def input_files(pattern: str) -> list[str]:
    """The corpus files: every *.txt[.gz|.bz2] of a directory, or a file or glob."""
    return expand_files(pattern, ("*.txt", "*.txt.gz", "*.txt.bz2"))


def load_tokenizer(config: TFRecordsConfig) -> AlbertTokenizer:
    """The tokenizer, with a StageError naming the model file when it is missing or not ALBERT's."""
    if not exists(config.spm_model):
        raise StageError(f"{config.spm_model}: SentencePiece model not found")
    try:
        return AlbertTokenizer(config.spm_model, do_lower_case=config.do_lower_case)
    except ValueError as error:
        raise StageError(f"{config.spm_model}: unusable SentencePiece model: {error}") from None
    except (RuntimeError, OSError) as error:
        raise StageError(f"{config.spm_model}: cannot load SentencePiece model: {error}") from None


class CountElements(CountingDoFn):
    """A pass-through that counts its elements as `name`."""

    def __init__(self, name: str):
        super().__init__(NAMESPACE)
        self.name = name

    def process(self, element):
        self.inc(self.name)
        yield element


def build_examples(documents, config: TFRecordsConfig, label: str, counts: list):
    """(sort key, example) pairs of one split's documents; NSP draws random B segments within it."""
    if config.objective == "sop":
        return counted(documents, f"SopExamples{label}", SopExamples(config), counts)
    encoded = counted(documents, f"Encode{label}", EncodeDocuments(config), counts)
    count = encoded | f"CountDocuments{label}" >> beam.combiners.Count.Globally()
    return counted(
        encoded
        | f"Bucket{label}"
        >> beam.FlatMap(nsp_buckets, count=beam.pvalue.AsSingleton(count), config=config)
        | f"GroupBuckets{label}" >> beam.GroupByKey(),
        f"NspExamples{label}",
        NspExamples(config),
        counts,
    )


def build_pipeline(
    pipeline: beam.Pipeline, files: list[str], config: TFRecordsConfig, output_dir: str
):
    """Training shards `data-*`, held-out shard `heldout-*`, the held-out documents' list and
    metadata.json (counts summed in the pipeline)."""
    counts: list = []
    pairs = (
        pipeline | "Files" >> beam.Create(files) | "ReadDocuments" >> beam.ParDo(ReadDocuments())
    )
    # The held-out cutoff comes from the documents' hashes alone, and the spread's reduce applies it:
    # the only main input waiting for that side input is the spill's run paths, never the corpus.
    hashes = pairs | "Hashes" >> beam.Map(pair_hash)
    cutoff = beam.pvalue.AsSingleton(
        (
            hashes
            | "Smallest" >> beam.combiners.Top.Smallest(max(1, config.heldout_min_documents)),
            hashes | "Count" >> beam.combiners.Count.Globally(),
        )
        | "Together" >> beam.Flatten()
        | "Gather" >> beam.combiners.ToList()
        | "Cutoff" >> beam.Map(_cutoff_of, config)
    )
    split = (
        pairs
        | "SpreadDocuments"
        >> spill.MergeSorted(
            join(output_dir, "_spread-runs"),
            spread_documents,
            group_bytes=None,
            counts=counts,
            namespace=NAMESPACE,
            side_inputs={"cutoff": cutoff},
        )
        | "HeldOutOrNot" >> beam.Partition(held_out_or_not, 2)
    )
    train = split[0] | "Train" >> beam.Map(without_split_flag)
    heldout = counted(
        split[1] | "Heldout" >> beam.Map(without_split_flag),
        "CountHeldoutDocuments",
        CountElements("heldout_documents"),
        counts,
    )
    heldout_examples = counted(
        build_examples(heldout, config, "Heldout", counts),
        "CountHeldoutInstances",
        CountElements("heldout_instances"),
        counts,
    )
    shards = (
        build_examples(train, config, "", counts)
        | "Write"
        >> WriteShards(
            join(output_dir, "data"), config.num_shards, ".tfrecord", framing="tfrecord"
        ),
        heldout_examples
        | "WriteHeldout"
        >> WriteShards(join(output_dir, HELDOUT_PREFIX), 1, ".tfrecord", framing="tfrecord"),
    ) | "AllShards" >> beam.Flatten()
    document_list = (
        heldout
        | "HeldoutList" >> beam.Map(heldout_list_line)
        | "WriteHeldoutList" >> WriteShards(join(output_dir, HELDOUT_LIST_PREFIX), 1, ".txt")
    )
    _ = (
        pipeline
        | "MetadataTrigger" >> beam.Create([None])
        | "WriteMetadata"
        >> beam.Map(
            write_metadata,
            counts=beam.pvalue.AsSingleton(sum_counts(counts)),
            shards=beam.pvalue.AsList(shards),
            written=beam.pvalue.AsList(document_list),
            config=config,
            output_dir=output_dir,
        )
    )


def _cutoff_of(parts: list, config: TFRecordsConfig) -> int:
    """heldout_cutoff from the gathered [smallest hashes (a list), document count (an int)]."""
    smallest = next(part for part in parts if isinstance(part, list))
    count = next(part for part in parts if not isinstance(part, list))
    return heldout_cutoff(smallest, count, config.heldout_fraction, config.heldout_min_documents)


def summarize(
    config: TFRecordsConfig,
    counts: dict[str, int],
    tokenizer: AlbertTokenizer,
    shard_files: list[str],
    document_list: str,
) -> dict:
    """metadata.json: format, the facts a trainer needs at top level, feature spec, counts, statistics,
    options, the held-out split (its shard files and `document_list`, the held-out documents' list)."""
    ngram_counts = [counts.get(f"masked_ngrams_{n}", 0) for n in range(1, config.ngram + 1)]
    total_ngrams = sum(ngram_counts)
    instances_count = counts.get("instances", 0)
    return {
        "format": FORMAT,
        "max_seq_length": config.max_seq_length,
        "max_predictions_per_seq": config.max_predictions_per_seq,
        "masking": config.masking,
        "objective": config.objective,
        "masked_lm_prob": config.masked_lm_prob,
        "ngram": config.ngram,
        "favor_shorter_ngram": config.favor_shorter_ngram,
        "dupe_factor": config.dupe_factor if config.masking == "static" else 1,
        "do_lower_case": config.do_lower_case,
        "vocab_size": tokenizer.vocab_size,
        "features": features.feature_spec_json(
            config.max_seq_length, config.max_predictions_per_seq
        ),
        "counts": counts,
        "sop_label_balance" if config.objective == "sop" else "nsp_label_balance": (
            counts.get("label_1", 0) / instances_count if instances_count else None
        ),
        "masked_ngram_histogram": [c / total_ngrams for c in ngram_counts]
        if total_ngrams
        else None,
        "mean_tokens_per_instance": counts.get("tokens", 0) / instances_count
        if instances_count
        else None,
        "mean_predictions_per_instance": (
            counts.get("masked_tokens", 0) / instances_count if instances_count else None
        ),
        "truncation": truncation(config, counts),
        "spm_model_sha256": tokenizer.model_sha256,
        "options": config.model_dump(),
        "files": shard_files,
        "heldout": {
            "selection": "whole documents: sha256 of the document's text below the cutoff",
            "fraction": config.heldout_fraction,
            "min_documents": config.heldout_min_documents,
            "documents": counts.get("heldout_documents", 0),
            "instances": counts.get("heldout_instances", 0),
            "files": [name for name in shard_files if name.startswith(HELDOUT_PREFIX + "-")],
            "document_list": document_list,
            "note": few_documents_note(
                counts.get("documents", 0),
                counts.get("heldout_documents", 0),
                config.heldout_min_documents,
            ),
        },
    }


def write_metadata(
    _,
    counts: dict[str, int],
    shards: list[str],
    written: list[str],
    config: TFRecordsConfig,
    output_dir: str,
):
    """Write metadata.json from the pipeline's counts once every shard and the held-out documents'
    list (`written`) are written; no instances is an error."""
    spill.remove_run_dirs([join(output_dir, "_spread-runs")])
    if not counts.get("instances"):
        raise StageError(
            f"{config.input}: no instances: the corpus is empty ({counts.get('documents', 0)} documents, "
            f"{counts.get('document_tokens', 0)} tokens)"
        )
    tokenizer = AlbertTokenizer(config.spm_model, do_lower_case=config.do_lower_case)
    metadata = summarize(
        config,
        counts,
        tokenizer,
        sorted(os.path.basename(path) for path in shards),
        os.path.basename(written[0]),
    )
    with open_file(join(output_dir, METADATA_FILE), "w") as handle:
        json.dump(metadata, handle, indent=2, sort_keys=True)


def run(config: TFRecordsConfig, beam_args: list[str] | None = None) -> dict:
    """Write the TFRecords and metadata.json; returns the metadata (without the file list)."""
    load_tokenizer(config)
    files = input_files(config.input)
    if not files:
        raise StageError(f"{config.input}: no corpus files (expected *.txt, *.txt.gz or *.txt.bz2)")
    with atomic_output_dir(config.output) as temp_dir:
        pipeline = beam.Pipeline(options=pipeline_options(beam_args))
        build_pipeline(pipeline, files, config, temp_dir)
        run_pipeline(pipeline)
        with open_file(join(temp_dir, METADATA_FILE), "r") as handle:
            metadata = json.load(handle)
    note = truncation_note(config, metadata["truncation"])
    if note:
        logger.log(*note)
    logger.info("wrote %d instances to %s", metadata["counts"]["instances"], config.output)
    if metadata["heldout"].get("note"):
        logger.warning("%s: %s", config.input, metadata["heldout"]["note"])
    return {key: value for key, value in metadata.items() if key not in ("files", "features")}


def main(argv=None, prog="python -m pipelines.tfrecords") -> int:
    return stage_main(TFRecordsConfig, run, argv, prog=prog, description=__doc__, beam=True)


if __name__ == "__main__":
    # Run the importable module's main: DoFns are then pickled as pipelines.tfrecords.X, which worker
    # processes can import, not as __main__.X, which they cannot.
    from pipelines.tfrecords import main as importable_main

    sys.exit(importable_main())
