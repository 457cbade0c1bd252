"""Apache Beam jobs that turn raw corpora into ALBERT pretraining data: segment -> vocab ->
tfrecords."""
