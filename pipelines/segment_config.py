"""`pipelines.segment_config` moved to `pipelines.segment.config`; this path works for this
release."""

from albert.moved import moved

moved("pipelines.segment_config", "pipelines.segment.config", __name__)
