"""The select stage: in-domain data chosen from a corpus by a domain classifier (Ma et al., 2019;
`classifier`), scored with Beam's RunInference.
Entry point: `python -m pipelines.select` (`pipelines.select.stage.run`, `main`)."""

from albert.stages import forward_to_stage

__getattr__ = forward_to_stage(__name__, __file__)
