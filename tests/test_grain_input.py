"""model.input.grain (JAX, no TensorFlow) and model.input.tf_data (tf.data) give the same batches in
the same order from the same data and seed: the epoch order defined once in
model.input.records."""

from __future__ import annotations

import numpy as np
import pytest
from pretrain_testdata import cut_short_first_shard, write_shards

from albert.tfrecord_framing import tfrecord_frame, tfrecord_records
from model.input import grain as grain_input
from model.input import records as pretrain_records
from model.input import tf_data as pretrain_data

# Grain against tf.data: no Keras in either, so once, in the JAX pass (the backend Grain feeds)
pytestmark = pytest.mark.backend_free


def _same(tf_batches, grain_batches, what) -> int:
    tf_batches, grain_batches = list(tf_batches), list(grain_batches)
    assert len(tf_batches) == len(grain_batches), what
    for number, (ours, theirs) in enumerate(zip(tf_batches, grain_batches)):
        assert sorted(ours) == sorted(theirs), what
        for name, value in ours.items():
            assert value.dtype == theirs[name].dtype, (what, name)
            np.testing.assert_array_equal(
                value, theirs[name], err_msg=f"{what}, batch {number}, {name}"
            )
    return len(tf_batches)


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    """5 shards of 3, 20, 11, 0 and 20 records (the last held out), dynamically masked."""
    data = write_shards(tmp_path_factory.mktemp("uneven"), num_shards=5, per_shard=20, dynamic=True)
    for keep, path in zip((3, 20, 11, 0), sorted(data.glob("*.tfrecord"))):
        records = list(tfrecord_records(str(path)))[:keep]
        path.write_bytes(b"".join(tfrecord_frame(record) for record in records))
    return pretrain_records.inspect_data(str(data))


@pytest.mark.parametrize(
    "options",
    [
        {"epoch": 0, "seed": 5, "shuffle_buffer": 6, "cycle_length": 2},
        {"epoch": 1, "seed": 5, "shuffle_buffer": 6, "cycle_length": 8, "skip_batches": 3},
        {"epoch": 2, "seed": 0, "shuffle_buffer": 1, "cycle_length": 3},
    ],
)
def test_grain_and_tf_data_give_the_same_training_batches(uneven, options):
    tf_batches = pretrain_data.train_dataset(uneven, 2, **options).as_numpy_iterator()
    grain_batches = grain_input.train_batches(uneven, 2, denominators=False, **options)
    skipped = options.get("skip_batches", 0)
    assert (
        _same(tf_batches, grain_batches, options) == 17 - skipped
    )  # 34 training records, batches of 2


def test_grain_and_tf_data_agree_on_static_masks_and_the_heldout_split(tmp_path):
    static = pretrain_records.inspect_data(
        str(write_shards(tmp_path / "static", num_shards=3, per_shard=10))
    )
    options = {"epoch": 0, "seed": 1, "shuffle_buffer": 7}
    assert (
        _same(
            pretrain_data.train_dataset(static, 3, **options).as_numpy_iterator(),
            grain_input.train_batches(static, 3, denominators=False, **options),
            "static",
        )
        == 6
    )
    assert (
        _same(
            pretrain_data.heldout_dataset(static, 4).as_numpy_iterator(),
            grain_input.heldout_batches(static, 4),
            "held out",
        )
        == 3
    )
    single = pretrain_records.inspect_data(
        str(write_shards(tmp_path / "one", num_shards=1, per_shard=60, dynamic=True))
    )
    assert (
        _same(
            pretrain_data.train_dataset(single, 3, **options).as_numpy_iterator(),
            grain_input.train_batches(single, 3, denominators=False, **options),
            "every 20th held out",
        )
        == 19
    )
    assert (
        _same(
            pretrain_data.heldout_dataset(single, 2, seed=4).as_numpy_iterator(),
            grain_input.heldout_batches(single, 2, seed=4),
            "single-shard held out",
        )
        == 2
    )


def test_each_process_decodes_its_rows_of_the_global_batches(uneven):
    """3 processes: process i's batches are rows 2i..2i+1 of the one-process batches of 6, from the
    same position on (resume); the global sequence is the one-process one."""
    options = {"epoch": 1, "seed": 5, "shuffle_buffer": 6, "skip_batches": 1, "denominators": False}
    whole = list(grain_input.train_batches(uneven, 6, **options))
    parts = [
        list(grain_input.train_batches(uneven, 6, process=(i, 3), **options)) for i in range(3)
    ]
    assert len(whole) == 4 and all(
        len(part) == len(whole) for part in parts
    )  # 34 records, 1 skipped
    for number, batch in enumerate(whole):
        for name, value in batch.items():
            rows = np.concatenate([part[number][name] for part in parts])
            np.testing.assert_array_equal(rows, value, name)


def test_the_batches_are_the_same_for_any_number_of_input_workers(uneven):
    """Grain in 1 and 2 worker processes and tf.data on 1 and 2 threads give the batches of the
    input prepared in the training process, from the start and from a resumed position."""
    for options, counts in (({"epoch": 0}, (2,)), ({"epoch": 1, "skip_batches": 3}, (1, 2))):
        options |= {"seed": 5, "shuffle_buffer": 6, "cycle_length": 3}
        alone = list(grain_input.train_batches(uneven, 2, **options))
        assert len(alone) == 17 - options.get("skip_batches", 0)
        for workers in counts:
            _same(alone, grain_input.train_batches(uneven, 2, workers=workers, **options), workers)
            threads = pretrain_data.train_dataset(uneven, 2, workers=workers, **options)
            with_denominators = pretrain_data.with_denominators(threads, 2)
            _same(alone, with_denominators.as_numpy_iterator(), ("tf.data", workers))


def test_grain_batches_carry_the_loss_denominators(uneven):
    batch = next(iter(grain_input.train_batches(uneven, 4, epoch=0, seed=0)))
    assert batch["sop_denominator"].tolist() == [4.0] * 4
    np.testing.assert_allclose(batch["mlm_denominator"], batch["masked_lm_weights"].sum() + 1e-5)


def test_a_record_of_another_shape_is_named(tmp_path):
    from albert.errors import StageError
    from albert.pretraining_example import encode_example

    data = write_shards(tmp_path / "d", num_shards=2, per_shard=4)
    first = min(data.glob("*.tfrecord"))
    short = encode_example([2, 7, 3], [0, 0, 0], [1, 1, 1], [1], [7], 0, 16, 5)
    first.write_bytes(first.read_bytes() + tfrecord_frame(short))
    spec = pretrain_records.inspect_data(str(data))
    with pytest.raises(StageError) as error:
        list(grain_input.train_batches(spec, 1, epoch=0, seed=0))
    assert (
        str(error.value)
        == f"{first}: record 4: feature input_ids is of length 16, expected length 32"
    )  # one line


def test_length_buckets_batch_records_of_one_bin_cut_to_its_length(uneven):
    """--length-buckets 4 at 32 tokens: bins up to 8, 16, 24, 32 tokens; each batch's records lie in
    one bin and its sequences are cut to the bin's edge; resume (skip_batches) and 2 workers give
    the same batches."""
    options = {"epoch": 1, "seed": 5, "shuffle_buffer": 6, "length_buckets": 4}
    batches = list(grain_input.train_batches(uneven, 2, **options))
    assert len(batches) >= 12  # 34 records: at most one partly filled bin of each length left
    for batch in batches:
        edge = batch["input_ids"].shape[1]
        lengths = batch["input_mask"].sum(axis=1)
        assert edge in (8, 16, 24, 32) and all(edge - 8 < n <= edge for n in lengths)
        assert {value.shape[1] for name, value in batch.items() if value.ndim == 2} >= {edge}
    _same(batches[3:], grain_input.train_batches(uneven, 2, skip_batches=3, **options), "resume")
    _same(batches, grain_input.train_batches(uneven, 2, workers=2, **options), "workers")


def test_a_run_reads_its_epochs_as_one_stream_with_exact_positions(uneven):
    """`run_batches`: epoch after epoch, each batch tagged (epoch, index in epoch); the batches are
    each epoch's own (`train_batches`), the same in 2 worker processes, and a stream restarted at
    any position (resume) goes on with the same batches."""
    import itertools

    options = {"seed": 5, "shuffle_buffer": 6, "cycle_length": 3}
    epochs = [list(grain_input.train_batches(uneven, 2, epoch=e, **options)) for e in (0, 1, 2)]
    stream = grain_input.run_batches(uneven, 2, epoch=0, **options)
    items = list(itertools.islice(stream, 17 * 2 + 5))
    assert [(e, i) for e, i, _ in items] == [(e, i) for e in (0, 1, 2) for i in range(17)][:39]
    _same([b for e in epochs for b in e][:39], [batch for _, _, batch in items], "epochs")
    resumed = grain_input.run_batches(uneven, 2, epoch=1, skip_batches=16, **options)
    _same([b for _, _, b in items[33:]], [b for _, _, b in itertools.islice(resumed, 6)], "resume")
    workers = grain_input.run_batches(uneven, 2, epoch=0, workers=2, **options)
    iterator = iter(workers)
    try:
        tagged = list(itertools.islice(iterator, len(items)))
    finally:
        grain_input.close_batches(iterator, 2)
    assert [(e, i) for e, i, _ in tagged] == [(e, i) for e, i, _ in items]
    _same([b for _, _, b in items], [b for _, _, b in tagged], "2 workers")


def test_a_stream_ends_at_an_epoch_without_one_batch(uneven):
    """34 training records: an epoch has no batch of 40, so the stream ends (the trainer names the
    data); a resumed first epoch that has nothing left goes on with the next."""
    assert list(grain_input.run_batches(uneven, 40, epoch=0, seed=0)) == []
    after_end = grain_input.run_batches(uneven, 2, epoch=3, skip_batches=17, seed=0, epochs=2)
    assert [(e, i) for e, i, _ in after_end] == [(4, i) for i in range(17)]


def test_the_workers_carry_on_across_an_epoch_boundary(tmp_path):
    """With worker processes, the first batch of the second epoch comes as soon as a steady batch
    does (the workers carry on into the next epoch instead of starting again): its time from the
    previous batch, a 50 ms step included, within 2x the median (a ratio; the workers' start alone
    takes seconds)."""
    import time

    spec = pretrain_records.inspect_data(
        str(write_shards(tmp_path / "d", num_shards=3, per_shard=40, dynamic=True))
    )  # 80 training records: epochs of 20 batches of 4
    iterator = iter(grain_input.run_batches(spec, 4, epoch=0, seed=1, shuffle_buffer=8, workers=2))
    intervals, epochs = [], []
    try:
        next(iterator)  # the workers start
        last = time.perf_counter()
        for epoch, _, _ in iterator:
            time.sleep(0.05)  # the training step
            now = time.perf_counter()
            intervals.append(now - last)
            epochs.append(epoch)
            last = now
            if epoch == 2:
                break
    finally:
        grain_input.close_batches(iterator, 2)
    boundary = epochs.index(1)
    steady = float(np.median(intervals[:boundary]))
    print({"boundary_s": intervals[boundary], "steady_s": steady})
    assert intervals[boundary] <= 2 * steady


def test_a_failed_read_unlinks_every_segment_in_one_thread(tmp_path, monkeypatch):
    """A worker's error holds the last batch in a reference cycle: closing the stream and
    collecting it unlinks every segment this process opened, and no segment is closed by two
    threads (the race in which Grain's unlink thread fails and the segment leaks)."""
    import gc
    import threading
    from multiprocessing import shared_memory

    from albert.errors import StageError

    opened, closed_in, unlinked = set(), {}, set()
    real_init, real_close, real_unlink = (
        shared_memory.SharedMemory.__init__,
        shared_memory.SharedMemory.close,
        shared_memory.SharedMemory.unlink,
    )

    def init(self, name=None, create=False, size=0, **kwargs):
        real_init(self, name, create, size, **kwargs)
        opened.add(self.name)

    def close(self):
        closed_in.setdefault(self.name, set()).add(threading.get_ident())
        real_close(self)

    def unlink(self):
        unlinked.add(self.name)
        real_unlink(self)

    monkeypatch.setattr(shared_memory.SharedMemory, "__init__", init)
    monkeypatch.setattr(shared_memory.SharedMemory, "close", close)
    monkeypatch.setattr(shared_memory.SharedMemory, "unlink", unlink)
    data = write_shards(tmp_path / "d", num_shards=3, per_shard=24, dynamic=True)
    cut_short_first_shard(data)
    spec = pretrain_records.inspect_data(str(data))
    iterator = iter(grain_input.run_batches(spec, 2, epoch=0, seed=1, shuffle_buffer=4, workers=1))
    with pytest.raises(StageError, match="truncated"):
        try:
            for _ in iterator:
                pass
        finally:
            grain_input.close_batches(iterator, 1)
    gc.collect()
    assert opened and opened <= unlinked, opened - unlinked
    assert [name for name, threads in closed_in.items() if len(threads) > 1] == []
