"""`model.pretraining_metrics` moved to `model.evaluation.heldout`; this path works for this
release."""

from albert.moved import moved

moved("model.pretraining_metrics", "model.evaluation.heldout", __name__)
