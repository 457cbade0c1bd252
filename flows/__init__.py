"""Prefect 3 flows that chain the stages: end-to-end runs and scheduled domain-adaptive pretraining.

Importing this package sets nothing: the flows' entry points apply their Prefect settings
(`flows.prefect_settings`)."""
