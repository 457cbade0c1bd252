"""The shared core that every layer above imports (`pipelines`, `model`, `flows`): never losing
work (errors, fs, locks, outputs, reaper, runs), the stages and their entry points (stages, stage,
config, log, the `albert` CLI), tokenization and its exports, masking, and the pretraining
example's formats (pretraining_example, tfrecord_framing, protobuf_wire, hashing). Logic with a
single user lives beside that user, not here.

Importing it sets nothing, except in the `albert` command itself, whose signal handlers it installs
first (`albert.signals`). Each command's entry point sets up logging (`albert.log.setup_logging`,
which also keeps TensorFlow's C++ logs quiet) before anything imports TensorFlow.
"""

from albert.signals import install_for_command

# the `albert` command (its subcommands train): SIGTERM/SIGINT handled before anything else imports
install_for_command("albert.cli", script="albert", prog="albert")
