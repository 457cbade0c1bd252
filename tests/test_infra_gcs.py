"""Storage, offline: segment -> vocab -> tfrecords with input and output on gs:// (a local GCS
emulator), then the training input builder over the written records; segment on an object store
skips and reports a bad file, or fails naming it and writes nothing.

Every connection and name lookup that is not loopback is refused. tf.io.gfile (used by training in
production for gs://) has no emulator support: the training test reads the same records through
the same `model.input.tf_data` code path from a local copy (see infra/README.md, "Storage").
"""

from __future__ import annotations

import gzip
import json
import random

import cloud_harness as harness
import pytest

from albert.errors import StageError

pytestmark = pytest.mark.backend_free

WORDS = [
    "river",
    "stone",
    "garden",
    "lantern",
    "harbour",
    "violin",
    "meadow",
    "copper",
    "orchard",
    "thunder",
    "pebble",
    "willow",
    "canyon",
    "signal",
    "marble",
    "falcon",
    "ember",
    "glacier",
    "compass",
    "velvet",
    "anchor",
    "prairie",
    "beacon",
    "saddle",
    "harvest",
    "quartz",
]


def small_corpus(documents: int, seed: int = 7) -> list[list[str]]:
    """Documents of plain sentences made from a fixed word list (deterministic for a seed)."""
    rng = random.Random(seed)
    corpus = []
    for _ in range(documents):
        sentences = []
        for _ in range(rng.randint(6, 10)):
            words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
            sentences.append(" ".join(words).capitalize() + rng.choice([".", "!", "?"]))
        corpus.append(sentences)
    return corpus


@pytest.fixture(scope="module")
def gcs_pipeline_outputs():
    """Run the three Beam stages in-process (FnApiRunner) on gs:// inputs and outputs, with a
    file that is not UTF-8 among the inputs (segment skips it); then segment again without
    skipping (it fails naming the file)."""
    from pipelines.segment import stage as segment
    from pipelines.tfrecords import stage as tfrecords
    from pipelines.vocab import stage as vocab

    with (
        harness.loopback_only() as refused,
        harness.gcs_emulator("bucket"),
        harness.offline_metadata_server(),
    ):
        fs = harness.gcs_filesystem()
        corpus = small_corpus(60)
        half = len(corpus) // 2
        fs.pipe(
            "bucket/in/plain.txt",
            "\n\n".join(" ".join(doc) for doc in corpus[:half]).encode() + b"\n",
        )
        jsonl = "\n".join(json.dumps({"text": " ".join(doc)}) for doc in corpus[half:]) + "\n"
        fs.pipe("bucket/in/more.jsonl.gz", gzip.compress(jsonl.encode()))
        fs.pipe("bucket/in/bad.txt", b"\xff\xfe not UTF-8\n")

        summaries = {
            "segment": segment.run(
                segment.SegmentConfig(
                    input=["gs://bucket/in/*.txt", "gs://bucket/in/*.jsonl.gz"],
                    output="gs://bucket/corpus",
                    num_shards=2,
                    min_document_chars=20,
                    on_error="skip",
                    quality=False,  # a corpus of our own words, no prose
                )
            ),
            "vocab": vocab.run(
                vocab.VocabConfig(
                    input="gs://bucket/corpus",
                    output="gs://bucket/vocab",
                    vocab_size=60,
                    heldout_sentences=20,
                    num_threads=1,
                )
            ),
            "tfrecords": tfrecords.run(
                tfrecords.TFRecordsConfig(
                    input="gs://bucket/corpus",
                    spm_model="gs://bucket/vocab/spiece.model",
                    output="gs://bucket/tfrecords",
                    max_seq_length=64,
                    max_predictions_per_seq=8,
                    dupe_factor=2,
                    num_shards=2,
                )
            ),
        }
        listing = {
            prefix: sorted(p.split("/", 1)[1] for p in fs.find(f"bucket/{prefix}"))
            for prefix in ("corpus", "vocab", "tfrecords")
        }
        files = {path: fs.cat(f"bucket/{path}") for paths in listing.values() for path in paths}
        with pytest.raises(StageError) as failed:
            segment.run(
                segment.SegmentConfig(input=["gs://bucket/in/*.txt"], output="gs://bucket/f")
            )
        yield {
            "summaries": summaries,
            "listing": listing,
            "files": files,
            "refused": list(refused),
            "failed": str(failed.value),
            "bucket": sorted(fs.ls("bucket")),
        }


@pytest.mark.slow
def test_stages_read_and_write_gs(gcs_pipeline_outputs):
    listing, files = gcs_pipeline_outputs["listing"], gcs_pipeline_outputs["files"]
    assert listing["corpus"] == [
        "corpus/near_dup_signatures-00000-of-00002.minhash",
        "corpus/near_dup_signatures-00001-of-00002.minhash",
        "corpus/near_dup_signatures.json",
        "corpus/near_duplicates.jsonl",
        "corpus/part-00000-of-00002.txt",
        "corpus/part-00001-of-00002.txt",
        "corpus/stats.json",
    ]
    stats = json.loads(files["corpus/stats.json"])
    assert stats["documents_out"] == 60 and stats["formats"] == {"text": 2, "jsonl": 1}  # bad.txt
    assert stats["bad_files"] == [
        {
            "file": "gs://bucket/in/bad.txt",
            "reason": "line 1: not UTF-8 (byte 0xff at column 1); set fallback_encoding to "
            "read such files",
        }
    ]
    assert {"vocab/spiece.model", "vocab/spiece.vocab", "vocab/vocab_stats.json"} <= set(
        listing["vocab"]
    )
    assert listing["tfrecords"] == [
        "tfrecords/data-00000-of-00002.tfrecord",
        "tfrecords/data-00001-of-00002.tfrecord",
        "tfrecords/heldout-00000-of-00001.tfrecord",
        "tfrecords/heldout-documents-00000-of-00001.txt",
        "tfrecords/metadata.json",
    ]
    assert gcs_pipeline_outputs["summaries"]["tfrecords"]["counts"]["instances"] > 0
    # nothing half-written is left behind by the atomic outputs
    assert not any(".tmp-" in path for paths in listing.values() for path in paths)
    assert gcs_pipeline_outputs["refused"] == []


def test_a_bad_file_on_gs_fails_segment_naming_it_and_writes_nothing(gcs_pipeline_outputs):
    assert gcs_pipeline_outputs["failed"].startswith(
        "gs://bucket/in/bad.txt: line 1: not UTF-8 (byte 0xff"
    )
    assert gcs_pipeline_outputs["bucket"] == [
        "bucket/corpus",
        "bucket/in",
        "bucket/tfrecords",
        "bucket/vocab",
    ]


def test_records_from_gs_feed_the_training_input_pipeline(gcs_pipeline_outputs, tmp_path):
    """The records written to gs:// parse with the features training expects (local copy; see
    module doc)."""

    from albert.tokenization import AlbertTokenizer

    files = gcs_pipeline_outputs["files"]
    data = tmp_path / "tfrecords"
    data.mkdir()
    for path, content in files.items():
        if path.startswith("tfrecords/"):
            (tmp_path / path).write_bytes(content)
    (tmp_path / "spiece.model").write_bytes(files["vocab/spiece.model"])
    metadata = json.loads(files["tfrecords/metadata.json"])
    assert (
        metadata["spm_model_sha256"] == AlbertTokenizer(str(tmp_path / "spiece.model")).model_sha256
    )

    from model.input import tf_data as pretrain_data

    spec = pretrain_data.inspect_data(f"file://{data}")
    assert spec.max_seq_length == 64 and spec.max_predictions_per_seq == 8
    assert spec.vocab_sha256 == metadata["spm_model_sha256"]
    assert spec.masking == "static" and spec.vocab_size == 60
    batch = next(
        iter(
            pretrain_data.train_dataset(
                spec, 4, epoch=0, seed=1, shuffle_buffer=16, eval_every=1000
            )
        )
    )
    assert batch["input_ids"].shape == (4, 64) and batch["masked_lm_positions"].shape == (4, 8)
