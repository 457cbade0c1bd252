"""`model.convert` moved to `model.conversion.convert`; this path works for this release."""

from albert.moved import moved

moved("model.convert", "model.conversion.convert", __name__)
