"""pipelines.tfrecords end to end on a small corpus: format, statistics, round trip, determinism,
errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import sentencepiece as spm

from albert.errors import StageError
from albert.pretraining_example import FEATURE_NAMES
from albert.tokenization import AlbertTokenizer
from pipelines.common import segmented_corpus
from pipelines.tfrecords import heldout, instances
from pipelines.tfrecords import stage as tfrecords
from pipelines.vocab.sentencepiece_trainer import trainer_kwargs

pytestmark = pytest.mark.backend_free

VOCABULARY = (
    "the of and to in a is that for it as was with be by on not he i this are or his from at which "
    "but "
    "have an they you were her she there been one all we their has would when if so no will can "
    "more other "
    "into river mountain garden letter window morning evening winter summer question answer number "
    "captain "
    "café naïve résumé 1,000 2,500 3,14 zürich"
)
WORDS = VOCABULARY.split()


def make_text(rng: np.random.Generator, num_documents: int) -> str:
    documents = []
    for _ in range(num_documents):
        sentences = [
            " ".join(rng.choice(WORDS, int(rng.integers(3, 25)))).capitalize() + "."
            for _ in range(int(rng.integers(1, 30)))
        ]
        documents.append("\n".join(sentences))
    return "\n\n".join(documents) + "\n"


def train_spm(directory: Path, text: str, control_symbols=("[CLS]", "[SEP]", "[MASK]")) -> str:
    prefix = directory / "spiece"
    spm.SentencePieceTrainer.train(
        **trainer_kwargs(
            100,
            sentence_iterator=iter(text.lower().splitlines()),
            model_prefix=str(prefix),
            control_symbols=list(control_symbols),
            user_defined_symbols=[],
            hard_vocab_limit=False,
        )
    )
    return str(prefix) + ".model"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("segmented")
    rng = np.random.default_rng(0)
    (directory / "part-00000.txt").write_text(make_text(rng, 25), encoding="utf-8")
    (directory / "part-00001.txt").write_text(make_text(rng, 25), encoding="utf-8")
    return directory


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory, corpus) -> str:
    text = "".join(path.read_text() for path in sorted(corpus.glob("*.txt")))
    return train_spm(tmp_path_factory.mktemp("spm"), text)


def config(corpus, spm_model, output, **kwargs) -> tfrecords.TFRecordsConfig:
    values = {
        "input": str(corpus),
        "spm_model": spm_model,
        "output": str(output),
        "max_seq_length": 64,
        "max_predictions_per_seq": 10,
        "dupe_factor": 2,
        "num_shards": 3,
    }
    values.update(kwargs)
    return tfrecords.TFRecordsConfig(**values)


def read_records(directory: Path, max_seq_length=64, max_predictions=10) -> dict[str, np.ndarray]:
    return read_records_of(sorted(directory.glob("*.tfrecord")), max_seq_length, max_predictions)


def read_records_of(paths, max_seq_length=64, max_predictions=10) -> dict[str, np.ndarray]:
    """Every record of the TFRecord files `paths`, parsed into one array per feature."""
    import tensorflow as tf
    from pretrain_testdata import feature_spec  # heavy: imports TensorFlow

    files = [str(p) for p in paths]
    batches = (
        tf.data.TFRecordDataset(files)
        .batch(100_000)
        .map(
            lambda batch: tf.io.parse_example(batch, feature_spec(max_seq_length, max_predictions))
        )
    )
    return {name: value.numpy() for name, value in next(iter(batches)).items()}


@pytest.fixture(scope="module")
def static_output(tmp_path_factory, corpus, spm_model) -> Path:
    output = tmp_path_factory.mktemp("out") / "static"
    tfrecords.run(config(corpus, spm_model, output))
    return output


HELD_OUT = {"heldout_fraction": 0.1, "heldout_min_documents": 6}


@pytest.fixture(scope="module")
def dynamic_output(tmp_path_factory, corpus, spm_model) -> tuple[dict, Path]:
    """Dynamic masking (dupe factor 5, which it ignores) holding out at least 6 documents: the
    summary and the output (read by two tests)."""
    output = tmp_path_factory.mktemp("out") / "dynamic"
    summary = tfrecords.run(
        config(corpus, spm_model, output, masking="dynamic", dupe_factor=5, **HELD_OUT)
    )
    return summary, output


def test_encode_sentences_is_the_tokenizers_encode(corpus, spm_model):
    tokenizer = AlbertTokenizer(spm_model)
    lines = [
        line for path in sorted(corpus.glob("*.txt")) for line in path.read_text().splitlines()
    ]
    lines += ["Prices rose 1,000 to 2,500,", "  Café  ``quoted''  NAÏVE ", "\t"]
    expected = [ids for ids in (tokenizer.encode(line) for line in lines) if ids]
    got = instances.encode_sentences(tokenizer, lines)
    assert [ids.tolist() for ids in got] == expected


def test_features_metadata_and_statistics(static_output, spm_model):
    records = read_records(static_output)
    assert sorted(records) == sorted(FEATURE_NAMES)
    for name in ("input_ids", "input_mask", "segment_ids", "token_boundary"):
        assert records[name].shape[1:] == (64,) and records[name].dtype == np.int64
    for name in ("masked_lm_positions", "masked_lm_ids"):
        assert records[name].shape[1:] == (10,) and records[name].dtype == np.int64
    assert records["masked_lm_weights"].dtype == np.float32 and records["masked_lm_weights"].shape[
        1:
    ] == (10,)
    assert records["next_sentence_labels"].shape[1:] == (1,)

    metadata = json.loads((static_output / "metadata.json").read_text())
    counts = metadata["counts"]
    assert counts["instances"] == len(records["input_ids"])
    assert counts["tokens"] == records["input_mask"].sum()
    assert counts["masked_tokens"] == records["masked_lm_weights"].sum()
    assert counts["label_1"] == records["next_sentence_labels"].sum()
    assert counts["documents"] == 50
    assert metadata["spm_model_sha256"] == AlbertTokenizer(spm_model).model_sha256
    assert (
        metadata["max_seq_length"] == 64
        and metadata["masking"] == "static"
        and metadata["vocab_size"] > 50
    )
    assert metadata["options"]["dupe_factor"] == 2 and metadata["features"][
        "masked_lm_weights"
    ] == {"dtype": "float32", "shape": [10]}
    assert sum(metadata["masked_ngram_histogram"]) == pytest.approx(1)
    assert 0.35 < metadata["sop_label_balance"] < 0.65
    assert len(metadata["files"]) == 4 and metadata["heldout"]["files"] == [
        "heldout-00000-of-00001.tfrecord"
    ]
    assert metadata["heldout"]["note"] is None  # 50 documents: at least the minimum
    # padding is 0 everywhere past the input mask / weights
    pad = records["input_mask"] == 0
    assert not records["input_ids"][pad].any() and not records["segment_ids"][pad].any()
    assert not records["token_boundary"][pad].any()
    assert not records["masked_lm_ids"][records["masked_lm_weights"] == 0].any()


def test_round_trip_gives_the_original_pieces_in_order(static_output, corpus, spm_model):
    tokenizer = AlbertTokenizer(spm_model)
    streams = []
    for path in sorted(corpus.glob("*.txt")):
        for doc in path.read_text().split("\n\n"):
            ids = np.concatenate(instances.encode_sentences(tokenizer, doc.splitlines()))
            streams.append(ids.astype(np.int64).tobytes())
    records = read_records(static_output)
    for i in range(len(records["input_ids"])):
        ids = records["input_ids"][i].copy()
        weights = records["masked_lm_weights"][i] > 0
        ids[records["masked_lm_positions"][i][weights]] = records["masked_lm_ids"][i][weights]
        ids = ids[records["input_mask"][i] == 1]
        seps = np.flatnonzero(ids == tokenizer.sep_id)
        assert ids[0] == tokenizer.cls_id and len(seps) == 2 and seps[1] == len(ids) - 1
        a, b = ids[1 : seps[0]].tobytes(), ids[seps[0] + 1 : seps[1]].tobytes()
        homes = [s for s in streams if a in s and b in s]
        assert homes, f"instance {i}: segments are not text of one document"
        first, second = (a, b) if records["next_sentence_labels"][i][0] == 0 else (b, a)
        assert any(s.find(first) + len(first) <= s.rfind(second) for s in homes)
        assert (records["segment_ids"][i][: len(ids)] == (np.arange(len(ids)) > seps[0])).all()


def test_identical_bytes_for_one_or_two_workers(static_output, corpus, spm_model, tmp_path):
    """Two worker threads; two worker processes (the DoFns pickled, as on any distributed runner):
    tests/test_stage_entry_points.py, whose `python -m` runs them."""
    two = tmp_path / "two"
    flags = ["--direct_running_mode=multi_threading", "--direct_num_workers=2"]
    tfrecords.run(config(corpus, spm_model, two), flags)
    names = sorted(p.name for p in static_output.glob("*.tfrecord"))
    assert names == sorted(p.name for p in two.glob("*.tfrecord"))
    for name in names:
        assert (static_output / name).read_bytes() == (two / name).read_bytes()
    one_meta = json.loads((static_output / "metadata.json").read_text())
    two_meta = json.loads((two / "metadata.json").read_text())
    assert one_meta["counts"] == two_meta["counts"]


def test_dynamic_masking_writes_each_instance_once_unmasked(dynamic_output):
    summary, output = dynamic_output
    records = read_records(output)
    assert summary["counts"]["instances"] == len(records["input_ids"])
    assert not records["masked_lm_weights"].any() and not records["masked_lm_positions"].any()
    assert not (records["input_ids"] == 4).any()
    assert records["token_boundary"].sum() > 0


def test_bad_inputs_get_clear_errors(corpus, spm_model, tmp_path):
    output = tmp_path / "out"
    with pytest.raises(StageError, match="not found"):
        tfrecords.run(config(corpus, str(tmp_path / "missing.model"), output))
    no_mask = train_spm(
        tmp_path, make_text(np.random.default_rng(1), 20), control_symbols=("[CLS]", "[SEP]")
    )
    with pytest.raises(StageError, match="MASK"):
        tfrecords.run(config(corpus, no_mask, output))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(StageError, match="no corpus files"):
        tfrecords.run(config(empty, spm_model, output))
    (empty / "part-0.txt").write_text("\n\n  \n\n")
    with pytest.raises(StageError, match="corpus is empty"):
        tfrecords.run(config(empty, spm_model, output))
    assert not output.exists(), "a failed run leaves no output"


def test_command_line(corpus, spm_model, tmp_path, capsys):
    argv = [
        "--input",
        str(corpus),
        "--spm-model",
        spm_model,
        "--output",
        str(tmp_path / "cli"),
        "--max-seq-length",
        "32",
        "--max-predictions-per-seq",
        "5",
        "--dupe-factor",
        "1",
        "--num-shards",
        "1",
    ]
    assert tfrecords.main(argv) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["instances"] > 0
    assert (tmp_path / "cli" / "data-00000-of-00001.tfrecord").exists()
    assert tfrecords.main(argv[:2] + ["--spm-model", str(tmp_path / "nope.model")] + argv[4:]) == 2


def test_nsp_objective_gives_the_same_bytes_for_one_or_two_workers(corpus, spm_model, tmp_path):
    nsp = {"objective": "nsp", "dupe_factor": 1, "nsp_bucket_documents": 10}
    summary = tfrecords.run(config(corpus, spm_model, tmp_path / "one", **nsp))
    assert 0.4 < summary["nsp_label_balance"] < 0.75
    assert summary["counts"]["instances"] == len(read_records(tmp_path / "one")["input_ids"])
    tfrecords.run(
        config(corpus, spm_model, tmp_path / "two", **nsp),
        ["--direct_running_mode=multi_threading", "--direct_num_workers=2"],
    )
    for path in sorted((tmp_path / "one").glob("*.tfrecord")):
        assert path.read_bytes() == (tmp_path / "two" / path.name).read_bytes()


def test_read_documents_splits_on_blank_lines_and_reads_gzip(tmp_path):
    import gzip

    path = tmp_path / "part-0.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n\nOne.\nTwo.\n  \n\n\nThree.\n\nFour.")
    documents = list(segmented_corpus.read_documents(str(path)))
    assert [key for key, _ in documents] == [
        b"part-0.txt.gz:0",
        b"part-0.txt.gz:1",
        b"part-0.txt.gz:2",
    ]
    assert [[line.strip() for line in lines] for _, lines in documents] == [
        ["One.", "Two."],
        ["Three."],
        ["Four."],
    ]
    assert segmented_corpus.input_files(str(tmp_path)) == [str(path)]


def test_invalid_utf8_names_the_file(tmp_path, spm_model):
    (tmp_path / "bad.txt").write_bytes(b"Fine.\n\nNot \xe8 UTF-8.\n")
    with pytest.raises(StageError, match="bad.txt: not UTF-8"):
        list(segmented_corpus.read_documents(str(tmp_path / "bad.txt")))


def test_heldout_cutoff_takes_the_fraction_then_the_minimum_count():
    space = heldout.HASH_SPACE
    hashes = [space // 10, space // 2, space // 100, space - 1]
    assert heldout.heldout_cutoff(sorted(hashes)[:2], 4, 0.2, 2) == int(
        0.2 * space
    )  # the fraction covers 2
    assert heldout.heldout_cutoff(sorted(hashes)[:3], 4, 0.0, 3) == space // 2 + 1
    assert (
        heldout.heldout_cutoff(hashes, 4, 0.0, 9) == space // 2 + 1
    )  # one document stays to train
    assert (
        heldout.heldout_cutoff([], 0, 0.0, 2) == 0
        and heldout.heldout_cutoff([5], 1, 1.0, 0) == space
    )


def test_fewer_documents_than_the_held_out_minimum_is_said_in_one_line():
    assert heldout.few_documents_note(97, 9, 8) is None
    assert heldout.few_documents_note(2, 1, 8) == (
        "the corpus yields 2 documents, fewer than --heldout-min-documents 8: 1 held out whole, "
        "1 trained on; held-out figures score that document only, not a sample of the corpus "
        "(split it into more documents: docs/segment.md)"
    )
    assert "nothing is held out" in heldout.few_documents_note(1, 0, 8)


def test_heldout_shard_holds_whole_documents_never_in_training(
    dynamic_output, corpus, spm_model, tmp_path
):
    out = dynamic_output[1]
    metadata = json.loads((out / "metadata.json").read_text())
    listed = (out / metadata["heldout"]["document_list"]).read_text().splitlines()
    held_keys = {line.split("\t")[1] for line in listed}
    assert metadata["heldout"]["documents"] == len(listed) >= 6
    tokenizer = AlbertTokenizer(spm_model)
    streams = {}
    for path in sorted(corpus.glob("*.txt")):
        for index, doc in enumerate(path.read_text().split("\n\n")):
            ids = np.concatenate(instances.encode_sentences(tokenizer, doc.splitlines()))
            streams[f"{path.name}:{index}"] = ids.astype(np.int64).tobytes()

    def homes(name: str) -> list[set[str]]:
        """Per instance of the `name` shards, the documents holding both its segments."""
        records = read_records_of(sorted(out.glob(f"{name}-*.tfrecord")))
        found = []
        for ids, mask in zip(records["input_ids"], records["input_mask"]):
            ids = ids[mask == 1]
            seps = np.flatnonzero(ids == tokenizer.sep_id)
            a, b = ids[1 : seps[0]].tobytes(), ids[seps[0] + 1 : seps[1]].tobytes()
            found.append({key for key, stream in streams.items() if a in stream and b in stream})
        return found

    assert all(keys & held_keys for keys in homes("heldout"))
    assert all(keys - held_keys for keys in homes("data"))
    assert metadata["heldout"]["instances"] > 0
    # the same documents are held out whatever the seed: the choice hashes the text only
    tfrecords.run(
        config(
            corpus,
            spm_model,
            tmp_path / "seed",
            masking="dynamic",
            dupe_factor=1,
            seed=7,
            **HELD_OUT,
        )
    )
    assert (
        tmp_path / "seed" / metadata["heldout"]["document_list"]
    ).read_text().splitlines() == listed
