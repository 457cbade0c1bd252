"""Keras 3 ALBERT (backend-agnostic), pretraining, fine-tuning and evaluation."""

import albert  # noqa: F401  (quiet TensorFlow logging before anything imports it)
