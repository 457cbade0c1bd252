"""`pipelines.domain_select` moved to `pipelines.select`; this path works for this release."""

from albert.moved import moved

moved("pipelines.domain_select", "pipelines.select.stage", __name__, command="pipelines.select")
