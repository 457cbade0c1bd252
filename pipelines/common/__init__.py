"""What several stages share: the runner and its counters (`runner`), sorted spill files (`spill`),
byte-identical shard writing (`shards`), text cleaning, word n-grams, the segmented-corpus reader
and the Dataflow launcher. Entry point: none of its own (`python -m pipelines.common.flex_template
DIR`)."""
