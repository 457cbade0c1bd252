"""`model.evaluate` moved to `model.evaluation.evaluate`; this path works for this release."""

from albert.moved import moved

moved("model.evaluate", "model.evaluation.evaluate", __name__)
