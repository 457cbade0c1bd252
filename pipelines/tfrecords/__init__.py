"""The tfrecords stage: a segmented corpus and a vocabulary into masked SOP/NSP pretraining
instances (`instances`, `instance_writer`), a held-out split (`heldout`) and `metadata.json`.
Entry point: `python -m pipelines.tfrecords` (`pipelines.tfrecords.stage.run`, `main`)."""

from albert.stages import forward_to_stage

__getattr__ = forward_to_stage(__name__, __file__)
