"""Prefect 3 flows that chain the stages: end-to-end runs, domain-adaptive pretraining and a model
line night after night (flows.line).

Importing this package sets nothing, except in the commands that train or predict (`python -m
flows.pipeline.flow`, `flows.domain.flow`, a model line's night `flows.line.flow`,
`flows.ablation.flow`, `flows.finetune`, `flows.predict`), whose SIGTERM/SIGINT handlers it
installs before Prefect or Keras is imported (`albert.signals`). The flows' entry points apply
their Prefect settings (`flows.engine.prefect_settings`), which also check, before a flow starts,
that PREFECT_HOME can be written (hence Prefect's own warning, at its import, about a PREFECT_HOME
it could not make is not shown: the check says it in one line)."""

import warnings

from albert.signals import install_for_command

COMMANDS = (
    "flows.pipeline.flow",
    "flows.domain.flow",
    "flows.line.flow",
    "flows.ablation.flow",
    "flows.finetune",
    "flows.predict",
)
"""The `python -m` commands of this package that train or predict."""

warnings.filterwarnings("ignore", message="Failed to create the Prefect home directory")

for _command in COMMANDS:
    install_for_command(_command)
