"""Apache Beam jobs that turn raw corpora into ALBERT pretraining data: segment -> vocab -> tfrecords."""

import albert  # noqa: F401  (quiet TensorFlow logging before anything imports it)
