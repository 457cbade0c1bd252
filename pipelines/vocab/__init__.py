"""The vocab stage: a uniform, deterministic sample of a segmented corpus (`sampling`) trained into
ALBERT's SentencePiece vocabulary (`sentencepiece_trainer`).
Entry point: `python -m pipelines.vocab` (`pipelines.vocab.stage.run`, `main`)."""

from albert.stages import forward_to_stage

__getattr__ = forward_to_stage(__name__, __file__)
