"""The network: ALBERT's architecture config and presets (`config`), factorized embeddings, the
shared-layer encoder (`embeddings`, `transformer`, `encoder`, `backbone`) and the MLM/SOP heads.
Entry point: `model.network.pretraining_model.AlbertPretrainingModel` (`config.get_preset`)."""
