"""The pretraining input: the TFRecord shards and their epoch order (`records`, `epoch_order`), read
by tf.data on TensorFlow (`tf_data`) or Grain on JAX (`grain`), in length buckets if asked.
Entry point: `model.input.source.run_batches`, which picks the backend's reader. The replay stage
(`replay`: a model line night's training mix of new and earlier records) writes such shards."""
