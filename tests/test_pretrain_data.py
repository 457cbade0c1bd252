"""model.input.tf_data: metadata checks with clear errors, deterministic per-epoch order, exact
skip, held-out split."""

import json
import re

import numpy as np
import pytest
from pretrain_testdata import write_shards

from albert.errors import StageError
from model.input import tf_data as pretrain_data


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return write_shards(tmp_path_factory.mktemp("records"), num_shards=3, per_shard=24)


def _ids(dataset):
    return [b["input_ids"].numpy().tolist() for b in dataset]


def test_inspect_reads_metadata_and_the_first_record(shards):
    spec = pretrain_data.inspect_data(str(shards))
    assert (spec.max_seq_length, spec.max_predictions_per_seq, spec.vocab_size, spec.masking) == (
        32,
        5,
        100,
        "static",
    )
    assert len(spec.files) == 3


def test_sequence_length_mismatch_names_the_file(tmp_path):
    data = write_shards(tmp_path / "d", num_shards=1, per_shard=4, metadata={"max_seq_length": 64})
    with pytest.raises(StageError, match=r"train-00000-of-00001.tfrecord.*max_seq_length=64"):
        pretrain_data.inspect_data(str(data))


def test_feature_listed_in_metadata_but_absent_is_an_error(tmp_path):
    data = write_shards(tmp_path / "d", num_shards=1, per_shard=4)
    meta = json.loads((data / "metadata.json").read_text())
    meta["features"]["extra_feature"] = {"dtype": "int64", "shape": [1]}
    (data / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(StageError, match="extra_feature"):
        pretrain_data.inspect_data(str(data))


def test_vocabulary_mismatches_are_clear_errors(tmp_path):
    data = write_shards(
        tmp_path / "d", num_shards=1, per_shard=4, metadata={"spm_model_sha256": "a" * 64}
    )
    spec = pretrain_data.inspect_data(str(data))
    metadata = re.escape(str(data / "metadata.json"))
    with pytest.raises(
        StageError,
        match=rf"^{metadata}: data vocabulary has 100 pieces but the "
        r"model's vocab_size is 200 \(from --vocab-size 200\)$",
    ):
        pretrain_data.check_compatible(
            spec,
            vocab_size=200,
            max_position_embeddings=512,
            vocab_sha256=None,
            vocab_origin="--vocab-size 200",
        )
    with pytest.raises(
        StageError,
        match=rf"^{metadata}: data was tokenized with SentencePiece "
        r"model sha256=aaaaaaaaaaaa… but /v/spiece.model has "
        r"sha256=bbbbbbbbbbbb… \(different vocabulary\)$",
    ):
        pretrain_data.check_compatible(
            spec,
            vocab_size=100,
            max_position_embeddings=512,
            vocab_sha256="b" * 64,
            spm_model="/v/spiece.model",
        )
    with pytest.raises(StageError, match="max_position_embeddings=16"):
        pretrain_data.check_compatible(
            spec, vocab_size=100, max_position_embeddings=16, vocab_sha256=None
        )


def test_a_vocabulary_mismatch_names_metadata_json_and_the_flag_in_one_line(tmp_path, capsys):
    from model import pretrain

    data = write_shards(tmp_path / "d", num_shards=1, per_shard=4)
    code = pretrain.main(
        [
            "--data",
            str(data),
            "--output",
            str(tmp_path / "out"),
            "--vocab-size",
            "200",
            "--preset",
            "albert-nano",
            "--steps",
            "1",
        ]
    )
    [line] = [line for line in capsys.readouterr().err.splitlines() if " failed: " in line]
    assert code == 2
    metadata = data / "metadata.json"
    assert line.endswith(
        f"python -m model.pretrain failed: {metadata}: data vocabulary has 100 "
        "pieces but the model's vocab_size is 200 (from --vocab-size 200)"
    )


def test_no_shards_is_an_error(tmp_path):
    with pytest.raises(StageError, match="no TFRecord shards"):
        pretrain_data.inspect_data(str(tmp_path))


def test_epochs_are_deterministic_distinct_and_skippable(shards):
    spec = pretrain_data.inspect_data(str(shards))
    first = _ids(pretrain_data.train_dataset(spec, 8, epoch=0, seed=1, shuffle_buffer=64))
    again = _ids(pretrain_data.train_dataset(spec, 8, epoch=0, seed=1, shuffle_buffer=64))
    other = _ids(pretrain_data.train_dataset(spec, 8, epoch=1, seed=1, shuffle_buffer=64))
    skipped = _ids(
        pretrain_data.train_dataset(spec, 8, epoch=0, seed=1, skip_batches=2, shuffle_buffer=64)
    )
    assert len(first) == 6  # 2 training shards x 24 records / 8
    assert first == again and first != other and skipped == first[2:]


def test_heldout_is_the_last_shard_or_every_20th_record(shards, tmp_path):
    spec = pretrain_data.inspect_data(str(shards))
    train_files, heldout_files, modulus = pretrain_data.split_files(spec)
    assert heldout_files == spec.files[-1:] and heldout_files[0] not in train_files and modulus == 0
    single = pretrain_data.inspect_data(
        str(write_shards(tmp_path / "one", num_shards=1, per_shard=60))
    )
    heldout = np.concatenate(_ids(pretrain_data.heldout_dataset(single, 100)))
    train = np.concatenate(_ids(pretrain_data.train_dataset(single, 1, epoch=0, seed=0)))
    assert len(heldout) == 3 and len(train) == 57
    assert not {tuple(r) for r in heldout} & {tuple(r) for r in train}


def test_heldout_shards_named_in_metadata_are_the_heldout_split(tmp_path):
    data = write_shards(tmp_path / "d", num_shards=3, per_shard=8)
    meta = json.loads((data / "metadata.json").read_text())
    middle = sorted(p.name for p in data.glob("*.tfrecord"))[1]
    meta["heldout"] = {"files": [middle], "documents": 2}
    (data / "metadata.json").write_text(json.dumps(meta))
    spec = pretrain_data.inspect_data(str(data))
    train_files, heldout_files, modulus = pretrain_data.split_files(spec)
    assert [f.rsplit("/", 1)[-1] for f in heldout_files] == [middle] and modulus == 0
    assert len(train_files) == 2 and heldout_files[0] not in train_files
    meta["heldout"]["files"] = [p.name for p in data.glob("*.tfrecord")]  # an evaluation-only set
    (data / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(StageError, match="only held-out documents"):
        pretrain_data.train_dataset(pretrain_data.inspect_data(str(data)), 4, epoch=0, seed=0)


def test_reference_records_parse(shared_data):
    from conftest import shared_path

    spec = pretrain_data.inspect_data(str(shared_path("reference", "ref_seq128.tfrecord")))
    batch = next(iter(pretrain_data.heldout_dataset(spec, 4)))
    assert batch["input_ids"].shape == (4, 128) and batch["masked_lm_weights"].shape == (4, 20)


def test_dynamic_masking_is_seeded_per_epoch(tmp_path):
    spec = pretrain_data.inspect_data(
        str(write_shards(tmp_path / "dyn", num_shards=2, per_shard=16, dynamic=True))
    )
    assert spec.masking == "dynamic" and spec.max_predictions_per_seq == 5

    def epoch(e):
        return next(iter(pretrain_data.train_dataset(spec, 16, epoch=e, seed=3, shuffle_buffer=1)))

    first, again, second = epoch(0), epoch(0), epoch(1)
    for name in ("input_ids", "masked_lm_positions", "masked_lm_ids", "masked_lm_weights"):
        np.testing.assert_array_equal(first[name].numpy(), again[name].numpy())
    assert not np.array_equal(
        first["masked_lm_positions"].numpy(), second["masked_lm_positions"].numpy()
    )
    weights = first["masked_lm_weights"].numpy()
    assert (weights.sum(axis=1) >= 1).all()
    ids, positions, labels = (
        first[k].numpy() for k in ("input_ids", "masked_lm_positions", "masked_lm_ids")
    )
    row = 0
    count = int(weights[row].sum())
    assert (labels[row, :count] >= 5).all() and (
        ids[row, positions[row, :count]] != labels[row, :count]
    ).any()
