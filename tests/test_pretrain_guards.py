"""Pretraining never measures nothing or diverges silently: shards checked up front (framing, CRCs,
ids), empty held-out data is an error, non-finite settings are refused and a diverging run stops."""

from __future__ import annotations

import json
import math
import shutil

import pytest
from pretrain_testdata import write_shards

from albert.config import ConfigError, load_config
from albert.errors import StageError
from model.input import tf_data as pretrain_data

TINY = {
    "preset": "albert-nano",
    "batch_size": 8,
    "warmup_steps": 0,
    "eval_batches": 2,
    "progress": False,
    "jit_compile": False,
    "export": True,
}


@pytest.fixture()
def records(tmp_path):
    return write_shards(tmp_path / "records", num_shards=3, per_shard=24)


def shard(records, index: int):
    return sorted(records.glob("*.tfrecord"))[index]


def test_clean_shards_pass_and_are_counted(records):
    counts = pretrain_data.check_shards(
        [str(p) for p in sorted(records.glob("*.tfrecord"))], vocab_size=100
    )
    assert list(counts.values()) == [24, 24, 24]


def test_reference_tfrecords_pass_the_scan(shared_data):
    path = str(shared_data / "reference" / "ref_seq128.tfrecord")
    assert pretrain_data.check_shards([path], vocab_size=16000) == {path: 2110}


def record_offsets(data: bytes) -> list[int]:
    """Where each record of a TFRecord file starts (8-byte length, 4-byte CRC, data, 4-byte CRC)."""
    offsets, position = [], 0
    while position < len(data):
        offsets.append(position)
        position += 16 + int.from_bytes(data[position : position + 8], "little")
    return offsets


def test_corrupted_shard_names_file_and_record(records):
    path = shard(records, 1)
    data = bytearray(path.read_bytes())
    starts = record_offsets(bytes(data))
    data[starts[5] + 12 + 20] ^= 0xFF  # a byte of record 5's data
    path.write_bytes(bytes(data))
    with pytest.raises(StageError, match=rf"^{path}: record 5: corrupted \(data CRC mismatch\)$"):
        pretrain_data.check_shards([str(path)], vocab_size=100)
    data[starts[3] + 2] ^= 0xFF  # record 3's length
    path.write_bytes(bytes(data))
    with pytest.raises(StageError, match=rf"^{path}: record 3: corrupted \(length CRC mismatch\)$"):
        pretrain_data.check_shards([str(path)], vocab_size=100)
    path.write_bytes(bytes(data[: starts[7] + 40]))
    with pytest.raises(StageError, match=rf"^{path}: record 3: corrupted"):
        pretrain_data.check_shards([str(path)], vocab_size=100)
    clean = shard(records, 0)
    clean.write_bytes(clean.read_bytes()[: record_offsets(clean.read_bytes())[7] + 40])
    with pytest.raises(
        StageError, match=rf"^{clean}: record 7: truncated \(file ends inside the record\)$"
    ):
        pretrain_data.check_shards([str(clean)], vocab_size=100)


def test_record_that_is_not_an_example_is_named(tmp_path):
    import tensorflow as tf

    path = str(tmp_path / "bad.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(b"\x0a\xff\xff\xff")
    with pytest.raises(StageError, match=rf"^{path}: record 0: not a valid tf.Example"):
        pretrain_data.check_shards([path], vocab_size=100)


def test_ids_beyond_the_vocabulary_stop_pretraining_up_front(records, tmp_path):
    from model.pretrain import PretrainConfig, run

    meta = json.loads((records / "metadata.json").read_text())
    (records / "metadata.json").write_text(json.dumps({**meta, "vocab_size": 50}))
    with pytest.raises(
        StageError,
        match=r"train-00000-of-00003.tfrecord: record 0: input_ids holds id \d+, outside "
        r"the vocabulary of 50 pieces",
    ):
        run(PretrainConfig(**TINY, data=str(records), output=str(tmp_path / "run"), steps=2))
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_empty_heldout_shard_is_an_error_not_a_perfect_score(records, tmp_path):
    from model.evaluation.heldout import evaluate_pretraining
    from model.pretrain import PretrainConfig, run

    shard(records, 2).write_bytes(b"")  # every shard is written, even an empty one
    with pytest.raises(
        StageError, match=r"train-00002-of-00003.tfrecord: the held-out split has no records"
    ):
        run(PretrainConfig(**TINY, data=str(records), output=str(tmp_path / "run"), steps=2))
    from model.network.config import get_preset
    from model.network.pretraining_model import AlbertPretrainingModel

    model = AlbertPretrainingModel(get_preset("albert-nano", vocab_size=100))
    with pytest.raises(StageError, match=r"the held-out split has no records"):
        evaluate_pretraining(model, str(records), batch_size=8)


def test_evaluate_batches_of_nothing_is_an_error():
    from model.evaluation.heldout import evaluate_batches

    with pytest.raises(StageError, match=r"^held-out data: no records to evaluate"):
        evaluate_batches(None, [], step=lambda batch: None)


@pytest.mark.parametrize("value", ["inf", "-inf", "nan"])
def test_non_finite_settings_are_refused(value):
    from model.finetune import FinetuneConfig
    from model.pretrain import PretrainConfig
    from pipelines.tfrecords.stage import TFRecordsConfig

    with pytest.raises(
        ConfigError, match=r"PretrainConfig.learning_rate: Input should be a finite number"
    ):
        load_config(PretrainConfig, overrides={"data": "d", "output": "o", "learning_rate": value})
    with pytest.raises(
        ConfigError, match=r"PretrainConfig.clipnorm: Input should be a finite number"
    ):
        load_config(PretrainConfig, overrides={"data": "d", "output": "o", "clipnorm": value})
    with pytest.raises(
        ConfigError, match=r"FinetuneConfig.learning_rate: Input should be a finite number"
    ):
        load_config(
            FinetuneConfig,
            overrides={
                "task": "sst2",
                "init": "random",
                "spm_model": "s",
                "data_dir": "d",
                "output": "o",
                "learning_rate": value,
            },
        )
    with pytest.raises(
        ConfigError, match=r"TFRecordsConfig.masked_lm_prob: Input should be a finite number"
    ):
        load_config(
            TFRecordsConfig,
            overrides={"input": "i", "spm_model": "s", "output": "o", "masked_lm_prob": value},
        )


@pytest.mark.keras
def test_diverging_run_stops_naming_the_step_and_keeps_the_last_finite_checkpoint(tmp_path):
    from model.checkpoints import store as checkpointing
    from model.pretrain import main

    data = write_shards(tmp_path / "records", num_shards=3, per_shard=24)
    output = tmp_path / "run"
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in TINY.items() if not isinstance(v, bool)]
    code = main(
        [
            *flags,
            "--no-progress",
            "--no-jit-compile",
            "--data",
            str(data),
            "--output",
            str(output),
            "--optimizer",
            "adamw",
            "--learning-rate",
            "1e30",
            "--steps",
            "6",
            "--log-every",
            "1",
            "--checkpoint-every",
            "1",
            "--eval-every",
            "0",
        ]
    )
    assert code == 2
    kept = checkpointing.list_checkpoints(str(output / "checkpoints"))
    assert [c.step for c in kept] == [1]
    assert not (output / "export").exists()
    lines = (output / "metrics.jsonl").read_text().splitlines()

    def refuse(constant):
        raise ValueError(f"metrics.jsonl holds {constant}")

    records = [json.loads(line, parse_constant=refuse) for line in lines]
    assert [r["step"] for r in records] == [1] and all(
        math.isfinite(v) for v in records[0].values() if isinstance(v, float)
    )
    shutil.rmtree(output / "tensorboard")


@pytest.mark.keras
def test_a_damaged_newest_checkpoint_is_moved_aside_and_the_run_resumes_before_it(tmp_path, capsys):
    from model.pretrain import main

    data = write_shards(tmp_path / "records", num_shards=2, per_shard=16)
    output = tmp_path / "run"
    settings = {**TINY, "export": False, "steps": 2, "checkpoint_every": 1, "eval_every": 0}
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in settings.items() if not isinstance(v, bool)]
    argv = [*flags, "--no-progress", "--no-jit-compile", "--no-export", "--data", str(data)]
    assert main([*argv, "--output", str(output)]) == 0
    newest = output / "checkpoints" / "ckpt-000000002"
    (newest / "state.json").write_text('{"step": 2, "ep')
    capsys.readouterr()
    assert main([*argv, "--output", str(output), "--steps", "3"]) == 0
    err = capsys.readouterr().err
    assert f"{newest}: a damaged checkpoint (state.json: JSONDecodeError" in err
    assert f"resumed from {output / 'checkpoints' / 'ckpt-000000001'} (step 1)" in err
    assert list((output / "checkpoints").glob("ckpt-000000002.previous-*/state.json"))


def test_diverged_message_names_step_and_checkpoint(tmp_path):
    from model.pretrain import PretrainConfig, diverged

    config = PretrainConfig(data="d", output=str(tmp_path / "run"), learning_rate=1e30)
    assert str(diverged(config, 2, "training loss")) == (
        f"{tmp_path / 'run'}: training diverged: the training loss became non-finite at step 2 "
        "(--learning-rate 1e+30); stopped, no checkpoint was written, nothing exported"
    )
