"""`pipelines.flex_template` moved to `pipelines.common.flex_template`; this path works for this
release."""

from albert.moved import moved

moved("pipelines.flex_template", "pipelines.common.flex_template", __name__)
