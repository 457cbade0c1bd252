"""Keras 3 ALBERT (backend-agnostic), pretraining, fine-tuning and evaluation.

Importing it sets nothing, except in the commands that train (`python -m model.pretrain`,
`python -m model.finetune`), whose SIGTERM/SIGINT handlers it installs before anything heavy is
imported (`albert.signals`)."""

from albert.signals import install_for_command

install_for_command("model.pretrain")
install_for_command("model.finetune")
