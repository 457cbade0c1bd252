"""`pipelines.vocab_config` moved to `pipelines.vocab.config`; this path works for this release."""

from albert.moved import moved

moved("pipelines.vocab_config", "pipelines.vocab.config", __name__)
