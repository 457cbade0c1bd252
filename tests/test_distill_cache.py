"""`albert distill`'s parts that need no Keras: the teacher-outputs cache (written a shard at a
time, read a batch at a time, keyed by the teacher and the data), FLOPs per token, the config's
student and its refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from model.distill.cache import TeacherOutputs, cache_key, find_cache, write_cache
from model.distill.config import DistillConfig
from model.distill.report import flops_per_token, side_by_side
from model.network.config import get_preset

pytestmark = pytest.mark.backend_free


def _shards(logits: np.ndarray, size: int):
    for start in range(0, len(logits), size):
        yield {"logits": logits[start : start + size]}


def test_cache_is_written_by_shard_read_by_batch_and_keyed_by_teacher_and_data(tmp_path):
    inputs = {"input_ids": np.arange(14, dtype=np.int32).reshape(7, 2)}
    key = cache_key("teacher-a", inputs)
    assert key == cache_key("teacher-a", {"input_ids": inputs["input_ids"].copy()})
    assert key != cache_key("teacher-b", inputs)  # another teacher
    changed = {"input_ids": inputs["input_ids"][::-1].copy()}
    assert key != cache_key("teacher-a", changed)  # other data
    assert key != cache_key("teacher-a", {"input_ids": inputs["input_ids"][:, :1].copy()})
    logits = np.arange(21, dtype=np.float32).reshape(7, 3)
    shards = _shards(logits, 3)
    written = []

    def counted():
        for shard in shards:
            written.append(len(shard["logits"]))
            yield shard

    root = tmp_path / "cache"
    path = write_cache(str(root), key, 7, 3, counted())
    assert written == [3, 3, 1]  # one shard at a time
    assert sorted(p.name for p in (root / key).iterdir()) == [
        "logits-00000.npy",
        "logits-00001.npy",
        "logits-00002.npy",
        "manifest.json",
    ]
    assert find_cache(str(root), key) == path and find_cache(str(root), "other") is None
    outputs = TeacherOutputs(path)
    index = np.array([6, 0, 4, 3, 3])
    np.testing.assert_array_equal(outputs.rows(index)["logits"], logits[index])
    assert all(isinstance(m, np.memmap) for m in outputs._maps.values())  # mapped, not loaded
    # a new key replaces the old directory; a half-written one is never found
    other = cache_key("teacher-b", inputs)
    write_cache(str(root), other, 7, 3, _shards(logits, 3))
    assert not (root / key).exists() and find_cache(str(root), other)
    (root / other / "manifest.json").write_text(json.dumps({"key": "x"}))
    assert find_cache(str(root), other) is None


def test_flops_per_token_count_every_application_of_the_shared_layer():
    config = get_preset("albert-base", vocab_size=30000)
    per_layer = 4 * 768**2 + 2 * 768 * 3072 + 2 * 128 * 768
    assert flops_per_token(config, 128) == 2 * (128 * 768 + 12 * per_layer)
    table = side_by_side(
        *(
            {
                "dev": {"accuracy": a},
                "parameters": p,
                "flops_per_token": 10,
                "sequences_per_second": {"1": 2.0},
            }
            for a, p in ((0.9, 1000), (0.8, 100))
        ),
        "accuracy",
    )
    assert "| teacher | 0.9000 | 1,000 | 10 | 2.0 |" in table


def test_config_takes_the_student_and_refuses_finetune_only_flags():
    base = {"task": "sst2", "teacher": "t", "spm_model": "s", "data_dir": "d", "output": "o"}
    preset = DistillConfig(**base, student="albert-nano")
    assert (preset.init, preset.preset) == ("random", "albert-nano")
    assert DistillConfig(**base, student="export/model.keras").init == "export/model.keras"
    assert preset.cache_dir() == "o.teacher-outputs"
    with pytest.raises(ValueError, match="--multitask is a flag of `albert finetune`"):
        DistillConfig(**base, student="albert-nano", multitask=["mrpc=x"])
    with pytest.raises(ValueError, match="--init: the student is --student"):
        DistillConfig(**base, student="albert-nano", init="other")


def test_a_damaged_shard_is_not_found_so_the_cache_is_written_again(tmp_path, caplog):
    """A shard cut short (a full disk, a copy that stopped), of other rows, or missing: the cache
    is not found (one warning names the shard), so the teacher's outputs are computed again."""
    logits = np.arange(21, dtype=np.float32).reshape(7, 3)
    root = tmp_path / "cache"
    path = write_cache(str(root), "k", 7, 3, _shards(logits, 3))
    shard = root / "k" / "logits-00001.npy"
    whole = shard.read_bytes()
    for damaged in (whole[:-8], np.lib.format.magic(1, 0) + b"x", b""):
        shard.write_bytes(damaged)
        assert find_cache(str(root), "k") is None
        assert f"{shard}: a damaged teacher-outputs shard" in caplog.text
    shard.write_bytes(whole)
    assert find_cache(str(root), "k") == path
    shard.unlink()
    assert find_cache(str(root), "k") is None
    assert write_cache(str(root), "k", 7, 3, _shards(logits, 3)) == path
    np.testing.assert_array_equal(TeacherOutputs(path).rows([4])["logits"], logits[[4]])
