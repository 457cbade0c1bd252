"""`albert run`: the end-to-end flow segment -> vocab -> tfrecords -> pretrain -> heldout, its
report and the demo corpus of `make run`."""
