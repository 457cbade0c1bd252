"""De-duplication, a step of the segment stage: exact-duplicate documents and repeated paragraphs
(`exact`), near-duplicate documents by MinHash LSH (`near`: `minhash`, `keys`, `pairs`, `clusters`).
Entry points: `pipelines.dedup.exact` and `pipelines.dedup.near`, which segment's pipeline
applies."""
