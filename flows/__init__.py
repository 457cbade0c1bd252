"""Prefect 3 flows that chain the stages: end-to-end runs, domain-adaptive pretraining and a model
line night after night (flows.line).

Importing this package sets nothing: the flows' entry points apply their Prefect settings
(`flows.prefect_settings`)."""
