"""model.pretrain.tensorboard_events writes event files TensorFlow's own Event parser reads back as
scalars."""

from __future__ import annotations

import pytest

from model.pretrain.tensorboard_events import ScalarWriter


def test_scalars_read_back_with_tensorflows_event_parser(tmp_path):
    tf = pytest.importorskip("tensorflow")
    from tensorflow.core.util import event_pb2

    writer = ScalarWriter(str(tmp_path / "tensorboard"))
    writer.write(10, {"train/loss": 2.5, "train/steps_per_second": 3})
    writer.write(2**40, {"heldout/perplexity": 123.25})
    (path,) = (tmp_path / "tensorboard").glob("events.out.tfevents.*")
    events = [event_pb2.Event.FromString(raw.numpy()) for raw in tf.data.TFRecordDataset(str(path))]
    assert events[0].file_version == "brain.Event:2" and events[0].wall_time > 0
    scalars = [(e.step, v.tag, v.simple_value) for e in events[1:] for v in e.summary.value]
    assert scalars == [
        (10, "train/loss", 2.5),
        (10, "train/steps_per_second", 3.0),
        (2**40, "heldout/perplexity", 123.25),
    ]
