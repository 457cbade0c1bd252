"""`model.config` moved to `model.network.config`; this path works for this release."""

from albert.moved import moved

moved("model.config", "model.network.config", __name__)
