"""`model.pretraining_model` moved to `model.network.pretraining_model`; this path works for this
release."""

from albert.moved import moved

moved("model.pretraining_model", "model.network.pretraining_model", __name__)
