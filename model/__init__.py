"""Keras 3 ALBERT (backend-agnostic), pretraining, fine-tuning and evaluation."""
