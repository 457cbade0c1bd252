"""`model.optimizers` moved to `model.optimization.optimizers`; this path works for this release."""

from albert.moved import moved

moved("model.optimizers", "model.optimization.optimizers", __name__)
