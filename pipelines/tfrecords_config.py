"""`pipelines.tfrecords_config` moved to `pipelines.tfrecords.config`; this path works for this
release."""

from albert.moved import moved

moved("pipelines.tfrecords_config", "pipelines.tfrecords.config", __name__)
