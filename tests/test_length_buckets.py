"""--length-buckets by default (`model.input.length_buckets`): on an accelerator with padded data, k
from the padding measured on the data's first records; off on CPU, on TensorFlow's input and for
data without padding; a resumed run keeps its own."""

from __future__ import annotations

import numpy as np
import pytest
from pretrain_testdata import write_shards

from albert.errors import StageError
from model.input import length_buckets
from model.input import records as pretrain_records


def test_k_follows_the_padding():
    rng = np.random.default_rng(0)
    full = np.full(1000, 128)
    assert length_buckets.choose_buckets(full, 128) == 0  # no padding: off
    assert length_buckets.choose_buckets(np.full(1000, 124), 128) == 0  # 3%: not worth a compile
    # documents' ends: most sequences full, a tail of short ones (real shards at s128, s512)
    mixed = np.where(rng.random(1000) < 0.7, 128, rng.integers(8, 128, 1000))
    k = length_buckets.choose_buckets(mixed, 128)
    assert 2 <= k <= length_buckets.MAX_BUCKETS
    computed = {b: length_buckets.computed_tokens(mixed, 128, b) for b in (0, k, 8)}
    assert computed[k] <= (1 + length_buckets.WITHIN) * computed[8] < computed[0]
    assert length_buckets.choose_buckets(mixed, 128) == k  # a function of the lengths alone


def test_the_default_is_off_on_cpu_and_measured_on_an_accelerator(tmp_path):
    spec = pretrain_records.inspect_data(str(write_shards(tmp_path / "d", num_shards=3)))
    assert length_buckets.default_buckets(spec, on_accelerator=False, grain=True) == 0
    assert length_buckets.default_buckets(spec, on_accelerator=True, grain=False) == 0
    lengths = length_buckets.sample_lengths(spec)
    assert len(lengths) == 128 and lengths.min() >= 16  # the 2 training shards' records
    chosen = length_buckets.default_buckets(spec, on_accelerator=True, grain=True)
    assert chosen == length_buckets.choose_buckets(lengths, 32) > 0


def test_a_run_left_to_the_default_keeps_its_checkpoints_buckets(tmp_path, monkeypatch):
    from model.pretrain import PretrainConfig, loop

    data = str(write_shards(tmp_path / "d", num_shards=3))
    spec = pretrain_records.inspect_data(data)
    config = PretrainConfig(data=data, output=str(tmp_path / "o"))
    monkeypatch.setattr(loop.cores, "on_accelerator", lambda tpu=False: True)
    monkeypatch.setattr(loop, "uses_grain", lambda choice: True)
    packed = loop.with_length_buckets(config, spec)  # packing by default: one shape, no buckets
    assert (packed.packing, packed.packing_instances, packed.length_buckets) == ("on", 8, 0)
    asked = config.model_copy(update={"length_buckets": 2})
    bucketed = loop.with_length_buckets(asked, spec)
    assert (bucketed.packing, bucketed.length_buckets) == ("off", 2)  # buckets asked for
    with pytest.raises(StageError, match="--packing on"):
        loop.with_length_buckets(asked.model_copy(update={"packing": "on"}), spec)
    auto, config = config, config.model_copy(update={"packing": "off"})
    measured = loop.with_length_buckets(config, spec).length_buckets
    assert measured == length_buckets.choose_buckets(length_buckets.sample_lengths(spec), 32)
    given = config.model_copy(update={"length_buckets": 0})
    assert loop.with_length_buckets(given, spec).length_buckets == 0  # as given
    checkpoint = tmp_path / "o" / "checkpoints" / "ckpt-000000005"
    checkpoint.mkdir(parents=True)
    (checkpoint / "state.json").write_text('{"step": 5, "identity": {"length_buckets": 3}}')
    np.savez(checkpoint / "weights.npz")  # a whole archive: a damaged checkpoint is passed over
    assert loop.with_length_buckets(config, spec).length_buckets == 3
    resumed = loop.with_length_buckets(auto, spec)  # a checkpoint of no packing packed none
    assert (resumed.packing, resumed.length_buckets) == ("off", 3)
