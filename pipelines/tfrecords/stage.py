"""Pretraining TFRecords from a segmented corpus: SOP/NSP pairs with whole-word n-gram masking.

Reads the segmented corpus format (one sentence per line, a blank line between documents) and
writes `OUTPUT/data-0000i-of-0000N.tfrecord` in google-research/albert's format plus
`OUTPUT/metadata.json`. Deterministic: instance creation is seeded from (seed, document key, dupe
index), each instance's static masks from (seed, document key, dupe index, instance index)
(pipelines.tfrecords.instance_writer), so the output is byte-identical for any runner, worker count
and batching; instances are shuffled across shards by a hash.

Held-out documents: whole documents, chosen by a stable hash of their text (independent of the
seed, so every run on the same corpus holds out the same documents), go to
`OUTPUT/heldout-*.tfrecord` and never into the training shards (pipelines.tfrecords.heldout).
`heldout-documents-*.txt` lists them (hash, key), and metadata.json's `heldout` block names the
files (pipelines.tfrecords.metadata).

Pipeline: files -> documents (key, text) -> their hashes -> the held-out cutoff; documents spread
over workers through sorted spill files, split into training and held-out by the cutoff -> per
split, SOP: documents in batches, the instances of a batch masked together; NSP: documents
encoded, bucketed, instances drawn (and masked together) within a bucket -> shards of instances
sorted by a hash; the held-out list; metadata.json.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import apache_beam as beam

from albert.errors import StageError
from albert.fs import exists, join
from albert.hashing import stable_hash
from albert.stage import stage_main
from pipelines.common import spill
from pipelines.common.runner import CountingDoFn, WriteSummary, counted, run_stage
from pipelines.common.segmented_corpus import input_files, read_documents
from pipelines.common.shards import WriteShards
from pipelines.tfrecords import instances
from pipelines.tfrecords.config import TFRecordsConfig
from pipelines.tfrecords.heldout import (
    HELDOUT_LIST_PREFIX,
    HELDOUT_PREFIX,
    Document,
    HeldoutCutoff,
    heldout_list_line,
    text_hash,
)
from pipelines.tfrecords.instance_writer import (
    DocumentPass,
    InstanceWriter,
    vocabulary_tokenizer,
    with_word_segmenter,
)
from pipelines.tfrecords.metadata import METADATA_FILE, Vocabulary, truncation_note, write_metadata

logger = logging.getLogger(__name__)

NAMESPACE = "tfrecords"
DOCUMENTS_PER_BATCH = (
    256  # SOP documents whose instances are masked together (fewer at bundle ends)
)


class _WriterDoFn(CountingDoFn):
    """A DoFn with an InstanceWriter (tokenizer, tables) made once per DoFn instance; the writer
    counts into the DoFn's counts."""

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


def spread_documents(pairs, inc, cutoff: int) -> Iterator[Document]:
    """The Documents of a partition's (key, text) pairs, after the spread over workers; a document
    is held out when its hash is below `cutoff`."""
    for key, text in pairs:
        doc_hash = text_hash(text)
        yield Document(
            doc_hash, key, text.decode("utf-8").splitlines(keepends=True), doc_hash < cutoff
        )


def held_out_or_not(document: Document, partitions: int) -> int:
    """beam.Partition: 1 for a held-out document, 0 for a training one."""
    return int(document.heldout)


class SopExamples(_WriterDoFn):
    """A batch of Documents -> (sort key, example) for every dupe pass of each, masked together;
    documents with no tokens are counted."""

    def process(self, documents: list[Document]):
        yield from self.writer.examples(self.passes(documents))

    def passes(self, documents: list[Document]) -> Iterator[DocumentPass]:
        for document in documents:
            sentences = self.writer.encode(document.lines)
            if not sentences:
                self.writer.inc("empty_documents")
            for dupe in range(self.config.passes if sentences else 0):
                yield DocumentPass(document.key, sentences, dupe)


class EncodeDocuments(_WriterDoFn):
    """Document -> (key, packed sentence ids); documents with no tokens are dropped and counted."""

    def process(self, document: Document):
        sentences = self.writer.encode(document.lines)
        if sentences:
            yield document.key, instances.pack_document(sentences)
        else:
            self.writer.inc("empty_documents")


class NspExamples(_WriterDoFn):
    """One bucket of documents of one dupe pass; random B segments come from the bucket's others."""

    def process(self, element):
        (dupe, _), members = element  # (dupe, bucket), [(key, packed sentence ids)]
        members = sorted(members)
        documents = [instances.unpack_document(packed) for _, packed in members]
        if len(members) == 1:
            self.writer.inc("nsp_same_document_b")
        yield from self.writer.examples(
            DocumentPass(doc_key, documents[index], dupe, random_from(documents, index))
            for index, (doc_key, _) in enumerate(members)
        )


def random_from(documents: list, index: int):
    """NSP's random B for `documents[index]`: a random other document of the bucket (itself when
    alone)."""
    others = [doc for j, doc in enumerate(documents) if j != index] or documents

    def random_document(rng):
        return others[int(rng.integers(len(others)))]

    return random_document


def nsp_buckets(document: tuple[bytes, bytes], count: int, config: TFRecordsConfig):
    """Key a document by (dupe, bucket) for every dupe pass; buckets hold ~nsp_bucket_documents
    documents."""
    doc_key, packed = document
    num_buckets = max(1, count // config.nsp_bucket_documents)
    for dupe in range(config.passes):
        bucket = stable_hash(b"%d\x00%d\x00%s" % (config.seed, dupe, doc_key)) % num_buckets
        yield (dupe, bucket), (doc_key, packed)


def load_vocabulary(config: TFRecordsConfig) -> tuple[Vocabulary, TFRecordsConfig]:
    """The SentencePiece model's size, digest and record, from the one tokenizer the driver builds,
    and `config` with its word segmenter settled by the record's language
    (`instance_writer.with_word_segmenter`); a StageError naming the model file when it is missing
    or not ALBERT's."""
    if not exists(config.spm_model):
        raise StageError(f"{config.spm_model}: SentencePiece model not found")
    try:
        tokenizer = vocabulary_tokenizer(config)
        vocabulary = Vocabulary(
            tokenizer.vocab_size, tokenizer.model_sha256, tokenizer.preprocessing
        )
        return vocabulary, with_word_segmenter(config, tokenizer)
    except StageError:  # names the model or its record already (AlbertTokenizer's checks)
        raise
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
    """Documents of one split -> (sort key, example); NSP draws random B segments within it."""
    if config.objective == "sop":
        batches = documents | f"Batch{label}" >> beam.BatchElements(
            min_batch_size=DOCUMENTS_PER_BATCH, max_batch_size=DOCUMENTS_PER_BATCH
        )
        return counted(batches, f"SopExamples{label}", SopExamples(config), counts)
    encoded = counted(documents, f"Encode{label}", EncodeDocuments(config), counts)
    count = encoded | f"CountDocuments{label}" >> beam.combiners.Count.Globally()
    return counted(
        encoded  # key, packed sentence ids
        | f"Bucket{label}"
        >> beam.FlatMap(nsp_buckets, count=beam.pvalue.AsSingleton(count), config=config)
        | f"GroupBuckets{label}" >> beam.GroupByKey(),
        f"NspExamples{label}",
        NspExamples(config),
        counts,
    )


def build_pipeline(
    pipeline: beam.Pipeline,
    files: list[str],
    config: TFRecordsConfig,
    output_dir: str,
    vocabulary: Vocabulary,
):
    """Training shards `data-*`, held-out shard `heldout-*`, the held-out documents' list and
    metadata.json (counts summed in the pipeline; the `vocabulary` facts from the driver)."""
    counts: list = []
    spread_runs = join(output_dir, "_spread-runs")
    pairs = (  # key, text
        pipeline | "Files" >> beam.Create(files) | "ReadDocuments" >> beam.ParDo(ReadDocuments())
    )
    # The held-out cutoff comes from the documents' hashes alone, and the spread's reduce applies
    # it: the only main input waiting for that side input is the spill's run paths, never the
    # corpus.
    cutoff = (  # one int
        pairs
        | "Hashes" >> beam.MapTuple(lambda key, text: text_hash(text))  # document hash
        | "HeldoutCutoff" >> HeldoutCutoff(config.heldout_fraction, config.heldout_min_documents)
    )
    train, heldout = (  # Document, Document
        pairs
        | "SpreadDocuments"
        >> spill.MergeSorted(
            spread_runs,
            spread_documents,
            group_bytes=None,
            counts=counts,
            namespace=NAMESPACE,
            side_inputs={"cutoff": beam.pvalue.AsSingleton(cutoff)},
        )
        | "HeldOutOrNot" >> beam.Partition(held_out_or_not, 2)
    )
    heldout = counted(heldout, "CountHeldoutDocuments", CountElements("heldout_documents"), counts)
    heldout_examples = counted(  # sort key, serialized example
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
    ) | "AllShards" >> beam.Flatten()  # shard path
    document_list = (  # the list's path
        heldout
        | "HeldoutList" >> beam.Map(heldout_list_line)  # line, line
        | "WriteHeldoutList" >> WriteShards(join(output_dir, HELDOUT_LIST_PREFIX), 1, ".txt")
    )
    _ = pipeline | "WriteMetadata" >> WriteSummary(
        write_metadata,
        counts,
        shards=beam.pvalue.AsList(shards),
        written=beam.pvalue.AsList(document_list),
        config=config,
        vocabulary=vocabulary,
        output_dir=output_dir,
        run_dirs=[spread_runs],
    )


def run(config: TFRecordsConfig, beam_args: list[str] | None = None) -> dict:
    """Write the TFRecords and metadata.json; returns the metadata (without the file list)."""
    vocabulary, config = load_vocabulary(config)
    files = input_files(config.input)
    if not files:
        raise StageError(f"{config.input}: no corpus files (expected *.txt, *.txt.gz or *.txt.bz2)")
    metadata = run_stage(
        config.output,
        beam_args,
        lambda pipeline, output_dir: build_pipeline(
            pipeline, files, config, output_dir, vocabulary
        ),
        METADATA_FILE,
    )
    note = truncation_note(config, metadata["truncation"])
    if note:
        logger.log(*note)
    logger.info("wrote %d instances to %s", metadata["counts"]["instances"], config.output)
    if metadata["heldout"].get("note"):
        logger.warning("%s: %s", config.input, metadata["heldout"]["note"])
    return {key: value for key, value in metadata.items() if key not in ("files", "features")}


def main(argv=None, prog="python -m pipelines.tfrecords") -> int:
    return stage_main(TFRecordsConfig, run, argv, prog=prog, description=__doc__, beam=True)
