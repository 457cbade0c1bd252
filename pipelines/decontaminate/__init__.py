"""The decontaminate stage: the n-grams a segmented corpus shares with evaluation sets
(`eval_sets`, `contamination`), reported, and with --remove the corpus without them.
Entry point: `python -m pipelines.decontaminate` (`pipelines.decontaminate.stage.run`, `main`)."""

from albert.stages import forward_to_stage

__getattr__ = forward_to_stage(__name__, __file__)
