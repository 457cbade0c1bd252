"""The segment stage: raw Wikipedia dumps, books, plain text and JSONL (`input_formats`,
`wikipedia`,
`wikitext`, `books`) cleaned (`pipelines.quality`), de-duplicated (`pipelines.dedup`) and split into
sentences. Entry point: `python -m pipelines.segment` (`pipelines.segment.stage.run`, `main`)."""

from albert.stages import forward_to_stage

__getattr__ = forward_to_stage(__name__, __file__)
