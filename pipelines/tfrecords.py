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

import functools
import json
import logging
import os
import sys
from collections.abc import Iterator
from typing import Literal

import apache_beam as beam
import numpy as np
from pydantic import Field

from albert import fileio
from albert.config import StageConfig
from albert.stage import StageError, stage_main
from albert.tokenization import AlbertTokenizer
from pipelines import features, instances, masking
from pipelines.runner import beam_counter, counter_totals, pipeline_options
from pipelines.shards import WriteShards, stable_hash

logger = logging.getLogger(__name__)

NAMESPACE = "tfrecords"
FORMAT = "albert-pretraining-tfrecord-v1"


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
        64, ge=1, description="output shards (a shard is held in memory when written)"
    )
    nsp_bucket_documents: int = Field(
        256,
        ge=2,
        description="NSP only: documents per bucket that random B segments are drawn from",
    )
    heldout_fraction: float = Field(
        0.05, ge=0, le=1,
        description="fraction of documents held out whole (by a stable hash of their text); 1 = all",
    )
    heldout_min_documents: int = Field(
        2, ge=0, description="hold out at least this many documents (the hash-smallest ones)"
    )


HASH_SPACE = 1 << 63
HELDOUT_PREFIX = "heldout"
HELDOUT_LIST_PREFIX = "heldout-documents"


def document_hash(lines: list[str]) -> int:
    """The stable 63-bit hash of a document's text (its segmented lines, UTF-8); 63 bits so that
    Beam encodes it as a signed 64-bit integer."""
    return stable_hash(b"document:" + "".join(lines).encode("utf-8")) >> 1


def heldout_cutoff(smallest: list[int], count: int, fraction: float, min_documents: int) -> int:
    """The hash below which a document is held out, from the corpus's `min_documents` smallest
    document hashes (sorted or not) and its document count: the `fraction` quantile of the hash
    space, raised to take in the `min_documents` smallest hashes while one document stays in training."""
    cutoff = HASH_SPACE if fraction >= 1 else int(fraction * HASH_SPACE)
    needed = min(min_documents, count - 1)
    if needed > 0:
        cutoff = max(cutoff, sorted(smallest)[needed - 1] + 1)
    return cutoff


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
        with fileio.open_file(path, "rt", encoding="utf-8") as handle:
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


@functools.lru_cache(maxsize=4)
def _shared_writer(config_json: str) -> InstanceWriter:
    """One InstanceWriter (tokenizer, tables) per process and config, shared by the DoFns."""
    return InstanceWriter(TFRecordsConfig.model_validate_json(config_json), beam_counter(NAMESPACE))


class _WriterDoFn(beam.DoFn):
    def __init__(self, config: TFRecordsConfig):
        self.config_json = config.model_dump_json()

    def setup(self):
        self.writer = _shared_writer(self.config_json)


class ReadDocuments(beam.DoFn):
    def process(self, path: str):
        for doc_key, lines in read_documents(path):
            yield document_hash(lines), doc_key, lines


def document_hash_of(document: tuple[int, bytes, list[str]]) -> int:
    return document[0]


def is_heldout(document: tuple[int, bytes, list[str]], cutoff: int) -> bool:
    return document[0] < cutoff


def is_training(document: tuple[int, bytes, list[str]], cutoff: int) -> bool:
    return document[0] >= cutoff


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
    return fileio.expand_files(pattern, ("*.txt", "*.txt.gz", "*.txt.bz2"))


def load_tokenizer(config: TFRecordsConfig) -> AlbertTokenizer:
    """The tokenizer, with a StageError naming the model file when it is missing or not ALBERT's."""
    if not fileio.exists(config.spm_model):
        raise StageError(f"{config.spm_model}: SentencePiece model not found")
    try:
        return AlbertTokenizer(config.spm_model, do_lower_case=config.do_lower_case)
    except ValueError as error:
        raise StageError(f"{config.spm_model}: unusable SentencePiece model: {error}") from None
    except (RuntimeError, OSError) as error:
        raise StageError(f"{config.spm_model}: cannot load SentencePiece model: {error}") from None


def count_as(name: str):
    """A pass-through map that counts its elements as `tfrecords:name` (call inside a pipeline)."""
    inc = beam_counter(NAMESPACE)

    def count(element):
        inc(name)
        return element

    return count


def build_examples(documents, config: TFRecordsConfig, label: str):
    """(sort key, example) pairs of one split's documents; NSP draws random B segments within it."""
    if config.objective == "sop":
        return documents | f"SopExamples{label}" >> beam.ParDo(SopExamples(config))
    encoded = documents | f"Encode{label}" >> beam.ParDo(EncodeDocuments(config))
    count = encoded | f"CountDocuments{label}" >> beam.combiners.Count.Globally()
    return (
        encoded
        | f"Bucket{label}"
        >> beam.FlatMap(nsp_buckets, count=beam.pvalue.AsSingleton(count), config=config)
        | f"GroupBuckets{label}" >> beam.GroupByKey()
        | f"NspExamples{label}" >> beam.ParDo(NspExamples(config))
    )


def build_pipeline(pipeline: beam.Pipeline, files: list[str], config: TFRecordsConfig, directory: str):
    """Training shards `data-*`, held-out shard `heldout-*` and the held-out documents' list."""
    documents = (
        pipeline | "Files" >> beam.Create(files) | "ReadDocuments" >> beam.ParDo(ReadDocuments())
    )
    hashes = documents | "Hashes" >> beam.Map(document_hash_of)
    cutoff = beam.pvalue.AsSingleton(
        (
            hashes | "Smallest" >> beam.combiners.Top.Smallest(max(1, config.heldout_min_documents)),
            hashes | "Count" >> beam.combiners.Count.Globally(),
        )
        | "Together" >> beam.Flatten()
        | "Gather" >> beam.combiners.ToList()
        | "Cutoff" >> beam.Map(_cutoff_of, config)
    )
    train = documents | "Train" >> beam.Filter(is_training, cutoff)
    heldout = (
        documents
        | "Heldout" >> beam.Filter(is_heldout, cutoff)
        | "CountHeldout" >> beam.Map(count_as("heldout_documents"))
    )
    heldout_examples = build_examples(heldout, config, "Heldout") | "CountHeldoutInstances" >> beam.Map(
        count_as("heldout_instances")
    )
    return (
        build_examples(train, config, "")
        | "Write" >> WriteShards(fileio.join(directory, "data"), config.num_shards, ".tfrecord", framing="tfrecord"),
        heldout_examples
        | "WriteHeldout" >> WriteShards(fileio.join(directory, HELDOUT_PREFIX), 1, ".tfrecord", framing="tfrecord"),
        heldout
        | "HeldoutList" >> beam.Map(heldout_list_line)
        | "WriteHeldoutList" >> WriteShards(fileio.join(directory, HELDOUT_LIST_PREFIX), 1, ".txt"),
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
) -> dict:
    """metadata.json: format, the facts a trainer needs at top level, feature spec, counts, statistics,
    options."""
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
            "document_list": f"{HELDOUT_LIST_PREFIX}-00000-of-00001.txt",
        },
    }


def run(config: TFRecordsConfig, beam_args: list[str] | None = None) -> dict:
    """Write the TFRecords and metadata.json; returns the metadata (without the file list)."""
    tokenizer = load_tokenizer(config)
    files = input_files(config.input)
    if not files:
        raise StageError(f"{config.input}: no corpus files (expected *.txt, *.txt.gz or *.txt.bz2)")
    with fileio.atomic_output_dir(config.output) as temp_dir:
        with beam.Pipeline(options=pipeline_options(beam_args)) as pipeline:
            build_pipeline(pipeline, files, config, temp_dir)
        result = pipeline.result
        counts = counter_totals(result, NAMESPACE)
        if not counts.get("instances"):
            raise StageError(
                f"{config.input}: no instances: the corpus is empty ({counts.get('documents', 0)} documents, "
                f"{counts.get('document_tokens', 0)} tokens)"
            )
        shard_files = sorted(
            os.path.basename(p) for p in fileio.expand(fileio.join(temp_dir, "*.tfrecord"))
        )
        metadata = summarize(config, counts, tokenizer, shard_files)
        with fileio.open_file(fileio.join(temp_dir, "metadata.json"), "w") as handle:
            json.dump(metadata, handle, indent=2, sort_keys=True)
    logger.info("wrote %d instances to %s", counts["instances"], config.output)
    return {key: value for key, value in metadata.items() if key not in ("files", "features")}


def main(argv=None, prog="python -m pipelines.tfrecords") -> int:
    return stage_main(TFRecordsConfig, run, argv, prog=prog, description=__doc__, beam=True)


if __name__ == "__main__":
    sys.exit(main())
