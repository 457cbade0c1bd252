"""Prefect 3 flows that chain the stages: end-to-end runs and scheduled domain-adaptive pretraining."""

import albert  # noqa: F401  (quiet TensorFlow logging before anything imports it)
